"""``python -m itasc_bench.loop``: see :mod:`itasc_bench.loop.script`."""

import sys

from itasc_bench.loop.script import main

sys.exit(main())

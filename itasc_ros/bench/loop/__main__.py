"""``python -m itasc_ros.bench.loop``: see :mod:`itasc_ros.bench.loop.script`."""

import sys

from itasc_ros.bench.loop.script import main

sys.exit(main())

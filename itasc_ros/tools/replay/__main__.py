"""``python -m itasc_ros.tools.replay``: the ``itasc-replay`` console script."""

import sys

from itasc_ros.tools.replay.cli import main

sys.exit(main())

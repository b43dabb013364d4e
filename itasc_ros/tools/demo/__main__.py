"""``python -m itasc_ros.tools.demo``: the same as the ``itasc-demo`` console script."""

import sys

from itasc_ros.tools.demo.cli import main

sys.exit(main())

"""``python -m itasc_ros.tools.sim_robot``: the ``itasc_sim_robot`` console script."""

import sys

from .cli import main

sys.exit(main())

"""Home poses of the bundled robots: re-exported from :mod:`itasc_ros.core.kinematics.home_poses`.

Their one home is the core (ROS-free); this module keeps the older import path working.
"""

from __future__ import annotations

from itasc_ros.core.kinematics.home_poses import HOME_POSES, home_of, home_pose

__all__ = ["HOME_POSES", "home_of", "home_pose"]

"""itasc_ros: iTaSC constraint-based velocity IK for ROS 2.

The ROS-free solver lives in :mod:`itasc_ros.core`; the rclpy adapter in :mod:`itasc_ros.ros`;
what users run (demo, record, replay, simulated robot, position IK) in :mod:`itasc_ros.tools`.
The measuring code (``itasc-bench``, the peers, the floor node) is not part of this package: it
is the repository's ``bench/`` distribution.
"""

__version__ = "0.1.0"

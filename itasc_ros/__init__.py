"""itasc_ros: iTaSC constraint-based velocity IK for ROS 2.

The ROS-free solver lives in :mod:`itasc_ros.core`; the rclpy adapter in :mod:`itasc_ros.ros`;
what users run (demo, record, replay, simulated robot) in :mod:`itasc_ros.tools`; the
measuring code (``itasc-bench``, peers, floor node) in :mod:`itasc_ros.bench`.
"""

__version__ = "0.1.0"

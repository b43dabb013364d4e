"""itasc_ros: iTaSC constraint-based velocity IK for ROS 2.

The ROS-free solver lives in :mod:`itasc_ros.core`; the rclpy adapter in :mod:`itasc_ros.ros`.
"""

__version__ = "0.1.0"

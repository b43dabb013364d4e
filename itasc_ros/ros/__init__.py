"""ROS 2 adapter of itasc_ros: the only package that imports rclpy and message types.

``node`` (the ``itasc_node`` executable), ``parameters`` (declarations with descriptors and
ranges), ``conversions`` (messages <-> numpy) and the interactive-marker server. The control
logic itself lives in :mod:`itasc_ros.core.control.controller`.
"""

"""Measuring code: ``itasc-bench`` and what it runs beside the node.

* :mod:`itasc_ros.bench.cli`: the ``itasc-bench`` console script (kinematics, tick, tracking,
  outliers, loop, soak).
* :mod:`itasc_ros.bench.loop`: the ``loop`` and ``soak`` benchmarks (the node over DDS with the
  simulated robot).
* :mod:`itasc_ros.bench.floor_node`: the floor of the loop benchmark, a node that computes
  nothing.
* :mod:`itasc_ros.bench.peers`: the peer kinematics libraries (Orocos KDL, Pinocchio, TRAC-IK).
* :mod:`itasc_ros.bench.harness`: what every benchmark uses (interleaved timing, the URDFs of
  example-robot-data).

Nothing is imported here: ``python -m itasc_ros.bench.floor_node`` starts without the solver.
What users run (demo, record, replay, simulated robot) is in :mod:`itasc_ros.tools`.
"""

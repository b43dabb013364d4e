"""Measuring code: ``itasc-bench`` and what it runs beside the node.

* :mod:`itasc_ros.bench.cli`: the ``itasc-bench`` console script; one module per subcommand:
  :mod:`~itasc_ros.bench.kinematics`, :mod:`~itasc_ros.bench.tick`,
  :mod:`~itasc_ros.bench.tracking`, :mod:`~itasc_ros.bench.outliers`,
  :mod:`~itasc_ros.bench.collision`, :mod:`~itasc_ros.bench.ik` and the package
  :mod:`~itasc_ros.bench.loop` (``loop`` and ``soak``: the node over DDS with the simulated
  robot).
* :mod:`itasc_ros.bench.floor_node`: the floor of the loop benchmark, a node that computes
  nothing.
* :mod:`itasc_ros.bench.peers`: the peer libraries (Orocos KDL, Pinocchio, TRAC-IK, PlaCo,
  Drake), a module each.
* :mod:`itasc_ros.bench.harness`: what every benchmark uses (interleaved timing, the URDFs of
  example-robot-data); :mod:`itasc_ros.bench.arguments`: the command lines' argument types;
  :mod:`itasc_ros.bench.report`: the printed tables.

Nothing is imported here: ``python -m itasc_ros.bench.floor_node`` starts without the solver.
What users run (demo, record, replay, simulated robot) is in :mod:`itasc_ros.tools`.
"""

"""Measuring code: ``itasc-bench`` and what it runs beside the node.

* :mod:`itasc_bench.cli`: the ``itasc-bench`` console script; one module per subcommand:
  :mod:`~itasc_bench.kinematics`, :mod:`~itasc_bench.tick`,
  :mod:`~itasc_bench.tracking`, :mod:`~itasc_bench.outliers`,
  :mod:`~itasc_bench.collision`, :mod:`~itasc_bench.ik` and the package
  :mod:`~itasc_bench.loop` (``loop`` and ``soak``: the node over DDS with the simulated
  robot).
* :mod:`itasc_bench.floor_node`: the floor of the loop benchmark, a node that computes
  nothing.
* :mod:`itasc_bench.peers`: the peer libraries (Orocos KDL, Pinocchio, TRAC-IK, PlaCo,
  Drake), a module each.
* :mod:`itasc_bench.harness`: what every benchmark uses (interleaved timing, the URDFs of
  example-robot-data); :mod:`itasc_bench.arguments`: the command lines' argument types;
  :mod:`itasc_bench.report`: the printed tables.

Nothing is imported here: ``python -m itasc_bench.floor_node`` starts without the solver.
What users run (demo, record, replay, simulated robot) is in :mod:`itasc_ros.tools`.
"""

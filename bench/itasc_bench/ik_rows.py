"""The rows of ``itasc-bench ik`` by name: what ``--robots`` takes, without the solvers.

The chain robots of the TRAC-IK protocol (:mod:`~itasc_bench.ik`), the Panda among
obstacles (:mod:`~itasc_bench.ik_obstacles`) and Talos's whole body
(:mod:`~itasc_bench.ik_whole_body`). Plain data: the console script checks ``--robots``
before it imports the solvers.
"""

from __future__ import annotations

#: Robot name -> (URDF, root link, tip link).
IK_ROBOTS: dict[str, tuple[str, str, str]] = {
    "panda": ("panda", "panda_link0", "panda_link8"),
    "ur5": ("ur5", "base_link", "tool0"),
    "xarm7": ("erd:xarm_description/urdf/xarm7.urdf", "world", "link_eef"),
}
#: The Panda among obstacles' row.
OBSTACLES = "panda_obstacles"
#: Talos's whole-body row.
WHOLE_BODY = "talos_whole_body"
IK_ROWS = (*IK_ROBOTS, OBSTACLES, WHOLE_BODY)
"""The names ``--robots`` takes."""

__all__ = ["IK_ROBOTS", "IK_ROWS", "OBSTACLES", "WHOLE_BODY"]

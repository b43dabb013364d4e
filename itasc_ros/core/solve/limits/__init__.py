"""Hard limits of the solve: each gives this tick's bounds on ``q'``, bounds of every level.

One contract (:class:`~itasc_ros.core.solve.limits.base.Limit`), one module per limit, as the
constraint types are: the scene intersects their boxes each tick, in order (a later limit wins
where two conflict), and the solver keeps the result in every priority level. Inequality rows
(the collision constraint's) are the constraints' side: ``Constraint.hard``.
"""

from .base import Limit
from .fixed_box import FixedBox
from .held import HeldJoints
from .joint_position import JointPositionLimit
from .joint_velocity import JointVelocityLimit
from .motion import MotionBox

__all__ = [
    "FixedBox",
    "HeldJoints",
    "JointPositionLimit",
    "JointVelocityLimit",
    "Limit",
    "MotionBox",
]

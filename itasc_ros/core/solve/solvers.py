"""The solvers by name: what ``solver`` may say, and each one's code in the compiled solve.

Plain Python: the configuration's checks (:mod:`itasc_ros.core.control.settings`) name the
valid solvers without importing the compiled solve.
"""

from __future__ import annotations

from ..errors import SolverError

SOLVERS = ("dls", "sdls")
"""Names accepted by :func:`solver_code`."""


def solver_code(name: str) -> int:
    """Numeric code of a solver name.

    Raises:
        SolverError: naming the valid solvers.
    """
    try:
        return SOLVERS.index(name)
    except ValueError:
        raise SolverError(f"unknown solver {name!r}; solvers are: {', '.join(SOLVERS)}") from None


__all__ = ["SOLVERS", "solver_code"]

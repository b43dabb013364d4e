"""How the demo writes a number for a person: millimetres, percentages, 'n/a' for NaN."""

from __future__ import annotations

import math
from typing import Any


def mm(x: float) -> str:
    """``x`` [m] as ``'1.234 mm'``; 'n/a' for NaN or infinity."""
    return "n/a" if not math.isfinite(x) else f"{1e3 * x:.3f} mm"


def pct(a: float, b: float) -> str:
    """The relative difference of ``a`` to ``b`` as ``'+3.5 %'``; 'n/a' when undefined."""
    return (
        "n/a"
        if not (math.isfinite(a) and math.isfinite(b) and b)
        else f"{100 * (a - b) / b:+.1f} %"
    )


def fmt(x: Any, spec: str, unit: str = "", scale: float = 1.0) -> str:
    """``x * scale`` formatted with ``spec`` and ``unit``; 'n/a' for a missing or NaN value."""
    if x is None or not math.isfinite(float(x)):
        return "n/a"
    return f"{scale * float(x):{spec}}{unit}"


__all__ = ["fmt", "mm", "pct"]

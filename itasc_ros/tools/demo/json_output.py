"""The demo's metrics as JSON: numpy values as plain numbers, NaN and infinity as null."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np


def json_default(v: Any) -> Any:
    """A numpy scalar or array as a plain number or list; anything else as its text."""
    if isinstance(v, np.floating | np.integer):
        return v.item()
    if isinstance(v, np.ndarray):
        return v.tolist()
    return str(v)


def finite_or_none(obj: Any) -> Any:
    """``obj`` with every non-finite float (in dicts and lists too) replaced by None."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite_or_none(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [finite_or_none(v) for v in obj]
    return obj


def metrics_line(metrics: dict[str, Any]) -> str:
    """``metrics`` as one line of JSON (what ``--json`` prints)."""
    return json.dumps(finite_or_none(metrics), default=json_default)


def write_metrics(path: Path, metrics: dict[str, Any]) -> None:
    """Write ``metrics`` to ``path`` as indented JSON."""
    with path.open("w") as fh:
        json.dump(finite_or_none(metrics), fh, indent=2, default=json_default)


__all__ = ["finite_or_none", "json_default", "metrics_line", "write_metrics"]

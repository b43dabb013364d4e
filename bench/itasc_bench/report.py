"""How ``itasc-bench`` prints a benchmark's figures: a titled table, one row per case."""

from __future__ import annotations

from typing import Any


def print_table(title: str, rows: dict[str, Any]) -> None:
    """Print ``== title``, then a line per figure and, for a nested dict, its cells and notes.

    Args:
        title: The table's title.
        rows: Figure name -> a number, a string or a dict of figures (its ``notes``, a list of
            strings, printed under its row).
    """
    print(f"\n== {title}")
    for k, v in rows.items():
        if isinstance(v, dict):
            cells = ", ".join(
                f"{kk}={vv:.3g}" if isinstance(vv, float) else f"{kk}={vv}"
                for kk, vv in v.items()
                if kk != "notes"
            )
            print(f"  {k:>10}: {cells}")
            for n in v.get("notes", []):
                print(f"              {n}")
        else:
            print(f"  {k}: {v:.4g}" if isinstance(v, float) else f"  {k}: {v}")


__all__ = ["print_table"]

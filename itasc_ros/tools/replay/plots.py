"""Plots of ``itasc-replay`` (matplotlib, Agg): a replay, and a what-if against the recording."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from itasc_ros.tools.replay.result import ReplayResult


def _save(fig: Any, path: Path) -> Path:
    """Lay out, write (PNG, 90 dpi) and close a figure; returns its path."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def write_replay_plots(res: ReplayResult, out: str | Path) -> list[Path]:
    """PNG plots of a replay (matplotlib Agg): tracking error, joint velocities, sigma_min.

    Args:
        res: the replay, k steps (time [s] from its first step).
        out: the folder (created when missing).

    Returns:
        The three files: tracking error [mm], joint velocities [rad/s] (recomputed lines,
        recorded dots), sigma_min with damping_epsilon.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    t = res.t - (res.t[0] if res.t.size else 0.0)
    paths = []

    fig, ax = plt.subplots(figsize=(9, 3.5))
    ax.plot(t, 1e3 * res.position_error, lw=0.8)
    ax.set(xlabel="time [s]", ylabel="position error [mm]", title="replay: tracking error")
    ax.grid(True, alpha=0.3)
    paths.append(_save(fig, folder / "replay_tracking_error.png"))

    fig, ax = plt.subplots(figsize=(9, 4))
    for j, name in enumerate(res.joint_names):
        line = ax.plot(t, res.recomputed[:, j], lw=0.8, label=name)[0]
        if np.isfinite(res.recorded[:, j]).any():
            ax.plot(t, res.recorded[:, j], ".", ms=1.5, color=line.get_color())
    ax.set(
        xlabel="time [s]",
        ylabel="joint velocity [rad/s]",
        title="replay: recomputed (lines) and recorded (dots) commands",
    )
    ax.legend(fontsize=7, ncol=4)
    ax.grid(True, alpha=0.3)
    paths.append(_save(fig, folder / "replay_joint_velocities.png"))

    fig, ax = plt.subplots(figsize=(9, 3.5))
    ax.plot(t, res.sigma_min, lw=0.8, label="sigma_min")
    ax.plot(t, res.damping_epsilon, "--", lw=0.8, label="damping_epsilon")
    ax.set(xlabel="time [s]", ylabel="smallest singular value", title="replay: sigma_min")
    ax.legend(fontsize=8)
    ax.grid(True, alpha=0.3)
    paths.append(_save(fig, folder / "replay_sigma_min.png"))
    return paths


def write_what_if_plots(
    recorded: ReplayResult, what_if: ReplayResult, overrides: Mapping[str, Any], out: str | Path
) -> list[Path]:
    """PNG plots of a what-if replay: recorded vs re-computed tracking error and velocities.

    Args:
        recorded: the recorded run (its journal played back).
        what_if: the run with ``overrides`` on an ideal robot.
        overrides: the changed live parameters (for the legends and titles).
        out: the folder (created when missing).

    Returns:
        The two files: tracking error [mm] of both runs, joint velocities [rad/s] of each.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    change = ", ".join(f"{k}={v}" for k, v in overrides.items())
    t0 = recorded.t[0] if recorded.t.size else 0.0
    paths = []
    fig, ax = plt.subplots(figsize=(9, 3.5))
    ax.plot(recorded.t - t0, 1e3 * recorded.position_error, lw=0.8, label="recorded")
    ax.plot(what_if.t - t0, 1e3 * what_if.position_error, lw=0.8, label=f"with {change}")
    ax.set(xlabel="time [s]", ylabel="position error [mm]", title="what-if: tracking error")
    ax.legend(fontsize=8)
    ax.grid(True, alpha=0.3)
    paths.append(_save(fig, folder / "what_if_tracking_error.png"))

    fig, axes = plt.subplots(2, 1, figsize=(9, 6), sharex=True, sharey=True)
    for ax, res, title in ((axes[0], recorded, "recorded"), (axes[1], what_if, f"with {change}")):
        for j, name in enumerate(res.joint_names):
            ax.plot(res.t - t0, res.recomputed[:, j], lw=0.8, label=name)
        ax.set(ylabel="joint velocity [rad/s]", title=f"what-if: commands, {title}")
        ax.grid(True, alpha=0.3)
    axes[0].legend(fontsize=7, ncol=4)
    axes[1].set(xlabel="time [s]")
    paths.append(_save(fig, folder / "what_if_joint_velocities.png"))
    return paths


__all__ = ["write_replay_plots", "write_what_if_plots"]

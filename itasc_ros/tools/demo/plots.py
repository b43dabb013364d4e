"""The demo's PNG plots: tracking error per phase, joint velocities and their limits, sigma_min.

matplotlib (Agg) is imported only when the plots are written.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from itasc_ros.core.solve.joint_limits import JointLimits
from itasc_ros.core.solve.motion_limits import limit_ratios
from itasc_ros.tools.demo.bag_data import BagData
from itasc_ros.tools.demo.metrics import STEADY_FRACTION, position_errors
from itasc_ros.tools.demo.phases import Phase
from itasc_ros.tools.demo.solve_trace import SolveTrace

Array = NDArray[np.float64]


def write_plots(
    out: Path,
    data: BagData,
    phases: list[Phase],
    trace: SolveTrace | None,
    vlim: Array,
    joint_names: Sequence[str],
    damping_epsilon: float,
    limits: Sequence[JointLimits] = (),
    period: float | None = None,
) -> list[Path]:
    """PNG plots: tracking error per phase, joint velocities and accelerations, sigma_min.

    Args:
        out: the folder to write into.
        data: the bag's signals.
        phases: the measured phases.
        trace: the node's solves (or None).
        vlim: (n,) velocity limits [rad/s].
        joint_names: the commanded joints (n).
        damping_epsilon: the singularity threshold.
        limits: per commanded joint, its acceleration and jerk limits.
        period: the nominal control period [s]: the accelerations and jerks are plotted at it
            (what the controller promises), else at the commands' times.

    Returns:
        The files written: tracking_error.png, joint_velocities.png, sigma_min.png.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figures: tuple[tuple[str, Callable[[], Any]], ...] = (
        ("tracking_error.png", lambda: _tracking_figure(plt, data, phases)),
        (
            "joint_velocities.png",
            lambda: _velocity_figure(plt, data, phases, vlim, joint_names, limits, period),
        ),
        ("sigma_min.png", lambda: _sigma_figure(plt, data, phases, trace, damping_epsilon)),
    )
    paths: list[Path] = []
    for name, draw in figures:  # one figure at a time: drawn, saved, closed
        fig = draw()
        fig.tight_layout()
        paths.append(out / name)
        fig.savefig(paths[-1], dpi=90)
        plt.close(fig)
    return paths


def _tracking_figure(plt: Any, data: BagData, phases: list[Phase]) -> Any:
    """Position error [mm] of the circle, the figure eight (with and without) and the steps."""
    err = position_errors(data, phases)
    by_name = {p.name: p for p in phases}
    fig, axes = plt.subplots(1, 3, figsize=(14, 4))
    for ax, shape in zip(axes[:2], ("circle", "figure8"), strict=True):
        for suffix, colour, label in (
            ("ff", "tab:green", "feed-forward"),
            ("fb", "tab:red", "feedback only"),
        ):
            ph = by_name[f"{shape}_{suffix}"]
            t0, t1 = ph.start_ns * 1e-9, ph.end_ns * 1e-9
            sel = (data.js_t >= t0) & (data.js_t < t1)
            ax.semilogy(
                data.js_t[sel] - t0,
                1e3 * np.maximum(err[sel], 1e-6),
                color=colour,
                lw=0.8,
                label=label,
            )
            ax.axvline(STEADY_FRACTION * ph.duration, color="grey", ls=":", lw=0.8)
        ax.set(
            title=f"{shape}: position error",
            xlabel="time in phase [s]",
            ylabel="|target - effector| [mm]",
        )
        ax.legend(fontsize=8)
        ax.grid(True, which="both", alpha=0.3)
    ph = by_name["steps"]
    t0, t1 = ph.start_ns * 1e-9, ph.end_ns * 1e-9
    sel = (data.js_t >= t0) & (data.js_t < t1)
    axes[2].plot(data.js_t[sel] - t0, 1e3 * err[sel], lw=0.8)
    axes[2].set(title="step changes: position error", xlabel="time in phase [s]", ylabel="[mm]")
    axes[2].grid(True, alpha=0.3)
    return fig


def _shade(ax: Any, phases: list[Phase]) -> None:
    """Every other phase shaded grey, each named above the axes."""
    t_ref = phases[0].start_ns * 1e-9
    for i, p in enumerate(phases):
        a, b = p.start_ns * 1e-9 - t_ref, p.end_ns * 1e-9 - t_ref
        if i % 2 == 0:
            ax.axvspan(a, b, color="0.92", lw=0)
        ax.text(
            (a + b) / 2,
            1.0,
            p.name,
            transform=ax.get_xaxis_transform(),
            ha="center",
            va="bottom",
            fontsize=7,
        )


def _velocity_figure(
    plt: Any,
    data: BagData,
    phases: list[Phase],
    vlim: Array,
    joint_names: Sequence[str],
    limits: Sequence[JointLimits],
    period: float | None = None,
) -> Any:
    """Commands [rad/s]; the largest speed, acceleration and jerk ratios to their limits."""
    t_ref = phases[0].start_ns * 1e-9
    fig, (ax1, ax2, ax3) = plt.subplots(3, 1, figsize=(12, 8), sharex=True)
    _shade(ax1, phases)
    for j, name in enumerate(joint_names):
        ax1.plot(data.cmd_t - t_ref, data.cmd[:, j], lw=0.6, label=name)
    ax1.set(ylabel="command [rad/s]")
    ax1.legend(fontsize=7, ncol=4, loc="lower left")
    ax1.grid(True, alpha=0.3)
    _shade(ax2, phases)
    if data.cmd.size:
        ax2.plot(data.cmd_t - t_ref, np.max(np.abs(data.cmd) / vlim, axis=1), lw=0.6)
    ax2.axhline(1.0, color="red", ls="--", lw=0.8, label="velocity limit")
    ax2.set(ylabel="max |q'| / limit", ylim=(0, 1.1))
    ax2.legend(fontsize=8)
    ax2.grid(True, alpha=0.3)
    _shade(ax3, phases)
    if limits and data.cmd_t.size > 2:
        acc, jerk = limit_ratios(data.cmd_t, data.cmd, limits, period)
        ax3.plot(data.cmd_t[1:] - t_ref, acc, lw=0.6, label="max |q''| / acceleration limit")
        ax3.plot(data.cmd_t[2:] - t_ref, jerk, lw=0.6, label="max |q'''| / jerk limit")
    ax3.axhline(1.0, color="red", ls="--", lw=0.8)
    ax3.set(xlabel="time [s]", ylabel="ratio to the limit", ylim=(0, 1.2))
    ax3.legend(fontsize=8)
    ax3.grid(True, alpha=0.3)
    return fig


def _sigma_figure(
    plt: Any,
    data: BagData,
    phases: list[Phase],
    trace: SolveTrace | None,
    damping_epsilon: float,
) -> Any:
    """The smallest singular value over the run (offline and the node's ``~/status``)."""
    t_ref = phases[0].start_ns * 1e-9
    fig, ax = plt.subplots(figsize=(12, 3.5))
    _shade(ax, phases)
    if trace is not None:
        ax.semilogy(trace.t - t_ref, trace.sigma_min, lw=0.7, label="sigma_min (offline)")
    st = [(t, d["sigma_min"]) for t, d in data.status if "sigma_min" in d]
    if st:
        ax.semilogy(
            [t - t_ref for t, _ in st],
            [s for _, s in st],
            ".",
            ms=2,
            label="sigma_min (node ~/status)",
        )
    ax.axhline(damping_epsilon, color="red", ls="--", lw=0.8, label="damping_epsilon")
    ax.set(xlabel="time [s]", ylabel="smallest singular value")
    ax.legend(fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    return fig


__all__ = ["write_plots"]

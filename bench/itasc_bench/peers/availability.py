"""Which peer libraries can run on this machine, and why not where one cannot."""

from __future__ import annotations

import subprocess

from .contract import PeerUnavailable
from .drake_peer import import_pydrake
from .kdl_import import import_pykdl
from .pinocchio_peer import import_pinocchio
from .placo_peer import PLACO_REQUIREMENT, placo_python
from .trac_ik import import_pytracik


def check_placo() -> None:
    """Check that :func:`~itasc_bench.peers.placo_peer.placo_python` imports PlaCo.

    Raises:
        PeerUnavailable: If it does not; the message has the install hint.
    """
    python = placo_python()
    try:
        done = subprocess.run(
            [str(python), "-c", "import placo"], capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise PeerUnavailable(f"PlaCo cannot run here: {exc}") from exc
    if done.returncode != 0:
        raise PeerUnavailable(
            f"{python} cannot import placo: install it with 'make limit-peers' (pip install "
            f"{PLACO_REQUIREMENT} into .venv/placo)"
        )


def available_peers() -> dict[str, str | None]:
    """Which peers can be used here.

    Returns:
        Peer name ('kdl', 'pinocchio', 'trac_ik', 'placo', 'drake') -> None if usable, else the
        reason.
    """
    out: dict[str, str | None] = {}
    for name, fn in (
        ("kdl", import_pykdl),
        ("pinocchio", import_pinocchio),
        ("trac_ik", import_pytracik),
        ("placo", check_placo),
        ("drake", import_pydrake),
    ):
        try:
            fn()
            out[name] = None
        except PeerUnavailable as exc:
            out[name] = str(exc)
    return out


__all__ = ["available_peers", "check_placo"]

"""Which peer libraries can run on this machine, and why not where one cannot."""

from __future__ import annotations

from .contract import PeerUnavailable
from .kdl_import import import_pykdl
from .pinocchio_peer import import_pinocchio
from .trac_ik import import_pytracik


def available_peers() -> dict[str, str | None]:
    """Which peers can be used here.

    Returns:
        Peer name ('kdl', 'pinocchio', 'trac_ik') -> None if usable, else the reason.
    """
    out: dict[str, str | None] = {}
    for name, fn in (
        ("kdl", import_pykdl),
        ("pinocchio", import_pinocchio),
        ("trac_ik", import_pytracik),
    ):
        try:
            fn()
            out[name] = None
        except PeerUnavailable as exc:
            out[name] = str(exc)
    return out


__all__ = ["available_peers"]

"""Where the node's URDF comes from: the topic's parser thread, and a missing link named.

The node takes its URDF from the ``robot_description`` parameter, else the topic, else
``urdf_file``. A URDF from the topic is parsed off the control loop by :class:`UrdfWorker`;
a configured link the URDF lacks is told with :func:`link_error` (the parameter naming it,
the closest link, the links).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

from ..cli import closest
from ..core import Controller, ControllerConfig, KinematicTree
from ..core.control.model_manager import SAME_URDF, build_controller, parse_urdf, urdf_digest
from ..core.errors import UnknownLinkError
from ..core.latest_worker import LatestWorker
from ..params import settings_naming
from .realtime import demote_current_thread

#: A result of :class:`UrdfWorker`: (source, digest, tree, why, built, config).
Parsed = tuple[
    str, str, KinematicTree | None, str, Controller | Exception | None, ControllerConfig
]


class UrdfWorker:
    """Parses URDFs from the topic and builds their controllers in a thread of its own.

    A URDF near the size limits takes up to about a second to parse, and a controller some
    milliseconds to build; meanwhile the control loop ticks on with the old model. Only the
    latest request is kept (the topic has depth 1). Results ``(source, digest, tree, why,
    built, config)`` (``built``: the controller made with ``config``, or the exception that
    refused it) are installed by the node on its executor (its housekeeping timer); a
    document whose digest is ``current()`` (the installed model's) is not parsed again: ``why``
    is :data:`~itasc_ros.core.control.model_manager.SAME_URDF`.

    Args:
        current: the digest of the installed model's URDF ('' for none).
        config: the configuration a new controller gets.
    """

    def __init__(
        self,
        current: Callable[[], str],
        config: Callable[[], ControllerConfig],
    ) -> None:
        self._current = current
        self._config = config
        self.results: deque[Parsed] = deque()
        self._submitted = 0  # requests submitted, and the last one parsed (their numbers)
        self._parsed = 0
        self._worker: LatestWorker[tuple[str, str, int]] = LatestWorker(
            self._parse, "itasc_urdf_parser"
        )

    def submit(self, xml: str, source: str) -> None:
        """Parse ``xml`` (replacing a request not yet started)."""
        self._submitted += 1
        self._worker.submit((xml, source, self._submitted))

    @property
    def pending(self) -> bool:
        """True from a submit until its result is taken from :attr:`results`."""
        return self._parsed != self._submitted or bool(self.results)

    def close(self) -> None:
        """Stop the thread (a parse in progress finishes first, up to 1 s is waited)."""
        self._worker.close(1.0)

    def _parse(self, request: tuple[str, str, int]) -> None:
        xml, source, number = request
        try:
            self._parse_one(xml, source)
        finally:
            self._parsed = number

    def _parse_one(self, xml: str, source: str) -> None:
        demote_current_thread()  # a long parse must not hold a real-time core
        digest = urdf_digest(xml)
        cfg = self._config()
        if digest == self._current():
            self.results.append((source, digest, None, SAME_URDF, None, cfg))
        else:
            tree, why = parse_urdf(xml)
            built = None if tree is None else build_controller(tree, cfg)
            self.results.append((source, digest, tree, why, built, cfg))


def unknown_link(exc: BaseException | None) -> UnknownLinkError | None:
    """The :class:`UnknownLinkError` behind ``exc`` (its cause chain), or None."""
    for _ in range(8):
        if exc is None or isinstance(exc, UnknownLinkError):
            return exc
        exc = exc.__cause__ or exc.__context__
    return None


def link_error(missing: UnknownLinkError, tree: KinematicTree, source: str, cfg: Any) -> str:
    """One line: which parameter names a link robot ``tree`` lacks, the closest, the links."""
    links = list(tree.link_names)
    where = " and ".join(settings_naming(cfg, missing.name)) or "a constraint"
    holding = sorted((n for n in links if missing.name.lower() in n.lower()), key=len)
    hint = closest(missing.name, links) or (holding[0] if holding else None)  # hand: panda_hand
    did = f"; did you mean {hint!r}?" if hint is not None else ";"
    return (
        f"{where}: link {missing.name!r} is not a link of robot {tree.name!r} (URDF from the "
        f"{source}){did} links: {', '.join(links)}"
    )


__all__ = ["UrdfWorker", "link_error", "unknown_link"]

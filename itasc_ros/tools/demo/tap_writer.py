"""The demo's bag writer, which also keeps the last joint state it wrote for the display."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from itasc_ros.tools.bagio import BagWriter


class TapWriter(BagWriter):
    """A :class:`BagWriter` that also keeps the last raw message of one topic (for the display).

    The progress display reads the joint states the recorder writes anyway, so the demo process
    needs no second subscription to them.

    Args:
        path: the bag's folder. storage: the bag's storage ('mcap').
        tap_topic: the topic whose last message is kept (:attr:`last_raw`, CDR bytes).
    """

    def __init__(self, path: Path, storage: Any, tap_topic: str) -> None:
        super().__init__(path, storage)
        self.tap_topic = tap_topic
        self.last_raw: bytes | None = None

    def write_raw(self, topic: str, t_ns: int, cdr: bytes | memoryview) -> None:
        """Write as :meth:`BagWriter.write_raw`; keep the bytes of the tapped topic."""
        super().write_raw(topic, t_ns, cdr)
        if topic == self.tap_topic:
            self.last_raw = bytes(cdr)


__all__ = ["TapWriter"]

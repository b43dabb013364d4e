"""log_throttled: one line per period per key, the left-out ones counted."""

from __future__ import annotations

import time

import pytest
import rclpy.logging

from itasc_ros.ros.log_throttle import LEVELS, forget_throttles, log_throttled


class _Logger:
    def __init__(self, name: str) -> None:
        self.name = name
        self.lines: list[tuple[str, str]] = []

    def warning(self, text: str) -> None:
        self.lines.append(("warning", text))

    def info(self, text: str) -> None:
        self.lines.append(("info", text))


def test_one_line_per_period_and_key_with_the_left_out_counted() -> None:
    forget_throttles()
    log = _Logger("n")
    assert log_throttled(log, "warning", "a", "first", 0.05)
    assert not log_throttled(log, "warning", "a", "second", 0.05)
    assert not log_throttled(log, "warning", "a", "third", 0.05)
    assert log_throttled(log, "warning", "b", "other key", 0.05)  # its own period
    assert log_throttled(log, "info", "a", "other level", 0.05)
    assert log_throttled(_Logger("m"), "warning", "a", "other logger", 0.05)
    time.sleep(0.06)
    assert log_throttled(log, "warning", "a", "fourth", 0.05)
    assert log.lines == [
        ("warning", "first"),
        ("warning", "other key"),
        ("info", "other level"),
        ("warning", "fourth (2 more like it since the last one, not logged)"),
    ]


def test_an_unknown_level_names_the_valid_ones() -> None:
    with pytest.raises(ValueError, match="valid: debug, info, warning, error, fatal"):
        log_throttled(_Logger("n"), "warn", "a", "x", 1.0)


def test_an_rclpy_logger_takes_every_level_of_every_key() -> None:
    """rclpy holds each call site to one severity: each level has its own site here."""
    forget_throttles()
    logger = rclpy.logging.get_logger("itasc_log_throttle_test")
    for level in LEVELS:
        for key in ("a", "b"):
            assert log_throttled(logger, level, key, f"{level} {key}", 60.0)
            assert not log_throttled(logger, level, key, f"{level} {key} again", 60.0)

"""What every console script does with a user's mistake: one line, exit status 2.

A wrong argument, path, type name, robot, link or parameter value ends in one line on stderr,
``<prog>: error: <what is wrong>; <what is valid>``, and exit status 2, never a traceback.
:class:`CliParser` does it for argparse's own errors; :func:`run_cli` for the errors found
later (:class:`~itasc_ros.core.errors.ItascError`, :class:`UsageError`, a missing or unwritable
file). ROS-free.
"""

from __future__ import annotations

import argparse
import difflib
import math
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import NoReturn

from .core.errors import ItascError, UnknownNameError

#: Exit status of a usage error (argparse's convention).
USAGE_EXIT = 2


class UsageError(ItascError, ValueError):
    """A command-line argument that cannot be used; the message names the valid choices."""


def closest(name: str, valid: Iterable[str]) -> str | None:
    """The valid name closest to ``name`` (a likely typo), or None when none is close."""
    matches = difflib.get_close_matches(name, list(valid), n=1, cutoff=0.6)
    return matches[0] if matches else None


def unknown_choice(kind: str, name: str, valid: Iterable[str], limit: int = 30) -> str:
    """``unknown <kind> 'nam'; did you mean 'name'? valid: 'a', 'b'`` (one line)."""
    items = sorted(set(valid))
    hint = closest(name, items)
    shown = ", ".join(repr(v) for v in items[:limit])
    if len(items) > limit:
        shown += f", ... ({len(items) - limit} more)"
    did = f" did you mean {hint!r}?" if hint is not None else ""
    return f"unknown {kind} {name!r};{did} valid: {shown or '(none)'}"


def with_hint(exc: ItascError) -> str:
    """The message of ``exc``; for an unknown link, joint or frame, the closest one first."""
    message = str(exc)
    if not isinstance(exc, UnknownNameError) or "did you mean" in message:
        return message
    hint = closest(exc.name, exc.valid)
    if hint is None:
        return message
    head = f"unknown {exc.kind} {exc.name!r};"
    if message.startswith(head):
        return f"{head} did you mean {hint!r}?{message[len(head) :]}"
    return f"{message}; did you mean {hint!r}?"


def finite_float(text: str) -> float:
    """A finite number (integers accepted), else a one-line argparse error."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return value


def positive_float(text: str) -> float:
    """A finite number > 0 (integers accepted), else a one-line argparse error."""
    try:
        value = finite_float(text)
    except argparse.ArgumentTypeError:
        value = 0.0
    if value <= 0.0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number > 0")
    return value


def nonnegative_float(text: str) -> float:
    """A finite number >= 0 (integers accepted), else a one-line argparse error."""
    try:
        value = finite_float(text)
    except argparse.ArgumentTypeError:
        value = -1.0
    if value < 0.0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number >= 0")
    return value


def positive_int(text: str) -> int:
    """A whole number > 0, else a one-line argparse error."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number > 0")
    return value


def existing_file(path: str | Path, what: str = "file") -> Path:
    """``path`` as a Path if it is a readable file, else :class:`UsageError` saying why."""
    p = Path(path).expanduser()
    if not p.exists():
        near = _near_files(p)
        hint = f"; did you mean {near!r}?" if near else ""
        raise UsageError(f"{what} {str(path)!r} does not exist{hint}")
    if not p.is_file():
        raise UsageError(f"{what} {str(path)!r} is not a file")
    try:
        with p.open("rb"):
            pass
    except OSError as exc:
        raise UsageError(f"{what} {str(path)!r} cannot be read: {exc.strerror}") from None
    return p


def existing_path(path: str | Path, what: str = "path") -> Path:
    """``path`` as a Path if it exists (a file or a folder), else :class:`UsageError`."""
    p = Path(path).expanduser()
    if not p.exists():
        near = _near_files(p)
        hint = f"; did you mean {near!r}?" if near else ""
        raise UsageError(f"{what} {str(path)!r} does not exist{hint}")
    return p


def writable_dir(path: str | Path, what: str = "output directory") -> Path:
    """``path`` created if needed and checked writable, else :class:`UsageError`."""
    p = Path(path).expanduser()
    try:
        p.mkdir(parents=True, exist_ok=True)
        probe = p / ".itasc-write-probe"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise UsageError(f"{what} {str(path)!r} is not writable: {exc.strerror}") from None
    return p


def _near_files(p: Path) -> str | None:
    parent = p.parent if str(p.parent) else Path(".")
    try:
        names = [c.name for c in parent.iterdir()]
    except OSError:
        return None
    hit = closest(p.name, names)
    return str(parent / hit) if hit is not None else None


class CliParser(argparse.ArgumentParser):
    """argparse with one-line errors: ``<prog>: error: <message> (see <prog> --help)``.

    Invalid choices and mistyped options also name the closest valid one.
    """

    def error(self, message: str) -> NoReturn:
        """Print the one-line error and exit with status 2."""
        fail(self.prog, f"{message}{self._option_hint(message)} (see {self.prog} --help)")

    def _option_hint(self, message: str) -> str:
        """``; did you mean '--json'?`` for an unrecognized option, else ''."""
        head = "unrecognized arguments: "
        tokens = message[len(head) :].split() if message.startswith(head) else []
        if not tokens or not tokens[0].startswith("--"):
            return ""
        near = closest(tokens[0].split("=")[0], self._option_string_actions)
        return f"; did you mean {near!r}?" if near else ""

    def _check_value(self, action: argparse.Action, value: object) -> None:
        choices = action.choices
        if choices is not None and value not in choices:
            valid = [str(c) for c in choices]
            raise argparse.ArgumentError(action, unknown_choice("choice", str(value), valid))


def fail(prog: str, message: str) -> NoReturn:
    """Print ``<prog>: error: <message>`` as one line on stderr and exit with status 2."""
    one_line = " ".join(str(message).split())
    print(f"{prog}: error: {one_line}", file=sys.stderr, flush=True)
    raise SystemExit(USAGE_EXIT)


def run_cli(prog: str, body: Callable[[], int]) -> int:
    """Run a console script's body; a user's mistake becomes one line and exit status 2.

    Caught: :class:`ItascError` (its message names the valid choices), :class:`UsageError`,
    a missing, unreadable or unwritable file. Anything else is a bug and keeps its traceback.
    """
    try:
        return body()
    except ItascError as exc:
        fail(prog, with_hint(exc))
    except FileNotFoundError as exc:
        fail(prog, f"{exc.filename or exc}: no such file or directory")
    except IsADirectoryError as exc:
        fail(prog, f"{exc.filename or exc}: is a directory, a file was expected")
    except PermissionError as exc:
        fail(prog, f"{exc.filename or exc}: permission denied")
    except OSError as exc:  # a path the user gave: not a directory, read-only file system...
        if exc.filename is None:
            raise
        fail(prog, f"{exc.filename}: {exc.strerror or exc}")


def usage_status(prog: str, body: Callable[[], int]) -> int:
    """:func:`run_cli` returning a usage error's exit status (2) rather than raising it.

    For a ``main()`` that returns its status (and is called in-process, e.g. by tests).
    """
    try:
        return run_cli(prog, body)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else USAGE_EXIT


def prog_name(argv0: str | None = None, default: str = "itasc") -> str:
    """The program's name as the user typed it (for messages)."""
    name = Path(argv0 if argv0 is not None else (sys.argv[0] if sys.argv else default)).name
    return name or default


__all__ = [
    "USAGE_EXIT",
    "CliParser",
    "UsageError",
    "closest",
    "existing_file",
    "existing_path",
    "fail",
    "finite_float",
    "nonnegative_float",
    "positive_float",
    "positive_int",
    "prog_name",
    "run_cli",
    "unknown_choice",
    "usage_status",
    "with_hint",
    "writable_dir",
]

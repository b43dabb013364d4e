"""Console scripts run as processes forked from one that has imported them already.

A user's mistake on a console script (``itasc-ik pandaa``) is found in milliseconds, but a fresh
Python process first imports rclpy, NumPy, SciPy and the compiled kernels: 0.4-2 s of CPU per
case, and the CLI-mistake modules run about a hundred cases. :class:`ScriptRunner` starts one
Python process that imports every console script's module (and what each imports after parsing)
once, then forks a child per case. The child is a process of its own, as a user's run is: its own
argument vector, environment and working directory, no standard input, its stdout and stderr on
file descriptors 1 and 2 (so a C library's writes are caught too), and its exit status from the
entry point's ``SystemExit``, or 1 with a traceback on stderr for an uncaught exception, as
Python does. The parent process forks before any DDS participant or thread exists (rclpy is
imported, not initialised), so a child starts from a single-threaded copy.

What the fork does not check, a real console-script process does: ``test_cli_help.py`` runs each
installed script from its own fresh process, and each CLI-mistake module runs some of its cases
that way too.

Tests import this module as ``from scripts import ...`` (the test directory is on ``sys.path``).
"""

from __future__ import annotations

import atexit
import json
import re
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import tomllib

REPO = Path(__file__).resolve().parents[1]
#: Console script name -> "module:function", as setup.py installs them (the package's) and
#: bench/pyproject.toml (``itasc-bench``, the benchmarks' distribution).
SCRIPTS: dict[str, str] = {
    **dict(
        re.findall(r'"([\w-]+) = ([\w.]+:\w+)"', (REPO / "setup.py").read_text(encoding="utf-8"))
    ),
    **tomllib.loads((REPO / "bench" / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "scripts"
    ],
}
#: What the scripts import only after their arguments are parsed: imported up front, so that a
#: case's child does not pay for them.
PRELOAD = (
    "rclpy",
    "itasc_ros.ros.node",
    "itasc_ros.core.ik.solve",
    "itasc_ros.tools.demo.run",
    "itasc_ros.tools.demo.scenario",
    "itasc_ros.tools.replay.cli",
)

# The forking process: one JSON request per stdin line, one JSON answer per stdout line.
_SERVER = r"""
import atexit, importlib, io, json, os, signal, sys, tempfile, time, traceback

scripts = json.loads(sys.argv[1])
for name in json.loads(sys.argv[2]) + [s.split(":")[0] for s in scripts.values()]:
    try:
        importlib.import_module(name)
    except ImportError:
        pass
reply = sys.stdout
sys.stdout = io.TextIOWrapper(open(os.devnull, "wb"))  # what an import prints is not an answer
reply.write(json.dumps({"ready": True}) + "\n")
reply.flush()


def child(req, out_fd, err_fd):
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)  # not the requests' pipe
    os.dup2(out_fd, 1)
    os.dup2(err_fd, 2)
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), line_buffering=True)
    sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), line_buffering=True)
    os.chdir(req["cwd"])
    os.environ.clear()
    os.environ.update(req["env"])
    sys.argv = [req["script"], *req["args"]]
    code = 0
    try:
        if req["no_init"]:
            import rclpy

            def refuse(*args, **kwargs):
                print("rclpy.init called", file=sys.stderr)
                sys.exit(3)

            rclpy.init = refuse
        module, func = scripts[req["script"]].split(":")
        code = getattr(sys.modules[module], func)()
    except SystemExit as exc:
        code = exc.code
    except BaseException:
        traceback.print_exc()
        code = 1
    try:
        atexit._run_exitfuncs()
    finally:
        if code is None:
            code = 0
        elif not isinstance(code, int):
            print(code, file=sys.stderr)
            code = 1
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


for line in sys.stdin:
    req = json.loads(line)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        pid = os.fork()
        if pid == 0:
            child(req, out.fileno(), err.fileno())
        deadline = time.monotonic() + req["timeout"]
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                status = -1
                break
            time.sleep(0.002)
        code = os.waitstatus_to_exitcode(status) if status != -1 else None
        out.seek(0)
        err.seek(0)
        answer = {"returncode": code, "stdout": out.read().decode(errors="replace"),
                  "stderr": err.read().decode(errors="replace")}
    reply.write(json.dumps(answer) + "\n")
    reply.flush()
"""


@dataclass(frozen=True)
class ScriptRun:
    """One console script's run: its exit status and what it wrote.

    Attributes:
        returncode: the exit status (``None`` if it ran out of time and was killed).
        stdout: what it wrote on file descriptor 1.
        stderr: what it wrote on file descriptor 2.
    """

    returncode: int | None
    stdout: str
    stderr: str


class ScriptRunner:
    """A process that has imported the console scripts and forks one child per run."""

    def __init__(self) -> None:
        self._proc = subprocess.Popen(
            [sys.executable, "-c", _SERVER, json.dumps(SCRIPTS), json.dumps(PRELOAD)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=REPO,
        )
        assert self._proc.stdout is not None
        ready = self._proc.stdout.readline()
        assert ready and json.loads(ready) == {"ready": True}, "the script runner did not start"

    def run(
        self,
        script: str,
        args: Sequence[str],
        env: Mapping[str, str],
        cwd: Path = REPO,
        *,
        no_init: bool = False,
        timeout: float = 60.0,
    ) -> ScriptRun:
        """Run ``script args`` in a forked child and wait for it.

        Args:
            script: a console script's name (a key of :data:`SCRIPTS`).
            args: its arguments, without the program name.
            env: the child's whole environment.
            cwd: the child's working directory.
            no_init: replace ``rclpy.init`` by an exit with status 3 and "rclpy.init called" on
                stderr, so that a script that starts DDS is seen.
            timeout: [s] after which the child is killed (``returncode`` ``None``).

        Returns:
            The child's exit status, stdout and stderr.
        """
        assert script in SCRIPTS, f"{script!r} is not one of {sorted(SCRIPTS)}"
        request = dict(
            script=script, args=list(args), env=dict(env), cwd=str(cwd), no_init=no_init,
            timeout=timeout,
        )  # fmt: skip
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._proc.stdin.write(json.dumps(request) + "\n")
        self._proc.stdin.flush()
        answer = self._proc.stdout.readline()
        assert answer, "the script runner stopped"
        return ScriptRun(**json.loads(answer))

    @property
    def alive(self) -> bool:
        """Whether the forking process still runs."""
        return self._proc.poll() is None

    def close(self) -> None:
        """End the forking process."""
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        self._proc.wait(timeout=10)


_shared: list[ScriptRunner] = []


def runner() -> ScriptRunner:
    """This test process's :class:`ScriptRunner`: started on first use, ended at exit."""
    if _shared and not _shared[0].alive:
        _shared.clear()
    if not _shared:
        _shared.append(ScriptRunner())
        atexit.register(_shared[0].close)
    return _shared[0]

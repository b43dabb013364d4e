"""Every fenced snippet of the README and of the documentation (doc/*.md) runs as written.

Each fenced block of those pages has a language, and each is checked by it:

* ``python``: the block, alone, in a fresh interpreter (the venv's), must exit 0: a reader can
  copy any one block.
* ``bash``: each line (``\\`` continuations joined) runs in ``bash`` with the venv's console
  scripts first on ``PATH`` and DDS kept on this machine (:func:`local_dds_env`, a private
  domain per line: :func:`domains.borrowed_domain`); it must exit 0. A line starting with a
  prefix of :data:`NOT_RUN` is not run, for the reason given there (a ROS install, a robot, a
  running node, minutes of work).
* ``yaml``: a whole params file (``/**:``) must load as the node loads it and build the real
  controller on the bundled Panda; a fragment (a part of such a file) must parse.

Blocks run in a temporary folder that looks like the repository's root (``urdf/`` and
``config/`` linked), so that the pages' relative paths resolve and nothing is written into
the checkout. ``run1`` there is a bag in ``itasc-record``'s layout: the golden bag
(``test/data/golden/panda_circle.mcap``, the Panda tracking a circle, with the node's journal).
A failure names the page and line of the block or shell line. The obstacles the collision
page shows ship in ``config/panda_obstacles.yaml``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from domains import borrowed_domain
from rosbags.rosbag2 import Reader

from itasc_ros.core import Controller, KinematicTree
from itasc_ros.core.kinematics.robots import Mounted, compose_robots
from itasc_ros.params import config_from_params_data, load_config
from itasc_ros.tools.bagio import BagWriter
from itasc_ros.tools.dds_env import local_dds_env

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
#: The pages whose fenced blocks run: the README and the documentation's (not ``_*.md``).
PAGES = [README, *sorted(p for p in (ROOT / "doc").glob("*.md") if not p.name.startswith("_"))]
GOLDEN = ROOT / "test" / "data" / "golden" / "panda_circle.mcap"
VENV_BIN = Path(sys.prefix) / "bin"
TIMEOUT = 60.0  # [s] per block or line

NOT_RUN: dict[str, str] = {
    "make ": "make demo / make test are the whole DDS demo and the whole suite (minutes); "
    "test_demo.py and the suite itself run them",
    "cd ~/ros2_ws": "a colcon workspace of a ROS 2 installation; test_packaging.py builds one",
    "colcon ": "a ROS 2 workspace build; test_packaging.py runs colcon build",
    "source install/": "a colcon workspace's environment",
    "ros2 ": "needs a ROS 2 installation (the ros2 CLI) and a robot or a launch; "
    "test_launch.py starts the launch file",
    "itasc-record ": "records a running itasc_node until Ctrl-C; test_record.py records one",
    "itasc-replay run1 --online": "republishes into a running itasc_node; test_replay.py "
    "runs it against one",
}
"""Prefix of a shell line that is not run -> why."""

LANGUAGES = ("python", "bash", "yaml")
#: Fenced blocks that are listings, not code (diagrams, a module list): not run.
LISTINGS = ("text",)


@dataclass(frozen=True)
class Block:
    """A fenced block of a page: its page, language, first code line (1-based) and text."""

    page: str
    lang: str
    line: int
    text: str

    @property
    def id(self) -> str:
        return f"{self.page}-{self.lang}-L{self.line}"


def page_blocks(page: Path) -> list[Block]:
    """Every fenced block of ``page``, in order (MyST directives, ``{toctree}``, left out)."""
    name = str(page.relative_to(ROOT))
    blocks: list[Block] = []
    lang: str | None = None
    start, body = 0, list[str]()
    for n, raw in enumerate(page.read_text().splitlines(), start=1):
        if raw.startswith("```"):
            if lang is None:
                lang, start, body = raw[3:].strip(), n + 1, []
            else:
                if not lang.startswith("{"):
                    blocks.append(Block(name, lang, start, "\n".join(body) + "\n"))
                lang = None
        elif lang is not None:
            body.append(raw)
    assert lang is None, f"{name}:{start - 1}: a fenced block is not closed"
    return blocks


def shell_lines(block: Block) -> list[tuple[int, str]]:
    """(README line, command) of a bash block, continuation lines joined, blanks dropped."""
    out: list[tuple[int, str]] = []
    pending, first = "", 0
    for k, raw in enumerate(block.text.splitlines()):
        if not pending:
            first = block.line + k
        pending += raw.rstrip()
        if pending.endswith("\\"):
            pending = pending[:-1] + " "
            continue
        if pending.strip() and not pending.lstrip().startswith("#"):
            out.append((first, pending.strip()))
        pending = ""
    return out


def not_run_reason(command: str) -> str | None:
    """Why ``command`` is not run (a :data:`NOT_RUN` prefix), or None: it runs."""
    return next((why for p, why in NOT_RUN.items() if command.startswith(p)), None)


BLOCKS = [b for page in PAGES for b in page_blocks(page)]


def _of(lang: str) -> list[Block]:
    return [b for b in BLOCKS if b.lang == lang]


def _block_id(block: Block) -> str:
    return block.id


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder like the repository's root (urdf/, config/) with the bag ``run1``."""
    work = tmp_path_factory.mktemp("readme")
    for folder in ("urdf", "config"):
        (work / folder).symlink_to(ROOT / folder, target_is_directory=True)
    with Reader(GOLDEN) as src, BagWriter(work / "run1", "mcap") as bag:
        for conn in src.connections:
            bag.add_topic(conn.topic, conn.msgtype)
        for conn, t_ns, raw in src.messages():
            bag.write_raw(conn.topic, t_ns, raw)
    return work


def _env(domain: int) -> dict[str, str]:
    """The venv's scripts first on PATH, DDS on this machine in ``domain``."""
    env = local_dds_env(domain)
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}"
    env["MPLBACKEND"] = "Agg"
    return env


def _run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``cmd`` run to its end in a domain of its own."""
    with borrowed_domain() as domain:
        return subprocess.run(
            cmd, cwd=cwd, env=_env(domain), capture_output=True, text=True, timeout=TIMEOUT
        )


def _failure(page: str, where: int, what: str, proc: subprocess.CompletedProcess[str]) -> str:
    return (
        f"{page}:{where}: {what} exited {proc.returncode}\n"
        f"--- stdout\n{proc.stdout[-3000:]}\n--- stderr\n{proc.stderr[-3000:]}"
    )


def test_every_block_is_checked() -> None:
    """Every fenced block has a language this test runs, and each kind is there."""
    untagged = [f"{b.page}:{b.line - 1} ({b.lang or 'no language'})" for b in BLOCKS]
    untagged = [
        u for u, b in zip(untagged, BLOCKS, strict=True) if b.lang not in (*LANGUAGES, *LISTINGS)
    ]
    assert not untagged, "fenced blocks this test does not run: " + ", ".join(untagged)
    assert len(_of("python")) >= 3 and len(_of("bash")) >= 6 and len(_of("yaml")) >= 4


def test_every_not_run_rule_is_used() -> None:
    """A rule that no page's line needs any more is removed, not left to hide a line."""
    commands = [c for b in _of("bash") for _, c in shell_lines(b)]
    unused = [p for p in NOT_RUN if not any(c.startswith(p) for c in commands)]
    assert not unused, f"NOT_RUN prefixes no page's line starts with: {unused}"
    assert sum(not_run_reason(c) is None for c in commands) >= 5  # the scripts' lines run


@pytest.mark.parametrize("block", _of("python"), ids=_block_id)
def test_python_block_runs(block: Block, workdir: Path) -> None:
    script = workdir / f"{Path(block.page).stem}_L{block.line}.py"
    script.write_text(block.text)
    proc = _run([sys.executable, script.name], workdir)
    assert proc.returncode == 0, _failure(block.page, block.line, "the python block", proc)


@pytest.mark.parametrize("block", _of("bash"), ids=_block_id)
def test_shell_block_runs(block: Block, workdir: Path) -> None:
    ran = 0
    for line, command in shell_lines(block):
        if not_run_reason(command) is not None:
            continue
        proc = _run(["bash", "-c", command], workdir)
        assert proc.returncode == 0, _failure(block.page, line, repr(command), proc)
        ran += 1
    if ran == 0:
        reasons = {not_run_reason(c) for _, c in shell_lines(block)}
        pytest.skip(f"{block.page}:{block.line}: not run: {'; '.join(sorted(map(str, reasons)))}")


@pytest.mark.parametrize("block", _of("yaml"), ids=_block_id)
def test_yaml_block_loads(block: Block) -> None:
    where = f"{block.page}:{block.line}"
    data = yaml.safe_load(textwrap.dedent(block.text))
    assert isinstance(data, dict) and data, f"{where}: not a YAML mapping"
    if "/**" not in data:
        return  # a fragment of a params file: it parses
    cfg = config_from_params_data(data)
    tree = KinematicTree.from_urdf_file(ROOT / "urdf" / "panda.urdf")
    params = data["/**"]["ros__parameters"]
    if params.get("robots"):  # several robots: Pandas in place of the example's files
        xml = (ROOT / "urdf" / "panda.urdf").read_text()
        tree = compose_robots([Mounted(str(r), xml) for r in params["robots"]])
    ctrl = Controller(tree, cfg)
    assert [c.name for c in cfg.constraints] == data["/**"]["ros__parameters"]["constraint_names"]
    assert ctrl.joint_names, where


# -- the collision page's obstacles ship: config/panda_obstacles.yaml and its scenario ---------


def _readme_obstacles() -> list[str]:
    """The obstacles of the collision params file the documentation shows."""
    for block in _of("yaml"):
        data = yaml.safe_load(textwrap.dedent(block.text))
        if isinstance(data, dict) and "/**" in data:
            cons = data["/**"]["ros__parameters"]["constraints"]
            for settings in cons.values():
                if settings.get("type") == "collision":
                    return list(settings["obstacles"])
    raise AssertionError("no page shows a collision params file")


def test_the_readme_obstacles_ship_in_config() -> None:
    cfg = load_config(ROOT / "config" / "panda_obstacles.yaml")
    settings = cfg.constraint("collision").settings
    assert settings["obstacles"] == _readme_obstacles()
    assert settings["obstacles"] == ["box 0.5 0.0 0.0 0.4 0.6 0.02", "sphere 0.4 0.3 0.5 0.05"]
    # the self-collision config plus the obstacles
    base = load_config(ROOT / "config" / "panda_self_collision.yaml")
    other = {k: v for k, v in settings.items() if k != "obstacles"}
    assert other == {
        k: v for k, v in base.constraint("collision").settings.items() if k != "obstacles"
    }
    assert "config/panda_obstacles.yaml" in (ROOT / "doc" / "constraints.md").read_text()


def test_the_obstacles_scenario_is_listed_and_reports_what_happened(workdir: Path) -> None:
    listed = _run(["itasc-demo", "--list-scenarios"], workdir)
    assert listed.returncode == 0, listed.stderr
    names = {line.split(":")[0]: line for line in listed.stdout.splitlines()}
    assert "obstacles" in names and "panda_obstacles.yaml" in names["obstacles"]
    out = workdir / "obstacles_quick"
    proc = _run(
        ["itasc-demo", "--scenario", "obstacles", "--quick", "--json", "--out", str(out)],
        workdir,
    )
    assert proc.returncode == 0, proc.stderr
    m = json.loads(proc.stdout.strip().splitlines()[-1])
    print(f"\nobstacles (quick): {m}")
    assert (out / "obstacles.png").stat().st_size > 10_000
    assert m["collision_pairs"] == 44 + 2 * 16  # the SRDF's pairs + each obstacle x 16 shapes
    assert m["obstacles"] == _readme_obstacles()
    margin = m["collision_margin_m"]
    low = min(m["min_obstacle_distance_m"], m["min_self_distance_m"])
    # the report is consistent, whatever happened
    assert m["margin_held"] == (m["ticks_below_margin"] == 0)
    assert m["deepest_below_margin_m"] == pytest.approx(max(0.0, margin - low), abs=1e-12)
    # the targets are inside the obstacles: the arm came within the activation distance and
    # stopped short of them, without touching
    assert m["min_obstacle_distance_m"] < margin + 0.02
    assert 0.0 < m["min_obstacle_distance_m"] and 0.0 < m["final_min_distance_m"]
    assert all(e > 0.05 for e in m["hand_error_end_of_waypoints_m"])

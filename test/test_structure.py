"""The package's shape, read from the source with ``ast`` (nothing of it is imported).

- No import cycle between modules of ``itasc_ros``, counted on module-level imports: those that
  run when the module is imported (``if TYPE_CHECKING:`` blocks included). ``from pkg import
  name`` imports ``pkg.name`` when that is a module, else ``pkg`` (its ``__init__``); importing a
  module is not counted as importing its parent packages. A second test counts the imports
  inside functions too: a deferred import hides a cycle, it does not remove it.
- No upward import, module-level or inside a function: ``core`` never imports the ROS side
  (``ros``, ``tools``, ``params``, ``cli``, ``launch_plan``) nor rclpy and the ROS
  message, service and interface packages; ``ros`` never imports ``tools``;
  ``params``, ``cli``, ``launch_plan`` and ``command_messages`` import none of ``ros``,
  ``tools``. No module of the package imports the benchmarks (``bench/``: ``itasc_bench``, a
  distribution of its own).
- Inside ``core``, the concept sub-packages depend one way (:data:`CORE_DEPENDS`), and each
  says what it is and re-exports its public names.
- At most :data:`MAX_CORE_TOP_LEVEL` ``.py`` files at the top level of ``core/``.
- No module over :data:`MAX_MODULE_LINES` lines: a longer one holds several concepts (a
  class is split by the objects it is composed of, not across files to keep modules short).
- Classes are composed, not stacked: no class of the project (package and benchmarks) has more
  than one base class of the project's own; an attribute is assigned in its own class only
  (``self.x = ...`` in that class's methods; never by a subclass, never as ``other.x = ...``
  on another project object, except the fields of a record: a dataclass, or a class with no
  method but its constructor); a subclass reads no private attribute of its base.
- Every module path that doc/architecture.md names in backticks exists, and its module list names
  every module of the package and of the benchmarks (``__init__`` and ``__main__`` aside).
- ``test/`` mirrors the package: each folder of tests is a part or concept folder of
  ``itasc_ros/`` (or ``bench``, the benchmarks), and only the tests of what spans the parts stay
  at its top.
"""

from __future__ import annotations

import ast
import importlib
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = "itasc_ros"

MAX_CORE_TOP_LEVEL = 8
MAX_MODULE_LINES = 900

CORE_DEPENDS: dict[str, tuple[str, ...]] = {
    "kinematics": (),
    "constraints": ("kinematics",),
    "solve": ("kinematics", "constraints"),
    "control": ("kinematics", "constraints", "solve"),
    "ik": ("kinematics", "constraints", "solve"),
}
"""``core``'s concept sub-packages and the ones each may import (besides :data:`CORE_BASE`):
kinematics <- constraints <- solve <- control, ik. The other top-level modules of ``core``
(``__init__``, ``scenarios``) sit above all of them."""

CORE_BASE = ("errors", "latest_worker", "compiled_cache", "compiled_call", "lazy", "paths")
"""Top-level modules of ``core`` that every sub-package may import; they import none."""

ROS_SIDE = ("ros", "tools", "params", "cli", "launch_plan", "command_messages")

FORBIDDEN: dict[str, tuple[str, ...]] = {
    "core": ROS_SIDE,
    "ros": ("tools",),
    "params": ("ros", "tools"),
    "cli": ("ros", "tools"),
    "launch_plan": ("ros", "tools"),
    "command_messages": ("ros", "tools"),
}
"""Part of ``itasc_ros`` -> the parts it must not import."""

BENCH = REPO / "bench" / "itasc_bench"
"""The benchmarks' package (the distribution ``bench/``): ``bench/<module>`` in
doc/architecture.md, its tests in ``test/bench/``."""


@dataclass(frozen=True)
class Import:
    """One imported module, resolved to its absolute name."""

    source: str
    target: str
    line: int
    module_level: bool


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def modules() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its ``__init__``)."""
    return {_module_name(p): p for p in sorted((REPO / PACKAGE).rglob("*.py"))}


def _resolve(source: str, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    is_package = modules()[source].name == "__init__.py"
    base = source.split(".")
    if not is_package:
        base.pop()
    if node.level > 1:
        base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


class _Collector(ast.NodeVisitor):
    def __init__(self, source: str) -> None:
        self.source = source
        self.depth = 0
        self.found: list[Import] = []

    def _add(self, target: str, node: ast.stmt) -> None:
        self.found.append(Import(self.source, target, node.lineno, self.depth == 0))

    def _nested(self, node: ast.AST) -> None:
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _nested

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(alias.name, node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = _resolve(self.source, node)
        for alias in node.names:
            sub = f"{base}.{alias.name}"
            self._add(sub if sub in modules() else base, node)


@cache
def imports() -> list[Import]:
    """Every import statement of the package, module-level or not."""
    found: list[Import] = []
    for name, path in modules().items():
        collector = _Collector(name)
        collector.visit(ast.parse(path.read_text(), str(path)))
        found += collector.found
    return found


def _internal(target: str) -> str | None:
    """The package's module that ``target`` names (its longest known prefix), or None."""
    parts = target.split(".")
    while parts:
        name = ".".join(parts)
        if name in modules():
            return name
        parts.pop()
    return None


def _part(module: str) -> str:
    """``itasc_ros.core.control.controller`` -> ``core``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _is_ros_package(target: str) -> bool:
    top = target.split(".")[0]
    return (
        top.startswith(("rclpy", "rosidl", "rosbag2", "launch"))
        or top.endswith(("_msgs", "_srvs", "_interfaces"))
        or top in ("rcl_interfaces", "message_filters", "tf2_ros", "ament_index_python")
    )


def find_cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component of more than one module (or a self-import)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan, recursive: the graph is small
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in edges.get(v, ()):
                components.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return [_cycle_in(component, edges) for component in components]


def _cycle_in(component: list[str], edges: dict[str, set[str]]) -> list[str]:
    """A path start -> ... -> start inside one strongly connected component (breadth first)."""
    start, members = component[0], set(component)
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(edges.get(v, set()) & members):
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [start, *reversed(path[:-1]), start]
                if w not in came_from:
                    came_from[w] = v
                    nxt.append(w)
        frontier = nxt
    raise AssertionError(f"not a cycle: {component}")


def module_edges(module_level_only: bool = True) -> dict[str, set[str]]:
    """Module -> the package's modules it imports."""
    edges: dict[str, set[str]] = {name: set() for name in modules()}
    for imp in imports():
        target = _internal(imp.target)
        if target is not None and (imp.module_level or not module_level_only):
            edges[imp.source].add(target)
    return edges


def test_no_import_cycle() -> None:
    cycles = find_cycles(module_edges())
    assert not cycles, "import cycles (module-level imports):\n" + "\n".join(
        " -> ".join(cycle) for cycle in cycles
    )


def test_no_import_cycle_through_deferred_imports() -> None:
    cycles = find_cycles(module_edges(module_level_only=False))
    assert not cycles, (
        "import cycles (imports inside functions included; move the shared piece into a module "
        "of its own):\n" + "\n".join(" -> ".join(cycle) for cycle in cycles)
    )


def test_find_cycles_reports_the_cycle() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e"}}
    assert find_cycles(edges) == [["a", "b", "c", "a"], ["e", "e"]]
    assert find_cycles({"a": {"b"}, "b": set()}) == []


def test_no_upward_import() -> None:
    wrong = []
    for imp in imports():
        part = _part(imp.source)
        target = _internal(imp.target)
        forbidden = FORBIDDEN.get(part, ())
        bad = target is not None and _part(target) in forbidden
        bad |= part == "core" and _is_ros_package(imp.target)
        if bad:
            wrong.append(f"{modules()[imp.source].relative_to(REPO)}:{imp.line}: {imp.target}")
    assert not wrong, "upward imports:\n" + "\n".join(wrong)


def test_the_package_never_imports_the_benchmarks() -> None:
    wrong = [
        f"{modules()[imp.source].relative_to(REPO)}:{imp.line}: {imp.target}"
        for imp in imports()
        if imp.target.split(".")[0] == "itasc_bench"
    ]
    assert not wrong, "the package imports the benchmarks:\n" + "\n".join(wrong)


def _core_part(module: str) -> str:
    """``itasc_ros.core.control.controller`` -> ``control``; ``itasc_ros.core`` -> ``__init__``."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 else "__init__"


def _may_import(src: str, dst: str) -> bool:
    if src == dst or dst in CORE_BASE:
        return True
    if src in CORE_BASE:
        return False
    if src in CORE_DEPENDS:
        return dst in CORE_DEPENDS[src]
    return dst in CORE_DEPENDS  # the top of core: any sub-package, not another top module


def test_core_subpackages_depend_one_way() -> None:
    wrong = []
    for imp in imports():
        target = _internal(imp.target)
        if _part(imp.source) != "core" or target is None or _part(target) != "core":
            continue
        src, dst = _core_part(imp.source), _core_part(target)
        if not _may_import(src, dst):
            where = f"{modules()[imp.source].relative_to(REPO)}:{imp.line}"
            wrong.append(f"{where}: core/{src} imports {target}")
    layers = "kinematics <- constraints <- solve <- control, ik"
    assert not wrong, f"core: imports against {layers}:\n" + "\n".join(wrong)


def test_core_subpackages_are_all_known() -> None:
    found = {p.parent.name for p in (REPO / PACKAGE / "core").glob("*/__init__.py")}
    assert found == set(CORE_DEPENDS), f"core's sub-packages {sorted(found)} vs CORE_DEPENDS"


def test_core_top_level_is_small() -> None:
    top = sorted(p.name for p in (REPO / PACKAGE / "core").glob("*.py"))
    assert len(top) <= MAX_CORE_TOP_LEVEL, f"{len(top)} modules at the top of core/: {top}"


def test_no_module_is_over_the_size_limit() -> None:
    sizes = {name: len(path.read_text().splitlines()) for name, path in modules().items()}
    over = {name: n for name, n in sizes.items() if n > MAX_MODULE_LINES}
    assert not over, f"modules over {MAX_MODULE_LINES} lines (split by concept): {over}"


def test_core_subpackages_export_their_names() -> None:
    """Each sub-package of ``core`` says what it is and re-exports names it imports (for the
    type checkers; at run time on first use, :mod:`itasc_ros.core.lazy`), each one found (the
    order of ``__all__`` is ruff's RUF022)."""
    for path in sorted((REPO / PACKAGE / "core").glob("*/__init__.py")):
        where = path.relative_to(REPO)
        tree = ast.parse(path.read_text())
        assert ast.get_docstring(tree), f"{where}: no docstring"
        imported = {
            alias.asname or alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom)
            for alias in node.names
        }
        exported = [
            ast.literal_eval(node.value)
            for node in tree.body
            if isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
        ]
        assert len(exported) == 1, f"{where}: no __all__"
        assert exported[0], f"{where}: empty __all__"
        assert set(exported[0]) <= imported, f"{where}: {set(exported[0]) - imported} not imported"
        package = importlib.import_module(f"{PACKAGE}.core.{path.parent.name}")
        for name in exported[0]:
            assert getattr(package, name) is not None, f"{where}: {name}"


ARCHITECTURE_PATH = re.compile(r"`([\w/.]+\.py)`")


def test_architecture_paths_exist() -> None:
    """A path is relative to the repository, to ``itasc_ros/`` or (``bench/...``) to the
    benchmarks' package; a bare file name is found in ``itasc_ros/`` at any depth or at the top
    of ``test/``."""
    named = sorted(set(ARCHITECTURE_PATH.findall((REPO / "doc" / "architecture.md").read_text())))
    assert any(p.startswith("core/") for p in named), "no module path found in doc/architecture.md"
    missing = [
        p
        for p in named
        if not (REPO / p).is_file()
        and not (REPO / PACKAGE / p).is_file()
        and not (p.startswith("bench/") and (BENCH / p.removeprefix("bench/")).is_file())
        and not ("/" not in p and any((REPO / PACKAGE).rglob(p)))
        and not ("/" not in p and (REPO / "test" / p).is_file())
    ]
    assert not missing, f"doc/architecture.md names modules that do not exist: {missing}"


@pytest.mark.parametrize("part", sorted(FORBIDDEN))
def test_every_part_has_modules(part: str) -> None:
    """The rules above name parts that exist (a renamed part would pass silently)."""
    assert any(_part(name) == part for name in modules())


MODULE_LIST = re.compile(r"<!-- modules:begin -->\n```text\n(.*?)```\n<!-- modules:end -->", re.S)


def test_architecture_lists_every_module() -> None:
    block = MODULE_LIST.search((REPO / "doc" / "architecture.md").read_text())
    assert block, "doc/architecture.md has no module list between <!-- modules:begin/end -->"
    listed = {line.split()[0] for line in block.group(1).splitlines() if line.strip()}
    actual = {
        p.relative_to(REPO / PACKAGE).as_posix()
        for p in (REPO / PACKAGE).rglob("*.py")
        if p.name not in ("__init__.py", "__main__.py")
    } | {
        "bench/" + p.relative_to(BENCH).as_posix()
        for p in BENCH.rglob("*.py")
        if p.name not in ("__init__.py", "__main__.py")
    }
    missing = sorted(actual - listed)
    assert not missing, f"modules missing from doc/architecture.md: {missing}"
    stale = {p for p in listed - actual if not p.endswith("/")}
    assert not stale, f"doc/architecture.md lists modules that do not exist: {sorted(stale)}"


TOP_LEVEL_TESTS = {
    "test_dependencies",
    "test_cli_errors",
    "test_cli_help",
    "test_domains",
    "test_launch",
    "test_launch_plan",
    "test_packaging",
    "test_params",
    "test_readme",
    "test_structure",
}
"""Tests of what spans the package's parts (or of its top-level modules, or of the tests' own
DDS domains): at ``test/``'s top."""


def test_the_tests_mirror_the_package() -> None:
    tests = REPO / "test"
    folders = {
        p.parent.relative_to(tests).as_posix()
        for p in tests.rglob("test_*.py")
        if "data" not in p.relative_to(tests).parts
    }
    not_parts = sorted(
        f
        for f in folders - {"."}
        if not (REPO / PACKAGE / f).is_dir()
        and not (f.split("/")[0] == "bench" and (BENCH / f.removeprefix("bench")[1:]).is_dir())
    )
    assert not not_parts, f"test folders that are no folder of {PACKAGE}/: {not_parts}"
    top = {p.stem for p in tests.glob("test_*.py")}
    assert top <= TOP_LEVEL_TESTS, (
        f"tests to move into their part's folder: {top - TOP_LEVEL_TESTS}"
    )


def test_a_test_module_imports_tests_of_its_own_folder_only() -> None:
    """A test file runs alone (``pytest test/ros/test_node.py``): pytest puts its own folder on
    ``sys.path``, so a test module it imports must sit beside it (shared helpers live at the top
    of ``test/``, which conftest.py puts on the path)."""
    tests = REPO / "test"
    wrong = []
    for path in tests.rglob("test_*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            for name in names:
                if name.startswith("test_") and not (path.parent / f"{name}.py").is_file():
                    wrong.append(f"{path.relative_to(tests)} imports {name}")
    assert not wrong, wrong


# --------------------------------------------------------------------------- composition
#: Assignments to attributes of objects that are not the project's nor ROS messages (their
#: names happen to be an attribute of a project class too), each with what the object is.
FOREIGN_ASSIGNMENTS = {
    "itasc_ros/tools/demo/video.py: cam.distance": "a MuJoCo MjvCamera",
    "bench/itasc_bench/peers/placo_worker.py: solver.dt": "a PlaCo KinematicsSolver",
}

MESSAGE_PACKAGES = (
    "builtin_interfaces", "diagnostic_msgs", "geometry_msgs", "nav_msgs", "sensor_msgs",
    "std_msgs", "trajectory_msgs", "visualization_msgs",
)  # fmt: skip
"""The ROS message packages the project fills messages of: their fields are data (records)."""


@cache
def message_fields() -> frozenset[str]:
    """The field names of every message of :data:`MESSAGE_PACKAGES` (read from the installed
    messages: the one import of this module)."""
    out: set[str] = set()
    for pkg in MESSAGE_PACKAGES:
        mod = importlib.import_module(f"{pkg}.msg")
        for name in dir(mod):
            fields = getattr(getattr(mod, name), "get_fields_and_field_types", None)
            if fields is not None:
                out |= set(fields())
    return frozenset(out)


@dataclass(frozen=True)
class ClassInfo:
    """A class of the project as the source defines it."""

    name: str
    path: str  # relative to the repository
    node: ast.ClassDef


def _source_files() -> list[Path]:
    return sorted([*(REPO / PACKAGE).rglob("*.py"), *BENCH.rglob("*.py")])


@cache
def _parsed(path: Path) -> ast.Module:
    return ast.parse(path.read_text())


@cache
def project_classes() -> dict[str, list[ClassInfo]]:
    """Every class of the package and of the benchmarks, by name."""
    out: dict[str, list[ClassInfo]] = {}
    for path in _source_files():
        for node in ast.walk(_parsed(path)):
            if isinstance(node, ast.ClassDef):
                rel = str(path.relative_to(REPO))
                out.setdefault(node.name, []).append(ClassInfo(node.name, rel, node))
    return out


def _base_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Subscript):
        return _base_name(node.value)
    return None


def _project_bases(c: ClassInfo) -> list[str]:
    known = project_classes()
    return [b for b in map(_base_name, c.node.bases) if b is not None and b in known]


def _assigned_targets(node: ast.AST) -> list[ast.Attribute]:
    """The attributes assigned by the assignment statements under ``node``."""
    out: list[ast.Attribute] = []
    for n in ast.walk(node):
        targets: list[ast.expr] = []
        if isinstance(n, ast.Assign):
            targets = list(n.targets)
        elif isinstance(n, (ast.AugAssign, ast.AnnAssign)):
            targets = [n.target]
        while targets:
            t = targets.pop()
            if isinstance(t, (ast.Tuple, ast.List)):
                targets += t.elts
            elif isinstance(t, ast.Attribute):
                out.append(t)
    return out


def _is_self(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id in ("self", "cls")


def _self_assigned(c: ClassInfo) -> set[str]:
    """The attributes the class's own methods assign on ``self``."""
    out: set[str] = set()
    for f in c.node.body:
        if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out |= {t.attr for t in _assigned_targets(f) if _is_self(t.value)}
    return out


def _is_record(c: ClassInfo) -> bool:
    """A dataclass, or a class with no method but its constructor and its fields' accessors
    (properties over a packed array of its own, a compiled kernel's view): its fields are
    data."""
    for d in c.node.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        if _base_name(target) == "dataclass":
            return True
    methods = [f for f in c.node.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))]
    return all(f.name == "__init__" or _is_accessor(f) for f in methods)


def _is_accessor(f: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A property's getter or setter."""
    for d in f.decorator_list:
        if isinstance(d, ast.Name) and d.id == "property":
            return True
        if isinstance(d, ast.Attribute) and d.attr == "setter":
            return True
    return False


def _setters(c: ClassInfo) -> set[str]:
    """The properties of the class with a setter (assigning one calls the class's method)."""
    out: set[str] = set()
    for f in c.node.body:
        if isinstance(f, ast.FunctionDef):
            for d in f.decorator_list:
                if isinstance(d, ast.Attribute) and d.attr == "setter":
                    out.add(f.name)
    return out


def _ancestors(c: ClassInfo) -> list[ClassInfo]:
    known, out, todo = project_classes(), [], list(_project_bases(c))
    while todo:
        for base in known[todo.pop()]:
            out.append(base)
            todo += _project_bases(base)
    return out


def test_no_class_has_two_project_bases() -> None:
    """Composition, not a stack of mixins: at most one base class of the project's own."""
    many = [
        f"{c.path}: {c.name}({', '.join(_project_bases(c))})"
        for defs in project_classes().values()
        for c in defs
        if len(_project_bases(c)) > 1
    ]
    assert not many, "classes with several bases of the project's own:\n" + "\n".join(many)


def test_a_subclass_assigns_and_reads_its_own_attributes() -> None:
    """A subclass never assigns an attribute its base assigns, nor reads a private one of it."""
    bad = []
    for defs in project_classes().values():
        for c in defs:
            own = _self_assigned(c)
            for base in _ancestors(c):
                theirs = _self_assigned(base)
                for attr in sorted(own & theirs):
                    bad.append(f"{c.path}: {c.name} assigns self.{attr} of {base.name}")
                read = {
                    n.attr
                    for n in ast.walk(c.node)
                    if isinstance(n, ast.Attribute) and _is_self(n.value)
                }
                for attr in sorted((read & theirs) - own):
                    if attr.startswith("_"):
                        bad.append(f"{c.path}: {c.name} reads {base.name}'s private self.{attr}")
    assert not bad, "\n".join(bad)


def test_no_attribute_is_assigned_outside_its_class() -> None:
    """``x.attr = ...`` on another object only for a record's fields (a dataclass's, a ROS
    message's) or a property's setter."""
    owners: dict[str, set[str]] = {}
    data: set[str] = set(message_fields())
    for defs in project_classes().values():
        for c in defs:
            data |= _setters(c)
            if _is_record(c):
                data |= _self_assigned(c)
                data |= {
                    s.target.id
                    for s in c.node.body
                    if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
                }
            else:
                for attr in _self_assigned(c):
                    owners.setdefault(attr, set()).add(c.name)
    inside: dict[int, str] = {}  # an assignment's node -> the class whose method makes it
    for defs in project_classes().values():
        for c in defs:
            for t in _assigned_targets(c.node):
                inside[id(t)] = c.name
    bad = []
    for path in _source_files():
        rel = str(path.relative_to(REPO))
        for t in _assigned_targets(_parsed(path)):
            if _is_self(t.value) or t.attr not in owners or t.attr in data:
                continue
            if inside.get(id(t)) in owners[t.attr]:  # on another instance of its own class
                continue
            where = f"{rel}: {ast.unparse(t)}"
            if where not in FOREIGN_ASSIGNMENTS:
                bad.append(f"{where} (an attribute of {', '.join(sorted(owners[t.attr]))})")
    assert not bad, "attributes assigned outside their class:\n" + "\n".join(bad)


def test_the_foreign_assignments_are_still_there() -> None:
    """Each exception of :data:`FOREIGN_ASSIGNMENTS` still names a line of the source."""
    found = set()
    for path in _source_files():
        rel = str(path.relative_to(REPO))
        for t in _assigned_targets(_parsed(path)):
            found.add(f"{rel}: {ast.unparse(t)}")
    assert not set(FOREIGN_ASSIGNMENTS) - found


#: Private attributes read on another object than ``self``, each with why it is not a part's
#: state read from outside (``rclpy_compat.py`` is the one module that reaches into rclpy).
FOREIGN_PRIVATE_READS = {
    "itasc_ros/core/solve/solve_result.py: obj._info": "SolveResult's own fields' descriptor",
}
PRIVATE_OK_MODULES = ("itasc_ros/ros/rclpy_compat.py",)
PRIVATE_OK_NAMES = ("etree._Element",)  # lxml's element type, its public name


def _private_reads(tree: ast.AST) -> list[ast.Attribute]:
    """``x._name`` (not a dunder) on anything but ``self``, ``cls`` or ``super()``."""
    out = []
    for n in ast.walk(tree):
        if not (isinstance(n, ast.Attribute) and n.attr.startswith("_")):
            continue
        if n.attr.startswith("__") or _is_self(n.value):
            continue
        v = n.value
        if isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id == "super":
            continue
        out.append(n)
    return out


def test_no_private_attribute_is_read_outside_its_class() -> None:
    """A part's private state is its own: another object reads it through its interface.

    Allowed: another instance of the class's own (``old._model`` in ``Controller``), the
    exceptions of :data:`FOREIGN_PRIVATE_READS`, and rclpy's private attributes in the one
    module that may use them (see :mod:`itasc_ros.ros.rclpy_compat`).
    """
    inside: dict[int, ClassInfo] = {}  # a read's node -> the class whose body has it
    for defs in project_classes().values():
        for c in defs:
            for a in _private_reads(c.node):
                inside[id(a)] = c
    bad = []
    for path in _source_files():
        rel = str(path.relative_to(REPO))
        if rel in PRIVATE_OK_MODULES:
            continue
        for a in _private_reads(_parsed(path)):
            text = ast.unparse(a)
            c = inside.get(id(a))
            if c is not None and a.attr in _self_assigned(c):  # its own class's state
                continue
            if text in PRIVATE_OK_NAMES or f"{rel}: {text}" in FOREIGN_PRIVATE_READS:
                continue
            bad.append(f"{rel}:{a.lineno}: {text}")
    assert not bad, "private attributes read outside their class:\n" + "\n".join(bad)


def test_the_foreign_private_reads_are_still_there() -> None:
    """Each exception of :data:`FOREIGN_PRIVATE_READS` still names a read of the source."""
    found = {
        f"{path.relative_to(REPO)}: {ast.unparse(a)}"
        for path in _source_files()
        for a in _private_reads(_parsed(path))
    }
    assert not set(FOREIGN_PRIVATE_READS) - found

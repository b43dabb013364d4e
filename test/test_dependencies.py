"""package.xml and setup.py declare what the installed package imports at run time.

A ROS install (``rosdep install``) gets its dependencies from package.xml's ``exec_depend``
keys, a pip install from setup.py's ``install_requires`` and its ``ros`` extra. Both are checked
against the imports of the package's modules (the benchmark harness excluded) and of its launch
file: every module imported outside the standard library has a declared key, and every declared
key is used, by an import or by a reason written here.
"""

from __future__ import annotations

import ast
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import itasc_ros

REPO = Path(__file__).resolve().parents[1]
PACKAGE = Path(itasc_ros.__file__).resolve().parent

#: Import name -> (rosdep key, PyPI distribution or None where pip gets it from the ros extra).
#: The rosdep keys are those of ros/rosdistro (rosdep/python.yaml, rosdep/base.yaml) or
#: packages released into Humble, Jazzy and Kilted (their distribution.yaml).
IMPORTS: dict[str, tuple[str, str | None]] = {
    "numpy": ("python3-numpy", "numpy"),
    "numba": ("python3-numba", "numba"),
    "scipy": ("python3-scipy", "scipy"),
    "lxml": ("python3-lxml", "lxml"),
    "yaml": ("python3-yaml", "pyyaml"),
    "matplotlib": ("python3-matplotlib", "matplotlib"),
    "rosbags": ("python3-rosbags-pip", "rosbags"),
    "urdf_parser_py": ("urdfdom_py", "urdfdom-py"),
    "coal": ("coal", "coal"),
    "mujoco": ("python3-mujoco-pip", "mujoco"),
    "PIL": ("python3-pil", "pillow"),
    "rclpy": ("rclpy", None),
    "rcl_interfaces": ("rcl_interfaces", None),
    "builtin_interfaces": ("builtin_interfaces", None),
    "std_msgs": ("std_msgs", None),
    "std_srvs": ("std_srvs", None),
    "geometry_msgs": ("geometry_msgs", None),
    "nav_msgs": ("nav_msgs", None),
    "sensor_msgs": ("sensor_msgs", None),
    "trajectory_msgs": ("trajectory_msgs", None),
    "visualization_msgs": ("visualization_msgs", None),
    "diagnostic_msgs": ("diagnostic_msgs", None),
    "launch": ("launch", None),
    "launch_ros": ("launch_ros", None),
    "ament_index_python": ("ament_index_python", None),
    "xacro": ("xacro", "xacro"),
}
#: Keys declared for a reason other than an import.
NOT_IMPORTED = {
    "python3-scipy": "numba's np.linalg calls SciPy's LAPACK (imported by numba, not by us)",
    "robot_state_publisher": "the launch file starts it (start_rsp:=true)",
}
#: Imports that pip does not install by default, with where they come from.
PIP_OPTIONAL = {
    "launch": "a ROS install (ros2 launch)",
    "launch_ros": "a ROS install (ros2 launch)",
    "ament_index_python": "a ROS install (the launch file; tools fall back to the repository)",
    "xacro": "the launch extra (xacro description files)",
}
#: Keys that must not be forced onto a headless robot computer.
DISPLAY_ONLY = {"rviz2", "rviz_common", "rqt", "rqt_gui"}


def _third_party_imports() -> dict[str, set[str]]:
    """Top-level modules imported by the package (bench excluded) and its launch file."""
    files = [p for p in PACKAGE.rglob("*.py") if "bench" not in p.relative_to(PACKAGE).parts]
    files += sorted((REPO / "launch").glob("*.py"))
    found: dict[str, set[str]] = {}
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top != "itasc_ros":
                    found.setdefault(top, set()).add(str(path.relative_to(PACKAGE.parent)))
    return found


def _exec_depends() -> list[str]:
    root = ET.parse(REPO / "package.xml").getroot()
    return [e.text.strip() for e in root.iter("exec_depend") if e.text]


def _extras() -> dict[str, set[str]]:
    """setup.py's install_requires (key "") and its extras, as lower-case distribution names."""
    tree = ast.parse((REPO / "setup.py").read_text())
    call = next(
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "setup"
    )
    values = {k.arg: k.value for k in call.keywords}
    out = {"": ast.literal_eval(values["install_requires"])}
    extras = values["extras_require"]
    assert isinstance(extras, ast.Dict)
    for k, v in zip(extras.keys, extras.values, strict=True):
        assert isinstance(k, ast.Constant)
        out[str(k.value)] = ast.literal_eval(v)
    return {
        key: {r.split(">")[0].split("=")[0].split("<")[0].strip().lower() for r in reqs}
        for key, reqs in out.items()
    }


def test_every_run_time_import_has_a_rosdep_key_in_package_xml() -> None:
    imports = _third_party_imports()
    unknown = sorted(set(imports) - set(IMPORTS))
    assert not unknown, f"imports without a known rosdep key: {unknown} (in {imports})"
    declared = set(_exec_depends())
    missing = {
        IMPORTS[m][0]: sorted(f) for m, f in imports.items() if IMPORTS[m][0] not in declared
    }
    assert not missing, f"package.xml lacks the exec_depend of: {missing}"


def test_every_declared_key_is_used() -> None:
    used = {IMPORTS[m][0] for m in _third_party_imports()} | set(NOT_IMPORTED)
    depends = _exec_depends()
    assert len(depends) == len(set(depends)), "an exec_depend is declared twice"
    unused = sorted(set(depends) - used)
    assert not unused, f"exec_depend keys nothing imports: {unused}"


def test_no_display_only_dependency_on_a_robot_computer() -> None:
    assert not DISPLAY_ONLY & set(_exec_depends())


@pytest.mark.parametrize(("extra", "prefix"), [("ros", "ros-"), ("jazzy", "ros-jazzy-")])
def test_pip_installs_every_run_time_import(extra: str, prefix: str) -> None:
    extras = _extras()
    for module in _third_party_imports():
        key, dist = IMPORTS[module]
        if module in PIP_OPTIONAL or module in {"rcl_interfaces", "builtin_interfaces"}:
            continue  # a ROS install's, or rclpy's own dependencies
        if dist is not None:
            assert dist in extras[""], f"setup.py install_requires lacks {dist} (for {module})"
        else:
            wheel = prefix + key.replace("_", "-")
            assert wheel in extras[extra], f"the {extra} extra lacks {wheel} (for {module})"

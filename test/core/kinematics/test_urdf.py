"""Bad, hostile and messy URDFs: bad ones raise a precise ItascError, messy ones load silently.

The corpus of bad URDFs is ``test/data/bad_urdfs/*.urdf``; ``expected.json`` there maps each file
to the exception class and the message substrings (what is wrong and, where there is a finite
set, the valid choices). Oracles for the valid cases are hand-written transforms (Rodrigues'
formula) and central finite differences, not the tree's own code.
"""

from __future__ import annotations

import json
import threading
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from itasc_ros.core import errors
from itasc_ros.core.errors import (
    ConfigurationError,
    ItascError,
    UnknownJointError,
    UnknownLinkError,
    UrdfSyntaxError,
)
from itasc_ros.core.kinematics import urdf
from itasc_ros.core.kinematics.tree import KinematicTree

DATA = Path(__file__).resolve().parents[2] / "data" / "bad_urdfs"
EXPECTED: dict[str, dict[str, object]] = {
    k: v
    for k, v in json.loads((DATA / "expected.json").read_text(encoding="utf-8")).items()
    if not k.startswith("_")
}
BAD_FILES = sorted(p.name for p in DATA.glob("*.urdf"))

FD_STEP = 1e-6  # [rad or m] central-difference step
FD_TOL = 1e-7  # Jacobian entries against central differences
FK_TOL = 1e-12  # [m] poses against the hand-written oracle


def assert_silent(capfd: pytest.CaptureFixture[str]) -> None:
    out, err = capfd.readouterr()
    assert err == "", f"stderr: {err!r}"
    assert out == "", f"stdout: {out!r}"


def expect_error(
    capfd: pytest.CaptureFixture[str],
    cls: type[ItascError],
    parts: list[str],
    fn: Callable[..., object],
    *args: object,
) -> ItascError:
    capfd.readouterr()
    with pytest.raises(ItascError) as info:
        fn(*args)
    assert type(info.value) is cls, f"{type(info.value).__name__}: {info.value}"
    msg = str(info.value)
    for part in parts:
        assert part in msg, f"{part!r} not in {msg!r}"
    assert_silent(capfd)
    return info.value


# ----------------------------------------------------------------------------- oracle helpers
def rot(axis: list[float] | np.ndarray, angle: float) -> np.ndarray:
    """(4, 4) rotation by ``angle`` [rad] about the unit ``axis`` (Rodrigues)."""
    a = np.asarray(axis, dtype=float)
    a = a / np.linalg.norm(a)
    k = np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])
    t = np.eye(4)
    t[:3, :3] = np.eye(3) + np.sin(angle) * k + (1.0 - np.cos(angle)) * (k @ k)
    return t


def trans(x: float, y: float, z: float) -> np.ndarray:
    t = np.eye(4)
    t[:3, 3] = (x, y, z)
    return t


def fd_jacobian(tree: KinematicTree, q: np.ndarray, link: str) -> np.ndarray:
    """(6, n) central-difference Jacobian: linear rows from positions, angular from dR R^T."""
    r0 = tree.forward_kinematics(q, link)[:3, :3]
    out = np.zeros((6, q.size))
    for i in range(q.size):
        dq = np.zeros(q.size)
        dq[i] = FD_STEP
        tp = tree.forward_kinematics(q + dq, link)
        tm = tree.forward_kinematics(q - dq, link)
        out[:3, i] = (tp[:3, 3] - tm[:3, 3]) / (2 * FD_STEP)
        w = (tp[:3, :3] - tm[:3, :3]) / (2 * FD_STEP) @ r0.T  # skew(omega)
        out[3:, i] = (w[2, 1], w[0, 2], w[1, 0])
    return out


# ----------------------------------------------------------------------------- the bad corpus
def test_corpus_and_table_agree() -> None:
    assert len(BAD_FILES) >= 20
    assert sorted(EXPECTED) == BAD_FILES
    for name, entry in EXPECTED.items():
        cls = getattr(errors, str(entry["error"]), None)
        assert isinstance(cls, type) and issubclass(cls, ItascError), name
        assert entry["message"], name


@pytest.mark.parametrize("name", BAD_FILES)
def test_bad_urdf_file_raises(name: str, capfd: pytest.CaptureFixture[str]) -> None:
    entry = EXPECTED[name]
    cls = getattr(errors, str(entry["error"]))
    parts = list(entry["message"])  # type: ignore[call-overload]
    expect_error(capfd, cls, parts, KinematicTree.from_urdf_file, DATA / name)
    # The same document given as bytes (and as str where it decodes) fails the same way.
    data = (DATA / name).read_bytes()
    expect_error(capfd, cls, parts, KinematicTree.from_urdf, data)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return
    expect_error(capfd, cls, parts, KinematicTree.from_urdf, text)


# ----------------------------------------------------------------------------- generated cases
def _nested(levels: int) -> str:
    return (
        '<robot name="deep"><link name="base"/><gazebo>'
        + "<x>" * levels
        + "</x>" * levels
        + "</gazebo></robot>"
    )


def test_deep_nesting_rejected(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    # robot (1) > gazebo (2) > x...: MAX_XML_DEPTH levels load, one more does not.
    ok = tmp_path / "at_limit.urdf"
    ok.write_text(_nested(urdf.MAX_XML_DEPTH - 2))
    assert KinematicTree.from_urdf_file(ok).link_names == ["base"]
    assert_silent(capfd)
    for levels in (urdf.MAX_XML_DEPTH - 1, 1000, 100_000):  # ours, then libxml2's own limit
        path = tmp_path / f"deep_{levels}.urdf"
        path.write_text(_nested(levels))
        expect_error(
            capfd,
            UrdfSyntaxError,
            [f"more than {urdf.MAX_XML_DEPTH}", "deep"],
            KinematicTree.from_urdf_file,
            path,
        )


def test_file_over_size_limit_rejected(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(urdf, "MAX_URDF_BYTES", 4096)
    small = '<robot name="r"><link name="base"/></robot>'
    big = small.replace("<link", "<!--" + "x" * 5000 + "--><link")
    path = tmp_path / "big.urdf"
    path.write_text(big)
    n = len(big.encode())
    parts = [f"URDF is {n} bytes", "largest accepted is 4096 bytes"]
    expect_error(capfd, UrdfSyntaxError, parts, KinematicTree.from_urdf_file, path)
    expect_error(capfd, UrdfSyntaxError, parts, KinematicTree.from_urdf, big)
    assert KinematicTree.from_urdf(small).link_names == ["base"]
    assert_silent(capfd)


def test_external_entity_never_read(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-MARKER")
    doc = (
        f'<?xml version="1.0"?>\n<!DOCTYPE robot [<!ENTITY xxe SYSTEM "{secret.as_uri()}">]>\n'
        '<robot name="r"><link name="base"/><gazebo>&xxe;</gazebo></robot>'
    )
    err = expect_error(capfd, UrdfSyntaxError, ["<!DOCTYPE>"], KinematicTree.from_urdf, doc)
    assert "TOP-SECRET-MARKER" not in str(err)


def test_entity_expansion_in_text_rejected(capfd: pytest.CaptureFixture[str]) -> None:
    ents = '<!ENTITY a0 "lol">' + "".join(
        f'<!ENTITY a{i} "{f"&a{i - 1};" * 10}">' for i in range(1, 10)
    )
    body = '<robot name="r"><link name="base"/><gazebo>&a9;</gazebo></robot>'
    doc = f"<!DOCTYPE robot [{ents}]>{body}"
    expect_error(capfd, UrdfSyntaxError, ["<!DOCTYPE>"], KinematicTree.from_urdf, doc)


def test_doctype_in_utf16_rejected(capfd: pytest.CaptureFixture[str]) -> None:
    doc = (
        '<?xml version="1.0" encoding="UTF-16"?><!DOCTYPE robot>'
        '<robot name="r"><link name="b"/></robot>'
    )
    data = doc.encode("utf-16")  # with a byte-order mark
    expect_error(capfd, UrdfSyntaxError, ["<!DOCTYPE>"], KinematicTree.from_urdf, data)


def test_unreadable_file(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope.urdf"
    expect_error(
        capfd,
        UrdfSyntaxError,
        ["cannot read URDF file", "nope.urdf"],
        KinematicTree.from_urdf_file,
        missing,
    )
    expect_error(
        capfd, UrdfSyntaxError, ["cannot read URDF file"], KinematicTree.from_urdf_file, tmp_path
    )


def test_wrong_input_type(capfd: pytest.CaptureFixture[str]) -> None:
    expect_error(capfd, UrdfSyntaxError, ["str or bytes", "int"], KinematicTree.from_urdf, 123)


# ----------------------------------------------------------------------------- messy but valid
MESSY = """<?xml version="1.0" encoding="UTF-8"?>
<!-- A robot as exported by a CAD tool: comments, vendor tags, unknown attributes. -->
<?some-processing-instruction keep="calm"?>
<robot name="messy" xmlns:xacro="http://www.ros.org/wiki/xacro" vendor:id="7"
       xmlns:vendor="http://example.com/vendor" version="1.0">
  <material name="grey"><color rgba="0.5 0.5 0.5 1"/></material>
  <link name="base" color="blue">
    <inertial>
      <origin xyz="0 0 0.05" rpy="0 0 0"/>
      <mass value="4.0"/>
      <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.02"/>
    </inertial>
    <visual name="base_visual">
      <origin xyz="0 0 0.05"/>
      <geometry>
        <mesh filename="package://messy/meshes/base.dae" scale="0.001 0.001 0.001"/>
      </geometry>
      <material name="grey"/>
    </visual>
    <collision>
      <geometry><cylinder radius="0.06" length="0.1"/></geometry>
    </collision>
    <sensor_mount frame="cam"/>
  </link>
  <!-- the continuous base joint -->
  <joint name="yaw" type="continuous" foo="bar">
    <parent link="base"/>
    <child link="l1"/>
    <origin xyz="0 0 0.1" rpy="0 0 0"/>
    <axis xyz="0 0 2"/>
    <limit effort="10" velocity="1.5"/>
    <dynamics damping="0.1" friction="0.0"/>
    <safety_controller k_velocity="10" soft_lower_limit="-1" soft_upper_limit="1"/>
    <calibration rising="0.0"/>
  </joint>
  <link name="l1">
    <visual>
      <geometry><box size="0.1 0.1 0.3"/></geometry>
      <material name="red"><color rgba="1 0 0 1"/><texture filename="red.png"/></material>
    </visual>
  </link>
  <joint name="lift" type="prismatic">
    <parent link="l1"/>
    <child link="l2"/>
    <origin xyz="0.2 0 0" rpy="0 0 1.5707963267948966"/>
    <axis xyz="0 0 1"/>
    <limit lower="0" upper="0.5" velocity="0.25" effort="100"/>
  </joint>
  <link name="l2"><collision><geometry><sphere radius="0.03"/></geometry></collision></link>
  <joint name="roll" type="revolute"><!-- no <axis>: defaults to x -->
    <parent link="l2"/>
    <child link="l3"/>
    <origin xyz="0 0.3 0"/>
    <limit lower="-2" upper="2.5" velocity="3" effort="5"/>
  </joint>
  <link name="l3"/>
  <joint name="tool_joint" type="fixed"><!-- no <origin>: identity -->
    <parent link="l3"/>
    <child link="tool"/>
  </joint>
  <link name="tool"/>
  <gazebo reference="l1"><material>Gazebo/Grey</material><mu1>0.2</mu1></gazebo>
  <gazebo><plugin name="ctrl" filename="libgazebo_ros2_control.so"/></gazebo>
  <transmission name="t1">
    <type>transmission_interface/SimpleTransmission</type>
    <joint name="yaw"><hardwareInterface>VelocityJointInterface</hardwareInterface></joint>
    <actuator name="m1"><mechanicalReduction>1</mechanicalReduction></actuator>
  </transmission>
  <ros2_control name="hw" type="system">
    <hardware><plugin>mock_components/GenericSystem</plugin></hardware>
    <joint name="yaw">
      <command_interface name="velocity"/><state_interface name="position"/>
    </joint>
  </ros2_control>
</robot>
"""


def messy_oracle(q: np.ndarray) -> dict[str, np.ndarray]:
    yaw, lift, roll = q
    l1 = trans(0, 0, 0.1) @ rot([0, 0, 1], yaw)
    l2 = l1 @ trans(0.2, 0, 0) @ rot([0, 0, 1], np.pi / 2) @ trans(0, 0, lift)
    l3 = l2 @ trans(0, 0.3, 0) @ rot([1, 0, 0], roll)
    return {"base": np.eye(4), "l1": l1, "l2": l2, "l3": l3, "tool": l3}


def test_messy_urdf_loads_silently(capfd: pytest.CaptureFixture[str]) -> None:
    capfd.readouterr()
    tree = KinematicTree.from_urdf(MESSY)
    assert_silent(capfd)
    assert tree.name == "messy"
    assert tree.root_link == "base"
    assert tree.link_names == ["base", "l1", "l2", "l3", "tool"]
    assert tree.joint_names == ["yaw", "lift", "roll"]
    assert tree.joint_types == ["continuous", "prismatic", "revolute"]
    np.testing.assert_array_equal(tree.lower, [-np.inf, 0.0, -2.0])
    np.testing.assert_array_equal(tree.upper, [np.inf, 0.5, 2.5])
    np.testing.assert_array_equal(tree.velocity_limits, [1.5, 0.25, 3.0])
    by_name = {j.name: j for j in tree.joints}
    np.testing.assert_array_equal(by_name["roll"].axis, [1.0, 0.0, 0.0])  # default axis
    np.testing.assert_array_equal(by_name["yaw"].axis, [0.0, 0.0, 1.0])  # normalized
    np.testing.assert_array_equal(by_name["tool_joint"].origin, np.eye(4))  # default origin
    rng = np.random.default_rng(7)
    for _ in range(20):
        q = rng.uniform([-4.0, 0.0, -2.0], [4.0, 0.5, 2.5])
        want = messy_oracle(q)
        for link, pose in want.items():
            np.testing.assert_allclose(tree.forward_kinematics(q, link), pose, atol=FK_TOL)
        for link in ("l2", "tool"):
            np.testing.assert_allclose(
                tree.jacobian(q, link), fd_jacobian(tree, q, link), atol=FD_TOL
            )
    # The prismatic column: translation along the joint axis (in the root frame), no rotation.
    q = np.array([0.3, 0.1, 0.0])
    jac = tree.jacobian(q, "tool")
    np.testing.assert_allclose(jac[:3, 1], messy_oracle(q)["l2"][:3, 2], atol=1e-12)
    np.testing.assert_allclose(jac[3:, 1], 0.0, atol=1e-12)
    assert_silent(capfd)


def test_raw_urdf_parser_is_noisy_on_messy_input(capfd: pytest.CaptureFixture[str]) -> None:
    """Guard for the silence checks: the library underneath does print on this input."""
    from urdf_parser_py.urdf import URDF

    capfd.readouterr()
    URDF.from_xml_string(MESSY.split("\n", 1)[1])  # without the declaration (a str with one)
    _, err = capfd.readouterr()
    assert err != ""


def test_str_and_bytes_inputs_agree(capfd: pytest.CaptureFixture[str]) -> None:
    capfd.readouterr()
    q = np.array([0.4, 0.2, -1.0])
    from_str = KinematicTree.from_urdf(MESSY)
    from_bytes = KinematicTree.from_urdf(MESSY.encode("utf-8"))
    from_bom = KinematicTree.from_urdf(b"\xef\xbb\xbf" + MESSY.encode("utf-8"))
    for tree in (from_bytes, from_bom):
        assert tree.link_names == from_str.link_names
        np.testing.assert_array_equal(
            tree.forward_kinematics(q, "tool"), from_str.forward_kinematics(q, "tool")
        )
    assert_silent(capfd)


LATIN1 = """<?xml version="1.0" encoding="ISO-8859-1"?>
<robot name="r\u00f6bot"><link name="b\u00e4se"/><link name="gr\u00fc\u00dfe"/>
<joint name="j\u00e9" type="continuous"><parent link="b\u00e4se"/><child link="gr\u00fc\u00dfe"/>
</joint></robot>"""


@pytest.mark.parametrize(
    "payload",
    [
        pytest.param(LATIN1.encode("latin-1"), id="latin1-bytes"),
        pytest.param(LATIN1, id="str-with-latin1-declaration"),
        pytest.param(LATIN1.replace("ISO-8859-1", "UTF-16").encode("utf-16"), id="utf16-bytes"),
        pytest.param(LATIN1.replace("ISO-8859-1", "utf-8").encode("utf-8"), id="utf8-bytes"),
    ],
)
def test_declared_encodings(payload: str | bytes, capfd: pytest.CaptureFixture[str]) -> None:
    capfd.readouterr()
    tree = KinematicTree.from_urdf(payload)
    assert tree.name == "r\u00f6bot"
    assert tree.link_names == ["b\u00e4se", "gr\u00fc\u00dfe"]
    assert tree.joint_names == ["j\u00e9"]
    assert_silent(capfd)


def test_single_link_robot(capfd: pytest.CaptureFixture[str]) -> None:
    capfd.readouterr()
    tree = KinematicTree.from_urdf('<robot name="rock"><link name="only"/></robot>')
    assert_silent(capfd)
    assert tree.root_link == "only"
    assert tree.link_names == ["only"]
    assert tree.joint_names == []
    assert tree.lower.shape == tree.upper.shape == tree.velocity_limits.shape == (0,)
    np.testing.assert_array_equal(tree.forward_kinematics(np.zeros(0), "only"), np.eye(4))
    assert tree.jacobian([], "only").shape == (6, 0)


def test_comment_mentioning_doctype_and_xinclude_are_inert(
    capfd: pytest.CaptureFixture[str],
) -> None:
    doc = (
        '<?xml version="1.0"?>\n<!-- no <!DOCTYPE robot [<!ENTITY x "y">]> here -->\n'
        '<robot name="r" xmlns:xi="http://www.w3.org/2001/XInclude">\n'
        '  <link name="base"/>\n'
        '  <xi:include href="file:///etc/passwd" parse="text"/>\n'
        "</robot>"
    )
    capfd.readouterr()
    tree = KinematicTree.from_urdf(doc)
    assert tree.link_names == ["base"]  # XInclude is not processed: nothing read or added
    assert_silent(capfd)


NON_KINEMATIC_QUIRKS = """<robot>
  <material name="metal"><texture/><color rgba="0 0 0 1"/></material>
  <link name="base">
    <visual>
      <geometry><box size="not numbers"/></geometry>
      <material name="metal"><texture/></material>
    </visual>
    <inertial><mass value="heavy"/></inertial>
  </link>
  <link name="tip"/>
  <joint name="j" type="revolute">
    <parent link="base"/><child link="tip"/>
    <axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/>
    <dynamics damping="lots"/>
    <calibration rising="soon"/>
    <safety_controller k_velocity="?"/>
  </joint>
  <transmission name="wrist_trans" type="WristTransmission">
    <rightActuator mechanicalReduction="60.17" name="r_motor"/>
    <flexJoint mechanicalReduction="-1.0" name="j"/>
  </transmission>
</robot>
"""


def test_non_kinematic_quirks_are_ignored(capfd: pytest.CaptureFixture[str]) -> None:
    """Found in real URDFs (PR2 transmissions, iCub textures, nameless robots); urdfdom and
    RViz load them, urdf_parser_py alone rejects them. Kinematics do not depend on them."""
    capfd.readouterr()
    tree = KinematicTree.from_urdf(NON_KINEMATIC_QUIRKS)
    assert_silent(capfd)
    assert tree.name == ""
    assert tree.link_names == ["base", "tip"]
    assert tree.joint_names == ["j"]
    np.testing.assert_allclose(tree.forward_kinematics([0.4], "tip"), rot([0, 0, 1], 0.4))


def test_nameless_robot_without_links(capfd: pytest.CaptureFixture[str]) -> None:
    # example-robot-data's ur_description/urdf/ur3.urdf is exactly this: an empty xacro output.
    expect_error(
        capfd,
        errors.UrdfStructureError,
        ["the <robot> has no <link>"],
        KinematicTree.from_urdf,
        '<?xml version="1.0"?><robot xmlns:xacro="http://wiki.ros.org/xacro"></robot>',
    )


def test_continuous_limits_are_infinite_even_if_given(capfd: pytest.CaptureFixture[str]) -> None:
    doc = (
        '<robot name="r"><link name="a"/><link name="b"/><link name="c"/>'
        '<joint name="c1" type="continuous"><parent link="a"/><child link="b"/>'
        '<limit lower="-1" upper="1" effort="1" velocity="2"/></joint>'
        '<joint name="c2" type="continuous"><parent link="b"/><child link="c"/>'
        '<axis xyz="0 1 0"/></joint></robot>'
    )
    capfd.readouterr()
    tree = KinematicTree.from_urdf(doc)
    assert_silent(capfd)
    np.testing.assert_array_equal(tree.lower, [-np.inf, -np.inf])
    np.testing.assert_array_equal(tree.upper, [np.inf, np.inf])
    np.testing.assert_array_equal(tree.velocity_limits, [2.0, np.inf])
    q = np.array([7.0, -9.0])  # beyond any +-pi wrap
    want = rot([1, 0, 0], 7.0) @ rot([0, 1, 0], -9.0)
    np.testing.assert_allclose(tree.forward_kinematics(q, "c"), want, atol=FK_TOL)


# ----------------------------------------------------------------------------- mimic joints
MIMIC = """<robot name="gripper">
  <link name="base"/><link name="l1"/><link name="l2"/><link name="l3"/><link name="tip"/>
  <link name="finger"/><link name="finger_tip"/>
  <joint name="j1" type="revolute">
    <parent link="base"/><child link="l1"/>
    <origin xyz="0 0 0.3"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" velocity="1" effort="1"/>
  </joint>
  <joint name="j2" type="revolute">
    <parent link="l1"/><child link="l2"/>
    <origin xyz="0.4 0 0"/><axis xyz="0 1 0"/>
    <limit lower="-6" upper="6" velocity="2" effort="1"/>
    <mimic joint="j1" multiplier="-2" offset="0.3"/>
  </joint>
  <joint name="j3" type="prismatic">
    <parent link="l2"/><child link="l3"/>
    <origin xyz="0.2 0 0" rpy="0 0 0.5"/><axis xyz="1 0 0"/>
    <limit lower="0" upper="0.2" velocity="0.1" effort="1"/>
  </joint>
  <joint name="tip_joint" type="fixed">
    <parent link="l3"/><child link="tip"/><origin xyz="0.1 0 0"/>
  </joint>
  <joint name="j4" type="prismatic">
    <parent link="l2"/><child link="finger"/>
    <origin xyz="0 0.05 0"/><axis xyz="0 1 0"/>
    <limit lower="0" upper="0.1" velocity="0.1" effort="1"/>
    <mimic joint="j3" multiplier="0.5"/>
  </joint>
  <joint name="j5" type="prismatic"><!-- a mimic of a mimic -->
    <parent link="finger"/><child link="finger_tip"/>
    <axis xyz="0 0 1"/>
    <limit lower="0" upper="0.3" velocity="0.1" effort="1"/>
    <mimic joint="j4" multiplier="2" offset="0.01"/>
  </joint>
</robot>
"""


def mimic_oracle(q: np.ndarray) -> dict[str, np.ndarray]:
    a, b = q
    l2 = trans(0, 0, 0.3) @ rot([0, 0, 1], a) @ trans(0.4, 0, 0) @ rot([0, 1, 0], -2 * a + 0.3)
    l3 = l2 @ trans(0.2, 0, 0) @ rot([0, 0, 1], 0.5) @ trans(b, 0, 0)
    finger = l2 @ trans(0, 0.05, 0) @ trans(0, 0.5 * b, 0)
    return {
        "l2": l2,
        "tip": l3 @ trans(0.1, 0, 0),
        "finger": finger,
        "finger_tip": finger @ trans(0, 0, 2 * (0.5 * b) + 0.01),
    }


def check_mimic_links(tree: KinematicTree, links: list[str]) -> None:
    rng = np.random.default_rng(11)
    for _ in range(20):
        q = rng.uniform([-3.0, 0.0], [3.0, 0.2])
        want = mimic_oracle(q)
        for link in links:
            np.testing.assert_allclose(tree.forward_kinematics(q, link), want[link], atol=FK_TOL)
            jac = tree.jacobian(q, link)
            assert jac.shape == (6, 2)
            np.testing.assert_allclose(jac, fd_jacobian(tree, q, link), atol=FD_TOL)


def test_mimic_joints_fk_and_jacobian(capfd: pytest.CaptureFixture[str]) -> None:
    capfd.readouterr()
    tree = KinematicTree.from_urdf(MIMIC)
    assert_silent(capfd)
    assert tree.joint_names == ["j1", "j3"]  # mimics follow their leader
    np.testing.assert_array_equal(tree.lower, [-3.0, 0.0])
    check_mimic_links(tree, ["l2", "tip", "finger"])
    # The mimic's rotation is folded into j1's column: at "l2", j1 alone would give angular
    # velocity z, the mimic adds -2 times its own (rotated) y axis.
    q = np.array([0.7, 0.1])
    jac = tree.jacobian(q, "l2")
    y_in_root = mimic_oracle(q)["l2"][:3, 1]
    np.testing.assert_allclose(jac[3:, 0], [0.0, 0.0, 1.0] - 2.0 * y_in_root, atol=1e-12)
    # The mimic-of-mimic finger_tip moves at d(2 * 0.5 b)/db = 1 along z of finger, plus the
    # finger's own 0.5 along its y.
    jac = tree.jacobian(q, "finger_tip")
    r_finger = mimic_oracle(q)["finger"][:3, :3]
    np.testing.assert_allclose(jac[:3, 1], r_finger @ [0.0, 0.5, 1.0], atol=1e-12)
    assert_silent(capfd)


def test_mimic_of_mimic_offset() -> None:
    check_mimic_links(KinematicTree.from_urdf(MIMIC), ["finger_tip"])


# ----------------------------------------------------------------------------- tree API errors
def test_unknown_link_lists_valid_links(capfd: pytest.CaptureFixture[str]) -> None:
    tree = KinematicTree.from_urdf(MIMIC)
    q = np.zeros(2)
    links = "'base', 'l1', 'l2', 'l3', 'finger', 'tip', 'finger_tip'"
    parts = ["unknown link 'gripper_link'", f"links are: {links}"]
    err = expect_error(capfd, UnknownLinkError, parts, tree.forward_kinematics, q, "gripper_link")
    assert isinstance(err, KeyError)
    expect_error(capfd, UnknownLinkError, parts, tree.jacobian, q, "gripper_link")
    expect_error(capfd, UnknownLinkError, parts, tree.relative_transform, q, "gripper_link", "l2")
    expect_error(capfd, UnknownLinkError, parts, tree.relative_transform, q, "l2", "gripper_link")


@pytest.mark.parametrize(
    ("q", "parts"),
    [
        pytest.param([0.1], ["shape (1,)", "expected (2,)", "'j1', 'j3'"], id="short"),
        pytest.param([0.1, 0.0, 0.2], ["shape (3,)", "expected (2,)"], id="long"),
        pytest.param([], ["shape (0,)", "expected (2,)"], id="empty"),
        pytest.param([np.nan, 0.0], ["NaN"], id="nan"),
        pytest.param([0.0, np.inf], ["Inf"], id="inf"),
        pytest.param(
            [1e200, 0.0],
            ["huge"],
            id="huge",
            marks=pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning"),
        ),
    ],
)
def test_bad_configuration(
    q: list[float], parts: list[str], capfd: pytest.CaptureFixture[str]
) -> None:
    tree = KinematicTree.from_urdf(MIMIC)
    err = expect_error(capfd, ConfigurationError, parts, tree.forward_kinematics, q, "tip")
    assert isinstance(err, ValueError)
    expect_error(capfd, ConfigurationError, parts, tree.jacobian, q, "tip")


def test_huge_configuration_raises_without_warning() -> None:
    tree = KinematicTree.from_urdf(MIMIC)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ConfigurationError):
            tree.forward_kinematics([1e200, 0.0], "tip")


@pytest.mark.parametrize("name", ["nope", "j2", "tip_joint"], ids=["unknown", "mimic", "fixed"])
def test_select_unknown_joint_lists_valid_joints(
    name: str, capfd: pytest.CaptureFixture[str]
) -> None:
    tree = KinematicTree.from_urdf(MIMIC)
    expect_error(
        capfd,
        UnknownJointError,
        [f"unknown joint {name!r}", "joints are: 'j1', 'j3'"],
        tree.select_joints,
        ["j1", name],
    )


def test_select_joints_view_matches_full_tree() -> None:
    tree = KinematicTree.from_urdf(MIMIC)
    view = tree.select_joints(["j3"], q_fixed=[0.7, 0.0])
    assert view.joint_names == ["j3"]
    q_full = np.array([0.7, 0.15])
    np.testing.assert_allclose(
        view.forward_kinematics([0.15], "finger"),
        mimic_oracle(q_full)["finger"],
        atol=FK_TOL,
    )
    np.testing.assert_allclose(
        view.jacobian([0.15], "tip"), tree.jacobian(q_full, "tip")[:, [1]], atol=1e-12
    )


def test_concurrent_parses_stay_silent(capfd: pytest.CaptureFixture[str]) -> None:
    """urdf_parser_py's warning hook is a global: parallel loads must not leak or lose it."""
    from urdf_parser_py.xml_reflection import core

    before = core.on_error
    failures: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(10):
                KinematicTree.from_urdf(MESSY)
        except BaseException as exc:  # pragma: no cover - reported below
            failures.append(exc)

    capfd.readouterr()
    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    assert core.on_error is before
    assert_silent(capfd)

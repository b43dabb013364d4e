"""Messages that echo a client's input stay short: a megabyte frame name is cut, not logged."""

from __future__ import annotations

import time

import pytest
from robots import erd_urdf_path

from itasc_ros.core import ConstraintConfig, Controller, ControllerConfig, KinematicTree
from itasc_ros.core.errors import ECHO_LIMIT, InputError, UnknownLinkError, echo
from itasc_ros.core.kinematics.home_poses import home_of


def test_echo_cuts_long_values_and_says_how_long() -> None:
    assert echo("panda_hand") == "'panda_hand'"
    long = "x" * 100_000
    text = echo(long)
    assert len(text) < ECHO_LIMIT + 40 and text.endswith("(100000 characters)")


def test_a_huge_frame_name_is_cut_in_every_refusal() -> None:
    tree = KinematicTree.from_urdf_file(erd_urdf_path("panda"))
    ctrl = Controller(
        tree,
        ControllerConfig(
            joints=[f"panda_joint{i}" for i in range(1, 8)],
            constraints=[ConstraintConfig("ee", "copy_pose", link="panda_hand")],
        ),
    )
    ctrl.set_joint_state(ctrl.joint_names, home_of("panda"), 0.0)
    huge = "f" * 100_000
    start = time.perf_counter()
    with pytest.raises(InputError) as info:
        ctrl.set_target("ee", huge, [0.3, 0.0, 0.5], [0.0, 0.0, 0.0, 1.0], 0.0)
    with pytest.raises(InputError) as other:
        ctrl.set_target(huge, "", [0.3, 0.0, 0.5], [0.0, 0.0, 0.0, 1.0], 0.0)
    with pytest.raises(UnknownLinkError) as link:
        tree.link_index(huge)
    assert time.perf_counter() - start < 1.0  # no fuzzy match against the whole name
    for exc in (info.value, other.value, link.value):
        assert len(str(exc)) < 2_000 and "(100000 characters)" in str(exc), str(exc)[:200]

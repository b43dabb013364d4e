"""Collision geometry from real URDFs: shapes, mesh hulls, the fallback, SRDF pairs, obstacles."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import coal
import numpy as np
import pytest
from robots import erd_robots_dir, erd_urdf_path

from itasc_ros.core import KinematicTree
from itasc_ros.core.kinematics.collision_geometry import (
    OBSTACLE_SHAPES,
    CollisionGeometryError,
    collision_model,
    link_shapes,
    package_search_path,
    parse_obstacles,
    read_srdf_disabled,
    resolve_file,
    resolve_uri,
)
from itasc_ros.tools.resources import robot_urdf

PANDA_SRDF = "package://example-robot-data/robots/panda_description/srdf/panda.srdf"


@pytest.fixture(scope="module")
def panda() -> KinematicTree:
    return KinematicTree.from_urdf_file(erd_urdf_path("panda"))


def test_panda_shapes_are_its_collision_elements_meshes_as_convex_hulls(
    panda: KinematicTree,
) -> None:
    shapes, notes = link_shapes(panda, panda.urdf_xml or b"", search_path=package_search_path())
    assert notes == []
    kinds = {(s.link, s.kind) for s in shapes}
    for i in range(8):
        assert (f"panda_link{i}", "mesh") in kinds
    assert ("panda_hand", "mesh") in kinds
    fingers = [s for s in shapes if s.link == "panda_leftfinger"]
    assert len(fingers) == 4 and {s.kind for s in fingers} == {"box"}
    assert len(shapes) == 17
    for s in shapes:
        if s.kind == "mesh":
            assert isinstance(s.geometry, coal.Convex)
            # The hull holds every vertex of the mesh: the bounding sphere covers them too.
            mesh = coal.MeshLoader().load(s.source, np.ones(3))
            v = np.asarray(mesh.vertices())  # (k, 3) in the mesh frame
            world = v @ s.origin[:3, :3].T + s.origin[:3, 3]
            assert np.linalg.norm(world - s.center, axis=1).max() <= s.radius + 1e-9
            assert s.geometry.num_points <= mesh.num_vertices


def test_srdf_disable_collisions_leave_the_pairs_out(panda: KinematicTree) -> None:
    srdf = resolve_file(PANDA_SRDF)
    disabled = read_srdf_disabled(srdf)
    assert len(disabled) > 20
    everything = collision_model(panda, panda.urdf_xml)
    filtered = collision_model(panda, panda.urdf_xml, srdf=PANDA_SRDF)
    names_all = {frozenset(p) for p in everything.pair_names()}
    names = {frozenset(p) for p in filtered.pair_names()}
    print(
        f"\nPanda shape pairs: {len(everything.pairs)} without the SRDF, "
        f"{len(filtered.pairs)} with it ({len(names)} link pairs)"
    )
    assert names == names_all - disabled
    assert len(filtered.pairs) == 44 and len(everything.pairs) == 83
    # Never a pair of one rigid body or of links joined by one joint.
    for a, b in (
        ("panda_link7", "panda_hand"),  # through the fixed panda_link8
        ("panda_link0", "panda_link1"),
        ("panda_hand", "panda_leftfinger"),
    ):
        assert frozenset((a, b)) not in names_all


def test_a_missing_mesh_falls_back_to_a_capsule_with_a_warning(panda: KinematicTree) -> None:
    xml = erd_urdf_path("panda").read_text()
    broken = xml.replace("meshes/collision/link4.stl", "meshes/collision/no_such_link4.stl")
    assert broken != xml
    with pytest.warns(UserWarning, match=r"panda_link4.*no_such_link4.*capsule"):
        shapes, notes = link_shapes(panda, broken, search_path=package_search_path())
    assert len(notes) == 1
    link4 = [s for s in shapes if s.link == "panda_link4"]
    assert len(link4) == 1 and link4[0].kind == "capsule" and link4[0].approximated
    # Its axis runs from the link origin to the child joint (panda_joint5 at (-0.0825, 0.384, 0)).
    g = link4[0].geometry
    assert isinstance(g, coal.Capsule)
    assert 2 * g.halfLength == pytest.approx(np.hypot(0.0825, 0.384), abs=1e-9)
    assert g.radius == pytest.approx(0.05)


def test_an_unreadable_mesh_falls_back_too(panda: KinematicTree, tmp_path: Path) -> None:
    (tmp_path / "link4.stl").write_bytes(b"not a mesh")
    xml = erd_urdf_path("panda").read_text()
    broken = xml.replace(
        "package://example-robot-data/robots/panda_description/meshes/collision/link4.stl",
        str(tmp_path / "link4.stl"),
    )
    with pytest.warns(UserWarning, match=r"panda_link4.*unreadable \(Could not load resource"):
        shapes, _ = link_shapes(panda, broken, search_path=package_search_path())
    assert [s.kind for s in shapes if s.link == "panda_link4"] == ["capsule"]


def test_capsules_for_a_kinematics_only_urdf() -> None:
    tree = KinematicTree.from_urdf_file(robot_urdf("panda"))
    assert collision_model(tree, tree.urdf_xml).shapes == []  # no <collision> elements
    model = collision_model(tree, tree.urdf_xml, geometry="capsules", fallback_radius=0.04)
    assert {s.link for s in model.shapes} == set(tree.link_names)
    assert all(s.approximated for s in model.shapes) and len(model.pairs) > 10
    with pytest.raises(CollisionGeometryError, match="choices are: collision, capsules"):
        collision_model(tree, tree.urdf_xml, geometry="spheres")


def test_package_uris_resolve_on_the_search_path(tmp_path: Path) -> None:
    robots = erd_robots_dir()
    share = robots.parent.parent  # .../share holding example-robot-data/
    rel = "example-robot-data/robots/panda_description/srdf/panda.srdf"
    assert resolve_uri(f"package://{rel}", [tmp_path, share], None) == share / rel
    assert resolve_uri(f"package://{rel}", [tmp_path], None) is None
    assert resolve_uri(f"package:///{rel}", [share], None) == share / rel  # as Talos writes it
    # A directory that is the package itself, a file:// URI, a path relative to the URDF.
    assert resolve_uri(f"package://{rel}", [share / "example-robot-data"], None) == share / rel
    assert resolve_uri(f"file://{share / rel}", [], None) == share / rel
    (tmp_path / "m.stl").write_bytes(b"")
    assert resolve_uri("m.stl", [], tmp_path) == tmp_path / "m.stl"
    # The user's directories come first, then the environment's.
    old = os.environ.get("ROS_PACKAGE_PATH")
    os.environ["ROS_PACKAGE_PATH"] = str(tmp_path / "ros")
    try:
        path = package_search_path([str(tmp_path / "mine")])
        assert path[:2] == [tmp_path / "mine", tmp_path / "ros"]
    finally:
        if old is None:
            del os.environ["ROS_PACKAGE_PATH"]
        else:
            os.environ["ROS_PACKAGE_PATH"] = old
    with pytest.raises(CollisionGeometryError, match="not found; package:// is looked up in"):
        resolve_file("package://nope/x.srdf")


def test_obstacles_parse_and_bad_ones_name_the_valid_shapes() -> None:
    obs = parse_obstacles(
        ["box 0.4 0 0.2 0.1 0.2 0.3", "sphere 0 0 1 0.05", "capsule 1 1 1 .1 .5"]
    )
    assert [o.kind for o in obs] == ["box", "sphere", "capsule"]
    np.testing.assert_allclose(obs[0].origin[:3, 3], [0.4, 0.0, 0.2])
    box = obs[0].geometry
    assert isinstance(box, coal.Box)
    np.testing.assert_allclose(2 * np.asarray(box.halfSide), [0.1, 0.2, 0.3])
    for bad, what in (
        ("cone 0 0 0 1 1", "unknown shape 'cone'"),
        ("box 0 0 0 0.1 0.1", "a box takes 6 finite numbers"),
        ("sphere 0 0 0 -0.1", "sizes > 0"),
        ("sphere 0 0 nan 0.1", "finite"),
        ("", "unknown shape ''"),
    ):
        with pytest.raises(CollisionGeometryError, match=what) as exc:
            parse_obstacles([bad])
        for shape in OBSTACLE_SHAPES:
            assert f"'{shape} x y z" in str(exc.value)


def test_obstacles_pair_with_every_moving_link(panda: KinematicTree) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = collision_model(
            panda, panda.urdf_xml, self_collision=False, obstacles=["sphere 0.5 0 0.5 0.1"]
        )
    links = {a for a, b in model.pair_names()}
    assert all(b == "" for a, b in model.pair_names())
    assert "panda_link0" not in links and "panda_hand" in links  # the base does not move
    with pytest.raises(
        CollisionGeometryError,
        match="unknown link 'nope' in the collision pair filter; links are: ",
    ):
        collision_model(panda, panda.urdf_xml, links=["nope"])


def test_link_filter_and_disabled_pairs(panda: KinematicTree) -> None:
    base = collision_model(panda, panda.urdf_xml, srdf=PANDA_SRDF)
    hand_only = collision_model(panda, panda.urdf_xml, srdf=PANDA_SRDF, links=["panda_hand"])
    assert {frozenset(p) for p in hand_only.pair_names()} == {
        frozenset(p) for p in base.pair_names() if "panda_hand" in p
    }
    assert len(hand_only.pairs) == 3  # link0, link1, link2 against the hand's one mesh
    fewer = collision_model(
        panda, panda.urdf_xml, srdf=PANDA_SRDF, disabled_pairs=[("panda_link0", "panda_hand")]
    )
    assert len(fewer.pairs) == len(base.pairs) - 1
    assert ("panda_link0", "panda_hand") not in fewer.pair_names()

"""PhysicsJoints: the simulated robot on MuJoCo, driven as a real velocity interface is.

:class:`~.joints.SimulatedJoints` makes the robot follow each command exactly; a real arm
follows it through its own velocity servo, a lag of 5-30 ms, holds itself against gravity within
its torque limits and has friction. :class:`PhysicsJoints` keeps the interface of
``SimulatedJoints`` (``apply``, ``stop``, ``advance``, ``step``, ``q``, ``velocity``) on a MuJoCo
model built from the same URDF:

* the URDF as MuJoCo reads it (``<inertial>``, joint ranges, ``<dynamics damping friction>``),
  its collision meshes resolved as ROS resolves them (``package://``, ``file://``, relative to
  the URDF) and its visual elements left out (MuJoCo reads no COLLADA); a moving link without
  an ``<inertial>`` gets a small one (:data:`DEFAULT_MASS`), so that a kinematics-only URDF runs;
* the commanded joints driven by a velocity servo that decouples them (the arm's inertia and
  Coriolis terms compensated, as a robot's velocity interface does over its torque control):
  torques ``M(q) (u - q') / lag + C(q, q') q'``, so that each joint follows a step of its
  command with the time constant ``lag`` (a first-order lag), each within the URDF's effort
  limit; gravity compensated through the actuators, as the robot's own controller does, so
  within the same torque limits;
  joints that are not commanded (a hand's fingers) held where they start;
* the static ``obstacles`` (:func:`~itasc_ros.core.kinematics.obstacles.parse_obstacles`'
  strings) placed in the world as bodies, and every contact of the robot with them or with
  itself counted (:attr:`PhysicsJoints.contacts`): a referee independent of the node's
  collision constraint. Pairs of bodies already in contact at the start (a closed gripper's
  fingers, meshes that overlap at a joint) are not counted (:attr:`PhysicsJoints.ignored`),
  as MuJoCo models exclude them. The robot's smallest distance to the obstacles, as MuJoCo
  measures it between their geoms, is kept too (:attr:`PhysicsJoints.clearance`, every
  :data:`CLEARANCE_EVERY` physics steps).

Physics steps at :data:`PHYSICS_DT`; ``advance(dt)`` steps as many as fall in ``dt`` and carries
the rest. ROS-free.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from itasc_ros.core import ConfigurationError, KinematicTree
from itasc_ros.core.kinematics.obstacles import parse_obstacles
from itasc_ros.core.kinematics.uri_resolution import package_search_path, resolve_uri

from .joints import CommandRejectedError, SimStats, SimulatedJoints

#: The physics step [s] (1 kHz, as a robot's joint controllers run).
PHYSICS_DT = 0.001
#: Mass [kg] and inertia [kg m^2] given to a moving link that has no ``<inertial>``.
DEFAULT_MASS = 0.5
DEFAULT_INERTIA = 1e-3
#: The slowest servo accepted [s] (a lag above it is not a velocity interface any more).
MAX_LAG = 1.0
#: Physics steps between two measurements of the robot's distance to the obstacles.
CLEARANCE_EVERY = 10
#: Farthest distance to an obstacle measured [m] (beyond it the clearance is this).
CLEARANCE_MAX = 0.5


class PhysicsError(ConfigurationError):
    """A URDF MuJoCo cannot build, or physics settings out of range."""


@dataclass
class Contact:
    """One contact of the robot, as MuJoCo found it at a physics step.

    Attributes:
        bodies: the two bodies' names ('world' for an obstacle).
        depth: how far they interpenetrate [m] (> 0).
        t: the simulated time [s].
    """

    bodies: tuple[str, str]
    depth: float
    t: float


@dataclass
class ContactLog:
    """The robot's contacts since start.

    Attributes:
        steps: physics steps with at least one contact.
        deepest: the deepest interpenetration seen [m].
        pairs: each pair of bodies -> the physics steps it was in contact.
        latest: the contacts of the last physics step that had any.
        latest_step: that step's number (:attr:`PhysicsJoints.physics_steps`).
    """

    steps: int = 0
    deepest: float = 0.0
    pairs: dict[tuple[str, str], int] = field(default_factory=dict)
    latest: list[Contact] = field(default_factory=list)
    latest_step: int = -1


def mujoco_urdf(xml: str, base_dir: Path | None, package_path: Sequence[str]) -> str:
    """The URDF with its meshes' files resolved, no ``<visual>`` and an inertial per moving link.

    Raises:
        PhysicsError: a collision mesh whose file is not found (the directories searched named).
    """
    try:
        root = ET.fromstring(xml)
    except ET.ParseError as exc:
        raise PhysicsError(f"the URDF does not parse: {exc}") from exc
    search = package_search_path(package_path)
    for link in root.iter("link"):
        for visual in link.findall("visual"):
            link.remove(visual)
        for mesh in link.iter("mesh"):
            uri = mesh.get("filename", "")
            path = resolve_uri(uri, search, base_dir)
            if path is None:
                raise PhysicsError(
                    f"link {link.get('name')!r}: mesh {uri!r} not found (package:// is looked "
                    "up in: " + ", ".join(str(d) for d in search) + ")"
                )
            mesh.set("filename", str(path))
    moving = {
        j.find("child").get("link")  # type: ignore[union-attr]
        for j in root.iter("joint")
        if j.get("type") not in ("fixed", None) and j.find("child") is not None
    }
    for link in root.iter("link"):
        name = link.get("name")
        if name in moving and link.find("inertial") is None:
            inertial = ET.SubElement(link, "inertial")
            ET.SubElement(inertial, "mass", value=str(DEFAULT_MASS))
            i = str(DEFAULT_INERTIA)
            ET.SubElement(inertial, "inertia", ixx=i, iyy=i, izz=i, ixy="0", ixz="0", iyz="0")
    return ET.tostring(root, encoding="unicode")


def _efforts(xml: str) -> dict[str, float]:
    """Joint name -> the URDF's effort limit [N m or N] (those that give one > 0)."""
    out = {}
    for joint in ET.fromstring(xml).iter("joint"):
        limit = joint.find("limit")
        try:
            effort = float(limit.get("effort", "0")) if limit is not None else 0.0
        except ValueError:
            effort = 0.0
        if effort > 0.0 and math.isfinite(effort):
            out[str(joint.get("name"))] = effort
    return out


class PhysicsJoints:
    """The commanded joints of a MuJoCo model of the URDF (see the module).

    Args:
        tree: the robot (its joint names and limits).
        urdf: the URDF document ``tree`` was read from.
        joints: commanded joints in command order; ``None`` or empty = ``tree.joint_names``.
        q0: (n,) initial positions in ``joints`` order; ``None`` = the home or neutral pose.
        lag: the servos' time constant [s] (> 0).
        obstacles: static obstacles in the root frame (``"box x y z sx sy sz"``, ...).
        base_dir: the URDF file's folder (relative mesh paths), if any.
        package_path: extra ``package://`` search directories.

    Raises:
        PhysicsError: a URDF MuJoCo cannot build, a mesh not found, ``lag`` out of range.
        UnknownJointError, ConfigurationError: as :class:`~.joints.SimulatedJoints`.
    """

    def __init__(
        self,
        tree: KinematicTree,
        urdf: str,
        joints: Sequence[str] | None = None,
        q0: Sequence[float] | np.ndarray | None = None,
        lag: float = 0.02,
        obstacles: Sequence[str] = (),
        base_dir: Path | None = None,
        package_path: Sequence[str] = (),
    ) -> None:
        import mujoco  # the physics robot only: the ideal one does not import it

        if not (PHYSICS_DT <= lag <= MAX_LAG):
            raise PhysicsError(f"actuator_lag must be in [{PHYSICS_DT}, {MAX_LAG}] s, got {lag}")
        self._ideal = SimulatedJoints(tree, joints, q0)  # names, limits, q0 checked as ever
        self.names = self._ideal.names
        self.index = self._ideal.index
        self.velocity_limits = self._ideal.velocity_limits
        self.lower, self.upper = self._ideal.lower, self._ideal.upper
        self.lag = float(lag)
        self.stats: SimStats = self._ideal.stats
        self.contacts = ContactLog()
        self._mj = mujoco
        xml = mujoco_urdf(urdf, base_dir, package_path)
        efforts = _efforts(xml)
        spec = mujoco.MjSpec.from_string(xml)
        spec.option.timestep = PHYSICS_DT
        spec.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
        for body in spec.bodies:
            body.gravcomp = 1.0
        parse_obstacles(list(obstacles))  # checked as the collision constraint checks them
        for k, text in enumerate(obstacles):
            self._add_obstacle(spec, k, str(text))
        all_joints = [j.name for j in spec.joints]
        missing = [n for n in self.names if n not in all_joints]
        if missing:
            raise PhysicsError(f"MuJoCo's model of the URDF has no joints {missing}")
        for j in spec.joints:
            j.actgravcomp = True
            effort = efforts.get(j.name, 0.0)
            name = f"servo_{j.name}"
            act = spec.add_actuator(name=name, target=j.name, trntype=mujoco.mjtTrn.mjTRN_JOINT)
            if j.name in self.index:
                act.set_to_motor()  # the servo's torque, computed each step (_servo)
            else:  # not commanded: held where it starts
                act.set_to_position(kp=200.0, kv=20.0)
            if effort > 0.0:
                act.forcelimited = mujoco.mjtLimited.mjLIMITED_TRUE
                act.forcerange = [-effort, effort]
        try:
            self.model = spec.compile()
        except ValueError as exc:
            raise PhysicsError(f"MuJoCo cannot build the URDF: {exc}") from exc
        m = self.model
        self.data = mujoco.MjData(m)
        self._jnt = np.array([m.joint(n).id for n in self.names], dtype=np.int64)
        self._qadr = m.jnt_qposadr[self._jnt].copy()
        self._dadr = m.jnt_dofadr[self._jnt].copy()
        self._act = np.array([m.actuator(f"servo_{n}").id for n in self.names], dtype=np.int64)
        world = [g for g in range(m.ngeom) if m.geom_bodyid[g] == 0]
        self._obstacle_geoms = [g for g in world if m.geom(g).name.startswith("obstacle_")]
        self._robot_geoms = [g for g in range(m.ngeom) if m.geom_bodyid[g] != 0]
        #: the robot's smallest distance to an obstacle so far [m] (inf: no obstacle)
        self.clearance = math.inf if not self._obstacle_geoms else CLEARANCE_MAX
        q = self._ideal.q
        self.data.qpos[self._qadr] = q
        for a in range(m.nu):  # the held joints' targets: where they start
            if int(m.actuator_trnid[a, 0]) not in set(self._jnt.tolist()):
                self.data.ctrl[a] = self.data.qpos[m.jnt_qposadr[m.actuator_trnid[a, 0]]]
        mujoco.mj_forward(m, self.data)  # the mass matrix at the start
        self._command = np.zeros(len(self.names))
        self._t = 0.0  # [s] simulated time
        self._due = 0.0  # [s] the time advance() has been asked to reach
        self._mass = np.zeros((m.nv, m.nv))  # the joint-space inertia (dense)
        self._accel = np.zeros(m.nv)  # the servos' asked accelerations (0: not commanded)
        self.physics_steps = 0
        self._window: tuple[float, float] | None = None  # (wall [s], simulated [s]) at a report
        self.ignored: set[tuple[str, str]] = set()  # pairs in contact at the start
        self._referee()
        self.ignored = {c.bodies for c in self.contacts.latest}
        self.contacts = ContactLog()

    # ------------------------------------------------------------------ model building
    def _add_obstacle(self, spec: object, k: int, text: str) -> None:
        """Obstacle ``k`` (a checked ``"kind x y z sizes..."``) as a geom of the world."""
        mujoco = self._mj
        kind, *words = text.split()
        nums = [float(v) for v in words]
        pos, dims = nums[:3], nums[3:]
        if kind == "box":  # full edge lengths -> MuJoCo's half sizes
            gtype, size = mujoco.mjtGeom.mjGEOM_BOX, [v / 2.0 for v in dims]
        elif kind == "sphere":
            gtype, size = mujoco.mjtGeom.mjGEOM_SPHERE, [dims[0], 0.0, 0.0]
        else:  # cylinder, capsule: radius, length along the root z axis
            geom = "mjGEOM_CYLINDER" if kind == "cylinder" else "mjGEOM_CAPSULE"
            gtype, size = getattr(mujoco.mjtGeom, geom), [dims[0], dims[1] / 2.0, 0.0]
        spec.worldbody.add_geom(  # type: ignore[attr-defined]
            name=f"obstacle_{k}", type=gtype, size=size, pos=pos, rgba=[0.8, 0.3, 0.3, 1.0]
        )

    # ------------------------------------------------------------------ the interface
    @property
    def n(self) -> int:
        """Number of commanded joints."""
        return len(self.names)

    @property
    def q(self) -> np.ndarray:
        """(n,) the joints' positions [rad or m]."""
        return self.data.qpos[self._qadr].copy()

    @property
    def velocity(self) -> np.ndarray:
        """(n,) the joints' velocities [rad/s or m/s] (measured, not commanded)."""
        return self.data.qvel[self._dadr].copy()

    @property
    def effort(self) -> np.ndarray:
        """(n,) the servos' torques [N m or N], gravity compensation included."""
        return self.data.actuator_force[self._act] + self.data.qfrc_gravcomp[self._dadr]

    @property
    def command(self) -> np.ndarray:
        """(n,) the velocity command in force [rad/s], within the velocity limits."""
        return self._command.copy()

    @property
    def time(self) -> float:
        """The simulated time [s]."""
        return self._t

    def validate(self, qdot: Sequence[float] | np.ndarray) -> np.ndarray:
        """As :meth:`~.joints.SimulatedJoints.validate`."""
        return self._ideal.validate(qdot)

    def apply(self, qdot: Sequence[float] | np.ndarray) -> None:
        """Make ``qdot`` (n,) [rad/s] the servos' command, clipped to the velocity limits.

        Raises:
            CommandRejectedError: wrong length or non-finite; the previous command stays.
        """
        self._ideal.apply(qdot)
        self._command[:] = self._ideal.command

    def stop(self) -> None:
        """Command zero velocity (the servos brake the joints)."""
        self._ideal.stop()
        self._command[:] = 0.0

    def advance(self, dt: float) -> None:
        """Step the physics over ``dt`` [s] with the command in force (the rest is carried).

        Raises:
            ConfigurationError: ``dt`` negative or non-finite.
        """
        if not (math.isfinite(dt) and dt >= 0.0):
            raise ConfigurationError(f"time step must be finite and >= 0 s, got {dt}")
        self._due += dt
        mujoco, m, d = self._mj, self.model, self.data
        while self._t + PHYSICS_DT <= self._due + 1e-12:
            self._servo()
            mujoco.mj_step(m, d)
            self._t += PHYSICS_DT
            self.physics_steps += 1
            if d.ncon:
                self._referee()
            if self._obstacle_geoms and self.physics_steps % CLEARANCE_EVERY == 0:
                self._measure_clearance()

    def step(self, dt: float) -> np.ndarray:
        """Step the physics over ``dt`` [s]; returns (n,) a copy of the positions."""
        self.advance(dt)
        self.stats.steps += 1
        return self.q

    def _servo(self) -> None:
        """The servos' torques: ``M (u - q') / lag`` plus the Coriolis terms (see the module).

        Computed from the state the last step left (its inertia and bias forces); MuJoCo
        clips each to the joint's effort limit.
        """
        m, d = self.model, self.data
        self._mj.mj_fullM(m, d, self._mass)
        a = self._accel
        a[self._dadr] = (self._command - d.qvel[self._dadr]) / self.lag
        torque = self._mass[self._dadr] @ a + d.qfrc_bias[self._dadr] - d.qfrc_gravcomp[self._dadr]
        d.ctrl[self._act] = torque

    def touching(self) -> set[tuple[str, str]]:
        """The pairs of bodies in contact at the last physics step."""
        log = self.contacts
        return {c.bodies for c in log.latest} if log.latest_step == self.physics_steps else set()

    def report(self, wall: float) -> dict[str, object]:
        """Figures for the node's stats at wall-clock time ``wall`` [s] (a monotonic clock).

        The real-time factor since the last report (simulated over wall time), the contacts.
        """
        last, self._window = self._window, (wall, self._t)
        rtf = (self._t - last[1]) / (wall - last[0]) if last and wall > last[0] else float("nan")
        log = self.contacts
        return {
            "physics": "mujoco",
            "actuator_lag_s": self.lag,
            "real_time_factor": round(rtf, 4),
            "simulated_s": round(self._t, 3),
            "contact_steps": log.steps,
            "contact_pairs": [f"{a} - {b}" for a, b in sorted(log.pairs)],
            "deepest_contact_m": log.deepest,
            "obstacle_clearance_m": self.clearance if math.isfinite(self.clearance) else None,
        }

    def _measure_clearance(self) -> None:
        """The robot's distance to the obstacles now, MuJoCo's, into :attr:`clearance`."""
        m, d, dist = self.model, self.data, self._mj.mj_geomDistance
        for g in self._robot_geoms:
            for o in self._obstacle_geoms:
                self.clearance = min(self.clearance, dist(m, d, g, o, CLEARANCE_MAX, None))

    def _referee(self) -> None:
        """Count this step's contacts of the robot that interpenetrate."""
        m, d, log = self.model, self.data, self.contacts
        found = []
        for i in range(d.ncon):
            c = d.contact[i]
            if c.dist >= 0.0:
                continue
            b1, b2 = int(m.geom_bodyid[c.geom1]), int(m.geom_bodyid[c.geom2])
            a, b = sorted((m.body(b1).name or "world", m.body(b2).name or "world"))
            if (a, b) not in self.ignored:
                found.append(Contact((a, b), float(-c.dist), self._t))
        if found:
            log.steps += 1
            log.latest = found
            log.latest_step = self.physics_steps
            for c in found:
                log.pairs[c.bodies] = log.pairs.get(c.bodies, 0) + 1
                log.deepest = max(log.deepest, c.depth)


__all__ = [
    "CLEARANCE_EVERY",
    "CLEARANCE_MAX",
    "DEFAULT_INERTIA",
    "DEFAULT_MASS",
    "MAX_LAG",
    "PHYSICS_DT",
    "CommandRejectedError",
    "Contact",
    "ContactLog",
    "PhysicsError",
    "PhysicsJoints",
    "mujoco_urdf",
]

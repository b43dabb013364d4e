"""The demo's video: the recorded run drawn by MuJoCo offscreen, the target and its path on it.

The robot's recorded joint states are set on a MuJoCo model of its URDF (kinematics only:
nothing is simulated again) and drawn offscreen (EGL, no display needed) at :data:`FPS` frames a
second, the target a green ball and the path it drew behind it a trail of small ones; the
frames go into an animated WebP (GIF where Pillow has no WebP), small enough to open at once,
and the middle of the first tracking phase into a still PNG. Where MuJoCo cannot render here
(no EGL, no OSMesa) :func:`write_video` says so and writes nothing.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from itasc_ros.core import KinematicTree

Array = NDArray[np.float64]

FPS = 8
"""Frames per second of the video [1/s]."""
SIZE = (480, 360)
"""Width and height of a frame [px]."""
TRAIL = 2.0
"""How long the path behind the target stays drawn [s]."""
TRAIL_POINTS = 40
"""Balls of the trail."""
SHADOW_SIZE = 1024
"""Side of the light's shadow map [px]."""


def _model(urdf: str, base_dir: Path | None) -> Any:
    """The URDF as a MuJoCo model with a floor and a light (meshes resolved, no visuals)."""
    import mujoco

    from itasc_ros.tools.sim_robot.physics import mujoco_urdf

    spec = mujoco.MjSpec.from_string(mujoco_urdf(urdf, base_dir, ()))
    spec.add_texture(
        name="sky", type=mujoco.mjtTexture.mjTEXTURE_SKYBOX,
        builtin=mujoco.mjtBuiltin.mjBUILTIN_GRADIENT, rgb1=[0.93, 0.95, 0.98],
        rgb2=[0.55, 0.65, 0.78], width=64, height=64,
    )  # fmt: skip
    world = spec.worldbody
    world.add_light(pos=[0.5, -0.5, 2.5], dir=[-0.2, 0.2, -1.0], diffuse=[0.8, 0.8, 0.8])
    world.add_geom(
        type=mujoco.mjtGeom.mjGEOM_PLANE, size=[2.0, 2.0, 0.1], rgba=[0.85, 0.87, 0.9, 1.0]
    )
    for geom in spec.geoms:
        if geom.type == mujoco.mjtGeom.mjGEOM_MESH:
            geom.rgba = [0.95, 0.95, 0.95, 1.0]
    model = spec.compile()
    # Drawn in software without a GPU: MuJoCo's defaults (a 4096 px shadow map, 4x
    # multisampling) cost 5x the frame of a 1024 px map without multisampling, for a frame
    # of 480 x 360 px.
    model.vis.quality.shadowsize = SHADOW_SIZE
    model.vis.quality.offsamples = 0
    return model


def _ball(scene: object, pos: Array, radius: float, rgba: Sequence[float]) -> None:
    """Add a ball to the scene that is about to be drawn (if it has room)."""
    import mujoco

    if scene.ngeom >= scene.maxgeom:  # type: ignore[attr-defined]
        return
    geom = scene.geoms[scene.ngeom]  # type: ignore[attr-defined]
    mujoco.mjv_initGeom(
        geom, mujoco.mjtGeom.mjGEOM_SPHERE, np.array([radius, 0.0, 0.0]), pos,
        np.eye(3).ravel(), np.array(rgba, dtype=np.float32),
    )  # fmt: skip
    scene.ngeom += 1  # type: ignore[attr-defined]


def write_video(
    out: Path,
    urdf: str,
    tree: KinematicTree,
    t: Array,
    q: Array,
    target_t: Array,
    target_p: Array,
    still_at: float | None = None,
    base_dir: Path | None = None,
) -> tuple[list[Path], str]:
    """Draw the run into ``out``/demo.webp (or .gif) and a still ``out``/demo_still.png.

    Args:
        out: the output folder.
        urdf: the robot's URDF document.
        tree: its tree (the columns of ``q``).
        t: (k,) the joint states' times [s].
        q: (k, n) their positions, ``tree``'s joint order.
        target_t: (m,) the targets' times [s] (the clock of ``t``).
        target_p: (m, 3) their positions, root frame [m].
        still_at: the time of the still (default: the middle of the run).
        base_dir: the URDF file's folder (its relative meshes).

    Returns:
        The files written, and '' or why nothing was (one line).
    """
    os.environ.setdefault("MUJOCO_GL", "egl")  # offscreen, no display
    try:
        import mujoco
        from PIL import Image, features

        model = _model(urdf, base_dir)
        data = mujoco.MjData(model)
        renderer = mujoco.Renderer(model, SIZE[1], SIZE[0])
    except Exception as exc:  # no EGL / OSMesa, no MuJoCo: the demo goes on without it
        return [], f"no video: MuJoCo cannot render here ({type(exc).__name__}: {exc})"
    adr = [model.jnt_qposadr[model.joint(n).id] for n in tree.joint_names]
    cam = mujoco.MjvCamera()
    home = target_p[0] if len(target_p) else np.array([0.3, 0.0, 0.5])
    cam.lookat[:] = home * np.array([0.6, 0.6, 0.8])
    cam.distance, cam.azimuth, cam.elevation = 1.4, 215.0, -12.0
    frames = []
    still = None
    when = float(still_at) if still_at is not None else float(t[0] + (t[-1] - t[0]) / 2)
    for ft in np.arange(t[0], t[-1], 1.0 / FPS):
        k = min(int(np.searchsorted(t, ft)), len(t) - 1)
        data.qpos[adr] = q[k]
        mujoco.mj_forward(model, data)
        renderer.update_scene(data, cam)
        j = int(np.searchsorted(target_t, ft)) - 1
        if j >= 0:
            past = np.linspace(max(target_t[0], ft - TRAIL), ft, TRAIL_POINTS)
            for tp in past:
                i = max(int(np.searchsorted(target_t, tp)) - 1, 0)
                _ball(renderer.scene, target_p[i], 0.005, (0.1, 0.4, 0.9, 0.9))
            _ball(renderer.scene, target_p[j], 0.02, (0.1, 0.8, 0.2, 1.0))
        image = Image.fromarray(renderer.render())
        frames.append(image)
        if still is None and ft >= when:
            still = image
    renderer.close()
    if not frames:
        return [], "no video: the run recorded no joint state"
    webp = features.check("webp")
    path = out / ("demo.webp" if webp else "demo.gif")
    extra = {"quality": 60, "method": 4} if webp else {"optimize": True}
    frames[0].save(
        path, save_all=True, append_images=frames[1:], duration=int(1000 / FPS), loop=0, **extra
    )
    still_path = out / "demo_still.png"
    (still or frames[len(frames) // 2]).save(still_path)
    return [path, still_path], ""


__all__ = ["FPS", "SHADOW_SIZE", "SIZE", "write_video"]

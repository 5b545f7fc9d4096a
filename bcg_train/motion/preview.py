"""Kinematic preview of a G1 motion clip: a frame strip (PNG) and an animated GIF.

The clip is played in the ``train`` model variant (:func:`bcg_robot.model.build_model`),
the kinematic tree the trainer imitates it on: every frame sets ``qpos`` from the clip's
root pose and joint angles and runs ``mj_forward``; nothing is simulated. Frames are
rendered offscreen with ``mujoco.Renderer``, the robot's colliders drawn opaque (the
``train`` model has no visual meshes), labelled and written with Pillow (a dependency of
imageio and matplotlib).

MuJoCo picks its GL backend when it is first imported, so
:func:`render_preview_offscreen` renders in a child process
(``python -m bcg_train.motion.preview``), trying ``MUJOCO_GL=egl`` then ``osmesa``;
when neither works it raises :class:`PreviewRenderError` with each backend's reason.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import subprocess
import sys
from pathlib import Path
from typing import Sequence

import mujoco
import numpy as np

from bcg_robot.config import RobotConfig
from bcg_robot.gif import write_gif
from bcg_robot.model import build_model, joint_qpos_indices
from bcg_train.motion.loader import MotionClip

GL_BACKENDS = ("egl", "osmesa")
PREVIEW_ROOT = Path("runs/preview")
# Robot colliders and floor in the preview (the train model draws them translucent green).
ROBOT_RGBA = (0.72, 0.74, 0.78, 1.0)
FLOOR_RGBA = (0.28, 0.32, 0.36, 1.0)
LABEL_HEIGHT = 22  # px band under each strip tile holding its time label


class PreviewRenderError(RuntimeError):
    """Offscreen rendering is not available (no GL backend works) or the renderer failed."""


@dataclasses.dataclass(frozen=True)
class PreviewSettings:
    """What to render: ``strip_frames`` tiles evenly spaced over the clip, a GIF at ``gif_fps``."""

    strip_frames: int = 8
    gif_fps: float = 15.0
    height: int = 240  # px per frame
    width: int = 320

    def validate(self) -> None:
        if not 1 <= self.strip_frames <= 32:
            raise ValueError(f"strip frames must be in [1, 32], got {self.strip_frames}")
        if not 1.0 <= self.gif_fps <= 60.0:
            raise ValueError(f"GIF frame rate must be in [1, 60] fps, got {self.gif_fps:g}")
        if not (16 <= self.height <= 2048 and 16 <= self.width <= 2048):
            raise ValueError(f"frame size must be 16-2048 px each way, got {self.width}x{self.height}")


@dataclasses.dataclass(frozen=True)
class PreviewPaths:
    strip: Path
    gif: Path


def default_out_dir(clip_path: str | Path) -> Path:
    """``runs/preview/<clip stem>/`` under the working directory."""
    return PREVIEW_ROOT / Path(clip_path).stem


def preview_paths(clip_path: str | Path, out_dir: str | Path) -> PreviewPaths:
    stem = Path(clip_path).stem
    out = Path(out_dir)
    return PreviewPaths(strip=out / f"{stem}_strip.png", gif=out / f"{stem}.gif")


def strip_frame_indices(num_frames: int, count: int) -> np.ndarray:
    """``count`` clip frames evenly spaced from the first to the last (repeats when the clip is shorter)."""
    return np.round(np.linspace(0, num_frames - 1, count)).astype(int)


def gif_frame_indices(num_frames: int, clip_fps: float, gif_fps: float) -> np.ndarray:
    """The clip frame nearest to each GIF frame time ``0, 1/gif_fps, ...`` up to the clip's end."""
    duration = (num_frames - 1) / clip_fps
    times = np.arange(int(np.floor(duration * gif_fps + 1e-9)) + 1) / gif_fps
    return np.clip(np.round(times * clip_fps).astype(int), 0, num_frames - 1)


@dataclasses.dataclass(frozen=True)
class JointLimitReport:
    """Frames with a joint angle outside the robot config's position limits (the loader
    accepts up to :data:`bcg_robot.motion_csv.JOINT_LIMIT_MARGIN` beyond them)."""

    frames_outside: int
    worst_joint: str = ""
    worst_excess_rad: float = 0.0


def joint_limit_report(clip: MotionClip, robot: RobotConfig) -> JointLimitReport:
    below = robot.lower - clip.joint_pos
    above = clip.joint_pos - robot.upper
    excess = np.maximum(np.maximum(below, above), 0.0)  # (T, n) rad beyond the nearer limit
    outside = excess > 0.0
    if not outside.any():
        return JointLimitReport(0)
    r, j = np.unravel_index(int(np.argmax(excess)), excess.shape)
    return JointLimitReport(int(outside.any(axis=1).sum()), robot.joint_names[j], float(excess[r, j]))


@dataclasses.dataclass(frozen=True)
class ClipSummary:
    name: str
    num_frames: int
    duration_s: float
    fps: float
    root_height_min_m: float
    root_height_max_m: float
    limits: JointLimitReport

    def line(self) -> str:
        limits = (
            "joint limits ok" if not self.limits.frames_outside else
            f"{self.limits.frames_outside} frames outside the joint limits "
            f"(worst {self.limits.worst_joint} by {self.limits.worst_excess_rad:.3f} rad)"
        )
        return (
            f"'{self.name}': {self.num_frames} frames, {self.duration_s:.2f} s at {self.fps:g} fps, "
            f"root height {self.root_height_min_m:.3f}-{self.root_height_max_m:.3f} m, {limits}"
        )


def clip_summary(clip: MotionClip, robot: RobotConfig) -> ClipSummary:
    z = clip.root_pos[:, 2]
    return ClipSummary(
        clip.name, clip.num_frames, clip.duration_s, clip.fps, float(z.min()), float(z.max()), joint_limit_report(clip, robot)
    )


def clip_qpos(clip: MotionClip, qpos0: np.ndarray, joint_qpos: np.ndarray) -> np.ndarray:
    """(T, nq) full qpos per clip frame: free root (position, w x y z quaternion) and the joints at ``joint_qpos``."""
    q = np.repeat(np.asarray(qpos0, dtype=np.float64)[None], clip.num_frames, axis=0)
    q[:, :3], q[:, 3:7] = clip.root_pos, clip.root_quat
    q[:, joint_qpos] = clip.joint_pos
    return q


def time_label(frame: int, fps: float) -> str:
    return f"t = {frame / fps:.2f} s"


def label_image(image: np.ndarray, text: str, band: int = 0) -> np.ndarray:
    """``image`` with ``text`` written top-left, or in a white band of ``band`` px added below it."""
    from PIL import Image, ImageDraw, ImageFont

    h, w = image.shape[:2]
    canvas = Image.new("RGB", (w, h + band), "white")
    canvas.paste(Image.fromarray(np.ascontiguousarray(image[..., :3])), (0, 0))
    try:
        font = ImageFont.load_default(size=max(10, min(16, band - 6 if band else 14)))
    except TypeError:  # a Pillow without sized default fonts
        font = ImageFont.load_default()
    draw = ImageDraw.Draw(canvas)
    if band:
        draw.text((6, h + 3), text, fill=(0, 0, 0), font=font)
    else:
        draw.text((6, 4), text, fill=(255, 255, 255), font=font)
    return np.asarray(canvas)


def frame_strip(images: Sequence[np.ndarray], labels: Sequence[str]) -> np.ndarray:
    """The images side by side, each with its label in a band below it."""
    tiles = [label_image(img, text, LABEL_HEIGHT) for img, text in zip(images, labels, strict=True)]
    return np.concatenate(tiles, axis=1)


def preview_model(robot: RobotConfig, height: int, width: int) -> mujoco.MjModel:
    """The ``train`` model variant, recoloured for viewing, with an offscreen buffer of at least ``width`` x ``height``."""
    model = build_model(robot, "train")
    robot_geoms = model.geom_bodyid != 0
    model.geom_rgba[robot_geoms] = ROBOT_RGBA
    model.geom_rgba[~robot_geoms] = FLOOR_RGBA
    model.vis.headlight.ambient[:] = 0.45
    model.vis.headlight.diffuse[:] = 0.6
    model.vis.global_.offwidth = max(int(model.vis.global_.offwidth), width)
    model.vis.global_.offheight = max(int(model.vis.global_.offheight), height)
    return model


def render_clip_frames(clip: MotionClip, robot: RobotConfig, frames: np.ndarray, height: int, width: int) -> list[np.ndarray]:
    """RGB images (height, width, 3) of ``frames`` of ``clip``, posed kinematically in :func:`preview_model`.

    Needs a working offscreen GL context (the backend MuJoCo picked at import)."""
    model = preview_model(robot, height, width)
    data = mujoco.MjData(model)
    qpos = clip_qpos(clip, model.qpos0, joint_qpos_indices(model, robot))
    option = mujoco.MjvOption()
    option.geomgroup[:] = 1  # the train model's colliders sit in group 3, hidden by default
    camera = mujoco.MjvCamera()
    camera.distance, camera.elevation, camera.azimuth = 2.3, -10.0, 120.0  # three-quarter view from the right
    images = []
    with mujoco.Renderer(model, height, width) as renderer:
        for k in frames:
            data.qpos[:] = qpos[k]
            mujoco.mj_forward(model, data)
            camera.lookat[:] = [data.qpos[0], data.qpos[1], 0.6]
            renderer.update_scene(data, camera, scene_option=option)
            images.append(renderer.render().copy())
    return images


def render_preview(clip: MotionClip, robot: RobotConfig, paths: PreviewPaths, settings: PreviewSettings) -> tuple[int, int]:
    """Write the strip PNG and the GIF (in this process's GL backend); (strip tiles, GIF frames)."""
    from PIL import Image

    strip_idx = strip_frame_indices(clip.num_frames, settings.strip_frames)
    gif_idx = gif_frame_indices(clip.num_frames, clip.fps, settings.gif_fps)
    images = render_clip_frames(clip, robot, np.concatenate([strip_idx, gif_idx]), settings.height, settings.width)
    strip, gif = images[: len(strip_idx)], images[len(strip_idx) :]
    paths.strip.parent.mkdir(parents=True, exist_ok=True)
    paths.gif.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(frame_strip(strip, [time_label(k, clip.fps) for k in strip_idx])).save(paths.strip)
    # every GIF frame carries its time, so no two are equal and Pillow keeps each one
    labelled = [Image.fromarray(label_image(img, time_label(k, clip.fps))) for k, img in zip(gif_idx, gif)]
    write_gif(paths.gif, [np.asarray(img) for img in labelled], settings.gif_fps)
    return len(strip_idx), len(gif_idx)


def render_preview_offscreen(
    clip_path: str | Path, robot_config: str | Path, paths: PreviewPaths, settings: PreviewSettings,
    clip_fps: float, timeout_s: float = 600.0,
) -> str:
    """Render in a child process per GL backend until one works; returns ``MUJOCO_GL=<backend>``."""
    errors = []
    code_root = str(Path(__file__).resolve().parents[2])
    for backend in GL_BACKENDS:
        for path in (paths.strip, paths.gif):  # only this attempt's files count as its success
            path.unlink(missing_ok=True)
        env = {**os.environ, "MUJOCO_GL": backend, "PYOPENGL_PLATFORM": backend}
        env["PYTHONPATH"] = os.pathsep.join(p for p in (code_root, env.get("PYTHONPATH", "")) if p)
        cmd = [
            sys.executable, "-m", __name__, str(clip_path), "--robot-config", str(robot_config), "--fps", repr(clip_fps),
            "--strip", str(paths.strip), "--gif", str(paths.gif), "--frames", str(settings.strip_frames),
            "--gif-fps", repr(settings.gif_fps), "--height", str(settings.height), "--width", str(settings.width),
        ]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            errors.append(f"{backend}: timed out after {timeout_s:g} s")
            continue
        if proc.returncode == 0 and paths.strip.is_file() and paths.gif.is_file():
            return f"MUJOCO_GL={backend}"
        errors.append(f"{backend}: {(proc.stderr.strip().splitlines() or ['failed'])[-1]}")
    raise PreviewRenderError("offscreen rendering is not available (" + "; ".join(errors) + ")")


def main(argv: list[str] | None = None) -> int:
    """Child-process entry of :func:`render_preview_offscreen` (MUJOCO_GL set by the caller)."""
    from bcg_robot.config import load_robot_config
    from bcg_train.motion.loader import load_motion_csv

    parser = argparse.ArgumentParser(prog="bcg_train.motion.preview")
    parser.add_argument("clip", type=Path)
    parser.add_argument("--robot-config", required=True)
    parser.add_argument("--fps", type=float, required=True)
    parser.add_argument("--strip", type=Path, required=True)
    parser.add_argument("--gif", type=Path, required=True)
    parser.add_argument("--frames", type=int, required=True)
    parser.add_argument("--gif-fps", type=float, required=True)
    parser.add_argument("--height", type=int, required=True)
    parser.add_argument("--width", type=int, required=True)
    args = parser.parse_args(argv)
    robot = load_robot_config(args.robot_config)
    clip = load_motion_csv(args.clip, robot, args.fps)
    settings = PreviewSettings(args.frames, args.gif_fps, args.height, args.width)
    render_preview(clip, robot, PreviewPaths(args.strip, args.gif), settings)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Render a bridge trajectory log offscreen to an animated GIF: ``python -m bcg_sim_bridge.sim2sim.video LOG OUT``.

MuJoCo picks its GL backend at import, so :func:`render_video` runs this module in a
child process, trying ``MUJOCO_GL=egl`` then ``osmesa``; when neither works it says so.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

GL_BACKENDS = ("egl", "osmesa")


def render_video(log: Path, out: Path, robot_config: str, timeout_s: float = 300.0) -> tuple[Path | None, str]:
    """(path, note): the GIF and the backend used, or None and why rendering is not available."""
    errors = []
    for backend in GL_BACKENDS:
        env = {**os.environ, "MUJOCO_GL": backend, "PYOPENGL_PLATFORM": backend}
        code_root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (code_root, env.get("PYTHONPATH", "")) if p)
        try:
            proc = subprocess.run([sys.executable, "-m", __name__, str(log), str(out), "--robot-config", robot_config],
                                  capture_output=True, text=True, env=env, timeout=timeout_s)
        except subprocess.TimeoutExpired:  # a hung GL backend must not cost the run its report
            errors.append(f"{backend}: no GIF within {timeout_s:.0f} s")
            continue
        if proc.returncode == 0 and out.is_file():
            return out, f"rendered offscreen with MUJOCO_GL={backend}"
        errors.append(f"{backend}: {(proc.stderr.strip().splitlines() or ['failed'])[-1]}")
    return None, "not available (" + "; ".join(errors) + ")"


def main(argv: list[str] | None = None) -> int:
    import mujoco
    import numpy as np

    from bcg_robot.config import load_robot_config
    from bcg_robot.gif import write_gif
    from bcg_robot.model import build_model, joint_qpos_indices

    parser = argparse.ArgumentParser(prog="bcg_sim_bridge.sim2sim.video")
    parser.add_argument("log")
    parser.add_argument("out")
    parser.add_argument("--robot-config", required=True)
    parser.add_argument("--fps", type=float, default=15.0)
    args = parser.parse_args(argv)
    robot = load_robot_config(args.robot_config)
    model = build_model(robot, "bridge")
    model.vis.headlight.ambient[:] = 0.45
    model.vis.headlight.diffuse[:] = 0.65
    model.mat_reflectance[:] = 0.0  # no floor reflection: halves the software-GL cost
    data = mujoco.MjData(model)
    log = np.load(args.log)
    qi = joint_qpos_indices(model, robot)
    times = log["sim_time"]
    renderer = mujoco.Renderer(model, 216, 288)
    camera = mujoco.MjvCamera()
    camera.distance, camera.elevation, camera.azimuth = 2.8, -15.0, 135.0
    frames = []
    for t in np.arange(times[0], times[-1], 1.0 / args.fps):
        k = int(np.searchsorted(times, t))
        data.qpos[:3], data.qpos[3:7], data.qpos[qi] = log["root_pos"][k], log["root_quat"][k], log["q"][k]
        mujoco.mj_kinematics(model, data)
        camera.lookat[:] = [data.qpos[0], data.qpos[1], 0.6]
        renderer.update_scene(data, camera)
        frames.append(renderer.render())
    write_gif(args.out, frames, args.fps)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Where one G1 physics step's time goes in MJX on this CPU (issue 12 item 5).

Times each stage of the train model's physics step (``bcg_train.sim.solver.step``:
``mjx.forward`` with the fixed-iteration Newton solve, then Euler) jitted on its own,
``vmap``-ed over a batch of environments standing in the default pose with small random
joint velocities, then the whole step and its reverse-mode gradient (a VJP of the next
qpos/qvel with respect to qpos, qvel and the joint torques). Median of --repeats calls
after the compile. Usage (from the repository root, alone on the machine):

    PYTHONPATH=. .venv/bin/python docs/results/step-profile-2026-12-04/profile_step.py --out docs/results/step-profile-2026-12-04/profile.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from mujoco import mjx
from mujoco.mjx._src import collision_driver, constraint, smooth
from tqdm import tqdm

from bcg_robot.config import load_robot_config
from bcg_robot.model import build_model, default_qpos
from bcg_train.sim import solver


def timed(fn, *args, repeats: int):
    """(compile s, median s per call, output) of ``jax.jit(fn)(*args)``."""
    jitted = jax.jit(fn)
    t0 = time.perf_counter()
    out = jax.block_until_ready(jitted(*args))
    compile_s = time.perf_counter() - t0
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(jitted(*args))
        times.append(time.perf_counter() - t0)
    return compile_s, statistics.median(times), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-envs", type=int, default=8)
    parser.add_argument("--contact", default="stiff")
    parser.add_argument("--physics-dt", type=float, default=0.005)
    parser.add_argument("--solver-iterations", type=int, nargs="+", default=[3, 4])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()

    robot = load_robot_config()
    rows = []
    for iterations in args.solver_iterations:
        mj_model = build_model(robot, "train", physics_dt=args.physics_dt, contact=args.contact, solver_iterations=iterations)
        m = mjx.put_model(mj_model)
        rng = np.random.default_rng(0)
        qpos = np.tile(default_qpos(mj_model), (args.num_envs, 1))
        qvel = 0.1 * rng.standard_normal((args.num_envs, mj_model.nv))

        def make(q, v):
            return mjx.make_data(m).replace(qpos=q, qvel=v)

        data = jax.jit(jax.vmap(make))(jnp.asarray(qpos, jnp.float32), jnp.asarray(qvel, jnp.float32))
        # the stages in order; each is timed on the data the stage before it leaves
        stages = [
            ("kinematics + com_pos", lambda d: smooth.com_pos(m, smooth.kinematics(m, d))),
            ("crb + factor_m (mass matrix)", lambda d: smooth.factor_m(m, smooth.crb(m, d))),
            ("collision", lambda d: collision_driver.collision(m, d)),
            ("make_constraint + transmission", lambda d: smooth.transmission(m, constraint.make_constraint(m, d))),
            ("velocity, actuation, smooth acceleration",
             lambda d: mjx.fwd_acceleration(m, mjx.fwd_actuation(m, mjx.fwd_velocity(m, d)))),
            (f"Newton solve ({iterations} iterations)", lambda d: solver.solve(m, d)),
            ("Euler integration", lambda d: mjx.euler(m, d)),
        ]
        d = data
        for name, fn in tqdm(stages, desc=f"{iterations} Newton iterations"):
            compile_s, s, out = timed(jax.vmap(fn), d, repeats=args.repeats)
            rows.append({"solver_iterations": iterations, "stage": name, "ms": 1e3 * s, "compile_s": compile_s})
            if name == "collision":
                active = int(np.asarray(jnp.sum(out._impl.contact.dist < 0)) // args.num_envs)
            d = out
        compile_s, s, _ = timed(jax.vmap(lambda d: solver.step(m, d)), data, repeats=args.repeats)
        rows.append({"solver_iterations": iterations, "stage": "whole physics step (solver.step)", "ms": 1e3 * s,
                     "compile_s": compile_s})

        def next_state(q, v, tau):
            d = jax.vmap(make)(q, v).replace(qfrc_applied=tau)
            d = jax.vmap(lambda d: solver.step(m, d))(d)
            return d.qpos, d.qvel

        q, v = jnp.asarray(qpos, jnp.float32), jnp.asarray(qvel, jnp.float32)
        tau = jnp.zeros_like(v)

        def grad_fn(q, v, tau):
            out, vjp = jax.vjp(next_state, q, v, tau)
            return vjp(jax.tree_util.tree_map(jnp.ones_like, out))

        compile_s, s, _ = timed(grad_fn, q, v, tau, repeats=args.repeats)
        rows.append({"solver_iterations": iterations, "stage": "whole step: forward + reverse-mode gradient (VJP)", "ms": 1e3 * s,
                     "compile_s": compile_s})
        rows.append({"solver_iterations": iterations, "stage": "penetrating contacts per env", "count": active})
    result = {"num_envs": args.num_envs, "contact": args.contact, "physics_dt": args.physics_dt, "repeats": args.repeats,
              "device": jax.devices()[0].device_kind, "rows": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    for r in rows:
        figure = f"{r['ms']:8.2f} ms (compile {r['compile_s']:.0f} s)" if "ms" in r else f"{r['count']}"
        print(f"{r['solver_iterations']} it. | {r['stage']:<52} {figure}")


if __name__ == "__main__":
    main()

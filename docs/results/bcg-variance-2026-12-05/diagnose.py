"""Where BCG's extra gradient variance at 4 Newton iterations comes from (protocol.md).

    PYTHONPATH=. .venv/bin/python docs/results/bcg-variance-2026-12-05/diagnose.py docs/results/bcg-variance-2026-12-05/float32
    PYTHONPATH=. .venv/bin/python docs/results/bcg-variance-2026-12-05/diagnose.py docs/results/bcg-variance-2026-12-05/float64 --float64

Writes ``diagnosis.json`` (per problem and condition: statistics and per-start gradient norms)
and prints a table. One plain and one BCG compile per problem; sigma_p, sigma_v and tau are
traced arguments of the BCG program.
"""

import json
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from tqdm import tqdm

from bcg_robot.config import load_robot_config
from bcg_train.bcg import BCGConfig, BundledSim, Estimator
from bcg_train.bcg.diagnostics import perturbed_starts, sample_statistics
from bcg_train.bcg.rollout import rollout_open_loop
from bcg_train.sim.jax_setup import enable_compilation_cache, enable_float64
from bcg_train.tasks.g1_landing import build_landing_problem, landing_cost

PROBLEMS = {"drop20_h16": (0.20, 16), "drop05_h8": (0.05, 8)}
CONDITIONS = {  # name: (sigma_p, sigma_v, tau); None = plain
    "plain": None,
    "never_triggers": (0.01, 0.02, 1e12),
    "zero_offsets": (0.0, 0.0, 400.0),
    "published": (0.01, 0.02, 400.0),
    "velocity_only": (0.0, 0.02, 400.0),
    "position_only": (0.01, 0.0, 400.0),
    "position_1mm": (0.001, 0.02, 400.0),
}
K, B, H, SEED, NOISE, ITERATIONS = 32, 10, 2, 0, 1e-3, 4


def gradients_fn(bsim, cost):
    def run(start, actions):
        def total(a):
            costs, final, _ = rollout_open_loop(bsim, start, a, cost)
            return jnp.sum(costs), (costs, final.bundle.num_started)

        return jax.grad(total, has_aux=True)(actions)

    return run


def main(out: Path, float64: bool = False) -> None:
    enable_compilation_cache()
    if float64:
        enable_float64()
    out.mkdir(parents=True, exist_ok=True)
    results = {}
    bar = tqdm(total=len(PROBLEMS) * len(CONDITIONS), desc="conditions", unit="run")
    for pname, (drop, horizon) in PROBLEMS.items():
        problem = build_landing_problem(load_robot_config(), drop, 0.005, float64, ITERATIONS)
        sim, cost = problem.sim, landing_cost(problem)
        plain_sim = BundledSim(sim, BCGConfig(mode=Estimator.PLAIN))
        start = perturbed_starts(plain_sim, K, NOISE, jax.random.PRNGKey(SEED))
        actions = jnp.zeros((K, horizon, sim.mj_model.nu), sim.dtype)
        plain_fn = jax.jit(gradients_fn(plain_sim, cost))

        @jax.jit
        def bcg_fn(sigma_p, sigma_v, tau, start, actions):
            config = BCGConfig(num_branches=B, bundle_steps=H, sigma_p=sigma_p, sigma_v=sigma_v, force_threshold=tau)
            return gradients_fn(BundledSim(sim, config), cost)(start, actions)

        rows, plain_g = {}, None
        for cname, cond in CONDITIONS.items():
            t0 = time.perf_counter()
            if cond is None:
                grads, (costs, bundles) = jax.block_until_ready(plain_fn(start, actions))
            else:
                args = tuple(jnp.asarray(v, sim.dtype) for v in cond)
                grads, (costs, bundles) = jax.block_until_ready(bcg_fn(*args, start, actions))
            seconds = time.perf_counter() - t0
            g = np.asarray(grads, np.float64).reshape(K, -1)
            finite = np.all(np.isfinite(g), axis=1)
            _, trace, cv, cosine = sample_statistics(g[finite])
            norms = np.linalg.norm(g, axis=1)
            if plain_g is None:
                plain_g = g
            rel = np.linalg.norm(g - plain_g, axis=1) / np.maximum(np.linalg.norm(plain_g, axis=1), 1e-30)
            rows[cname] = {
                "sigma_p": None if cond is None else cond[0], "sigma_v": None if cond is None else cond[1],
                "tau": None if cond is None else cond[2],
                "covariance_trace": trace, "variance_ratio_to_plain": rows["plain"]["covariance_trace"] / trace if rows else 1.0,
                "norm_cv": cv, "mean_cosine": cosine, "num_nonfinite": int((~finite).sum()),
                "bundles_per_rollout": float(np.mean(np.asarray(bundles))), "mean_cost": float(np.mean(np.asarray(costs))),
                "per_start_norm": norms.tolist(), "per_start_bundles": np.asarray(bundles).tolist(),
                "per_start_rel_diff_to_plain": rel.tolist(), "seconds_with_compile": seconds,
            }
            bar.set_postfix_str(f"{pname}/{cname} trace={trace:.3g} {seconds:.0f}s")
            bar.update(1)
            results[pname] = rows
            (out / "diagnosis.json").write_text(json.dumps({"settings": {
                "K": K, "B": B, "H": H, "seed": SEED, "qpos_noise": NOISE, "newton_iterations": ITERATIONS,
                "physics_dt": 0.005, "float64": float64, "preset": "stiff", "problems": PROBLEMS}, "results": results}, indent=1))
    bar.close()
    for pname, rows in results.items():
        print(f"\n{pname}")
        print(f"{'condition':16s} {'trace':>10s} {'cut':>10s} {'cv':>6s} {'cos':>6s} {'bundles':>7s} {'max norm':>10s} {'median rel':>10s}")
        for cname, r in rows.items():
            print(f"{cname:16s} {r['covariance_trace']:10.3g} {r['variance_ratio_to_plain']:10.3g} {r['norm_cv']:6.2f} "
                  f"{r['mean_cosine']:6.2f} {r['bundles_per_rollout']:7.2f} {max(r['per_start_norm']):10.3g} "
                  f"{np.median(r['per_start_rel_diff_to_plain']):10.3g}")


if __name__ == "__main__":
    main(Path(sys.argv[1]), "--float64" in sys.argv[2:])

"""Falls of one squat policy in the bridge model and in variants of the `train` model.

Both rolled with plain MuJoCo C by bcg-eval's rollout (same seeds, same domain
randomization draws), 8 s, seeds 0-19. Each variant changes one thing of the train model
(its MjModel options after the build) or of the domain randomization, to find what makes
the train model, where SHAC learns, harsher than the bridge model, where the policy is
judged. Usage (from the repository root):

    PYTHONPATH=. .venv/bin/python docs/results/train-model-gap-2026-12-04/train_model_gap.py POLICY.onnx OUT.json [DURATION_S]

(8 s for the squat, 3 s for the jump.)
"""

import copy
import dataclasses
import json
import sys
from pathlib import Path

import mujoco
from tqdm import tqdm

from bcg_robot.config import load_robot_config
from bcg_robot.model import build_model
from bcg_robot.onnx_policy import OnnxPolicy
from bcg_robot.paths import share_file
from bcg_robot.yaml_dataclass import load_dataclass
from bcg_train.evaluate.rollout import rollout
from bcg_train.learn.config import TrainConfig
from bcg_train.motion.reference import load_reference_motion
from bcg_train.tasks.imitation import training_model

SEEDS = range(20)


def with_options(model: mujoco.MjModel, **options) -> mujoco.MjModel:
    model = copy.copy(model)
    for name, value in options.items():
        setattr(model.opt, name, value)
    return model


def main(policy_path: Path, out: Path, duration_s: float = 8.0) -> None:
    robot = load_robot_config()
    policy = OnnxPolicy.load(policy_path, robot)
    cfg = load_dataclass(TrainConfig, policy_path.with_suffix(".train.yaml"))
    reference = load_reference_motion(share_file(f"models/motions/{policy.contract.motion_id}.csv"), robot)
    dr = cfg.task.domain
    bridge, train = build_model(robot, "bridge"), training_model(cfg.task, robot)
    stiff = training_model(dataclasses.replace(cfg.task, contact="stiff"), robot)
    euler, implicit = mujoco.mjtIntegrator.mjINT_EULER, mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    variants = {
        "bridge (as judged)": (bridge, dr),
        f"train, {cfg.task.contact} contact (as trained)": (train, dr),
        "train, 500 Hz": (with_options(train, timestep=0.002), dr),
        "train, implicitfast": (with_options(train, integrator=implicit), dr),
        "train, 100 Newton iterations": (with_options(train, iterations=100, ls_iterations=50), dr),
        "train, stiff contact": (stiff, dr),
        "train, 250 Hz": (with_options(train, timestep=0.004), dr),
        "train, stiff contact, 250 Hz": (with_options(stiff, timestep=0.004), dr),
        "train, stiff contact, 500 Hz": (with_options(stiff, timestep=0.002), dr),
        "bridge, Euler 200 Hz": (with_options(bridge, integrator=euler, timestep=0.005), dr),
        "bridge, Euler 500 Hz": (with_options(bridge, integrator=euler), dr),
        "bridge, implicitfast 200 Hz": (with_options(bridge, timestep=0.005), dr),
        "train, no pushes": (train, dataclasses.replace(dr, push_velocity=0.0)),
        "train, no latency": (train, dataclasses.replace(dr, latency_probability=0.0)),
        "train, gain scale 1": (train, dataclasses.replace(dr, gain_scale=(1.0, 1.0))),
        "bridge, no pushes": (bridge, dataclasses.replace(dr, push_velocity=0.0)),
    }
    rows = {}
    for name, (model, domain) in tqdm(variants.items(), desc="variants"):
        results = [rollout(policy, model, robot, reference, seed, duration_s, domain) for seed in SEEDS]
        rows[name] = {"falls": sum(r.fell for r in results), "seeds": len(results),
                      "fell_seeds": [r.seed for r in results if r.fell],
                      "mean_survived_s": sum(r.survived_s for r in results) / len(results)}
        print(f"{name:<40} falls {rows[name]['falls']:>2}/{len(results)}  mean survived {rows[name]['mean_survived_s']:.2f} s", flush=True)
    out.write_text(json.dumps({"policy": str(policy_path), "seeds": [SEEDS.start, SEEDS.stop - 1], "duration_s": duration_s,
                               "variants": rows}, indent=2))


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]), *(float(x) for x in sys.argv[3:4]))

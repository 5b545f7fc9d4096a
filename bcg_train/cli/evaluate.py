"""bcg-eval: roll an ONNX policy in the `bridge` model with plain MuJoCo over several seeds.

Prints falls, tracking error E_track (cm), root-height error (cm) and the foot-penetration difference between
the training simulation (the `train` model variant the trainer simulates in MJX, rolled
here with MuJoCo C) and the bridge model (definitions: bcg_robot.metrics); writes a plot
(PNG), a JSON summary and, when offscreen rendering works, a video of the first seed.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "egl")  # offscreen rendering without a display, before mujoco loads

import numpy as np

from bcg_robot.cli.arguments import nonnegative_int, positive_float_at_most, positive_int
from bcg_robot.config import load_robot_config
from bcg_robot.metrics import FALL_HEIGHT_M
from bcg_robot.errors import ContractError, exit_on_input_error
from bcg_robot.gif import write_gif
from bcg_robot.model import build_model
from bcg_robot.motion_csv import check_trained_clip
from bcg_train.evaluate import MAX_DURATION_S, REPORT_FIRST_SEED, SELECTION_FIRST_SEED

# what bcg-eval writes into its output folder (a folder in the place of one is refused before the rollouts)
OUTPUT_FILES = ("eval.png", "summary.json")


def _figure(x: float) -> float | None:
    """A seed's figure for the summary: None (JSON null) where it has none (NaN: no sample)."""
    return float(x) if np.isfinite(x) else None


def _mean(values: np.ndarray) -> float | None:
    return float(np.mean(values)) if len(values) else None


def _std(values: np.ndarray) -> float | None:
    return float(np.std(values)) if len(values) else None


def _max(values: list[float]) -> float | None:
    finite = [v for v in values if np.isfinite(v)]
    return float(max(finite)) if finite else None


def _text(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def _plot(results, path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_h, ax_e) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    for r in results:
        label = f"seed {r.seed}" + (" (fell)" if r.fell else "")
        ax_h.plot(r.time, r.root_height, label=label)
        ax_e.plot(r.time, 100 * r.tracking_error, label=label)
    if results:
        ax_h.plot(results[0].time, results[0].ref_root_height, color="k", ls=":", lw=1.0, label="reference")
    ax_h.axhline(FALL_HEIGHT_M, color="k", ls="--", lw=0.8)
    ax_h.set_ylabel("root height (m)")
    ax_e.set_ylabel("E_track (cm)")
    ax_e.set_xlabel("time (s)")
    ax_h.legend(fontsize=7, ncol=3)
    ax_h.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


class _VideoRecorder:
    """Offscreen frames at 25 fps; disabled with a reason if rendering is unavailable."""

    def __init__(self, model, fps: float = 25.0):
        self.frames, self.fps, self.error, self.next_t = [], fps, None, 0.0
        try:
            import mujoco

            self.renderer = mujoco.Renderer(model, 240, 320)
            self.camera = mujoco.MjvCamera()
            self.camera.type = mujoco.mjtCamera.mjCAMERA_TRACKING
            self.camera.trackbodyid = model.body("pelvis").id
            self.camera.distance, self.camera.elevation, self.camera.azimuth = 2.5, -15.0, 135.0
        except Exception as err:  # no OpenGL context on this machine
            self.renderer, self.error = None, f"{type(err).__name__}: {err}"

    def __call__(self, data, t: float) -> None:
        if self.renderer is None or t + 1e-9 < self.next_t:
            return
        self.renderer.update_scene(data, self.camera)
        self.frames.append(self.renderer.render().copy())
        self.next_t += 1.0 / self.fps

    def save(self, path: Path, strip_frames: int = 8) -> str:
        """The video at ``path`` (a GIF when imageio has no ffmpeg) and a frame strip of
        ``strip_frames`` evenly spaced frames next to it (``<stem>_frames.png``)."""
        if self.renderer is None:
            return f"video skipped (offscreen rendering unavailable: {self.error})"
        if not self.frames:
            return "video skipped (no frame recorded)"
        import imageio
        from PIL import Image

        from bcg_train.motion.preview import frame_strip, strip_frame_indices

        strip_path = path.with_name(f"{path.stem}_frames.png")
        idx = strip_frame_indices(len(self.frames), strip_frames)
        Image.fromarray(frame_strip([self.frames[i] for i in idx], [f"t = {i / self.fps:.2f} s" for i in idx])).save(strip_path)

        try:
            imageio.mimsave(str(path), self.frames, fps=self.fps)
        except Exception as err:
            path = path.with_suffix(".gif")
            write_gif(path, self.frames, self.fps)
        return f"video {path}, frame strip {strip_path}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bcg-eval", description=__doc__.splitlines()[0])
    parser.add_argument("policy", type=Path, help="ONNX policy exported by bcg-export")
    parser.add_argument("--seeds", type=positive_int, default=5, help="number of rollouts (seeds first-seed, first-seed + 1, ...)")
    parser.add_argument("--first-seed", type=nonnegative_int, default=REPORT_FIRST_SEED,
                        help=f"first seed (default {REPORT_FIRST_SEED}: held out from bcg-select-checkpoint's default "
                             f"selection seeds {SELECTION_FIRST_SEED}..)")
    parser.add_argument("--duration", type=positive_float_at_most(MAX_DURATION_S), default=10.0,
                        help=f"seconds per rollout (at most {MAX_DURATION_S:g})")
    parser.add_argument("--motion", type=Path, default=None,
                        help="reference CSV (default: the clip the policy's .train.yaml names, else models/motions/<motion id>.csv)")
    parser.add_argument("--train-config", type=Path, default=None, help="training config (DR ranges, contact; default: <policy>.train.yaml)")
    parser.add_argument("--no-dr", action="store_true", help="evaluate without domain randomization")
    parser.add_argument("--out", type=Path, default=None, help="output folder for plot/summary/video (default: next to the policy)")
    parser.add_argument("--video", action="store_true", help="try to record a video of the first seed")
    parser.add_argument("--baseline", choices=("default-pose", "playback"), default=None,
                        help="evaluate this policy's zero-correction baseline instead of it: hold the default pose, or play "
                             "the clip back through the PD drives (bcg_train.evaluate.baselines; same contract, seeds and reference)")
    args = parser.parse_args(argv)

    with exit_on_input_error(parser.prog):
        from bcg_robot.paths import check_output_files, output_dir, resolve_share_path, share_file
        from bcg_robot.onnx_policy import OnnxPolicy
        from bcg_train.evaluate.rollout import rollout
        from bcg_train.learn.config import TrainConfig, load_train_config
        from bcg_train.motion.reference import load_reference_motion

        robot = load_robot_config()
        if not args.policy.is_file():
            raise ContractError(args.policy, "no such policy file")
        policy = OnnxPolicy.load(args.policy, robot)
        contract = policy.contract
        if args.train_config is not None and not args.train_config.is_file():
            raise ContractError(args.train_config, "no such training config (--train-config)")
        # the policy's own training config, written beside it by bcg-export (None: not there)
        own_yaml = args.policy.with_suffix(".train.yaml")
        own_cfg = load_train_config(own_yaml) if own_yaml.is_file() else None  # `extends` chains resolved, as in bcg-train
        if own_cfg is not None:  # its clip and contact model judge the policy: it must be the policy's own
            from bcg_train.export.policy import contract_mismatch

            mismatch = contract_mismatch(contract, own_cfg)
            if mismatch:
                raise ContractError(own_yaml, f"not the training config of {args.policy.name}: {mismatch}")
        train_yaml = args.train_config or own_yaml
        cfg = load_train_config(args.train_config) if args.train_config is not None else own_cfg or TrainConfig()
        dr = cfg.task.domain if not args.no_dr else type(cfg.task.domain)(enabled=False)
        if args.duration < contract.control_dt:  # no control step: 0 falls and NaN figures
            raise ContractError(args.policy, f"--duration {args.duration:g} s is shorter than one control step "
                                             f"({contract.control_dt:g} s)")
        # the clip the policy trained on, at the rate it was read at: its own training config's,
        # else the shipped clip of its motion id at 30 fps
        own = own_cfg.task if own_cfg is not None else None
        motion = args.motion or (resolve_share_path(own.motion) if own is not None
                                 else share_file(f"models/motions/{contract.motion_id}.csv"))
        if contract.motion_id == "default_pose" and args.motion is None and own is None:
            motion = share_file("models/motions/stand.csv")
        if motion.is_file():  # the content, where the contract records it, not only the length below
            check_trained_clip(motion, contract.motion_sha256, args.policy.name)
        reference = load_reference_motion(motion, robot, *([own.motion_fps] if own is not None else []))
        if contract.motion_length_s > 0 and abs(reference.length_s - contract.motion_length_s) > reference.dt:
            raise ContractError(motion, f"reference clip lasts {reference.length_s:g} s, the policy was trained on one of "
                                        f"{contract.motion_length_s:g} s (its motion_length_s): not the clip it learned")
        out = output_dir(args.out or args.policy.parent / f"{args.policy.stem}_{args.baseline or 'eval'}", "--out")
        video_name = f"seed{args.first_seed}.mp4"
        written = list(OUTPUT_FILES)
        if args.video:  # the video, its frame strip, or the GIF it falls back to (_VideoRecorder.save)
            written += [video_name, f"seed{args.first_seed}_frames.png", f"seed{args.first_seed}.gif"]
        if args.baseline is not None:
            written.append(f"baseline_{args.baseline}.onnx")
        check_output_files(out, written, "--out")
        if args.baseline is not None:
            from bcg_train.evaluate.baselines import write_baseline_policy

            baseline_file = write_baseline_policy(args.baseline, contract, reference.joint_pos, out / f"baseline_{args.baseline}.onnx")
            policy = OnnxPolicy.load(baseline_file, robot)

        bridge = build_model(robot, "bridge")
        from bcg_train.tasks.imitation import training_model

        train_model = training_model(cfg.task, robot)
        video = _VideoRecorder(bridge) if args.video else None
        results, train_results = [], []
        from tqdm import tqdm

        seeds = range(args.first_seed, args.first_seed + args.seeds)
        for seed in tqdm(seeds, desc="bcg-eval", leave=False):
            results.append(rollout(policy, bridge, robot, reference, seed, args.duration, dr, video if seed == seeds[0] else None))
            train_results.append(rollout(policy, train_model, robot, reference, seed, args.duration, dr))

        what = f"baseline '{args.baseline}' of {args.policy}" if args.baseline else f"policy {args.policy}"
        print(f"{what} (motion '{contract.motion_id}', {args.duration:g} s, DR {'off' if args.no_dr else 'on'})")
        print(f"{'seed':>4} {'fell':>5} {'survived s':>10} {'E_track cm':>10} {'root z err cm':>13} {'flight s':>8} {'pen. bridge mm':>14} "
              f"{'pen. train mm':>13} {'diff mm':>8}")
        for r, tr in zip(results, train_results):
            print(
                f"{r.seed:>4} {str(r.fell):>5} {r.survived_s:>10.2f} {r.tracking_error_cm:>10.2f} {r.root_height_error_cm:>13.2f} {r.longest_flight_s:>8.3f} "
                f"{r.foot_penetration_mm:>14.2f} {tr.foot_penetration_mm:>13.2f} {tr.foot_penetration_mm - r.foot_penetration_mm:>8.2f}"
            )
        falls = sum(r.fell for r in results)
        # a seed whose simulation diverged in its first control step has no tracking sample: its
        # figures are null, and the means are over the seeds that have one (null if none has)
        e_track = np.array([r.tracking_error_cm for r in results])
        root_z = np.array([r.root_height_error_cm for r in results])
        measured = np.isfinite(e_track)
        pen_diff = np.array([tr.foot_penetration_mm - r.foot_penetration_mm for r, tr in zip(results, train_results)])
        summary = {
            "policy": str(args.policy), "baseline": args.baseline, "motion": contract.motion_id, "seeds": args.seeds, "first_seed": args.first_seed,
            "held_out": args.first_seed >= REPORT_FIRST_SEED,  # seeds bcg-select-checkpoint never chooses on
            "duration_s": args.duration,
            "domain_randomization": not args.no_dr, "falls": falls,
            "diverged": sum(r.diverged for r in results),  # falls that were the simulation diverging
            # what judged it: the training config read (None: defaults) and its DR ranges as used
            "train_config": str(train_yaml) if train_yaml.is_file() else None, "domain": dataclasses.asdict(dr),
            "measured_seeds": int(measured.sum()),
            "tracking_error_cm_mean": _mean(e_track[measured]), "tracking_error_cm_std": _std(e_track[measured]),
            "root_height_error_cm": {"mean": _mean(root_z[measured]),
                                     "max": _max([r.root_height_error_max_cm for r in results])},
            "foot_penetration_diff_mm_mean": float(pen_diff.mean()),
            "longest_flight_s_mean": float(np.mean([r.longest_flight_s for r in results])),
            "train_sim_falls": sum(r.fell for r in train_results),
            "per_seed": [
                {"seed": r.seed, "fell": r.fell, "diverged": r.diverged, "survived_s": r.survived_s,
                 "tracking_error_cm": _figure(r.tracking_error_cm),
                 "root_height_error_cm": {"mean": _figure(r.root_height_error_cm), "max": _figure(r.root_height_error_max_cm)},
                 "longest_flight_s": r.longest_flight_s,
                 "foot_penetration_bridge_mm": r.foot_penetration_mm, "foot_penetration_train_mm": tr.foot_penetration_mm,
                 "domain": r.domain, "pushes": [{"t_s": t, "dv": [vx, vy]} for t, vx, vy in r.pushes]}
                for r, tr in zip(results, train_results)
            ],
        }
        e_text = _text(summary["tracking_error_cm_mean"])
        _plot(results, out / "eval.png", f"{args.policy.name}{' ' + args.baseline if args.baseline else ''}: {falls}/{args.seeds} falls, E_track {e_text} cm")
        (out / "summary.json").write_text(json.dumps(summary, indent=2, allow_nan=False))
        unmeasured = args.seeds - summary["measured_seeds"]
        print(
            f"falls {falls}/{args.seeds}, E_track {e_text} +- {_text(summary['tracking_error_cm_std'])} cm"
            f"{f' ({unmeasured} seed(s) diverged before a measurement)' if unmeasured else ''}, "
            f"root height error {_text(summary['root_height_error_cm']['mean'])} cm "
            f"(max {_text(summary['root_height_error_cm']['max'])}), "
            f"longest flight {summary['longest_flight_s_mean']:.3f} s, "
            f"foot penetration train - bridge {pen_diff.mean():+.2f} mm; plot {out / 'eval.png'}"
        )
        if args.first_seed < REPORT_FIRST_SEED:
            print(f"note: seeds from {args.first_seed} are selection seeds (below {REPORT_FIRST_SEED}): in-sample if "
                  "checkpoints were chosen on them; report on held-out seeds (the default)")
        if video is not None:
            print(video.save(out / video_name))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

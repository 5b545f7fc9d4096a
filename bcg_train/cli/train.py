"""bcg-train: train a motion-imitation policy with SHAC (+ BCG) from a typed YAML config.

--motion CLIP.csv trains on any G1 CSV clip (format: bcg_robot.motion_csv):
the task config (--task, default stand) supplies every other setting, the clip's file
stem is the motion id and the default run directory is runs/<stem>-<preset>. The clip
(the config's, or --motion's) is validated before JAX is imported.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from bcg_robot.errors import exit_on_input_error
from bcg_robot.paths import check_output_dir
from bcg_train.learn.config import DEFAULT_TASK, PRESETS, TrainRequest, resolve_train_config


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="bcg-train", description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1].strip()
    )
    parser.add_argument(
        "--task", default=None,
        help=f"task name: config/train/<task>.yaml (e.g. stand, squat, jump); required unless --motion is given, "
             f"then it defaults to {DEFAULT_TASK}",
    )
    parser.add_argument("--config", type=Path, default=None, help="training config YAML (default: config/train/<task>.yaml)")
    parser.add_argument(
        "--motion", type=Path, default=None,
        help="G1 CSV clip to imitate instead of the task's (its file stem becomes the motion id)",
    )
    parser.add_argument("--preset", choices=PRESETS, default=None, help="size preset merged over the config")
    parser.add_argument(
        "--run-dir", default=None, help="output directory (default: the config file's run_dir if it sets one, else runs/<task>-<preset>, with --motion runs/<clip stem>-<preset>)"
    )
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--iterations", type=int, default=None, help="override shac.iterations")
    parser.add_argument("--resume", type=Path, default=None, help="checkpoint file or run directory to continue")
    parser.add_argument(
        "--init-from", type=Path, default=None,
        help="warm start: take the actor, critics and observation normalizer from this checkpoint (file or run "
             "directory); optimizers, lr schedule, environments and iteration count start fresh under this config (with --resume, "
             "the resumed checkpoint's networks win)",
    )
    parser.add_argument(
        "--max-train-s", type=float, default=None,
        help="stop (with a checkpoint) once the iterations after the first, compiling one, took this long",
    )
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)
    if args.max_train_s is not None and not args.max_train_s > 0:
        print(f"{parser.prog}: error: --max-train-s must be > 0, got {args.max_train_s}", file=sys.stderr)
        return 2

    if args.task is None and args.motion is None:
        print(f"{parser.prog}: error: --task is required unless --motion is given", file=sys.stderr)
        return 2

    with exit_on_input_error(parser.prog):
        request = TrainRequest(
            task=args.task or DEFAULT_TASK, config=args.config, preset=args.preset, motion=args.motion,
            run_dir=args.run_dir, seed=args.seed, iterations=args.iterations, init_from=args.init_from,
        )
        cfg = resolve_train_config(request)
        for option, path in (("--init-from", args.init_from), ("--resume", args.resume)):
            if path is not None and not path.exists():
                print(f"{parser.prog}: error: {path}: no such checkpoint ({option})", file=sys.stderr)
                return 2
        from bcg_robot.config import load_robot_config
        from bcg_robot.paths import resolve_share_path
        from bcg_train.motion.loader import load_motion_csv

        # the clip of --motion or of the config (as the task will resolve it)
        load_motion_csv(resolve_share_path(cfg.task.motion), load_robot_config(), cfg.task.motion_fps)
        check_output_dir(cfg.run_dir, "run directory")  # a file there was a traceback from train()
        from bcg_train.learn.train import train  # JAX import after argument, config, clip and run-directory errors
        from bcg_train.sim.jax_setup import memory_map_warning

        warning = memory_map_warning()
        if warning:
            print(f"{parser.prog}: warning: {warning}", file=sys.stderr, flush=True)

        t0 = time.perf_counter()
        _, state, history = train(cfg, resume=args.resume, progress=not args.no_progress, max_train_s=args.max_train_s)
        wall = time.perf_counter() - t0
        last = history[-1] if history else {}
        print(
            f"bcg-train: {int(state.iteration)} iterations, {last.get('env_steps', 0):.0f} env steps, wall {wall:.0f} s, "
            f"reward {last.get('reward', float('nan')):.4f}, tracking error {100 * last.get('tracking_error_m', float('nan')):.2f} cm; "
            f"run dir {cfg.run_dir}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

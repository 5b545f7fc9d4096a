"""``bcg-make-motions``: rewrite the project's reference clips (``models/motions/*.csv``) with
:func:`bcg_train.motion.synthesize.synthesize`."""

from __future__ import annotations

import argparse
from pathlib import Path

from bcg_robot.config import load_robot_config
from bcg_robot.errors import exit_on_input_error
from bcg_robot.model import build_model
from bcg_robot.paths import check_output_files, output_dir
from bcg_train.motion.loader import write_motion_csv
from bcg_train.motion.synthesize import MOTIONS, MOTIONS_DIR, synthesize


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bcg-make-motions", description="The project's own reference clips, written in the public G1 CSV format (30 fps).")
    parser.add_argument("--out", type=Path, default=MOTIONS_DIR, help="output folder (default: models/motions)")
    parser.add_argument("--robot", type=Path, default=None, help="robot config YAML")
    parser.add_argument("motions", nargs="*", default=list(MOTIONS), help=f"which clips ({', '.join(MOTIONS)})")
    args = parser.parse_args(argv)
    unknown = [name for name in args.motions if name not in MOTIONS]
    if unknown:  # before any clip is written: a typo after a good name must not leave it rewritten
        parser.error(f"unknown motion '{unknown[0]}' (known: {', '.join(MOTIONS)})")
    with exit_on_input_error(parser.prog):
        cfg = load_robot_config(args.robot) if args.robot else load_robot_config()
        model = build_model(cfg, "train")
        output_dir(args.out, "--out")
        check_output_files(args.out, [f"{name}.csv" for name in args.motions], "--out")  # before any clip is written
        for name in args.motions:
            clip = synthesize(name, cfg, model)
            path = write_motion_csv(
                args.out / f"{name}.csv", clip,
                comment=f"BCG synthesized clip '{name}': {clip.duration_s:.2f} s at {clip.fps:g} fps, G1 CSV format\n"
                "columns: root x,y,z, root quat x,y,z,w, 29 joint angles in motor order",
            )
            print(f"{path}: {clip.num_frames} frames, {clip.duration_s:.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""bcg-export: write the ONNX policy of a training checkpoint (raw robot state in, joint targets out)."""

from __future__ import annotations

import argparse
from pathlib import Path

from bcg_robot.config import load_robot_config
from bcg_robot.errors import exit_on_input_error
from bcg_robot.paths import output_file
from bcg_robot.yaml_dataclass import dump_dataclass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bcg-export", description=__doc__)
    parser.add_argument("checkpoint", type=Path, help="checkpoint .pkl or a run directory (latest checkpoint)")
    parser.add_argument("--out", type=Path, required=True, help="ONNX file to write")
    args = parser.parse_args(argv)
    with exit_on_input_error(parser.prog):
        output_file(args.out, "--out")  # before loading the checkpoint and building the graph
        from bcg_train.export.policy import export_onnx, reference_offset_table
        from bcg_train.learn.train import check_checkpoint_motion, check_checkpoint_robot, load_checkpoint

        ckpt = load_checkpoint(args.checkpoint)
        check_checkpoint_motion(ckpt)
        robot = load_robot_config()
        check_checkpoint_robot(ckpt, robot)
        ref, table = reference_offset_table(ckpt.config, robot)
        # the hash the checkpoint was saved with: recomputed, a config older than a field of
        # TrainConfig would hash with that field at its default and match no run
        path = export_onnx(args.out, ckpt.config, robot, ckpt.state.actor, ckpt.state.obs_stats, ref.name, ref.length_s, table,
                           source=str(ckpt.path), stored_hash=ckpt.stored_hash, trained_at=ckpt.source_commit)
        dump_dataclass(ckpt.config, path.with_suffix(".train.yaml"))
        print(f"bcg-export: {path} (iteration {int(ckpt.state.iteration)} of {ckpt.path}, motion '{ref.name}' {ref.length_s:.2f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

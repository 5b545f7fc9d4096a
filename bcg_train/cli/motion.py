"""bcg-motion: look at a G1 motion clip before training on it.

bcg-motion preview CLIP.csv validates the clip with the trainer's loader (a bad clip
is a one-line error naming file, row and column; exit 2), prints a one-line summary
(frames, duration, frame rate, root height range, frames outside the joint limits) and
plays the clip kinematically in the train model, writing a frame strip PNG and a GIF
(see bcg_train.motion.preview). Exit 1 when no offscreen GL backend (egl, osmesa) works.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bcg_robot.config import DEFAULT_ROBOT_CONFIG, load_robot_config
from bcg_robot.errors import exit_on_input_error
from bcg_robot.paths import check_output_dir, check_output_files
from bcg_train.motion.loader import CSV_FPS, load_motion_csv
from bcg_train.motion.preview import (
    PreviewRenderError,
    PreviewSettings,
    clip_summary,
    default_out_dir,
    gif_frame_indices,
    preview_paths,
    render_preview_offscreen,
    strip_frame_indices,
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bcg-motion", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    defaults = PreviewSettings()
    preview = commands.add_parser(
        "preview", help="validate a clip, summarize it and render a frame strip PNG and a GIF",
        description=__doc__.split("\n\n", 1)[1].strip(),
    )
    preview.add_argument("clip", type=Path, help="G1 CSV clip (format: bcg_robot.motion_csv)")
    preview.add_argument("--out", type=Path, default=None, help="output folder (default: runs/preview/<clip stem>/)")
    preview.add_argument("--fps", type=float, default=CSV_FPS, help=f"the clip's frame rate (default {CSV_FPS:g})")
    preview.add_argument("--frames", type=int, default=defaults.strip_frames, help="frames in the strip, evenly spaced over the clip")
    preview.add_argument("--gif-fps", type=float, default=defaults.gif_fps, help="GIF frame rate (plays in real time)")
    preview.add_argument("--width", type=int, default=defaults.width, help="px per frame")
    preview.add_argument("--height", type=int, default=defaults.height, help="px per frame")
    preview.add_argument("--robot-config", type=Path, default=DEFAULT_ROBOT_CONFIG)
    args = parser.parse_args(argv)

    settings = PreviewSettings(args.frames, args.gif_fps, args.height, args.width)
    try:
        settings.validate()
    except ValueError as err:
        print(f"{parser.prog}: error: {err}", file=sys.stderr)
        return 2
    with exit_on_input_error(parser.prog):
        robot = load_robot_config(args.robot_config)
        clip = load_motion_csv(args.clip, robot, args.fps)
        out = check_output_dir(args.out if args.out is not None else default_out_dir(args.clip), "--out")  # before rendering
        paths = preview_paths(args.clip, out)
        check_output_files(out, (paths.strip.name, paths.gif.name), "--out")
    summary = clip_summary(clip, robot)
    if summary.limits.frames_outside:
        print(
            f"{parser.prog}: warning: {args.clip}: {summary.limits.frames_outside} of {clip.num_frames} frames have a joint "
            f"outside its limits (worst {summary.limits.worst_joint} by {summary.limits.worst_excess_rad:.3f} rad; "
            f"within the loader's margin)", file=sys.stderr,
        )
    try:
        backend = render_preview_offscreen(args.clip, args.robot_config, paths, settings, clip.fps)
    except PreviewRenderError as err:
        print(f"{parser.prog}: error: {err}", file=sys.stderr)
        return 1
    tiles = len(strip_frame_indices(clip.num_frames, settings.strip_frames))
    gif_frames = len(gif_frame_indices(clip.num_frames, clip.fps, settings.gif_fps))
    print(
        f"{parser.prog}: {args.clip}: {summary.line()}; wrote {paths.strip} ({tiles} frames) and {paths.gif} "
        f"({gif_frames} frames at {settings.gif_fps:g} fps) with {backend}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

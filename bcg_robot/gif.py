"""Animated GIFs of rendered frames: the one writer of sim-to-sim, ``bcg-eval`` and motion previews.

A GIF stores each frame's display time in hundredths of a second, which Pillow takes in
milliseconds. (``imageio.mimsave(...,
duration=1/fps)`` passes seconds to a writer that reads milliseconds: every frame got 0 ms
and the animation played as fast as the viewer could draw it.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np


def frame_duration_ms(fps: float) -> int:
    """Display time of one frame at ``fps`` in ms, on the format's 10 ms grid (at least 10)."""
    if not fps > 0:
        raise ValueError(f"GIF frame rate must be > 0, got {fps}")
    return max(10, 10 * round(100.0 / fps))


def write_gif(path: str | Path, frames: Sequence[np.ndarray], fps: float, loop: bool = True) -> Path:
    """Write RGB frames (H, W, 3, uint8) as an animated GIF shown at ``fps``; returns the path."""
    from PIL import Image

    if len(frames) == 0:
        raise ValueError(f"{path}: no frames to write")
    images = [Image.fromarray(np.asarray(f, dtype=np.uint8)) for f in frames]
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    images[0].save(path, save_all=True, append_images=images[1:], duration=frame_duration_ms(fps), loop=0 if loop else None)
    return path

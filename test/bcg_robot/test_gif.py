"""The GIF writer stores each frame's time in milliseconds."""

import numpy as np
import pytest
from PIL import Image

from bcg_robot.gif import frame_duration_ms, write_gif


def test_frames_play_at_the_requested_rate(tmp_path):
    frames = [np.full((6, 8, 3), 40 * i, np.uint8) for i in range(4)]
    path = write_gif(tmp_path / "a" / "clip.gif", frames, fps=20.0)
    with Image.open(path) as im:
        assert im.n_frames == 4
        durations = []
        for i in range(im.n_frames):
            im.seek(i)
            durations.append(im.info["duration"])
    assert durations == [50, 50, 50, 50]


def test_frame_duration_and_bad_input(tmp_path):
    assert frame_duration_ms(15.0) == 70 and frame_duration_ms(1000.0) == 10
    with pytest.raises(ValueError):
        frame_duration_ms(0.0)
    with pytest.raises(ValueError, match="no frames"):
        write_gif(tmp_path / "x.gif", [], fps=10.0)

"""The bridge's trajectory log: what the simulated robot did and what its drives applied.

Written as one ``.npz`` at exit; sim-to-sim reports (falls, tracking, penetration,
which command reached the motors when) are computed from it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from bcg_sim_bridge.physics import BridgeState

FIELDS = ("sim_time", "tick", "root_pos", "root_quat", "q", "dq", "tau", "foot_penetration", "drive_mode",
          "band_engaged", "wall_time")  # wall_time: time.monotonic() (system-wide, comparable across processes)


class TrajectoryRecorder:
    def __init__(self) -> None:
        self._rows: dict[str, list] = {name: [] for name in FIELDS}
        self._rows["cmd_q"] = []
        self._rows["cmd_kp"] = []
        self._rows["cmd_kd"] = []

    def record(self, state: BridgeState, wall_time: float, cmd_q: np.ndarray, cmd_kp: np.ndarray,
               cmd_kd: np.ndarray) -> None:
        r = self._rows
        r["sim_time"].append(state.sim_time)
        r["tick"].append(state.tick)
        r["root_pos"].append(state.root_pos)
        r["root_quat"].append(state.root_quat)
        r["q"].append(state.q)
        r["dq"].append(state.dq)
        r["tau"].append(state.tau)
        r["foot_penetration"].append(state.foot_penetration)
        r["drive_mode"].append(int(state.drive_mode))
        r["band_engaged"].append(state.band_engaged)
        r["wall_time"].append(wall_time)
        r["cmd_q"].append(cmd_q)
        r["cmd_kp"].append(cmd_kp)
        r["cmd_kd"].append(cmd_kd)

    def __len__(self) -> int:
        return len(self._rows["sim_time"])

    def save(self, path: str | Path, **extra: np.ndarray) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        arrays = {k: np.asarray(v) for k, v in self._rows.items()}
        arrays.update({k: np.asarray(v) for k, v in extra.items()})
        tmp = path.with_suffix(".tmp.npz")
        np.savez_compressed(tmp, **arrays)
        tmp.replace(path)
        return path

"""CPU use of processes from /proc (Linux): user + system time over wall time."""

from __future__ import annotations

import os
import time


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks  # utime, stime


class CpuMeter:
    def __init__(self, pids: dict[str, int]):
        self.pids = pids
        self.t0 = time.monotonic()
        self.c0 = {name: cpu_seconds(pid) for name, pid in pids.items()}

    def percent(self) -> dict[str, float]:
        wall = time.monotonic() - self.t0
        return {name: 100.0 * (cpu_seconds(pid) - self.c0[name]) / wall for name, pid in self.pids.items()}

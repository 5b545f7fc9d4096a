"""Real-time pacing against a monotonic deadline (no accumulated ``sleep`` drift).

Step ``k`` is due at ``start + k * period / realtime_factor``. The loop waits for that
deadline, not for a fixed sleep, so a slow step is made up by the next ones; a loop
that falls more than ``max_lag_s`` behind re-anchors instead of sprinting to catch up.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from typing import Callable


@dataclasses.dataclass
class PacingStats:
    steps: int = 0
    overruns: int = 0  # steps that started after their deadline
    resyncs: int = 0  # times the schedule was re-anchored after falling behind
    max_lag_s: float = 0.0
    wall_s: float = 0.0
    sim_s: float = 0.0

    @property
    def realtime_factor(self) -> float:
        return self.sim_s / self.wall_s if self.wall_s > 0 else 0.0


class RealtimePacer:
    def __init__(self, period_s: float, realtime_factor: float = 1.0, max_lag_s: float = 0.1,
                 stop_event: threading.Event | None = None, clock: Callable[[], float] = time.monotonic):
        """``stop_event``: set, it ends a wait at once; its ``wait`` is how the pacer waits.
        ``clock``: a monotonic clock in seconds."""
        self.clock = clock
        self.period = period_s
        self.factor = realtime_factor
        self.max_lag = max_lag_s
        self.stop_event = stop_event or threading.Event()
        self.stats = PacingStats()
        self._start = clock()
        self._origin = self._start  # wall time of step ``_anchor_step``
        self._anchor_step = 0
        self.lag_s = 0.0  # how late the last step ended (> 0: behind the schedule)
        self._lock = threading.Lock()  # the loop writes, the status timer reads

    def wait_next(self) -> None:
        """Block until the next step is due (returns at once when running as fast as possible)."""
        now = self.clock()
        with self._lock:
            self.stats.steps += 1
            self.stats.sim_s += self.period
            self.stats.wall_s = now - self._start
            if self.factor <= 0:
                return
            due = self._origin + (self.stats.steps - self._anchor_step) * self.period / self.factor
            lag = now - due
            self.lag_s = lag
            if lag > 0:
                self.stats.overruns += 1
                self.stats.max_lag_s = max(self.stats.max_lag_s, lag)
                if lag > self.max_lag:
                    self.stats.resyncs += 1
                    self._anchor_step = self.stats.steps
                    self._origin = now
                return
        self.stop_event.wait(-lag)

    def snapshot(self) -> tuple[PacingStats, float]:
        """A copy of the statistics and the last step's lag, for another thread."""
        with self._lock:
            return dataclasses.replace(self.stats), self.lag_s


@dataclasses.dataclass
class StateThinning:
    """Whether the bridge skips a due state publication: yes while its loop runs more than
    ``max_lag_s`` behind real time, but never more than ``max_skips`` in a row. On an
    overloaded machine the simulated robot so keeps the wall clock and its state stream
    thins out, instead of the whole robot slowing down; two published states are at most
    ``max_skips + 1`` publication periods apart."""

    max_lag_s: float
    max_skips: int = 3
    _in_a_row: int = 0

    def skip(self, lag_s: float) -> bool:
        if lag_s > self.max_lag_s and self._in_a_row < self.max_skips:
            self._in_a_row += 1
            return True
        self._in_a_row = 0
        return False

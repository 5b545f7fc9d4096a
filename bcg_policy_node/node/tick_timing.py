"""Per-tick timing figures, kept over a sliding window (pure)."""

from __future__ import annotations

import collections

import numpy as np


class TickTiming:
    """Period, state age at command time and compute time of recent ticks, in ms."""

    def __init__(self, window: int = 500):
        self.period = collections.deque(maxlen=window)
        self.state_age = collections.deque(maxlen=window)
        self.compute = collections.deque(maxlen=window)
        self._last_start: float | None = None

    def record(self, start: float, sent: float, state_received_at: float | None,
               ready: float | None = None) -> tuple[float, float, float]:
        """``start``: the timer fired; ``ready``: the state was in hand (after the wait for a
        fresh sample; default ``start``); ``sent``: the command was handed to the transport."""
        period = (start - self._last_start) * 1e3 if self._last_start is not None else float("nan")
        self._last_start = start
        age = (sent - state_received_at) * 1e3 if state_received_at is not None else float("nan")
        compute = (sent - (start if ready is None else ready)) * 1e3
        if np.isfinite(period):
            self.period.append(period)
        if np.isfinite(age):
            self.state_age.append(age)
        self.compute.append(compute)
        return period, age, compute

    def summary(self, nominal_ms: float) -> dict[str, float]:
        out = {}
        if self.period:
            jitter = np.abs(np.asarray(self.period) - nominal_ms)
            out["jitter_median_ms"] = float(np.median(jitter))
            out["jitter_p99_ms"] = float(np.percentile(jitter, 99))
        if self.state_age:
            out["state_age_p99_ms"] = float(np.percentile(self.state_age, 99))
        if self.compute:
            out["compute_p99_ms"] = float(np.percentile(self.compute, 99))
        return out

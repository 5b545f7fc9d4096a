"""When did a polled state sample arrive? (pure)

The interfaces take state samples when a control tick asks, not when they arrive, so the
time of the take can be up to one control period after the arrival; judged by it, a
stream that stopped looks one period fresher than it is, and the stale-state and
tick-stall watchdogs trip a period late. Each sample carries a timestamp of another
clock (ros2: the reception time, system clock; Cyclone: the writer's source time, the
robot's clock on hardware). :class:`ArrivalClock` maps it onto this process's monotonic
clock through the smallest (take time - sample time) seen over a sliding window: the
tick waits for fresh samples, so some are taken right as they arrive and pin that
offset, whatever the other clock's epoch. The result is clamped to the interval the
sample must have arrived in: after the previous take (depth-1 history: it was not there
yet) and no later than this take. A clock jump can therefore misdate a sample by at most
the time between two takes, never put it outside that interval.
"""

from __future__ import annotations

import collections


class ArrivalClock:
    def __init__(self, window: int = 250):
        self._offsets: collections.deque[float] = collections.deque(maxlen=window)
        self._previous_take: float | None = None

    def took(self, take_time: float, sample_time: float | None) -> float:
        """Call at every take (``sample_time`` None when it found nothing); returns the
        arrival time on the ``take_time`` clock of the sample taken, else ``take_time``."""
        previous, self._previous_take = self._previous_take, take_time
        if sample_time is None:
            return take_time
        self._offsets.append(take_time - sample_time)
        estimate = sample_time + min(self._offsets)
        earliest = previous if previous is not None else take_time
        return min(take_time, max(earliest, estimate))

"""Dating polled state samples by their arrival (pure)."""

import pytest

from bcg_policy_node.interfaces.arrival import ArrivalClock

EPOCH = 1.8e9  # the other clock's epoch (wall time, or a robot's own clock): unknown to the reader


def test_a_sample_taken_late_is_dated_back_to_its_arrival():
    clock = ArrivalClock()
    latency = 0.0003
    for k in range(10):  # samples taken right as they arrive (the tick waited for them)
        t = 10.0 + 0.02 * k
        assert clock.took(t, EPOCH + t - latency) == pytest.approx(t)
    clock.took(10.20, None)  # a take that found nothing
    # a sample that arrived at 10.205 and was taken by the next tick, 15 ms later
    assert clock.took(10.22, EPOCH + 10.205 - latency) == pytest.approx(10.205, abs=1e-6)


def test_the_estimate_stays_inside_the_interval_since_the_previous_take():
    clock = ArrivalClock()
    for k in range(5):
        t = 1.0 + 0.02 * k
        clock.took(t, EPOCH + t)
    # the other clock jumped back by an hour: the sample cannot have arrived before the previous take
    assert clock.took(1.10, EPOCH + 1.10 - 3600.0) == pytest.approx(1.08)
    # it jumped forward: it cannot have arrived after this take
    assert clock.took(1.12, EPOCH + 1.12 + 3600.0) == pytest.approx(1.12)


def test_first_sample_and_empty_takes():
    clock = ArrivalClock()
    assert clock.took(5.0, EPOCH) == 5.0
    assert clock.took(5.02, None) == 5.02

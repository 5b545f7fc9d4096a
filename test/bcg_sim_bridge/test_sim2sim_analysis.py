"""Report metrics of sim-to-sim, computed from a bridge log (pure, no processes)."""

import numpy as np
import pytest

from bcg_robot import metrics
from bcg_robot.config import load_robot_config
from bcg_sim_bridge.physics import DriveMode
from bcg_sim_bridge.sim2sim.analysis import KeyBodyFK, percentiles_ms, tracking_error_cm


@pytest.fixture(scope="module")
def robot():
    return load_robot_config()


def test_tracking_error_is_zero_on_the_reference_and_grows_with_deviation(robot):
    fk = KeyBodyFK(robot)
    ref = np.tile(robot.default_q, (3, 1))
    assert tracking_error_cm(fk, ref, ref) == (0.0, 0.0)
    bent = ref.copy()
    bent[:, robot.joint_names.index("left_elbow")] += 0.3
    mean, worst = tracking_error_cm(fk, bent, ref)
    # only the left wrist moves: about forearm length (~0.2 m) * 0.3 rad, averaged over the tracked bodies
    assert 3.0 < worst < 10.0 and mean == pytest.approx(worst / len(metrics.TRACKED_BODIES), rel=1e-6)


def test_percentiles_ignore_non_finite_samples():
    p = percentiles_ms(np.array([np.nan, 0.001, 0.002, 0.003]))
    assert p["p50"] == pytest.approx(2.0) and p["max"] == pytest.approx(3.0)
    assert np.isnan(percentiles_ms(np.array([]))["p50"])


def test_drive_modes_are_stable_codes():
    # the bridge log stores these integers; reports decode them by name
    assert [m.value for m in DriveMode] == [0, 1, 2, 3]

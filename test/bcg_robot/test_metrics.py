"""The metric definitions of bcg_robot.metrics on small hand-made arrays."""

import numpy as np
import pytest

from bcg_robot import metrics
from bcg_robot.config import load_robot_config
from bcg_robot.model import build_model, foot_floor_geoms

IDENTITY = np.array([1.0, 0.0, 0.0, 0.0])
YAW_90 = np.array([np.cos(np.pi / 4), 0.0, 0.0, np.sin(np.pi / 4)])  # +90 degrees about world z


def test_root_frame_positions_remove_root_translation_and_orientation():
    bodies = np.array([[1.0, 0.0, 0.0], [0.0, 2.0, 1.0]])
    root = np.array([5.0, -3.0, 0.8])
    # a root turned by 90 degrees about z sees the world's +y as its +x
    world = root + np.array([[0.0, 1.0, 0.0], [-2.0, 0.0, 1.0]])
    np.testing.assert_allclose(metrics.root_frame_positions(world, root, YAW_90), bodies, atol=1e-12)
    # batched over samples: (T, K, 3) with (T, 3) and (T, 4)
    batch = metrics.root_frame_positions(np.stack([world, bodies]), np.stack([root, np.zeros(3)]), np.stack([YAW_90, IDENTITY]))
    np.testing.assert_allclose(batch, np.stack([bodies, bodies]), atol=1e-12)


def test_a_known_offset_gives_a_known_e_track():
    ref = np.zeros((4, 3, 3))  # 4 samples, 3 bodies
    robot = ref.copy()
    robot[:, 0] += [0.03, 0.04, 0.0]  # body 0 off by 5 cm at every sample
    errors = metrics.body_position_errors(robot, ref)
    assert errors.shape == (4, 3)
    summary = metrics.summarize_tracking(errors)
    assert summary.mean_cm == pytest.approx(5.0 / 3) and summary.max_cm == pytest.approx(5.0)
    assert metrics.summarize_tracking(metrics.body_position_errors(ref, ref)) == metrics.TrackingSummary(0.0, 0.0)
    assert np.isnan(metrics.summarize_tracking(np.zeros((0, 3))).mean_cm)


def test_e_track_ignores_where_the_root_is_and_where_it_faces():
    ref_bodies = np.array([[0.1, 0.0, 0.3], [0.0, -0.1, -0.7]])
    robot_world = np.array([2.0, 1.0, 0.75]) + np.array([[0.0, 0.1, 0.3], [0.1, 0.0, -0.7]])  # same posture, turned 90 deg
    robot = metrics.root_frame_positions(robot_world, np.array([2.0, 1.0, 0.75]), YAW_90)
    ref = metrics.root_frame_positions(ref_bodies, np.zeros(3), IDENTITY)
    assert metrics.summarize_tracking(metrics.body_position_errors(robot, ref)).mean_cm == pytest.approx(0.0, abs=1e-10)


def test_deepest_foot_penetration_counts_only_foot_floor_contacts():
    geoms = metrics.FootFloorGeoms(floor=0, feet=np.array([4, 5]))
    dist = np.array([-0.002, -0.009, -0.004, 0.001, -0.020])
    geom1 = np.array([0, 0, 5, 0, 0])
    geom2 = np.array([4, 7, 0, 5, 9])  # contact 1 and 4: floor with a non-foot geom
    assert geoms.deepest_penetration(dist, geom1, geom2) == pytest.approx(0.004)
    assert geoms.deepest_penetration(np.array([0.001]), np.array([0]), np.array([4])) == 0.0  # touching, not penetrating
    assert geoms.deepest_penetration(np.zeros(0), np.zeros(0, int), np.zeros(0, int)) == 0.0


def test_touching_needs_a_foot_floor_contact_at_distance_zero_or_less():
    geoms = metrics.FootFloorGeoms(floor=0, feet=np.array([4, 5]))
    assert geoms.touching(np.array([0.0]), np.array([0]), np.array([4]))
    assert geoms.touching(np.array([0.003, -0.001]), np.array([0, 5]), np.array([4, 0]))
    assert not geoms.touching(np.array([0.001]), np.array([0]), np.array([5]))  # within margin, not touching
    assert not geoms.touching(np.array([-0.01]), np.array([0]), np.array([7]))  # the floor with a non-foot geom
    assert not geoms.touching(np.zeros(0), np.zeros(0, int), np.zeros(0, int))


def test_longest_flight_is_the_longest_run_without_a_foot_on_the_floor():
    touching = np.array([True, False, False, True, False, False, False, True, False])
    assert metrics.longest_flight_s(touching, 0.002) == pytest.approx(0.006)
    assert metrics.longest_flight_s(np.ones(5, bool), 0.002) == 0.0
    assert metrics.longest_flight_s(np.zeros(4, bool), 0.5) == pytest.approx(2.0)
    assert metrics.longest_flight_s(np.zeros(0, bool), 0.002) == 0.0


def test_foot_penetration_is_averaged_over_the_samples_that_penetrate():
    summary = metrics.summarize_foot_penetration(np.array([0.0, 0.002, 0.0, 0.004, 0.0]))
    assert summary.mean_mm == pytest.approx(3.0) and summary.max_mm == pytest.approx(4.0)
    assert metrics.summarize_foot_penetration(np.zeros(3)) == metrics.PenetrationSummary(0.0, 0.0)
    assert np.isnan(metrics.summarize_foot_penetration(np.zeros(0)).mean_mm)


def test_a_fall_is_the_root_below_the_fall_height_or_a_non_finite_state():
    h = np.array([0.79, metrics.FALL_HEIGHT_M + 1e-6, metrics.FALL_HEIGHT_M - 1e-6, np.nan, 0.79])
    finite = np.array([True, True, True, True, False])
    np.testing.assert_array_equal(metrics.is_fallen(h, finite), [False, False, True, True, True])
    assert not metrics.is_fallen(0.5) and metrics.is_fallen(0.2)


def test_foot_floor_geoms_of_the_g1_model():
    robot = load_robot_config()
    for variant in ("train", "bridge"):
        model = build_model(robot, variant)
        geoms = foot_floor_geoms(model, robot)
        assert model.geom(geoms.floor).name == "floor" and geoms.feet.size > 0
        feet = {model.body(f).id for f in robot.feet}
        assert all(model.geom_bodyid[g] in feet for g in geoms.feet)
    for body in metrics.TRACKED_BODIES:
        model.body(body)  # every tracked body exists in the G1 model


def test_root_height_error_is_the_mean_and_max_absolute_height_difference_in_cm():
    z = np.array([0.78, 0.70, 0.90, 0.78])
    ref = np.array([0.78, 0.75, 0.80, 0.78])
    mean, worst = metrics.root_height_error_cm(z, ref)
    assert mean == pytest.approx((0 + 5 + 10 + 0) / 4) and worst == pytest.approx(10.0)
    # a scalar reference broadcasts (the default pose's standing height)
    assert metrics.root_height_error_cm(np.array([0.70, 0.80]), 0.75) == pytest.approx((5.0, 5.0))
    # the same posture in the air and in a crouch: root-relative E_track is blind to it, this is not
    assert metrics.root_height_error_cm(np.array([0.88]), np.array([0.68])) == pytest.approx((20.0, 20.0))
    assert all(np.isnan(v) for v in metrics.root_height_error_cm(np.zeros(0), np.zeros(0)))

"""The one PD law (bcg_robot.pd) gives the same torques on numpy and jax.numpy arrays."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bcg_robot.config import load_robot_config
from bcg_robot.pd import pd_torque, position_target_bounds

ROBOT = load_robot_config(check_model=False)


def _drive_state(seed: int = 0) -> dict[str, np.ndarray]:
    """Float32 states of the G1 (motor order) wide enough that some torques hit the effort limit."""
    rng = np.random.default_rng(seed)
    n = ROBOT.num_joints
    f32 = lambda x: np.asarray(x, np.float32)  # noqa: E731
    return {
        "q_des": f32(ROBOT.default_q + 0.5 * rng.normal(size=n)),
        "q": f32(ROBOT.default_q + 0.5 * rng.normal(size=n)),
        "dq_des": f32(rng.normal(size=n)),
        "dq": f32(5.0 * rng.normal(size=n)),
        "kp": f32(ROBOT.kp_array),
        "kd": f32(ROBOT.kd_array),
        "tau_ff": f32(rng.normal(size=n)),
        "effort": f32(ROBOT.effort),
    }


def test_pd_torque_is_identical_in_numpy_and_jax_numpy():
    state = _drive_state()
    tau_np = pd_torque(**state)
    tau_jax = pd_torque(**{k: jnp.asarray(v) for k, v in state.items()}, xp=jnp)
    assert isinstance(tau_jax, jax.Array) and tau_jax.dtype == jnp.float32
    np.testing.assert_array_equal(np.asarray(tau_jax), tau_np)
    clipped = np.abs(tau_np) == state["effort"]
    assert clipped.any() and not clipped.all()  # both branches of the clip are exercised
    # under jit, as the trainer runs it
    jitted = jax.jit(lambda s: pd_torque(**s, xp=jnp))({k: jnp.asarray(v) for k, v in state.items()})
    np.testing.assert_allclose(np.asarray(jitted), tau_np, rtol=1e-6, atol=1e-5)


def test_position_target_bounds_are_identical_in_numpy_and_jax_numpy():
    s = _drive_state(1)
    kp = s["kp"].copy()
    kp[0] = 0.0  # a joint without stiffness has no bound
    lo_np, hi_np = position_target_bounds(s["q"], s["dq"], kp, s["kd"], s["effort"])
    lo_jax, hi_jax = position_target_bounds(*(jnp.asarray(x) for x in (s["q"], s["dq"], kp, s["kd"], s["effort"])), xp=jnp)
    np.testing.assert_array_equal(np.asarray(lo_jax), lo_np)
    np.testing.assert_array_equal(np.asarray(hi_jax), hi_np)
    assert lo_np[0] == -np.inf and hi_np[0] == np.inf
    # the bounds are where the PD torque (dq_des = tau_ff = 0) reaches the effort limit
    tau_hi = pd_torque(hi_np[1:], s["q"][1:], 0.0, s["dq"][1:], kp[1:], s["kd"][1:], 0.0, np.inf)
    np.testing.assert_allclose(tau_hi, s["effort"][1:], rtol=1e-4)


@pytest.mark.parametrize("xp", [np, jnp], ids=["numpy", "jax.numpy"])
def test_pd_torque_of_a_known_state(xp):
    tau = pd_torque(xp.asarray([1.0, 0.0]), xp.asarray([0.5, 0.0]), 0.0, xp.asarray([0.0, 2.0]), xp.asarray([100.0, 10.0]),
                    xp.asarray([2.0, 1.0]), xp.asarray([1.0, 0.0]), xp.asarray([40.0, 1.5]), xp=xp)
    np.testing.assert_allclose(np.asarray(tau), [40.0, -1.5])  # 1 + 50 -> clipped to 40; -2 -> clipped to -1.5

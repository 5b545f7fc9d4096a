"""ONNX export of a brax PPO policy: onnxruntime matches brax's own deterministic policy."""

import jax
import jax.numpy as jnp
import numpy as np
import onnxruntime as ort
import pytest
from brax.training.acme import running_statistics
from brax.training.agents.ppo import networks as ppo_networks

from bcg_robot.action_offset import reference_joint_targets
from bcg_robot.config import load_robot_config
from bcg_robot.observation import build_observation, observation_size
from bcg_robot.onnx_policy import OnnxPolicy
from bcg_train.export.ppo_policy import export_ppo_onnx, ppo_policy_weights
from bcg_train.learn.config import TrainConfig
from bcg_train.tasks.config import ImitationConfig
from bcg_train.learn.ppo_baseline import PPOConfig, make_networks

ROBOT = load_robot_config()


def _trained_like(action_offset: str = "default_pose"):
    """brax PPO networks for the G1 task with random weights and a normalizer that has seen data."""
    cfg = TrainConfig(task=ImitationConfig(action_offset=action_offset))
    ppo = PPOConfig(actor_hidden=(32, 16), critic_hidden=(8,), action_clip=2.0)
    n_obs = observation_size(cfg.task.observation_spec, ROBOT.num_joints)
    nets = make_networks(ppo, n_obs, ROBOT.num_joints)
    policy = nets.policy_network.init(jax.random.PRNGKey(0))
    policy = jax.tree_util.tree_map(lambda x: x + 0.3 * jax.random.normal(jax.random.PRNGKey(1), x.shape), policy)  # not the init
    normalizer = running_statistics.init_state(jax.ShapeDtypeStruct((n_obs,), jnp.float32))
    normalizer = running_statistics.update(normalizer, jax.random.normal(jax.random.PRNGKey(2), (256, n_obs)) * 3.0 + 0.5)
    return cfg, ppo, nets, (normalizer, policy, None)


def _raw_batch(rng: np.random.Generator, batch: int) -> dict[str, np.ndarray]:
    q = rng.normal(size=(batch, 4))
    return {
        "imu_quat": (q / np.linalg.norm(q, axis=1, keepdims=True)).astype(np.float32),
        "imu_gyro": rng.normal(size=(batch, 3)).astype(np.float32),
        "joint_pos": (ROBOT.default_q + 0.3 * rng.normal(size=(batch, ROBOT.num_joints))).astype(np.float32),
        "joint_vel": rng.normal(size=(batch, ROBOT.num_joints)).astype(np.float32),
        "last_action": rng.normal(size=(batch, ROBOT.num_joints)).astype(np.float32),
        "phase": rng.uniform(0, 1, size=(batch, 1)).astype(np.float32),
    }


@pytest.mark.parametrize("action_offset", ["default_pose", "reference"])
def test_onnx_matches_brax_deterministic_policy(tmp_path, action_offset):
    cfg, ppo, nets, params = _trained_like(action_offset)
    table = None
    if action_offset == "reference":
        table = ROBOT.default_q + 0.2 * np.sin(np.linspace(0, 3, 40))[:, None] * np.ones(ROBOT.num_joints)
    path = export_ppo_onnx(tmp_path / "ppo.onnx", cfg, ROBOT, params, ppo.action_clip, "squat", 0.8, table)
    policy = OnnxPolicy.load(path, ROBOT)  # the deployment loader accepts it against the robot
    raw = _raw_batch(np.random.default_rng(3), 64)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    targets, action = session.run(["joint_targets", "action"], raw)

    obs = build_observation(policy.contract.observation_spec, raw, np.asarray(ROBOT.default_q))
    brax_action, _ = ppo_networks.make_inference_fn(nets)(params, deterministic=True)(jnp.asarray(obs, jnp.float32), jax.random.PRNGKey(0))
    brax_action = np.clip(np.asarray(brax_action), -ppo.action_clip, ppo.action_clip)  # BraxTaskEnv's clip
    np.testing.assert_allclose(action, brax_action, atol=2e-5, rtol=1e-5)
    assert np.abs(action).max() > 0.5 and (np.abs(action) == ppo.action_clip).any()  # non-trivial, and the clip acts
    # the offset: the default pose, or the clip's next frame at the state's phase (the training's)
    offset = np.asarray(ROBOT.default_q) if table is None else reference_joint_targets(np.asarray(table), raw["phase"])
    np.testing.assert_allclose(targets, offset + np.asarray(policy.contract.action_scale) * action, atol=1e-5)
    assert policy.contract.action_offset == action_offset


def test_a_diverged_ppo_policy_is_refused_like_a_shac_one(tmp_path):
    """The PPO exporter skipped SHAC's checks: a run whose weights went NaN was written, loaded by
    the node (a NaN trial output is allowed there) and damped the robot at its first RUN tick."""
    import copy

    from bcg_train.export.policy import ExportError

    cfg, ppo, _, params = _trained_like("default_pose")
    normalizer, policy, *rest = params
    bad_policy = copy.deepcopy(jax.device_get(policy))
    kernel = np.array(bad_policy["params"]["MLP_0"]["hidden_0"]["kernel"])
    kernel[0, 0] = np.nan
    bad_policy["params"]["MLP_0"]["hidden_0"]["kernel"] = kernel
    out = tmp_path / "ppo.onnx"
    with pytest.raises(ExportError, match=r"ppo.onnx: policy layer 0 weight has non-finite values"):
        export_ppo_onnx(out, cfg, ROBOT, (normalizer, bad_policy, *rest), ppo.action_clip, "squat", 0.8)
    assert not out.exists()


def test_a_network_that_is_not_brax_ppos_is_refused():
    _, ppo, _, (normalizer, policy, _) = _trained_like()
    bad = {"params": {**policy["params"], "LayerNorm_0": {}}}
    with pytest.raises(ValueError, match="not a brax PPO policy"):
        ppo_policy_weights((normalizer, bad), ppo.action_clip)

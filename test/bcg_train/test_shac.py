"""SHAC learner: one iteration lowers the actor loss, checkpoints, resume, determinism,
data parallelism over two forced host devices, a non-finite actor gradient. Runs on the
pure-JAX point mass (fast); a G1 iteration is traced in test_imitation_task.py, and SHAC+BCG
learns on the hopper in test_learning_regression.py."""

import dataclasses
import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bcg_train.learn.action_gradients import actor_gradient_from_actions, cap_environment_gradients
from bcg_train.learn.config import SHACConfig, TrainConfig, config_hash, motion_sha256, plain_config_hash, source_commit
from bcg_train.learn.shac import SHAC, is_counted
from bcg_train.learn.train import CheckpointError, load_checkpoint, save_checkpoint, train
from bcg_train.tasks.point_mass import PointMassTask

ROOT = Path(__file__).resolve().parents[2]
TINY = SHACConfig(
    num_envs=8, horizon=8, iterations=20, actor_hidden=(16, 16), critic_hidden=(16,), critic_iterations=2,
    critic_minibatches=2, actor_output_scale=0.5,
)


def _cfg(tmp_path: Path, name: str, checkpoint_every: int = 1, **shac) -> TrainConfig:
    import dataclasses

    return TrainConfig(shac=dataclasses.replace(TINY, **shac), run_dir=str(tmp_path / name), checkpoint_every=checkpoint_every, devices=1)


def _leaves(tree):
    return [np.asarray(x) for x in jax.tree_util.tree_leaves(tree)]


def test_failures_and_termination_reasons_are_counted_the_rest_averaged():
    assert is_counted("sim_failures") and is_counted("terminated/tilted")
    assert not is_counted("tracking_error_m") and not is_counted("reward/terminated")


def test_a_failed_steps_figures_are_left_out_of_the_iterations_means():
    """A failed step reports zeros (no state to measure): averaged in, the tracking error fell as
    failures rose. Counts are sums; the other figures are means over the steps that did not fail."""
    from bcg_train.learn.shac import iteration_metrics

    step = {"sim_failures": jnp.array([[1.0, 0.0], [0.0, 0.0]]), "tracking_error_m": jnp.array([[0.0, 0.2], [0.1, 0.3]]),
            "terminated/low": jnp.array([[0.0, 1.0], [0.0, 1.0]])}
    out = iteration_metrics(step)
    assert float(out["sim_failures"]) == 1.0 and float(out["terminated/low"]) == 2.0
    assert float(out["tracking_error_m"]) == pytest.approx(0.2)  # (0.2 + 0.1 + 0.3) / 3, not / 4
    assert float(iteration_metrics({"distance": jnp.array([[1.0, 3.0]])})["distance"]) == 2.0  # a task without failures
    every = iteration_metrics({"sim_failures": jnp.ones((1, 2)), "tracking_error_m": jnp.zeros((1, 2))})
    assert float(every["tracking_error_m"]) == 0.0 and float(every["sim_failures"]) == 2.0  # nothing to average


def test_critic_learning_rate_decays_to_its_own_floor():
    import dataclasses

    updates = TINY.iterations * TINY.critic_iterations * TINY.critic_minibatches
    published = SHAC(PointMassTask(), TINY).critic_schedule
    assert float(published(0)) == pytest.approx(TINY.critic_lr) and float(published(updates)) == pytest.approx(TINY.lr_end)
    held = SHAC(PointMassTask(), dataclasses.replace(TINY, critic_lr_end=TINY.critic_lr)).critic_schedule
    assert float(held(updates)) == pytest.approx(TINY.critic_lr)
    with pytest.raises(ValueError, match="critic_lr_end"):
        dataclasses.replace(TINY, critic_lr_end=0.0).validate()


def test_one_iteration_is_finite_and_lowers_the_actor_loss():
    shac = SHAC(PointMassTask(), TINY)
    state = shac.init(0)
    _, k_noise, _ = jax.random.split(state.rng, 3)
    noise = shac.exploration_noise(k_noise)
    before, _ = shac._rollout(state.actor, state, noise)
    new, metrics = jax.jit(shac.iteration)(state)
    assert all(np.isfinite(float(v)) for v in metrics.values())
    assert all(np.isfinite(x).all() for x in _leaves(new))
    after, _ = shac._rollout(new.actor, state, noise)
    assert float(after) < float(before)
    assert float(metrics["actor_loss"]) == pytest.approx(float(before), rel=1e-5)
    assert int(new.iteration) == 1 and float(new.obs_stats.count) > float(state.obs_stats.count)


def test_an_episode_that_ends_on_the_windows_last_step_adds_no_value_of_the_next_episodes_start():
    """Every episode lasts exactly one window: each ends (truncated) on its last step, so the loss
    is the discounted rewards plus the bootstrap from the terminal observation, and nothing of
    the fresh episode the environment was reset into (its value was added as if the episode ran on)."""
    shac = SHAC(PointMassTask(episode_steps=TINY.horizon), TINY)
    state = shac.init(0)
    noise = shac.exploration_noise(jax.random.PRNGKey(5))
    loss, (_, records, _) = shac._rollout(state.actor, state, noise)
    rewards, next_values, (done, terminated) = np.asarray(records[1]), np.asarray(records[2]), records[5]
    assert np.asarray(done)[-1].all() and not np.asarray(done)[:-1].any() and not np.asarray(terminated).any()
    gamma, horizon = TINY.gamma, TINY.horizon
    returns = (gamma ** np.arange(horizon)[:, None] * rewards).sum(axis=0) + gamma**horizon * next_values[-1]
    assert float(loss) == pytest.approx(-returns.sum() / (horizon * TINY.num_envs), rel=1e-5)


def test_the_iteration_reports_the_spread_of_its_own_action_gradient():
    """The iteration's spread metrics are those of dL/da of its own window: the gradient of
    the actor loss with respect to the exploration noise it drew (same key)."""
    shac = SHAC(PointMassTask(), TINY)
    state = shac.init(0)
    _, k_noise, _ = jax.random.split(state.rng, 3)
    action_grads = jax.grad(lambda n: shac._rollout(state.actor, state, n)[0])(shac.exploration_noise(k_noise))
    per_env = np.sum(np.asarray(action_grads) ** 2, axis=(0, 2))
    _, metrics = jax.jit(shac.iteration)(state)
    assert float(metrics["action_grad_norm"]) == pytest.approx(np.sqrt(per_env.sum()), rel=1e-4)
    assert float(metrics["action_grad_top_env_share"]) == pytest.approx(per_env.max() / per_env.sum(), rel=1e-4)
    assert 1 / TINY.num_envs < float(metrics["action_grad_top_env_share"]) < 1


def test_the_actor_gradient_is_the_policy_chained_action_gradient():
    """Every path from the actor to the window's loss goes through an action: chaining dL/da
    through the policy at the window's observations gives the actor gradient itself."""
    shac = SHAC(PointMassTask(), TINY)
    state = shac.init(0)
    noise = shac.exploration_noise(jax.random.PRNGKey(3))
    (_, (_, records, _)), (direct, action_grads) = jax.value_and_grad(shac._rollout, argnums=(0, 2), has_aux=True)(
        state.actor, state, noise)
    chained = actor_gradient_from_actions(state.actor, state.obs_stats, records[0][0], action_grads, TINY.obs_clip, TINY.action_clip)
    for a, b in zip(_leaves(direct), _leaves(chained)):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-7)


def test_the_environment_gradient_cap_reweights_the_update():
    state = SHAC(PointMassTask(), TINY).init(0)
    _, plain = jax.jit(SHAC(PointMassTask(), TINY).iteration)(state)
    capped_shac = SHAC(PointMassTask(), dataclasses.replace(TINY, env_gradient_cap=1.0))
    _, capped = jax.jit(capped_shac.iteration)(capped_shac.init(0))
    # the spread metrics describe the uncapped dL/da, the same in both
    assert float(capped["action_grad_top_env_share"]) == pytest.approx(float(plain["action_grad_top_env_share"]), rel=1e-5)
    # the update is the policy-chained capped dL/da of the iteration's own window: smaller than the plain one
    _, k_noise, _ = jax.random.split(state.rng, 3)
    (_, (_, records, _)), action_grads = jax.value_and_grad(capped_shac._rollout, argnums=2, has_aux=True)(
        state.actor, state, capped_shac.exploration_noise(k_noise))
    expected = actor_gradient_from_actions(state.actor, state.obs_stats, records[0][0], cap_environment_gradients(action_grads, 1.0),
                                           TINY.obs_clip, TINY.action_clip)
    expected_norm = np.sqrt(sum(float(np.sum(x**2)) for x in _leaves(expected)))
    assert float(capped["actor_grad_norm"]) == pytest.approx(expected_norm, rel=1e-4)
    assert 0 < float(capped["actor_grad_norm"]) < float(plain["actor_grad_norm"])
    with pytest.raises(ValueError, match="env_gradient_cap"):
        dataclasses.replace(TINY, env_gradient_cap=-1.0).validate()
    with pytest.raises(ValueError, match="mirror_loss_weight"):
        dataclasses.replace(TINY, env_gradient_cap=1.0, mirror_loss_weight=0.1).validate()


@pytest.mark.slow
def test_training_improves_the_point_mass(tmp_path):
    # a checkpoint (and a redraw of the curves) every 20 iterations, not every one: 60 redraws took about a minute
    cfg = _cfg(tmp_path, "long", checkpoint_every=20, iterations=60, num_envs=16, horizon=16)
    _, _, history = train(cfg, task=PointMassTask(), progress=False)
    first = np.mean([h["reward"] for h in history[:5]])
    last = np.mean([h["reward"] for h in history[-5:]])
    assert last > first + 0.1, (first, last)
    assert (Path(cfg.run_dir) / "metrics.csv").read_text().count("\n") == 61
    assert any((Path(cfg.run_dir) / "tb").iterdir())
    assert (Path(cfg.run_dir) / "curves.png").stat().st_size > 10_000
    assert len(list((Path(cfg.run_dir) / "checkpoints").glob("*.pkl"))) == 3


def test_checkpoint_round_trip(tmp_path):
    cfg = _cfg(tmp_path, "ckpt")
    shac = SHAC(PointMassTask(), cfg.shac)
    state, _ = jax.jit(shac.iteration)(shac.init(3))
    path = save_checkpoint(tmp_path / "c.pkl", cfg, state)
    ckpt = load_checkpoint(path)
    assert ckpt.config == cfg
    assert config_hash(ckpt.config) == config_hash(cfg)
    for a, b in zip(_leaves(ckpt.state), _leaves(state)):
        np.testing.assert_array_equal(a, b)
    # the commit of the code that trained it, as the run recorded it when it started (its exports carry it)
    assert ckpt.source_commit == source_commit() and len(ckpt.source_commit) >= 40
    assert load_checkpoint(save_checkpoint(tmp_path / "d.pkl", cfg, state, commit="f" * 40)).source_commit == "f" * 40
    path.write_bytes(b"not a pickle")
    with pytest.raises(CheckpointError, match="c.pkl: cannot read checkpoint"):
        load_checkpoint(path)


def test_a_checkpoint_from_before_a_new_config_field_loads_and_a_tampered_one_does_not(tmp_path):
    cfg = _cfg(tmp_path, "old")
    shac = SHAC(PointMassTask(), cfg.shac)
    payload = pickle.loads(save_checkpoint(tmp_path / "c.pkl", cfg, shac.init(0)).read_bytes())
    del payload["config"]["task"]["reference_frame"]  # as saved before the field existed
    payload["config_hash"] = plain_config_hash(payload["config"])
    (tmp_path / "old.pkl").write_bytes(pickle.dumps(payload))
    ckpt = load_checkpoint(tmp_path / "old.pkl")
    assert ckpt.config.task.reference_frame == "world" and ckpt.stored_hash == payload["config_hash"]
    payload["config"]["shac"]["gamma"] = 0.5  # the config changed, the hash not
    (tmp_path / "tampered.pkl").write_bytes(pickle.dumps(payload))
    with pytest.raises(CheckpointError, match="tampered.pkl: config hash does not match the stored config"):
        load_checkpoint(tmp_path / "tampered.pkl")


def test_resume_equals_uninterrupted_and_runs_are_deterministic(tmp_path):
    task = PointMassTask()
    _, full, _ = train(_cfg(tmp_path, "full"), task=task, iterations=2, progress=False)
    _, again, _ = train(_cfg(tmp_path, "again"), task=task, iterations=2, progress=False)
    _, half, _ = train(_cfg(tmp_path, "split"), task=task, iterations=1, progress=False)
    metrics = tmp_path / "split" / "metrics.csv"
    logged = metrics.read_text().splitlines()
    # the run went on past its last checkpoint (iteration 1) and ended: its rows 2 and 3 are abandoned
    abandoned = [",".join(["2", *logged[1].split(",")[1:]]), ",".join(["3", *logged[1].split(",")[1:]])]
    metrics.write_text("\n".join([*logged, *abandoned, ",,"]) + "\n")  # and a line cut short (a full disk)
    _, resumed, history = train(_cfg(tmp_path, "split"), task=task, resume=tmp_path / "split", iterations=1, progress=False)
    assert int(resumed.iteration) == 2
    for a, b, c in zip(_leaves(full), _leaves(again), _leaves(resumed)):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, c)
    rows = metrics.read_text().splitlines()  # each iteration once, row 2 the resumed run's
    assert rows[:2] == logged and [r.split(",")[0] for r in rows[1:]] == ["1", "2"] and rows[2] not in abandoned
    config_yaml = (tmp_path / "split" / "config.yaml").read_text()
    with pytest.raises(CheckpointError, match="different config"):
        train(_cfg(tmp_path, "split", gamma=0.5), task=task, resume=tmp_path / "split", iterations=1, progress=False)
    assert (tmp_path / "split" / "config.yaml").read_text() == config_yaml  # a refused resume writes nothing


def test_warm_start_takes_the_networks_and_starts_the_rest_fresh(tmp_path, monkeypatch):
    import dataclasses
    import json

    task = PointMassTask()
    _, source, _ = train(_cfg(tmp_path, "source"), task=task, iterations=2, progress=False)
    ckpt = tmp_path / "source" / "checkpoints" / "000002.pkl"
    # another config (twice the environments, another lr): only the network sizes must match
    warm_cfg = dataclasses.replace(_cfg(tmp_path, "warm", num_envs=16, actor_lr=1e-4), init_from=str(ckpt))
    assert config_hash(warm_cfg) == config_hash(dataclasses.replace(warm_cfg, init_from=""))
    _, warm, _ = train(warm_cfg, task=task, iterations=0, progress=False)
    assert int(warm.iteration) == 0
    for name in ("actor", "critics", "target_critics", "obs_stats"):
        for a, b in zip(_leaves(getattr(warm, name)), _leaves(getattr(source, name))):
            np.testing.assert_array_equal(a, b)
    assert int(warm.actor_opt[1][0].count) == 0  # fresh Adam moments for the new schedule
    assert warm.env.pos.shape[0] == 16
    record = json.loads((tmp_path / "warm" / "warm_start.json").read_text())
    assert record["source_iteration"] == 2 and record["source_config_hash"] == config_hash(_cfg(tmp_path, "source"))
    assert record["source_motion_sha256"] == record["motion_sha256"] == motion_sha256(warm_cfg) is not None
    # it trains on, and a resumed warm-started run continues from its own checkpoint
    _, stepped, history = train(warm_cfg, task=task, iterations=1, progress=False)
    assert int(stepped.iteration) == 1 and np.isfinite(history[-1]["actor_loss"])
    _, resumed, _ = train(warm_cfg, task=task, resume=tmp_path / "warm", iterations=1, progress=False)
    assert int(resumed.iteration) == 2

    wider = dataclasses.replace(_cfg(tmp_path, "wider", actor_hidden=(32, 16)), init_from=str(ckpt))
    with pytest.raises(CheckpointError, match=r"000002.pkl: cannot warm-start from it: actor.*shape"):
        train(wider, task=task, iterations=0, progress=False)
    reordered = dataclasses.replace(
        warm_cfg, run_dir=str(tmp_path / "reordered"),
        task=dataclasses.replace(warm_cfg.task, observation_spec=tuple(reversed(warm_cfg.task.observation_spec))),
    )
    with pytest.raises(CheckpointError, match="observation_spec"):
        train(reordered, task=task, iterations=0, progress=False)

    # the source is read and checked before the task is built and its reset compiled (a bad file was
    # found after about 46 s of a G1's setup), and nothing is written
    import bcg_train.learn.train as train_module

    monkeypatch.setattr(train_module, "make_task", lambda cfg: pytest.fail("built the task before reading --init-from"))
    with pytest.raises(CheckpointError, match="observation_spec"):
        train(dataclasses.replace(reordered, run_dir=str(tmp_path / "early")), iterations=0, progress=False)
    garbage = tmp_path / "garbage.pkl"
    garbage.write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError, match="garbage.pkl"):
        train(dataclasses.replace(warm_cfg, run_dir=str(tmp_path / "early"), init_from=str(garbage)), iterations=0, progress=False)
    assert not (tmp_path / "early").exists()


DATA_PARALLEL_SCRIPT = textwrap.dedent(
    """
    import jax, numpy as np
    from bcg_train.learn.config import SHACConfig
    from bcg_train.learn.shac import SHAC
    from bcg_train.tasks.point_mass import PointMassTask
    assert len(jax.devices()) == 2, jax.devices()
    cfg = SHACConfig(num_envs=8, horizon=8, iterations=20, actor_hidden=(16, 16), critic_hidden=(16,),
                     critic_iterations=2, critic_minibatches=2, actor_output_scale=0.5)
    results = {}
    for devices in (1, 2):
        shac = SHAC(PointMassTask(), cfg, num_devices=devices)
        state = shac.init(0)
        step = shac.jit_iteration(state)
        for _ in range(2):
            state, metrics = step(state)
        results[devices] = state
        shards = {d.id for d in state.env.pos.sharding.device_set}
        print("devices", devices, "env shards on", sorted(shards), "actor loss", float(metrics["actor_loss"]))
        assert len(shards) == devices
        assert len(state.env.pos.addressable_shards) == devices
    for a, b in zip(jax.tree_util.tree_leaves(results[1]), jax.tree_util.tree_leaves(results[2])):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-5)
    print("DATA PARALLEL OK")
    """
)


@pytest.mark.slow
def test_data_parallel_over_two_host_devices_matches_one_device():
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2", PYTHONPATH=str(ROOT), JAX_PLATFORMS="cpu")
    proc = subprocess.run([sys.executable, "-c", DATA_PARALLEL_SCRIPT], env=env, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "DATA PARALLEL OK" in proc.stdout
    assert "env shards on [0, 1]" in proc.stdout


def test_critic_warmup_holds_the_actor_then_releases_it():
    import dataclasses

    shac = SHAC(PointMassTask(), dataclasses.replace(TINY, critic_warmup_iterations=2))
    step = jax.jit(shac.iteration)
    s0 = shac.init(0)
    s1, _ = step(s0)
    s2, _ = step(s1)
    s3, _ = step(s2)
    for a, b in zip(_leaves(s0.actor) + _leaves(s0.actor_opt), _leaves(s2.actor) + _leaves(s2.actor_opt)):
        np.testing.assert_array_equal(a, b)  # actor and its optimizer untouched for 2 iterations
    assert any(not np.array_equal(a, b) for a, b in zip(_leaves(s0.critics), _leaves(s2.critics)))
    assert any(not np.array_equal(a, b) for a, b in zip(_leaves(s2.actor), _leaves(s3.actor)))
    # the first real actor step is the step an un-warmed learner would take from s2's state
    plain = SHAC(PointMassTask(), dataclasses.replace(TINY, iterations=TINY.iterations - 2))
    s3_plain, _ = jax.jit(plain.iteration)(s2)
    for a, b in zip(_leaves(s3.actor), _leaves(s3_plain.actor)):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_critic_warmup_must_leave_iterations_for_the_actor():
    import dataclasses

    with pytest.raises(ValueError, match="critic_warmup_iterations"):
        dataclasses.replace(TINY, critic_warmup_iterations=TINY.iterations).validate()


@jax.custom_vjp
def _nan_gradient(x):
    """Identity forward; backward, NaN: a reward whose gradient has blown up."""
    return x


_nan_gradient.defvjp(lambda x: (x, None), lambda _, g: (g * jnp.nan,))


class _NanGradientPointMass(PointMassTask):
    def step(self, state, action):
        after, out = super().step(state, action)
        return after, out._replace(reward=_nan_gradient(out.reward))


def test_a_non_finite_actor_gradient_skips_the_update_and_is_counted():
    shac = SHAC(_NanGradientPointMass(), TINY)
    s0 = shac.init(0)
    s1, metrics = jax.jit(shac.iteration)(s0)
    assert not np.isfinite(float(metrics["actor_grad_norm"])) and float(metrics["skipped_actor_updates"]) == 1.0
    for a, b in zip(_leaves(s0.actor) + _leaves(s0.actor_opt), _leaves(s1.actor) + _leaves(s1.actor_opt)):
        np.testing.assert_array_equal(a, b)  # not zeroed into an Adam step: untouched
    assert all(np.isfinite(x).all() for x in _leaves(s1.critics))  # the critics learn from the (finite) rewards
    assert any(not np.array_equal(a, b) for a, b in zip(_leaves(s0.critics), _leaves(s1.critics)))
    _, healthy = jax.jit(SHAC(PointMassTask(), TINY).iteration)(s0)
    assert float(healthy["skipped_actor_updates"]) == 0.0

"""PPO baseline on the same task as SHAC, trained by brax's PPO (``brax.training.agents.ppo``).

The sample-efficiency comparison is against an existing library's PPO, so
this module only adapts our task to brax's environment interface and maps our config and
brax's reports; the algorithm (rollouts, GAE, clipped surrogate, value loss, entropy
bonus, epochs of minibatches, observation normalizer, networks) is brax's own.

:class:`BraxTaskEnv` presents a task (``reset`` / ``observe`` / ``step``, already batched
and auto-resetting, see :mod:`bcg_train.tasks.point_mass`) as a brax ``Env`` that
``ppo.train`` drives with ``wrap_env=False``: brax's training wrappers would add a vmap,
an episode counter and an auto-reset, all of which the task already does itself. The
adapter therefore fills in what those wrappers normally provide:

* ``done`` = terminated | truncated and ``info['truncation']`` = truncated, so brax's
  GAE masks the time-limit transition instead of treating it as a terminal state;
* ``info['steps']`` (the episode step, which brax's evaluator reads) and, for the
  training metrics brax logs, ``info['episode_metrics']`` / ``info['episode_done']``
  accumulated over each episode exactly as brax's ``EpisodeWrapper`` does;
* ``metrics``: every task step metric as ``<name>_per_step`` (plus ``reward_per_step``),
  the suffix by which brax divides an episode's sum by its length.

Physics gradients are cut (``stop_gradient`` on the task's state and outputs): PPO needs
none. Brax's value network sees the actor's observation: a task's privileged critic inputs
(``task.critic_privileged``) are SHAC's only, so a comparison that uses them says so. Actions are clipped to ``action_clip`` before they reach the task, the same raw
action range SHAC's policy uses (brax's ``normal`` distribution, not ``tanh_normal``,
whose [-1, 1] would be a smaller action space than SHAC's).

:func:`train_ppo` returns one history row per PPO iteration (one rollout of
``rollout_steps`` steps of all environments and its updates):

* ``env_steps``: brax's own training step counter (``num_envs * rollout_steps`` per
  iteration; evaluation steps are not counted);
* ``wall_s``: brax's ``training/walltime`` (time inside its training epochs) minus that of
  the first iteration, which includes compilation, so the first row is 0 as for SHAC;
* ``reward``, ``tracking_error_m`` and the other task metrics: brax's training episode
  metrics (``log_training_metrics=True``, reported to ``progress_fn`` as
  ``episode/<name>_per_step``): the per-step mean over each finished episode, averaged
  over brax's buffer of the last 100 finished training episodes. Rows before the first
  episode ends hold NaN. Being per finished episode, these lag the policy by up to an
  episode, unlike SHAC's per-iteration means.

Networks are brax's PPO MLPs with the sizes of the config and ELU activations (no
LayerNorm, unlike SHAC's actor); training runs on one device. brax 0.14.2 still calls
``jax.device_put_replicated``, which jax 0.10 removed (google/brax#671); while brax trains,
:func:`brax_jax_compat` supplies JAX's documented replacement for it.

Published PPO baseline settings: 4096 environments, 24-step rollouts.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
from typing import Any, Callable, Iterator

import jax
import jax.numpy as jnp
import numpy as np
from brax.envs.base import Env, State
from brax.training.acme import running_statistics
from brax.training.agents.ppo import networks as ppo_networks
from brax.training.agents.ppo import train as brax_ppo
from flax import linen

PER_STEP = "_per_step"  # brax divides episode sums of metrics so named by the episode length


@dataclasses.dataclass(frozen=True)
class PPOConfig:
    num_envs: int = 4096
    rollout_steps: int = 24  # brax's unroll_length
    iterations: int = 3000  # rollouts; brax's num_timesteps = iterations * num_envs * rollout_steps
    actor_hidden: tuple[int, ...] = (512, 256, 128)
    critic_hidden: tuple[int, ...] = (256, 256)
    lr: float = 3e-4
    gamma: float = 0.99
    gae_lambda: float = 0.95
    clip_ratio: float = 0.2
    epochs: int = 4  # brax's num_updates_per_batch
    minibatches: int = 4  # must divide num_envs (brax splits the rollout by environment)
    value_coef: float = 0.5
    entropy_coef: float = 0.0
    max_grad_norm: float = 1.0
    init_noise_std: float = math.exp(-1.0)
    action_clip: float = 5.0


class BraxTaskEnv(Env):
    """A batched, auto-resetting task as a brax ``Env`` for ``ppo.train(wrap_env=False)``.

    ``reset`` takes a batch of keys (brax splits one per environment); the batch size is
    its leading dimension and the task is reset from the first key. The task's state is
    carried as ``pipeline_state``.
    """

    def __init__(self, task: Any, action_clip: float = 5.0):
        self.task = task
        self.action_clip = action_clip
        self._metric_names: tuple[str, ...] | None = None

    @property
    def observation_size(self) -> int:
        return int(self.task.obs_size)

    @property
    def action_size(self) -> int:
        return int(self.task.action_size)

    @property
    def backend(self) -> str:
        return "mjx"

    @property
    def metric_names(self) -> tuple[str, ...]:
        """The task's step metrics (found once by tracing a step of one environment)."""
        if self._metric_names is None:
            def one_step():
                state = self.task.reset(jax.random.PRNGKey(0), 1)
                return self.task.step(state, jnp.zeros((1, self.action_size), jnp.float32))[1].metrics

            self._metric_names = tuple(sorted(jax.eval_shape(one_step)))
        return self._metric_names

    def _metrics(self, reward: jax.Array, task_metrics: dict) -> dict[str, jax.Array]:
        metrics = {f"reward{PER_STEP}": reward}
        metrics.update({f"{name}{PER_STEP}": jnp.asarray(task_metrics[name], jnp.float32) for name in self.metric_names})
        return metrics

    def reset(self, rng: jax.Array) -> State:
        k = rng.shape[0]
        inner = jax.lax.stop_gradient(self.task.reset(rng[0], k))
        zeros = jnp.zeros((k,), jnp.float32)
        metrics = self._metrics(zeros, {name: zeros for name in self.metric_names})
        info = {
            "steps": zeros,
            "truncation": zeros,
            "episode_done": zeros,
            "episode_metrics": {"sum_reward": zeros, "length": zeros, **{name: zeros for name in metrics}},
        }
        return State(pipeline_state=inner, obs=self.task.observe(inner), reward=zeros, done=zeros, metrics=metrics, info=info)

    def step(self, state: State, action: jax.Array) -> State:
        action = jnp.clip(action, -self.action_clip, self.action_clip)
        inner, out = jax.lax.stop_gradient(self.task.step(state.pipeline_state, action))
        reward = out.reward.astype(jnp.float32)
        done = (out.terminated | out.truncated).astype(jnp.float32)
        truncation = out.truncated.astype(jnp.float32)
        metrics = self._metrics(reward, out.metrics)
        # Episode bookkeeping as brax's EpisodeWrapper / AutoResetWrapper do it: counters
        # restart on the step after ``done``, so at ``done`` they hold the whole episode.
        fresh = 1.0 - state.done
        steps = state.info["steps"] * fresh + 1.0
        keep = 1.0 - state.info["episode_done"]
        episode = state.info["episode_metrics"]
        new_episode = {"sum_reward": episode["sum_reward"] * keep + reward, "length": episode["length"] * keep + 1.0}
        new_episode.update({name: episode[name] * keep + value for name, value in metrics.items()})
        info = {**state.info, "steps": steps, "truncation": truncation, "episode_done": done, "episode_metrics": new_episode}
        return state.replace(pipeline_state=inner, obs=out.obs, reward=reward, done=done, metrics=metrics, info=info)


def _device_put_replicated(x: Any, devices: list) -> Any:
    """JAX's documented drop-in replacement for the removed ``jax.device_put_replicated``."""
    sharding = jax.sharding.NamedSharding(jax.sharding.Mesh(np.asarray(devices), (brax_ppo._PMAP_AXIS_NAME,)), jax.sharding.PartitionSpec(brax_ppo._PMAP_AXIS_NAME))
    return jax.tree_util.tree_map(lambda v: jax.device_put(jnp.stack([jnp.asarray(v)] * len(devices)), sharding), x)


@contextlib.contextmanager
def brax_jax_compat() -> Iterator[None]:
    """brax 0.14.2 still calls ``jax.device_put_replicated``, which jax 0.10 removed
    (google/brax#671, open); provide it while brax trains, and only if it is missing."""
    if hasattr(jax, "device_put_replicated"):
        yield
        return
    jax.device_put_replicated = _device_put_replicated
    try:
        yield
    finally:
        del jax.device_put_replicated


def _history_row(step: int, walltime: float, training: dict, episode: dict, metric_names: tuple[str, ...]) -> dict[str, float]:
    nan = float("nan")
    row = {"env_steps": float(step), "wall_s": float(walltime)}
    row["reward"] = float(episode.get(f"episode/reward{PER_STEP}", nan))
    row["episode_return"] = float(episode.get("episode/sum_reward", nan))
    row["episode_length"] = float(episode.get("episode/length", nan))
    for name in metric_names:
        row[name] = float(episode.get(f"episode/{name}{PER_STEP}", nan))
    for key, value in training.items():
        if key.startswith("training/") and key != "training/walltime":
            row[key.removeprefix("training/")] = float(value)
    return row


def make_networks(cfg: PPOConfig, obs_size: int, action_size: int, preprocess_observations_fn: Callable = running_statistics.normalize):
    """brax's PPO networks with the config's sizes and ELU activations: the ``network_factory`` of
    :func:`train_ppo` (and what :mod:`bcg_train.export.ppo_policy` maps onto the ONNX graph)."""
    return ppo_networks.make_ppo_networks(
        obs_size,
        action_size,
        preprocess_observations_fn=preprocess_observations_fn,
        policy_hidden_layer_sizes=tuple(cfg.actor_hidden),
        value_hidden_layer_sizes=tuple(cfg.critic_hidden),
        activation=linen.elu,
        distribution_type="normal",
        noise_std_type="log",
        init_noise_std=cfg.init_noise_std,
    )


def train_ppo(
    task: Any,
    cfg: PPOConfig,
    seed: int = 0,
    progress_fn: Callable[[dict[str, float]], None] | None = None,
    policy_params_fn: Callable[[int, Callable, Any], None] | None = None,
    restore_params: Any | None = None,
) -> tuple[Callable, Any, list[dict[str, float]]]:
    """Train with brax's PPO; returns brax's ``make_policy``, its params and one row per iteration.

    ``restore_params`` (brax's ``(normalizer, policy, value)``, as ``policy_params_fn`` gets them)
    starts from those networks and that normalizer, through brax's own ``restore_params``: the
    optimizer's moments, the environments and the random stream start fresh, and brax's step
    counter starts at 0 again.

    ``progress_fn`` (if given) gets each history row as it is made (see the module
    docstring for what the rows hold). ``policy_params_fn`` is brax's own callback: it gets
    ``(env_steps, make_policy, params)`` before training and after every iteration, before
    that iteration's row.
    """
    if cfg.num_envs % cfg.minibatches:
        raise ValueError(f"PPOConfig.minibatches ({cfg.minibatches}) must divide num_envs ({cfg.num_envs})")
    env = BraxTaskEnv(task, cfg.action_clip)
    names = env.metric_names
    history: list[dict[str, float]] = []
    latest_episode: dict[str, float] = {}
    first_walltime: list[float] = []

    def on_progress(step: int, metrics: dict) -> None:
        if "training/walltime" not in metrics:  # brax's training episode logger (episode/*)
            latest_episode.clear()
            latest_episode.update({k: float(v) for k, v in metrics.items()})
            return
        jax.effects_barrier()  # that logger runs as a debug callback: let this epoch's call land first
        walltime = float(metrics["training/walltime"])
        if not first_walltime:
            first_walltime.append(walltime)
        row = _history_row(step, walltime - first_walltime[0], metrics, latest_episode, names)
        history.append(row)
        if progress_fn is not None:
            progress_fn(row)

    network_factory = functools.partial(make_networks, cfg)
    steps_per_iteration = cfg.num_envs * cfg.rollout_steps
    with brax_jax_compat():
        make_policy, params, _ = brax_ppo.train(
            environment=env,
            num_timesteps=cfg.iterations * steps_per_iteration,
            wrap_env=False,
            num_envs=cfg.num_envs,
            # Only sizes brax's evaluator, which is built but never run (run_evals=False).
            episode_length=int(getattr(task, "episode_steps", cfg.rollout_steps)),
            num_eval_envs=1,
            run_evals=False,
            # One progress report (an "epoch" of one training step) per iteration.
            num_evals=cfg.iterations + 1,
            log_training_metrics=True,
            learning_rate=cfg.lr,
            entropy_cost=cfg.entropy_coef,
            discounting=cfg.gamma,
            unroll_length=cfg.rollout_steps,
            batch_size=cfg.num_envs // cfg.minibatches,
            num_minibatches=cfg.minibatches,
            num_updates_per_batch=cfg.epochs,
            normalize_observations=True,
            clipping_epsilon=cfg.clip_ratio,
            gae_lambda=cfg.gae_lambda,
            max_grad_norm=cfg.max_grad_norm,
            vf_loss_coefficient=cfg.value_coef,
            network_factory=network_factory,
            seed=seed,
            max_devices_per_host=1,
            progress_fn=on_progress,
            **({"policy_params_fn": policy_params_fn} if policy_params_fn is not None else {}),
            **({"restore_params": restore_params, "restore_value_fn": True} if restore_params is not None else {}),
        )
    return make_policy, params, history

"""SHAC: short-horizon actor-critic with analytic gradients through the simulator.

One iteration (``jax.jit``-compiled, the rollout under ``jax.lax.scan``):

1. Roll the batch ``horizon`` control steps with the current actor (plus fixed
   Gaussian exploration noise), differentiating through the simulator (BCG at stiff
   contact, per the task's config). The actor loss is the negative discounted return
   of the window, bootstrapped with the target critics' mean value at the window end
   and at time-limit truncations (not at terminations), averaged over steps and envs.
2. One clipped Adam step on the actor (:func:`make_optimizer`), skipped during the first
   ``critic_warmup_iterations`` (:func:`hold_during_warmup`) and whenever the actor
   gradient is not finite (:func:`skip_if_not_finite`; counted in
   ``skipped_actor_updates``, never zeroed into a silent no-op).
3. TD(lambda) targets from the window (:func:`td_lambda_returns`) and
   ``critic_iterations`` passes over ``critic_minibatches`` minibatches for the critic
   ensemble; soft update of the target critics.
4. The observation normalizer absorbs the window's observations.

The critic's pure functions (its input, values, TD(lambda) targets, diagnostics) are in
:mod:`bcg_train.learn.critic`; the action gradient's (its spread, the per-environment cap,
the chain through the policy) in :mod:`bcg_train.learn.action_gradients`.

Simulation failures (a blown-up or non-finite environment) are the task's to catch: it
terminates them in the step they appear and cuts their gradient
(:mod:`bcg_train.sim.failure`); their count per iteration is ``sim_failures``.

The environment state carried to the next iteration is cut from the graph
(``stop_gradient``): gradients never cross a window boundary. With
``state_grad_clip > 0`` the gradient through the state is also capped per environment
at every step (:func:`clip_state_gradient`). With ``env_gradient_cap > 0`` the actor
gradient is chained from the window's action gradient with each environment's share
capped (:func:`cap_environment_gradients`, :func:`actor_gradient_from_actions`); how that
gradient spreads over the environments is in the metrics either way
(:func:`action_gradient_spread`).

A task is anything with ``obs_size``, ``action_size``, ``reset(rng, num_envs)``,
``observe(state)`` and ``step(state, action) -> (state, StepOutput)`` (see
:class:`bcg_train.tasks.imitation.ImitationTask`). A task may also have critic-only inputs
(an asymmetric actor-critic): ``privileged_size`` > 0, ``privileged(state)`` and
``StepOutput.terminal_privileged``; the critics then see the actor's normalized
observation followed by those (:func:`critic_input`), the actor never does. With
``mirror_loss_weight`` > 0 the task also needs ``mirror_observation(obs)`` and
``mirror_action(action)`` (:func:`mirror_loss`).

Data parallelism: environments are split across devices along the batch axis
(``NamedSharding`` over a 1-D mesh ``envs``); parameters and optimizer state are
replicated; XLA inserts the cross-device reductions of the losses and gradients.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable

import jax
import jax.flatten_util
import jax.numpy as jnp
import numpy as np
import optax
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from bcg_train.learn.action_gradients import action_gradient_spread, actor_gradient_from_actions, cap_environment_gradients
from bcg_train.learn.config import SHACConfig
from bcg_train.learn.critic import critic_diagnostics, critic_input, ensemble_values, td_lambda_returns
from bcg_train.learn.networks import RunningStats, init_mlp, policy_action
from bcg_train.sim.failure import SIM_FAILURES
from bcg_train.tasks.rewards import TERMINATION_METRIC_PREFIX

Params = Any


# -- named building blocks -------------------------------------------------------------
def linear_decay_schedule(lr: float, lr_end: float, steps: int) -> optax.Schedule:
    """Learning rate decaying linearly from ``lr`` to ``lr_end`` over ``steps`` updates."""
    return optax.linear_schedule(init_value=lr, end_value=lr_end, transition_steps=max(steps, 1))


def make_optimizer(schedule: optax.Schedule, betas: tuple[float, float], max_grad_norm: float) -> optax.GradientTransformation:
    """Gradient-norm clipping followed by Adam with the given betas."""
    return optax.chain(optax.clip_by_global_norm(max_grad_norm), optax.adam(schedule, b1=betas[0], b2=betas[1]))


def clip_state_gradient(state: Any, max_norm: float, batch_size: int) -> Any:
    """Identity forward; backward, each environment's cotangent (over every float leaf of
    ``state`` with leading axis ``batch_size``) is scaled to norm <= ``max_norm``. Gradient
    clipping through time, one control step at a time. A non-finite cotangent stays
    non-finite (and makes the actor gradient skip its update, counted)."""

    def batched(x):
        return hasattr(x, "dtype") and jnp.issubdtype(x.dtype, jnp.floating) and x.ndim >= 1 and x.shape[0] == batch_size

    @jax.custom_vjp
    def identity(tree):
        return tree

    def forward(tree):
        return tree, None

    def backward(_, cotangent):
        leaves = jax.tree_util.tree_leaves(cotangent)
        squares = [jnp.sum(jnp.square(g).reshape(batch_size, -1), axis=1) for g in leaves if batched(g)]
        norm = jnp.sqrt(sum(squares)) if squares else jnp.zeros((batch_size,), jnp.float32)
        scale = jnp.minimum(1.0, max_norm / jnp.maximum(norm, 1e-30))
        scaled = [g * scale.reshape((batch_size,) + (1,) * (g.ndim - 1)).astype(g.dtype) if batched(g) else g for g in leaves]
        return (jax.tree_util.tree_unflatten(jax.tree_util.tree_structure(cotangent), scaled),)

    identity.defvjp(forward, backward)
    return identity(state)


def hold_during_warmup(updated: Any, current: Any, iteration: jax.Array, warmup_iterations: int) -> Any:
    """``current`` while ``iteration < warmup_iterations``, else ``updated`` (critic warm-up:
    the actor and its optimizer wait until the critics it bootstraps with have seen a few
    windows)."""
    active = iteration >= warmup_iterations
    return jax.tree_util.tree_map(lambda new, old: jnp.where(active, new, old), updated, current)


def skip_if_not_finite(updated: Any, current: Any, gradient_norm: jax.Array) -> tuple[Any, jax.Array]:
    """``(updated, False)`` if ``gradient_norm`` is finite, else ``(current, True)``: a
    non-finite actor gradient skips the update (the caller counts it)."""
    skip = ~jnp.isfinite(gradient_norm)
    return jax.tree_util.tree_map(lambda new, old: jnp.where(skip, old, new), updated, current), skip


# metrics summed over an iteration's steps and environments (counts), not averaged: these
# names and every name with one of these prefixes
COUNTED_METRICS = (SIM_FAILURES,)
COUNTED_METRIC_PREFIXES = (TERMINATION_METRIC_PREFIX,)


def is_counted(name: str) -> bool:
    return name in COUNTED_METRICS or name.startswith(COUNTED_METRIC_PREFIXES)


def iteration_metrics(step_metrics: dict[str, jax.Array]) -> dict[str, jax.Array]:
    """An iteration's figures from its (T, K) step metrics: counts summed, the rest averaged over
    the steps whose state exists. A failed step's figures are zeros standing for no state
    (bcg_train.sim.failure): averaged in, a tracking error fell as failures rose."""
    failed = step_metrics.get(SIM_FAILURES)
    kept = None if failed is None else 1.0 - failed.astype(jnp.float32)
    out = {}
    for name, v in step_metrics.items():
        if is_counted(name):
            out[name] = jnp.sum(v)
        elif kept is None:
            out[name] = jnp.mean(v)
        else:
            out[name] = jnp.sum(v * kept) / jnp.maximum(jnp.sum(kept), 1.0)
    return out


def mirror_loss(actor: Params, stats: RunningStats, obs: jax.Array, mirror_observation: Callable, mirror_action: Callable,
                obs_clip: float, action_clip: float) -> jax.Array:
    """Mean squared difference between the action in the mirrored state and the mirrored
    action, ``|| pi(M_o o) - M_a pi(o) ||^2`` averaged over the observations ``obs`` (held
    fixed) and the action's entries: zero for a policy that is its own mirror image."""
    obs = jax.lax.stop_gradient(obs)
    act = lambda o: policy_action(actor, stats, o, obs_clip, action_clip)
    return jnp.mean((act(mirror_observation(obs)) - mirror_action(act(obs))) ** 2)


# -- training state ----------------------------------------------------------------------
@functools.partial(
    jax.tree_util.register_dataclass,
    data_fields=["actor", "critics", "target_critics", "actor_opt", "critic_opt", "obs_stats", "env", "rng", "iteration"],
    meta_fields=[],
)
@dataclasses.dataclass(frozen=True)
class SHACState:
    actor: Params
    critics: Params  # stacked ensemble, leading axis num_critics
    target_critics: Params
    actor_opt: Any
    critic_opt: Any
    obs_stats: RunningStats
    env: Any
    rng: jax.Array
    iteration: jax.Array


def integer_leaves_constant(tree):
    """``tree`` with its integer and boolean leaves through ``stop_gradient`` (a no-op on
    their values). Leaves out of a custom VJP (the guarded step, the state clip) carry instantiated float0
    tangents; as scan carries they looked like tangents that appear after one step, and
    lax.scan linearized the whole rollout body a second time to reach its fixpoint."""
    def constant(x):
        return x if jnp.issubdtype(jnp.result_type(x), jnp.inexact) else jax.lax.stop_gradient(x)

    return jax.tree_util.tree_map(constant, tree)


class SHAC:
    """The learner for one task and config; :meth:`iteration` is the jitted step."""

    def __init__(self, task: Any, cfg: SHACConfig, num_devices: int = 1):
        self.task, self.cfg = task, cfg
        self.actor_sizes = (task.obs_size, *cfg.actor_hidden, task.action_size)
        self.privileged_size = int(getattr(task, "privileged_size", 0))
        self.critic_sizes = (task.obs_size + self.privileged_size, *cfg.critic_hidden, 1)
        self.actor_tx = make_optimizer(linear_decay_schedule(cfg.actor_lr, cfg.lr_end, cfg.iterations - cfg.critic_warmup_iterations), cfg.betas, cfg.actor_grad_clip)
        critic_updates = cfg.iterations * cfg.critic_iterations * cfg.critic_minibatches
        critic_lr_end = cfg.lr_end if cfg.critic_lr_end is None else cfg.critic_lr_end
        self.critic_schedule = linear_decay_schedule(cfg.critic_lr, critic_lr_end, critic_updates)
        self.critic_tx = make_optimizer(self.critic_schedule, cfg.betas, cfg.critic_grad_clip)
        if cfg.mirror_loss_weight > 0:
            if not (hasattr(task, "mirror_observation") and hasattr(task, "mirror_action")):
                raise ValueError(f"shac.mirror_loss_weight {cfg.mirror_loss_weight}: the task has no mirror_observation / mirror_action")
            error = float(getattr(task, "motion_mirror_error", 0.0))
            if error > 1e-3:
                raise ValueError(f"shac.mirror_loss_weight {cfg.mirror_loss_weight}: the task's motion is not its own mirror image "
                                 f"(joint angles differ from their mirror by up to {error:.3g} rad)")
        devices = jax.devices()[: num_devices or None]
        if cfg.num_envs % len(devices):
            raise ValueError(f"num_envs {cfg.num_envs} is not divisible by {len(devices)} devices")
        self.mesh = Mesh(np.asarray(devices), ("envs",))

    # -- init ---------------------------------------------------------------------------
    def init(self, seed: int) -> SHACState:
        rng = jax.random.PRNGKey(seed)
        k_actor, k_critic, k_env, k_next = jax.random.split(rng, 4)
        actor = init_mlp(k_actor, self.actor_sizes, self.cfg.actor_output_scale)
        critics = jax.vmap(lambda k: init_mlp(k, self.critic_sizes))(jax.random.split(k_critic, self.cfg.num_critics))
        env = jax.jit(self.task.reset, static_argnums=1)(k_env, self.cfg.num_envs)
        stats = RunningStats.create(self.task.obs_size)
        state = SHACState(
            actor=actor, critics=critics, target_critics=critics, actor_opt=self.actor_tx.init(actor),
            critic_opt=self.critic_tx.init(critics), obs_stats=stats, env=env, rng=k_next,
            iteration=jnp.zeros((), jnp.int32),
        )
        return self.shard(state)

    def warm_start(self, state: SHACState, source: SHACState, critics: bool = True) -> SHACState:
        """``state`` (fresh from :meth:`init`) with the actor, critics, target critics and
        observation normalizer of ``source`` (a checkpoint's state); the optimizers (fresh
        moments for this config's schedule), environments, RNG and iteration stay ``state``'s.
        ``critics=False`` keeps ``state``'s fresh critics (the critics' inputs changed).
        Raises ``ValueError`` naming the first array whose shape differs (network sizes,
        observation or action size)."""
        names = ("actor", "critics", "target_critics", "obs_stats") if critics else ("actor", "obs_stats")
        picked = {name: getattr(source, name) for name in names}
        picked.setdefault("critics", state.critics)
        picked.setdefault("target_critics", state.target_critics)
        for name, tree in picked.items():
            mine, theirs = jax.tree_util.tree_flatten_with_path(getattr(state, name))[0], jax.tree_util.tree_flatten(tree)[0]
            if len(mine) != len(theirs):
                raise ValueError(f"{name}: {len(theirs)} arrays in the checkpoint, {len(mine)} in this config (network sizes differ)")
            for (path, a), b in zip(mine, theirs):
                if np.shape(a) != np.shape(b):
                    where = jax.tree_util.keystr(path)
                    raise ValueError(f"{name}{where}: shape {np.shape(b)} in the checkpoint, {np.shape(a)} in this config")
        actor = jax.tree_util.tree_map(jnp.asarray, picked["actor"])
        critics = jax.tree_util.tree_map(jnp.asarray, picked["critics"])
        warm = dataclasses.replace(
            state, actor=actor, critics=critics, target_critics=jax.tree_util.tree_map(jnp.asarray, picked["target_critics"]),
            obs_stats=jax.tree_util.tree_map(jnp.asarray, picked["obs_stats"]),
            actor_opt=self.actor_tx.init(actor), critic_opt=self.critic_tx.init(critics),
        )
        return self.shard(warm)

    def shardings(self, state: SHACState):
        """Env-batch leaves split over devices, everything else replicated."""
        split = NamedSharding(self.mesh, PartitionSpec("envs"))
        repl = NamedSharding(self.mesh, PartitionSpec())
        n = self.cfg.num_envs

        def env_leaf(x):
            return split if getattr(x, "ndim", 0) >= 1 and x.shape[0] == n else repl

        env = jax.tree_util.tree_map(env_leaf, state.env)
        rest = jax.tree_util.tree_map(lambda _: repl, dataclasses.replace(state, env=None))
        return dataclasses.replace(rest, env=env)

    def shard(self, state: SHACState) -> SHACState:
        return jax.device_put(state, self.shardings(state))

    # -- the iteration ------------------------------------------------------------------------
    def _privileged(self, env: Any) -> jax.Array:
        """(K, privileged_size) critic-only inputs of ``env`` (width 0 for a task without)."""
        if self.privileged_size == 0:
            return jnp.zeros((self.cfg.num_envs, 0), jnp.float32)
        return self.task.privileged(env)

    def exploration_noise(self, key: jax.Array) -> jax.Array:
        """(horizon, num_envs, action_size) Gaussian noise added to the window's actions."""
        cfg = self.cfg
        return cfg.action_noise_std * jax.random.normal(key, (cfg.horizon, cfg.num_envs, self.task.action_size), jnp.float32)

    def initial_carry(self, env) -> tuple:
        """The rollout scan's carry at the window's start: environments, discount, return and loss."""
        k = self.cfg.num_envs
        return env, jnp.ones((k,), jnp.float32), jnp.zeros((k,), jnp.float32), jnp.zeros((k,), jnp.float32)

    def _rollout(self, actor: Params, state: SHACState, noise: jax.Array, init: tuple | None = None):
        """The window's actor loss; ``noise`` (T, K, A) is the exploration noise added to each
        action, so the loss's gradient with respect to it is the gradient with respect to the
        actions (:func:`action_gradient_spread`). ``init``: the scan's initial carry
        (default :meth:`initial_carry` of ``state.env``)."""
        cfg, task = self.cfg, self.task
        stats, target = state.obs_stats, state.target_critics
        value = lambda obs, priv: jnp.mean(ensemble_values(target, critic_input(stats, obs, priv, cfg.obs_clip)), axis=0)

        def body(carry, eps):
            env, discount, ret_acc, loss_acc = carry
            obs, priv = task.observe(env), self._privileged(env)
            action = jnp.clip(policy_action(actor, stats, obs, cfg.obs_clip, cfg.action_clip) + eps, -cfg.action_clip, cfg.action_clip)
            env, out = task.step(env, action)
            if cfg.state_grad_clip > 0:
                env = clip_state_gradient(env, cfg.state_grad_clip, cfg.num_envs)
            env = integer_leaves_constant(env)
            ret_acc = ret_acc + discount * out.reward
            done = out.terminated | out.truncated
            terminal_priv = out.terminal_privileged if self.privileged_size else self._privileged(env)
            boot = jnp.where(out.truncated, value(out.terminal_obs, terminal_priv), 0.0)
            loss_acc = loss_acc + jnp.where(done, ret_acc + discount * cfg.gamma * boot, 0.0)
            ret_acc = jnp.where(done, 0.0, ret_acc)
            discount = jnp.where(done, 1.0, discount * cfg.gamma)
            next_value = jnp.where(out.terminated, 0.0, jnp.where(out.truncated, boot, value(out.obs, self._privileged(env))))
            record = ((obs, priv), out.reward, jax.lax.stop_gradient(next_value), (~done).astype(jnp.float32), out.metrics, (done, out.terminated))
            return (env, discount, ret_acc, loss_acc), record

        init = self.initial_carry(state.env) if init is None else init
        (env, discount, ret_acc, loss_acc), records = jax.lax.scan(body, init, noise)
        # the episodes still running at the window's end bootstrap from their last state; one that
        # ended on the last step has been counted, and its environment already holds a fresh episode
        ended = records[5][0][-1]
        loss_acc = loss_acc + jnp.where(ended, 0.0, ret_acc + discount * value(task.observe(env), self._privileged(env)))
        actor_loss = -jnp.sum(loss_acc) / (cfg.horizon * cfg.num_envs)
        extra = {}
        if cfg.mirror_loss_weight > 0:
            extra["mirror_loss"] = mirror_loss(actor, stats, records[0][0], task.mirror_observation, task.mirror_action, cfg.obs_clip, cfg.action_clip)
            actor_loss = actor_loss + cfg.mirror_loss_weight * extra["mirror_loss"]
        return actor_loss, (env, records, extra)

    def _critic_update(self, state: SHACState, obs: jax.Array, privileged: jax.Array, targets: jax.Array, key: jax.Array):
        """The critics fitted to the window; their loss after the last pass; and
        :func:`critic_diagnostics` of the critics before it."""
        cfg = self.cfg
        n = obs.shape[0] * obs.shape[1]  # (T, K, ...) -> (T K, ...); the privileged width may be 0
        x = critic_input(state.obs_stats, obs.reshape(n, obs.shape[-1]), privileged.reshape(n, privileged.shape[-1]), cfg.obs_clip)
        y = targets.reshape(-1)
        diagnostics = critic_diagnostics(state.critics, x, y)
        n, mb = y.shape[0], y.shape[0] // cfg.critic_minibatches

        def loss_fn(critics, xb, yb):
            return jnp.mean((ensemble_values(critics, xb) - yb[None]) ** 2)

        def epoch(carry, k):
            critics, opt = carry
            perm = jax.random.permutation(k, n).reshape(cfg.critic_minibatches, mb)

            def minibatch(carry, idx):
                critics, opt = carry
                loss, grads = jax.value_and_grad(loss_fn)(critics, x[idx], y[idx])
                updates, opt = self.critic_tx.update(grads, opt, critics)
                return (optax.apply_updates(critics, updates), opt), loss

            (critics, opt), losses = jax.lax.scan(minibatch, (critics, opt), perm)
            return (critics, opt), jnp.mean(losses)

        (critics, opt), losses = jax.lax.scan(epoch, (state.critics, state.critic_opt), jax.random.split(key, cfg.critic_iterations))
        return critics, opt, losses[-1], diagnostics

    def iteration(self, state: SHACState, with_gradient: bool = False) -> tuple[SHACState, dict[str, jax.Array]]:
        """One SHAC iteration; ``with_gradient`` adds the raw actor gradient, flattened, as
        ``metrics['actor_gradient']`` (for gradient statistics)."""
        cfg = self.cfg
        rng, k_noise, k_critic = jax.random.split(state.rng, 3)
        noise = self.exploration_noise(k_noise)
        # The scan's initial carry is differentiated too (its gradient is dropped): lax.scan's
        # linearization then has every float carry's tangent nonzero from the start and reaches
        # its fixpoint in one pass. From a constant carry the first pass finds the state's
        # tangent nonzero after one step and linearizes the whole body again (on the G1 BCG
        # step, a second ~30 s trace of its forward and VJP). The gradients are unchanged.
        (actor_loss, (env, records, extra)), (grads, action_grads, _) = jax.value_and_grad(
            self._rollout, argnums=(0, 2, 3), has_aux=True, allow_int=True
        )(state.actor, state, noise, self.initial_carry(state.env))
        (obs, privileged), rewards, next_values, continues, step_metrics, (done, terminated) = records
        spread = action_gradient_spread(action_grads, done, terminated, step_metrics.get("bundled"))
        if cfg.env_gradient_cap > 0:
            capped = cap_environment_gradients(action_grads, cfg.env_gradient_cap)
            grads = actor_gradient_from_actions(state.actor, state.obs_stats, obs, capped, cfg.obs_clip, cfg.action_clip)
        raw_gradient = jax.flatten_util.ravel_pytree(grads)[0] if with_gradient else None
        grad_norm = optax.tree.norm(grads)
        updates, actor_opt = self.actor_tx.update(grads, state.actor_opt, state.actor)
        actor = optax.apply_updates(state.actor, updates)
        (actor, actor_opt), skipped = skip_if_not_finite((actor, actor_opt), (state.actor, state.actor_opt), grad_norm)
        if cfg.critic_warmup_iterations > 0:
            actor, actor_opt = hold_during_warmup(
                (actor, actor_opt), (state.actor, state.actor_opt), state.iteration, cfg.critic_warmup_iterations
            )

        targets = td_lambda_returns(rewards, next_values, continues, cfg.gamma, cfg.td_lambda)
        critics, critic_opt, critic_loss, critic_metrics = self._critic_update(
            state, obs, jax.lax.stop_gradient(privileged), jax.lax.stop_gradient(targets), k_critic
        )
        alpha = cfg.target_critic_alpha
        target = jax.tree_util.tree_map(lambda t, c: alpha * t + (1 - alpha) * c, state.target_critics, critics)

        new = SHACState(
            actor=actor, critics=critics, target_critics=target, actor_opt=actor_opt, critic_opt=critic_opt,
            obs_stats=state.obs_stats.update(obs), env=jax.lax.stop_gradient(env), rng=rng, iteration=state.iteration + 1,
        )
        metrics = iteration_metrics(step_metrics)
        metrics.update(critic_metrics)
        metrics.update(extra)
        metrics.update(spread)  # of the uncapped dL/da
        metrics.update(
            actor_loss=actor_loss, critic_loss=critic_loss, actor_grad_norm=grad_norm, reward=jnp.mean(rewards),
            episodes_ended=jnp.sum(done.astype(jnp.float32)), skipped_actor_updates=skipped.astype(jnp.float32),
        )
        if with_gradient:
            metrics["actor_gradient"] = raw_gradient
        return new, metrics

    def jit_iteration(self, state: SHACState, with_gradient: bool = False) -> Callable[[SHACState], tuple[SHACState, dict]]:
        shardings = self.shardings(state)
        step = functools.partial(self.iteration, with_gradient=with_gradient)
        return jax.jit(step, in_shardings=(shardings,), out_shardings=(shardings, None))

    def policy_fn(self, state: SHACState) -> Callable[[jax.Array], jax.Array]:
        cfg = self.cfg
        return lambda obs: policy_action(state.actor, state.obs_stats, obs, cfg.obs_clip, cfg.action_clip)

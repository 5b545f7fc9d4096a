"""LayerNorm + ELU MLPs and the running observation normalizer, in plain JAX.

Parameters are lists of layer dicts (``w`` (in, out), ``b``, and for hidden layers
``ln_scale`` / ``ln_bias``): hidden layers are Linear -> LayerNorm -> ELU, the output
layer is Linear. This is exactly the layer structure of
:mod:`bcg_robot.onnx_graph` (``DenseLayer``), so export is a copy.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Sequence

import jax
import jax.numpy as jnp

LAYER_NORM_EPS = 1e-5  # the ONNX graph's LayerNormalization epsilon
OBS_STD_EPS = 1e-4


def init_mlp(rng: jax.Array, sizes: Sequence[int], output_scale: float = 1.0) -> list[dict[str, jax.Array]]:
    """Orthogonal-ish (scaled normal) init; the output layer scaled by ``output_scale``."""
    layers = []
    keys = jax.random.split(rng, len(sizes) - 1)
    for i, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        last = i == len(sizes) - 2
        scale = (output_scale if last else 1.0) * jnp.sqrt(2.0 / n_in)
        layer = {"w": scale * jax.random.normal(keys[i], (n_in, n_out), jnp.float32), "b": jnp.zeros((n_out,), jnp.float32)}
        if not last:
            layer["ln_scale"] = jnp.ones((n_out,), jnp.float32)
            layer["ln_bias"] = jnp.zeros((n_out,), jnp.float32)
        layers.append(layer)
    return layers


def layer_norm(x: jax.Array, scale: jax.Array, bias: jax.Array) -> jax.Array:
    mu = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean((x - mu) ** 2, axis=-1, keepdims=True)
    return (x - mu) / jnp.sqrt(var + LAYER_NORM_EPS) * scale + bias


def mlp_apply(layers: list[dict[str, jax.Array]], x: jax.Array) -> jax.Array:
    for layer in layers:
        x = x @ layer["w"] + layer["b"]
        if "ln_scale" in layer:
            x = jax.nn.elu(layer_norm(x, layer["ln_scale"], layer["ln_bias"]))
    return x


@functools.partial(jax.tree_util.register_dataclass, data_fields=["mean", "var", "count"], meta_fields=[])
@dataclasses.dataclass(frozen=True)
class RunningStats:
    """Running mean and variance of observations (parallel Welford update)."""

    mean: jax.Array
    var: jax.Array
    count: jax.Array

    @classmethod
    def create(cls, size: int) -> "RunningStats":
        return cls(jnp.zeros((size,), jnp.float32), jnp.ones((size,), jnp.float32), jnp.asarray(1e-4, jnp.float32))

    def update(self, batch: jax.Array) -> "RunningStats":
        batch = batch.reshape(-1, batch.shape[-1])
        n = jnp.asarray(batch.shape[0], jnp.float32)
        b_mean, b_var = jnp.mean(batch, axis=0), jnp.var(batch, axis=0)
        total = self.count + n
        delta = b_mean - self.mean
        mean = self.mean + delta * n / total
        m2 = self.var * self.count + b_var * n + delta**2 * self.count * n / total
        return RunningStats(mean, m2 / total, total)

    @property
    def std(self) -> jax.Array:
        return jnp.sqrt(self.var + OBS_STD_EPS)

    def normalize(self, obs: jax.Array, clip: float) -> jax.Array:
        return jnp.clip((obs - jax.lax.stop_gradient(self.mean)) / jax.lax.stop_gradient(self.std), -clip, clip)


def policy_action(actor: list[dict[str, jax.Array]], stats: RunningStats, obs: jax.Array, obs_clip: float, action_clip: float) -> jax.Array:
    """The deterministic policy, as exported: normalize, MLP, clip."""
    return jnp.clip(mlp_apply(actor, stats.normalize(obs, obs_clip)), -action_clip, action_clip)

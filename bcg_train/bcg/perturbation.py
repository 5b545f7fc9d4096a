"""Cartesian contact-point offsets mapped to joint space (the BCG perturbation).

For the triggering contact (the candidate contact with the largest peak normal force
in the step; if none carries force, the closest candidate) with translational
Jacobian ``J`` (3 x nv) of its contact point on the contacting body, Cartesian
offsets ``dp ~ N(0, sigma_p^2 I)`` and ``dv ~ N(0, sigma_v^2 I)`` become

    dq  = J^T (J J^T + lambda I)^-1 dp        (position, in tangent space)
    dqd = J^T (J J^T + lambda I)^-1 dv        (velocity)

``J`` is zero outside the kinematic chain from the root to the contacting body, so
only that chain (including a floating base) is perturbed. Offsets are constants for
differentiation (``stop_gradient``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
from mujoco import mjx

from bcg_train.sim import linalg
from bcg_train.sim.contact import point_jacobian


def damped_pseudo_inverse_map(jacobian: jax.Array, cartesian: jax.Array, damping: float) -> jax.Array:
    """``J^T (J J^T + damping I)^-1 x`` for a batch of Cartesian vectors ``x`` (..., 3)."""
    gram = jacobian @ jacobian.T + damping * jnp.eye(jacobian.shape[0], dtype=jacobian.dtype)
    solved = linalg.spd_solve(gram, cartesian.reshape(-1, jacobian.shape[0]).T)
    return (jacobian.T @ solved).T.reshape(cartesian.shape[:-1] + (jacobian.shape[1],))


def contact_bodies(mj_model: mujoco.MjModel, data: mjx.Data) -> jax.Array:
    """(ncon,) body that is perturbed for each candidate contact.

    The body of the contact's second geom unless that is the world, else the first.
    Geom ids of MJX contacts can be dynamic (broad-phase culling), so this is traced.
    """
    geoms = data._impl.contact.geom
    bodies = jnp.asarray(np.asarray(mj_model.geom_bodyid, dtype=np.int32))[geoms]
    return jnp.where(bodies[:, 1] != 0, bodies[:, 1], bodies[:, 0])


def select_contact(force_peak: jax.Array, dist: jax.Array) -> jax.Array:
    """Index of the triggering contact: largest peak force, or the closest if none pushes."""
    any_force = jnp.any(force_peak > 0)
    return jnp.where(any_force, jnp.argmax(force_peak), jnp.argmin(dist))


def integrate_configuration(mj_model: mujoco.MjModel, qpos: jax.Array, dq: jax.Array) -> jax.Array:
    """``qpos (+) dq``: adds a tangent-space offset (quaternions via the exponential map)."""
    parts = []
    for j in range(mj_model.njnt):
        jtype = mj_model.jnt_type[j]
        qa, va = mj_model.jnt_qposadr[j], mj_model.jnt_dofadr[j]
        if jtype == mujoco.mjtJoint.mjJNT_FREE:
            parts.append(qpos[qa : qa + 3] + dq[va : va + 3])
            parts.append(_quat_add_rotation(qpos[qa + 3 : qa + 7], dq[va + 3 : va + 6]))
        elif jtype == mujoco.mjtJoint.mjJNT_BALL:
            parts.append(_quat_add_rotation(qpos[qa : qa + 4], dq[va : va + 3]))
        else:
            parts.append(qpos[qa : qa + 1] + dq[va : va + 1])
    return jnp.concatenate(parts) if parts else qpos


def normalize_quaternions(mj_model: mujoco.MjModel, qpos: jax.Array) -> jax.Array:
    """``qpos`` (..., nq) with the quaternion of every free and ball joint scaled to unit norm.
    A mean of unit quaternions (a bundle's branch mean) is shorter than one, by about a
    quarter of the branches' angular variance: everything that reads the orientation from
    ``qpos`` (rewards, observation, termination) would see it."""
    for j in range(mj_model.njnt):
        jtype = mj_model.jnt_type[j]
        if not (jtype == mujoco.mjtJoint.mjJNT_FREE or jtype == mujoco.mjtJoint.mjJNT_BALL):  # not 'in': numpy int vs enum
            continue
        a = int(mj_model.jnt_qposadr[j]) + (3 if jtype == mujoco.mjtJoint.mjJNT_FREE else 0)
        quat = qpos[..., a : a + 4]
        qpos = qpos.at[..., a : a + 4].set(quat / jnp.linalg.norm(quat, axis=-1, keepdims=True))
    return qpos


def _quat_add_rotation(quat: jax.Array, rotation: jax.Array) -> jax.Array:
    """``quat * exp(rotation / 2)`` with ``rotation`` in the local frame, normalized."""
    angle = jnp.linalg.norm(rotation)
    safe = jnp.where(angle > 0, angle, 1.0)
    axis = jnp.where(angle > 0, rotation / safe, jnp.zeros_like(rotation))
    half = 0.5 * angle
    delta = jnp.concatenate([jnp.cos(half)[None], jnp.sin(half) * axis])
    w1, v1 = quat[0], quat[1:]
    w2, v2 = delta[0], delta[1:]
    out = jnp.concatenate([(w1 * w2 - v1 @ v2)[None], w1 * v2 + w2 * v1 + jnp.cross(v1, v2)])
    return out / jnp.linalg.norm(out)


def joint_space_offsets(
    mj_model: mujoco.MjModel,
    model: mjx.Model,
    kinematics: mjx.Data,
    force_peak: jax.Array,
    key: jax.Array,
    num_branches: int,
    sigma_p: float,
    sigma_v: float,
    damping: float,
) -> tuple[jax.Array, jax.Array]:
    """Joint-space offsets (dq, dqd), each (num_branches, nv), for one environment.

    ``kinematics`` supplies the contact candidates and the kinematics (``cdof``,
    ``subtree_com``) the Jacobian is taken at; ``force_peak`` (ncon,) picks the contact.
    """
    nv = mj_model.nv
    dtype = kinematics.qpos.dtype
    contact = kinematics._impl.contact
    if contact.dist.shape[0] == 0:
        zeros = jnp.zeros((num_branches, nv), dtype)
        return zeros, zeros
    index = select_contact(force_peak, contact.dist)
    body = contact_bodies(mj_model, kinematics)[index]
    jacobian = point_jacobian(model, kinematics, contact.pos[index], body)
    key_p, key_v = jax.random.split(key)
    dp = sigma_p * jax.random.normal(key_p, (num_branches, 3), dtype)
    dv = sigma_v * jax.random.normal(key_v, (num_branches, 3), dtype)
    dq = damped_pseudo_inverse_map(jacobian, dp, damping)
    dqd = damped_pseudo_inverse_map(jacobian, dv, damping)
    return jax.lax.stop_gradient(dq), jax.lax.stop_gradient(dqd)

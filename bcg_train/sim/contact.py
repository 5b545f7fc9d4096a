"""Contact quantities read from MJX data: per-contact normal force, contact Jacobians.

MJX keeps a static list of candidate contacts (one per collision pair and contact
point); a candidate that is not touching carries zero constraint force. The normal
force of contact ``i`` is recovered from the constraint forces ``efc_force``:

* pyramidal cone, condim > 1: the sum of the contact's ``2 (condim - 1)`` pyramid
  edge forces (each edge force has normal component equal to the edge force);
* condim 1 or elliptic cone: the first constraint row.

The forces in ``d.efc_force`` after ``mjx.step`` are those applied during that
physics step, so summing ``force * dt`` over substeps gives the exact impulse.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
from mujoco import mjx


def _normal_force_rows(m: mjx.Model, d: mjx.Data) -> tuple[np.ndarray, np.ndarray]:
    """Static (ncon, rows) efc indices and 0/1 mask whose masked sum is the normal force."""
    contact = d._impl.contact
    efc_address = np.asarray(contact.efc_address)
    dims = np.asarray(contact.dim)
    ncon = efc_address.shape[0]
    pyramidal = int(m.opt.cone) == int(mujoco.mjtCone.mjCONE_PYRAMIDAL)
    rows_per_contact = [
        (2 * (int(dim) - 1) if (pyramidal and dim > 1) else 1) for dim in dims
    ]
    width = max(rows_per_contact, default=1)
    index = np.zeros((ncon, width), dtype=np.int32)
    mask = np.zeros((ncon, width), dtype=bool)
    for i, (adr, n) in enumerate(zip(efc_address, rows_per_contact)):
        if adr < 0:
            continue
        index[i, :n] = adr + np.arange(n)
        mask[i, :n] = True
    return index, mask


def contact_normal_forces(m: mjx.Model, d: mjx.Data) -> jax.Array:
    """Normal force (N, >= 0) of every candidate contact, shape (ncon,)."""
    if d._impl.ncon == 0:
        return jnp.zeros((0,), dtype=d.qpos.dtype)
    index, mask = _normal_force_rows(m, d)
    rows = d._impl.efc_force[index]
    return jnp.sum(jnp.where(mask, rows, 0.0), axis=-1)


def contact_body_ids(m: mujoco.MjModel, d: mjx.Data) -> np.ndarray:
    """Static (ncon, 2) body ids of the two geoms of every candidate contact."""
    geoms = np.asarray(d._impl.contact.geom)
    return np.asarray(m.geom_bodyid)[geoms]


def point_jacobian(m: mjx.Model, d: mjx.Data, point: jax.Array, body_id: jax.Array) -> jax.Array:
    """Translational Jacobian (3, nv) of a world point rigidly attached to ``body_id``.

    ``d`` must hold kinematics (``cdof``, ``subtree_com``) of the configuration the
    Jacobian is wanted at. Columns outside the body's kinematic chain are zero, so
    the Jacobian selects the contacting chain (floating base included).
    """
    jacp, _ = mjx.jac(m, d, point, body_id)
    return jacp.T

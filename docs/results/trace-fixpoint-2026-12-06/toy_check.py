import sys, time, functools
sys.path.insert(0, "test/bcg_train")
import jax, jax.numpy as jnp, numpy as np
import test_bcg_bundle as tb
from bcg_train.bcg.bundle import BundledSim
from bcg_train.bcg.config import BCGConfig
from bcg_train.bcg.rollout import rollout_open_loop, grad_through_rollout

sim = tb.leg_sim()
bsim = BundledSim(sim, BCGConfig(num_branches=tb.B, force_threshold=tb.TOY_TAU))
start = tb.starts()

def old(start, actions):
    def total(a):
        costs, final, substeps = rollout_open_loop(bsim, start, a, tb.height_cost)
        return jnp.sum(costs), (costs, substeps)
    return jax.grad(total, has_aux=True)(actions)

def new(start, actions):
    def total(a, s0):
        costs, final, substeps = rollout_open_loop(bsim, s0, a, tb.height_cost)
        return jnp.sum(costs), (costs, substeps)
    return grad_through_rollout(total)(actions, start)

for name, f in (("old", old), ("new", new)):
    t = time.perf_counter(); jax.jit(f).trace(start, tb.ACTIONS); print(name, "trace", round(time.perf_counter() - t, 2), flush=True)
go, (co, so) = jax.jit(old)(start, tb.ACTIONS)
gn, (cn, sn) = jax.jit(new)(start, tb.ACTIONS)
print("bit-identical grads", bool(np.array_equal(go, gn)), "costs", bool(np.array_equal(co, cn)), "substeps", int(so), int(sn), "max|g|", float(jnp.max(jnp.abs(go))))

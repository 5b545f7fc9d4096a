"""The SHAC iteration's actor gradient and metrics on the stiff hopper (BCG, slots, state clip) -> npz."""
import dataclasses, sys, time
import jax, numpy as np
from bcg_train.bcg.config import Estimator
from bcg_train.learn.config import SHACConfig
from bcg_train.learn.shac import SHAC
from bcg_train.tasks.hopper import HopperConfig, HopperTask

cfg = HopperConfig(contact="stiff")
cfg = dataclasses.replace(cfg, bcg=dataclasses.replace(cfg.bcg, mode=Estimator.BCG, bundle_slots=4))
sc = SHACConfig(num_envs=8, horizon=16, iterations=3, actor_hidden=(32, 32), critic_hidden=(32, 32), state_grad_clip=0.5)
shac = SHAC(HopperTask(cfg), sc, num_devices=1)
state = shac.init(0)
step = shac.jit_iteration(state, with_gradient=True)
t = time.perf_counter()
lowered = step.trace(state)
print("trace", round(time.perf_counter() - t, 1), "s", flush=True)
out = {}
for i in range(3):
    state, m = step(state)
    out[f"g{i}"] = np.asarray(m["actor_gradient"]); out[f"loss{i}"] = np.asarray(m["actor_loss"]); out[f"b{i}"] = np.asarray(m["bundled"])
np.savez(sys.argv[1], **out)
print({k: float(np.linalg.norm(v)) for k, v in out.items()})

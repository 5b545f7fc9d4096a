"""Which scans of the G1 iteration re-linearize their body (the fixpoint's extra passes)."""
import time
import jax
from jax._src.lax.control_flow import loops
from jax._src.interpreters import ad
from bcg_robot.paths import share_file
from bcg_train.learn.config import load_train_config
from bcg_train.learn.train import make_task
from bcg_train.learn.shac import SHAC

orig_lin = ad.linearize_jaxpr
orig_scan_lin = loops._scan_linearize
log = []  # (jaxpr id, seconds, nzs_out)

def lin(jaxpr, nzs, **kw):
    t = time.perf_counter()
    out = orig_lin(jaxpr, nzs, **kw)
    log.append((id(jaxpr), time.perf_counter() - t, out[2]))
    return out

ad.linearize_jaxpr = lin

def scan_lin(is_vjp, nzs, *primals, **params):
    start = len(log)
    out = orig_scan_lin(is_vjp, nzs, *primals, **params)
    mine = [c for c in log[start:] if c[0] == id(params["jaxpr"])]
    nc, ncon = params["num_carry"], params["num_consts"]
    init_nz = nzs[ncon:ncon + nc]
    if len(mine) > 1:
        first_out = mine[0][2][:nc]
        print(f"scan length {params['length']} carry {nc}: {len(mine)} passes {[round(c[1], 1) for c in mine]} s; "
              f"init nonzero {sum(init_nz)}/{nc}; newly nonzero after pass 1: "
              f"{[i for i, (a, b) in enumerate(zip(init_nz, first_out)) if b and not a][:12]}; "
              f"avals {[str(v) for i, v in enumerate(params['jaxpr'].in_avals[ncon:ncon + nc]) if first_out[i] and not init_nz[i]][:6]}", flush=True)
    return out

ad.primitive_linearizations[loops.scan_p] = scan_lin
cfg = load_train_config(share_file("config/train/jump.yaml"), preset="cpu-tiny")
shac = SHAC(make_task(cfg), cfg.shac, cfg.devices)
state = shac.init(cfg.seed)
t = time.perf_counter()
shac.jit_iteration(state).trace(state)
print(f"trace {time.perf_counter() - t:.1f} s")

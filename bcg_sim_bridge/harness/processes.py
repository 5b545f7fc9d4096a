"""The one process harness: the node list (or single modules) as plain processes, each with its own log file.

``bcg-sim2sim`` starts the node list of :mod:`bcg_sim_bridge.node_list` here (no
launch_ros); the node's tests and the benchmarks start the bridge, the policy node and
the sentinel by module with the ROS parameters they need (:meth:`ProcessGroup.start_module`).
"""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from bcg_policy_node.bringup import NodeSpec, parameter_args

BRIDGE_MODULE = "bcg_sim_bridge.bridge_node"
NODE_MODULE = "bcg_policy_node.node.policy_node"
SENTINEL_MODULE = "bcg_policy_node.sentinel.sentinel_node"
PROBE_MODULE = "bcg_sim_bridge.unitree_probe"


def machine_cpu_times(path: str = "/proc/stat") -> tuple[int, ...] | None:
    """The machine's CPU time counters (user, nice, system, idle, iowait, irq, softirq,
    steal), in clock ticks; None where /proc/stat cannot be read."""
    try:
        with open(path) as f:
            fields = f.readline().split()
        return tuple(int(x) for x in fields[1:9])
    except (OSError, ValueError):
        return None


def machine_cpu_use(before: tuple[int, ...] | None, after: tuple[int, ...] | None) -> dict[str, float]:
    """Between two :func:`machine_cpu_times`: the share of all CPU time that ran work here
    (busy) and the share the hypervisor took (steal: the virtual machine's CPUs not running)."""
    if before is None or after is None:
        return {}
    delta = [b - a for a, b in zip(before, after)]
    total = sum(delta)
    if total <= 0:
        return {}
    return {"busy": round(1 - (delta[3] + delta[4] + delta[7]) / total, 3), "steal": round(delta[7] / total, 3)}


def ros_args(params: dict) -> list[str]:
    """``--ros-args -p key:=value ...`` for a node started by module."""
    return ["--ros-args", *parameter_args(params)]


@dataclasses.dataclass
class RunningNode:
    spec: NodeSpec | None  # None: started by module (start_module)
    process: subprocess.Popen
    log_path: Path
    started_at: float = 0.0  # time.monotonic()
    killed_at: float | None = None  # time.monotonic() of a deliberate SIGKILL (fault injection)

    def alive(self) -> bool:
        return self.process.poll() is None

    def log_tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


class ProcessGroup:
    """The run's processes by key (a node spec's role unless given); stopped in reverse start order
    (SIGINT, then SIGKILL after a grace period)."""

    def __init__(self, log_dir: Path, env: dict[str, str] | None = None, nice: int = 0):
        self.log_dir = Path(log_dir)
        self.env = env or {}
        self.nice = nice  # < 0 needs CAP_SYS_NICE: control processes ahead of batch jobs, as on a robot PC
        self.nodes: dict[str, RunningNode] = {}

    def child_env(self) -> dict[str, str]:
        """The parent's environment; children import the same code as this process does."""
        code_root = str(Path(__file__).resolve().parents[2])
        path = os.pathsep.join(p for p in (code_root, os.environ.get("PYTHONPATH", "")) if p)
        return {**os.environ, **self.env, "PYTHONUNBUFFERED": "1", "PYTHONPATH": path}

    def start(self, spec: NodeSpec, key: str | None = None) -> RunningNode:
        """``spec`` under its own name; its log is ``<name>.log``."""
        return self._spawn(key or spec.role, spec.name, spec.command(sys.executable), spec.env_dict(), spec)

    def start_module(self, key: str, module: str, params: dict) -> RunningNode:
        """``python -m module`` with ROS parameters ``params`` under the node's default name; its log is ``<key>.log``."""
        return self._spawn(key, key, [sys.executable, "-m", module, *ros_args(params)], {}, None)

    def _spawn(self, key: str, log_name: str, argv: list[str], extra_env: dict[str, str],
               spec: NodeSpec | None) -> RunningNode:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        log_path = self.log_dir / f"{log_name}.log"
        env = {**self.child_env(), **extra_env}
        log = open(log_path, "w")
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True, preexec_fn=(lambda: os.nice(self.nice)) if self.nice else None)
        log.close()
        node = RunningNode(spec, proc, log_path, started_at=time.monotonic())
        self.nodes[key] = node
        return node

    def log(self, key: str) -> str:
        return self.nodes[key].log_path.read_text(errors="replace")

    def cpu_seconds(self) -> dict[str, float]:
        """Per live process: CPU time (user + system) so far, s."""
        spent = {}
        for role, node in self.nodes.items():
            try:
                fields = Path(f"/proc/{node.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            spent[role] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        return spent

    def cpu_share(self) -> dict[str, float]:
        """Per live process: CPU time / wall time since start (1.0 = one full core)."""
        return {role: round(cpu_s / max(time.monotonic() - self.nodes[role].started_at, 1e-3), 3)
                for role, cpu_s in self.cpu_seconds().items()}

    def kill(self, key: str, sig: int = signal.SIGKILL) -> float:
        """Send ``sig`` (a deliberate SIGKILL by default: fault injection) and wait for the exit; returns when."""
        node = self.nodes[key]
        node.killed_at = time.monotonic()
        node.process.send_signal(sig)
        node.process.wait(timeout=20)
        return node.killed_at

    def pause(self, key: str, seconds: float) -> float:
        """Freeze a process (SIGSTOP) for ``seconds``, then let it go on (SIGCONT): a stall
        such as a descheduled or swapping process has. Returns when it was frozen."""
        process = self.nodes[key].process
        frozen_at = time.monotonic()
        process.send_signal(signal.SIGSTOP)
        try:
            time.sleep(seconds)
        finally:
            process.send_signal(signal.SIGCONT)
        return frozen_at

    def stop(self, key: str) -> None:
        """SIGINT (a clean shutdown) if it is still running."""
        node = self.nodes.get(key)
        if node is not None and node.alive():
            node.process.send_signal(signal.SIGINT)
            node.process.wait(timeout=20)

    def stop_all(self, grace_s: float = 10.0) -> dict[str, int | None]:
        for node in reversed(list(self.nodes.values())):
            if node.alive():
                node.process.send_signal(signal.SIGINT)
        deadline = time.monotonic() + grace_s
        codes = {}
        for role, node in self.nodes.items():
            try:
                codes[role] = node.process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                node.process.kill()
                codes[role] = node.process.wait()
        return codes

"""Start the node list as plain processes (no launch_ros), each with its own log file."""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from bcg_sim_bridge.node_list import NodeSpec


@dataclasses.dataclass
class RunningNode:
    spec: NodeSpec
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
    """The run's processes; stopped in reverse start order (SIGINT, then SIGKILL after a grace period)."""

    def __init__(self, log_dir: Path, env: dict[str, str], nice: int = 0):
        self.log_dir = log_dir
        self.env = env
        self.nice = nice  # < 0 needs CAP_SYS_NICE: control processes ahead of batch jobs, as on a robot PC
        self.nodes: dict[str, RunningNode] = {}

    def child_env(self) -> dict[str, str]:
        """The parent's environment; children import the same code as this process does."""
        code_root = str(Path(__file__).resolve().parents[2])
        path = os.pathsep.join(p for p in (code_root, os.environ.get("PYTHONPATH", "")) if p)
        return {**os.environ, **self.env, "PYTHONUNBUFFERED": "1", "PYTHONPATH": path}

    def start(self, spec: NodeSpec) -> RunningNode:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        log_path = self.log_dir / f"{spec.name}.log"
        env = {**self.child_env(), **spec.env_dict()}
        log = open(log_path, "w")
        proc = subprocess.Popen(spec.command(sys.executable), stdout=log, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True, preexec_fn=(lambda: os.nice(self.nice)) if self.nice else None)
        log.close()
        node = RunningNode(spec, proc, log_path, started_at=time.monotonic())
        self.nodes[spec.role] = node
        return node

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

    def kill(self, role: str) -> float:
        node = self.nodes[role]
        node.killed_at = time.monotonic()
        node.process.send_signal(signal.SIGKILL)
        node.process.wait(timeout=5)
        return node.killed_at

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

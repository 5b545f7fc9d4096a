"""Trainer tests: release every compiled JAX program when a test module ends.

XLA:CPU maps each compiled kernel into memory separately, and one pytest process keeps
the executables of every earlier test alive through JAX's caches: over the whole trainer
suite they added up past the kernel's default ``vm.max_map_count`` (65,530) and the run
aborted inside a compile. Dropping the caches after each module (the persistent on-disk
cache is untouched) frees those executables and their maps.
"""

import ctypes
import gc
import subprocess
import sys
from pathlib import Path

import jax
import pytest


REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def bcg_train_exit():
    """Runs ``bcg-train`` with the given arguments in a fresh interpreter and returns
    ``(exit code, whether JAX was imported, stderr)``: bad input must stop it before JAX."""

    def run(args: list[str]) -> tuple[int | str, bool, str]:
        code = (
            "import sys\nfrom bcg_train.cli.train import main\n"
            f"try:\n    raise SystemExit(main({args!r}))\n"  # as the console script does with main's return value
            "except SystemExit as e:\n    print(e.code, 'jax' in sys.modules)\n"
        )
        proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
        words = proc.stdout.split()
        assert len(words) == 2, proc.stdout + proc.stderr
        return int(words[0]) if words[0].isdigit() else words[0], words[1] == "True", proc.stderr

    return run


def memory_maps() -> int:
    try:
        with open("/proc/self/maps") as f:
            return sum(1 for _ in f)
    except OSError:
        return -1


@pytest.fixture(autouse=True, scope="module")
def release_compiled_programs(request):
    yield
    before = memory_maps()
    jax.clear_caches()
    gc.collect()
    _return_freed_heap()
    request.config.stash.setdefault(_MAPS, []).append((request.node.name, before, memory_maps()))


_MAPS = pytest.StashKey[list]()


def _return_freed_heap() -> None:
    """Hand the heap the released programs occupied back to the kernel (glibc keeps it
    otherwise, and a worker that ran a G1 compile stayed ~10 GB resident)."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass


# The G1 modules: under ``make pytest`` they share one worker, so two G1 compiles (up to
# ~11 GB each) never run at once. They run first, in this order (the script's subprocess
# before the largest compile has grown the worker), while the other worker takes the rest.
G1_MODULES = ("test_gpu_train_script.py", "test_train_float64.py", "test_imitation_task.py")


def _module_file(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


# The other worker takes the remaining modules one at a time as it runs low on tests, so
# they go longest first (longest-processing-time order): the run then ends with short
# modules on both workers instead of one worker finishing a long module alone. Seconds of
# each module alone, cold cache, at e9d17aa: bundle 633, slots 563, learning regression
# 333, solver 304, sim failure 112, sim core 101; the rest under 65 each. In the order
# they were collected, the per-test durations of the CI run of 2701d9a add up to about
# 4 min more on one worker than on the other.
LONGEST_FIRST = (
    "test_bcg_bundle.py",
    "test_bcg_bundle_slots.py",
    "test_learning_regression.py",
    "test_solver.py",
    "test_sim_failure.py",
    "test_bcg_sim_core.py",
)


def _run_rank(item) -> tuple[int, int]:
    name = Path(_module_file(item.nodeid)).name
    if name in G1_MODULES:
        return 0, G1_MODULES.index(name)
    return 1, LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST)


def pytest_collection_modifyitems(config, items):
    items.sort(key=_run_rank)  # stable: a module's tests, and the modules not named, keep their order


@pytest.hookimpl(optionalhook=True)  # an xdist hook
def pytest_xdist_make_scheduler(config, log):
    """Under ``pytest -n N``: a test module runs on one worker (its tests share compiled
    programs), the G1 modules all on the same one."""
    from xdist.scheduler import LoadScopeScheduling

    class ModuleScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = _module_file(nodeid)
            return "g1" if Path(module).name in G1_MODULES else module

    return ModuleScheduling(config, log)


def pytest_sessionfinish(session):
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # an xdist worker: hand the rows to the controller
        workeroutput["memory_maps"] = session.config.stash.get(_MAPS, [])


@pytest.hookimpl(optionalhook=True)  # an xdist hook
def pytest_testnodedown(node, error):
    rows = getattr(node, "workeroutput", {}).get("memory_maps", [])
    node.config.stash.setdefault(_MAPS, []).extend((f"{node.gateway.id} {name}", *counts) for name, *counts in rows)


def pytest_terminal_summary(terminalreporter, config):
    rows = config.stash.get(_MAPS, [])
    if rows:
        peak = max(before for _, before, _ in rows)
        terminalreporter.write_line(f"trainer tests: memory maps peaked at {peak} at a module's end "
                                    f"(released to {rows[-1][2]} after the last)")
        for name, before, after in rows:
            terminalreporter.write_line(f"  {name}: {before} -> {after} maps", )

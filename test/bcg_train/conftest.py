"""Trainer tests: release every compiled JAX program when a test module ends.

XLA:CPU maps each compiled kernel into memory separately, and one pytest process keeps
the executables of every earlier test alive through JAX's caches: over the whole trainer
suite they added up past the kernel's default ``vm.max_map_count`` (65,530) and the run
aborted inside a compile. Dropping the caches after each module (the persistent on-disk
cache is untouched) frees those executables and their maps.
"""

import gc

import jax
import pytest


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
    request.config.stash.setdefault(_MAPS, []).append((request.node.name, before, memory_maps()))


_MAPS = pytest.StashKey[list]()


def pytest_collection_modifyitems(config, items):
    """Under ``pytest -n N --dist loadgroup`` a module runs on one worker (its compiled
    programs are shared between its tests), unless it names a group of its own (the G1
    modules share one, so two G1 compiles never run at once)."""
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(item.module.__name__))


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

"""Process-wide JAX settings for the trainer: compilation cache and precision.

First compiles of G1 gradients take minutes on a CPU, so every entry point calls
:func:`enable_compilation_cache` before building functions; later runs load the
compiled executables from disk. Precision is a process-wide JAX flag
(``jax_enable_x64``): float32 is the default, :func:`enable_float64` must run
before any model is put on the device for float64 simulation.
"""

from __future__ import annotations

import os
from pathlib import Path

import jax

DEFAULT_CACHE_DIR = Path.home() / ".cache" / "bcg" / "jax"


def enable_compilation_cache(cache_dir: Path | str | None = None) -> Path:
    """Turns on JAX's persistent compilation cache (every compile is cached)."""
    path = Path(cache_dir or os.environ.get("BCG_JAX_CACHE_DIR", DEFAULT_CACHE_DIR))
    path.mkdir(parents=True, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", str(path))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    return path


def enable_float64() -> None:
    """Switches JAX to 64-bit floats (process-wide, call before building a sim)."""
    jax.config.update("jax_enable_x64", True)


def float64_enabled() -> bool:
    return bool(jax.config.read("jax_enable_x64"))


MIN_MAP_COUNT = 262144


def memory_map_warning(path: Path | str = "/proc/sys/vm/max_map_count") -> str | None:
    """A warning when the kernel's memory-map limit is low for XLA:CPU, else None.

    XLA:CPU's JIT maps every compiled kernel section separately; the G1 SHAC iteration
    needed ~37k maps once compiled and more while compiling, and on a machine with the
    default ``vm.max_map_count`` (65530) one compile died with LLVM's "Unable to
    allocate section memory".
    """
    try:
        limit = int(Path(path).read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    if limit >= MIN_MAP_COUNT or jax.default_backend() != "cpu":
        return None
    return (
        f"vm.max_map_count is {limit}; compiling a G1 training iteration on CPU can need more memory maps "
        f"(LLVM 'Unable to allocate section memory'); raise it: sudo sysctl -w vm.max_map_count={MIN_MAP_COUNT}"
    )

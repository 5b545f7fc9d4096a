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

"""Locate robot description files inside installed distributions, without importing them.

The G1 description comes from the ``mjlab`` wheel, installed with ``--no-deps`` at
setup time (its own MuJoCo pin conflicts with ours). We never import ``mjlab``: the
file is found through the distribution's metadata. Nothing is downloaded at run time.
"""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

from bcg_robot.errors import ConfigError


def locate_distribution_file(distribution: str, relative_path: str, source: str = "<robot config>") -> Path:
    try:
        dist = importlib.metadata.distribution(distribution)
    except importlib.metadata.PackageNotFoundError:
        raise ConfigError(
            source, f"robot description package '{distribution}' is not installed (run 'make setup')"
        ) from None
    path = Path(str(dist.locate_file(relative_path)))
    if not path.is_file():
        raise ConfigError(source, f"'{relative_path}' not found in the installed '{distribution}' distribution")
    return path

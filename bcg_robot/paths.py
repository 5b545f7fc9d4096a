"""Where the package's shared files (config/, models/, launch/) are.

In a source checkout they sit at the repository root; after ``colcon build`` or on a
robot PC they are installed under ``share/bcg_policy_node``.
"""

from __future__ import annotations

import sys
from pathlib import Path

PACKAGE = "bcg_policy_node"
SOURCE_ROOT = Path(__file__).resolve().parent.parent


def share_dir() -> Path:
    if (SOURCE_ROOT / "package.xml").is_file():
        return SOURCE_ROOT
    try:
        from ament_index_python.packages import PackageNotFoundError, get_package_share_directory

        try:
            return Path(get_package_share_directory(PACKAGE))
        except PackageNotFoundError:
            pass
    except ImportError:
        pass
    return Path(sys.prefix) / "share" / PACKAGE


def share_file(relative: str) -> Path:
    return share_dir() / relative


def resolve_share_path(path: str) -> Path:
    """A user's path as given (absolute, or relative to the working directory where it exists),
    else the shared file of that name (``models/motions/jump.csv`` from any directory)."""
    p = Path(path)
    return p if p.is_absolute() or p.exists() else share_file(path)

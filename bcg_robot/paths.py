"""Where the package's shared files (config/, models/, launch/) are.

In a source checkout they sit at the repository root; after ``colcon build`` or on a
robot PC they are installed under ``share/bcg_policy_node``. :func:`output_dir` makes a
CLI's output folder and :func:`output_file` the folder of its output file, a file or a
folder in the way being bad input; :func:`check_output_files` refuses, before the work, a folder
named as one of the files a CLI will write into its output folder.
"""

from __future__ import annotations

import sys
from pathlib import Path

from bcg_robot.errors import BCGInputError

PACKAGE = "bcg_policy_node"
SOURCE_ROOT = Path(__file__).resolve().parent.parent


def share_dir() -> Path:
    if (SOURCE_ROOT / "package.xml").is_file():
        return SOURCE_ROOT
    try:
        from ament_index_python.packages import PackageNotFoundError, get_package_share_directory

        try:
            return Path(get_package_share_directory(PACKAGE))
        except (PackageNotFoundError, OSError):  # OSError: AMENT_PREFIX_PATH unset (no ROS setup sourced)
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


def output_dir(path: str | Path, option: str) -> Path:
    """``path`` created (with its parents) as a folder to write into; a file in its place (or in
    place of a folder above it) is a :class:`BCGInputError` naming it and the ``option`` it came from."""
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise BCGInputError(path, f"exists and is not a directory ({option})") from None
    except OSError as err:  # a file where a folder above it should be, no permission
        raise BCGInputError(path, f"cannot create this directory ({option}): {err.strerror}") from None
    return path


def check_output_dir(path: str | Path, option: str) -> Path:
    """Refuses, creating nothing, a ``path`` that :func:`output_dir` could not make: a file in
    its place or in place of a folder above it (for a CLI that makes its folder later)."""
    path = Path(path)
    for existing in (path, *path.parents):
        if existing.exists():
            if existing.is_dir():
                return path
            if existing == path:
                raise BCGInputError(path, f"exists and is not a directory ({option})")
            raise BCGInputError(path, f"cannot create this directory ({option}): {existing} is a file")
    return path


def output_file(path: str | Path, option: str) -> Path:
    """``path`` as a file to write: its folder created as by :func:`output_dir`; a folder in its
    place is a :class:`BCGInputError` (``--out models/`` for an ONNX file was a traceback after
    the work was done)."""
    path = Path(path)
    if path.is_dir():
        raise BCGInputError(path, f"is a directory ({option} names the file to write)")
    output_dir(path.parent, option)
    return path


def check_output_files(folder: str | Path, names, option: str) -> None:
    """Refuses, before any work, a folder in place of a file the CLI will write into ``folder``
    (``summary.json/`` made by hand: the write was a traceback after minutes of rollouts)."""
    for name in names:
        path = Path(folder) / name
        if path.is_dir():
            raise BCGInputError(path, f"is a directory, where {option} gets this file")

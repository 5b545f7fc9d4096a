"""Errors that reach a user as one line naming the file and the problem."""

from __future__ import annotations

import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


class BCGInputError(Exception):
    """Bad user input (config, model, policy, motion file).

    ``str(error)`` is a single line: ``<file>: <problem>``. CLIs print it and exit 2
    before anything is sent to a motor.
    """

    def __init__(self, source: str | Path, problem: str):
        self.source = str(source)
        self.problem = " ".join(str(problem).split())
        super().__init__(f"{self.source}: {self.problem}")


class ConfigError(BCGInputError):
    """A YAML config that does not validate."""


class ContractError(BCGInputError):
    """A policy whose contract does not match the robot, or a malformed policy file."""


@contextmanager
def exit_on_input_error(prog: str) -> Iterator[None]:
    """Turn a :class:`BCGInputError` into a one-line message and exit status 2."""
    try:
        yield
    except BCGInputError as err:
        print(f"{prog}: error: {err}", file=sys.stderr)
        raise SystemExit(2) from None

"""argparse ``type=`` validators the console entry points share: a bad value is argparse's
one-line error naming the option (``<prog>: error: argument --x: ...``) and exit status 2,
before anything is loaded or started."""

from __future__ import annotations

import argparse
import math


def positive_float(text: str) -> float:
    """A finite number > 0 (a duration, a rate): NaN, inf, 0 and negatives are refused."""
    value = _number(text, float)
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text!r}")
    return value


def positive_float_at_most(limit: float):
    """A :func:`positive_float` validator that also refuses values above ``limit`` (a rollout's
    length: ``--duration 1e308`` was an OverflowError traceback after the models had loaded)."""
    return _at_most(positive_float, limit)


def nonnegative_float(text: str) -> float:
    """A finite number >= 0 (a duration whose 0 means "the default" or "off")."""
    value = _number(text, float)
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text!r}")
    return value


def nonnegative_float_at_most(limit: float):
    """A :func:`nonnegative_float` validator that also refuses values above ``limit`` (a run length
    whose 0 means "the default": ``--run-seconds 1e308`` was an OverflowError after the processes had started)."""
    return _at_most(nonnegative_float, limit)


def _at_most(validator, limit: float):
    def validate(text: str) -> float:
        value = validator(text)
        if value > limit:
            raise argparse.ArgumentTypeError(f"must be at most {limit:g}, got {text!r}")
        return value

    return validate


def positive_int(text: str) -> int:
    """An integer >= 1 (a count)."""
    value = _number(text, int)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {text!r}")
    return value


def nonnegative_int(text: str) -> int:
    """An integer >= 0 (a seed)."""
    value = _number(text, int)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be an integer >= 0, got {text!r}")
    return value


def integer_in(low: int, high: int):
    """An integer validator for ``low``..``high`` inclusive (a niceness)."""

    def validate(text: str) -> int:
        value = _number(text, int)
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be an integer {low}..{high}, got {text!r}")
        return value

    return validate


DDS_DOMAINS = range(0, 233)  # DDS domain ids (ROS 2 and the Unitree SDK's Cyclone DDS)


def dds_domain(text: str) -> int:
    """A DDS domain id, 0-232."""
    value = _number(text, int)
    if value not in DDS_DOMAINS:
        raise argparse.ArgumentTypeError(f"must be a DDS domain id 0-232, got {text!r}")
    return value


def _number(text: str, kind: type):
    try:
        return kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not {'an integer' if kind is int else 'a number'}: {text!r}") from None

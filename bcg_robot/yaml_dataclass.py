"""Typed dataclasses from YAML: unknown keys rejected, types checked, one-line errors.

Every config in the project (robot, training, safety, bridge) is a frozen dataclass
with defaults. :func:`load_dataclass` builds one from a YAML mapping and
:func:`dump_dataclass` writes the resolved config back (saved next to every
checkpoint and export).
"""

from __future__ import annotations

import dataclasses
import enum
import math
import types
import typing
from pathlib import Path
from typing import Any, TypeVar

import yaml

from bcg_robot.errors import ConfigError

T = TypeVar("T")


class _UniqueKeyLoader(yaml.SafeLoader):
    """``yaml.safe_load`` that refuses a key given twice in one mapping (PyYAML keeps the last)."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, typing.Hashable):  # a list or mapping as a key ('? [a]'): PyYAML's own
                # check comes after this one, and the set below raised a TypeError traceback
                raise yaml.constructor.ConstructorError(None, None, f"a {type(key).__name__} cannot be a key",
                                                        key_node.start_mark)
            if key in seen:
                raise yaml.constructor.ConstructorError(None, None, f"key '{key}' given twice", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep)


def read_yaml_mapping(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise ConfigError(path, f"cannot read: {err.strerror or err}") from None
    except UnicodeDecodeError as err:
        raise ConfigError(path, f"not UTF-8 text (byte {err.start})") from None
    try:
        data = yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(path, f"invalid YAML{where}: {getattr(err, 'problem', err)}") from None
    except ValueError as err:  # PyYAML's int() of a literal over Python's 4300-digit limit
        raise ConfigError(path, f"invalid YAML: {str(err).split(';')[0]}") from None
    except RecursionError:  # the constructor recurses once per level of nesting
        raise ConfigError(path, "invalid YAML: nested too deeply") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(path, f"top level must be a mapping, got {type(data).__name__}")
    return data


def _convert(value: Any, tp: Any, key: str, source: str) -> Any:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _convert(value, arg, key, source)
            except ConfigError as err:
                errors.append(err.problem)
        raise ConfigError(source, errors[0] if errors else f"key '{key}': bad value {value!r}")
    if origin is typing.Literal:
        if value not in args:
            raise ConfigError(source, f"key '{key}': {value!r} is not one of {list(args)}")
        return value
    if dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            raise ConfigError(source, f"key '{key}': expected a mapping, got {type(value).__name__}")
        return _build(tp, value, source, prefix=f"{key}.")
    if origin in (tuple, list):
        if not isinstance(value, (list, tuple)):
            raise ConfigError(source, f"key '{key}': expected a list, got {type(value).__name__}")
        if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
            return tuple(_convert(v, args[0], f"{key}[{i}]", source) for i, v in enumerate(value))
        if origin is tuple and args:
            if len(value) != len(args):
                raise ConfigError(source, f"key '{key}': expected {len(args)} values, got {len(value)}")
            return tuple(_convert(v, a, f"{key}[{i}]", source) for i, (v, a) in enumerate(zip(value, args)))
        inner = args[0] if args else Any
        return [_convert(v, inner, f"{key}[{i}]", source) for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(source, f"key '{key}': expected a mapping, got {type(value).__name__}")
        return dict(value)
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(source, f"key '{key}': expected true/false, got {value!r}")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(source, f"key '{key}': expected a number, got {value!r}")
        try:
            number = float(value)
        except OverflowError:  # an integer beyond the float range (YAML reads '1000...0' as an int)
            raise ConfigError(source, f"key '{key}': expected a finite number, got an integer too large") from None
        if not math.isfinite(number):  # .nan passes every 'x <= 0' check after it; no key means 'no limit' by .inf
            raise ConfigError(source, f"key '{key}': expected a finite number, got {value!r}")
        return number
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(source, f"key '{key}': expected an integer, got {value!r}")
        return value
    if tp is str:
        if not isinstance(value, str):
            raise ConfigError(source, f"key '{key}': expected a string, got {value!r}")
        return value
    return value


def _build(cls: type[T], data: dict[str, Any], source: str, prefix: str = "") -> T:
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(data) - set(fields), key=str)  # YAML keys need not be strings ('1: 2')
    if unknown:
        raise ConfigError(source, f"unknown key '{prefix}{unknown[0]}' (allowed: {', '.join(sorted(fields))})")
    kwargs = {}
    for name, field in fields.items():
        key = f"{prefix}{name}"
        if name in data:
            kwargs[name] = _convert(data[name], hints[name], key, source)
        elif field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
            raise ConfigError(source, f"missing key '{key}'")
    try:
        return cls(**kwargs)
    except ConfigError:
        raise
    except (ValueError, TypeError) as err:
        raise ConfigError(source, str(err)) from None


def load_dataclass(cls: type[T], path: str | Path, overrides: dict[str, Any] | None = None) -> T:
    """Load ``cls`` from the YAML file ``path`` (plus optional overrides), validated."""
    data = read_yaml_mapping(path)
    # bookkeeping fields (compare=False, e.g. ``source``, the file a config came from) are the
    # loader's to set: a file that sets one would be overwritten without a word
    internal = [f.name for f in dataclasses.fields(cls) if not f.compare and f.name in data]
    if internal:
        raise ConfigError(path, f"unknown key '{internal[0]}' (set by the loader, not by a config file)")
    if overrides:
        data = {**data, **overrides}
    return from_mapping(cls, data, str(path))


def from_mapping(cls: type[T], data: dict[str, Any], source: str = "<config>") -> T:
    obj = _build(cls, data, source)
    validate = getattr(obj, "validate", None)
    if callable(validate):
        try:
            validate()
        except ConfigError:
            raise
        except ValueError as err:
            raise ConfigError(source, str(err)) from None
    return obj


def to_plain(obj: Any) -> Any:
    """Dataclasses, tuples, enums and numpy arrays as plain YAML-able Python values."""
    if isinstance(obj, enum.Enum):
        return to_plain(obj.value)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        # not the loader's bookkeeping (compare=False: ``source``), which a file may not set
        return {f.name: to_plain(getattr(obj, f.name)) for f in dataclasses.fields(obj) if f.init and f.compare}
    if isinstance(obj, (list, tuple)):
        return [to_plain(v) for v in obj]
    if isinstance(obj, dict):
        return {str(k): to_plain(v) for k, v in obj.items()}
    if hasattr(obj, "tolist"):
        return obj.tolist()
    return obj


def dump_dataclass(obj: Any, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(to_plain(obj), sort_keys=False))
    return path

"""Experiment configs: ``--set key=value`` overrides, and rebuilding a config from saved JSON.

Configs are frozen dataclasses (docs/design.md, convention 7). Field types drive parsing, so
``--set folds=5`` gives an ``int`` and ``--set widths=64,128`` a ``tuple[int, ...]``.
Supported field types: ``int``, ``float``, ``bool``, ``str``, ``pathlib.Path``, ``Literal[...]``,
``X | None``, and ``tuple``/``list`` of those (comma-separated; an empty value is an empty sequence).
"""

from __future__ import annotations

import dataclasses
import json
import math
import types
import typing
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

_TRUE = {"true", "1", "yes", "y", "on"}
_FALSE = {"false", "0", "no", "n", "off"}
_NONE = {"none", "null"}


def _check_config_class(config_class: Any) -> None:
    if not (isinstance(config_class, type) and dataclasses.is_dataclass(config_class)):
        raise TypeError(f"`config_class` must be a dataclass type, got {config_class!r}")


def field_types(config_class: type) -> dict[str, Any]:
    """Return ``{field name: resolved type}`` for the init fields of a dataclass config."""
    _check_config_class(config_class)
    hints = typing.get_type_hints(config_class)
    return {f.name: hints.get(f.name, Any) for f in dataclasses.fields(config_class) if f.init}


def _type_name(tp: Any) -> str:
    if isinstance(tp, type):
        return tp.__name__
    return str(tp).replace("typing.", "")


def _is_union(tp: Any) -> bool:
    return typing.get_origin(tp) in (typing.Union, types.UnionType)


def _is_sequence_type(tp: Any) -> bool:
    return typing.get_origin(tp) in (tuple, list) or tp in (tuple, list)


def parse_value(text: str, tp: Any, *, name: str = "value", _inner: bool = False) -> Any:
    """Parse command-line ``text`` as a value of type ``tp``.

    Args:
        text: the right-hand side of ``--set name=text``.
        tp: the field's type annotation (resolved, not a string).
        name: the field name, used in error messages.

    Returns:
        The parsed value.

    Raises:
        ValueError: ``text`` is not a valid ``tp``, or ``tp`` cannot be set from text.
    """
    stripped = text.strip()
    origin = typing.get_origin(tp)
    if tp is Any:
        return text
    if _is_union(tp):
        args = typing.get_args(tp)
        if type(None) in args and stripped.lower() in _NONE:
            return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return parse_value(text, arg, name=name, _inner=_inner)
            except ValueError as e:
                errors.append(str(e))
        raise ValueError(f"`{name}` must be {_type_name(tp)}, got {text!r}")
    if origin is typing.Literal:
        for choice in typing.get_args(tp):
            if str(choice) == stripped:
                return choice
        choices = ", ".join(repr(c) for c in typing.get_args(tp))
        raise ValueError(f"`{name}` must be one of {choices}, got {text!r}")
    if origin in (tuple, list) or tp in (tuple, list):
        args = typing.get_args(tp)
        # a sequence of sequences (smoothness-rates' targets, ((1, 1.0), (2, 2.0))) is written 1:1.0,2:2.0:
        # ',' between the inner sequences, ':' within each (no shell metacharacter); deeper nesting has no
        # separator left
        nested = any(_is_sequence_type(arg) for arg in args if arg is not Ellipsis)
        if (nested and _inner) or (
            nested and any(_is_sequence_type(i) for arg in args if _is_sequence_type(arg) for i in typing.get_args(arg))
        ):
            raise ValueError(f"`{name}` has type {_type_name(tp)}, which cannot be set from the command line")
        separator = ":" if _inner else ","
        items = [] if stripped == "" else [s.strip() for s in stripped.split(separator)]
        if not args:
            elem_types: list[Any] = [str] * len(items)
        elif origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
            if len(items) != len(args):
                kind = "colon" if _inner else "comma"
                raise ValueError(
                    f"`{name}` must be {len(args)} {kind}-separated values ({_type_name(tp)}), got {text!r}"
                )
            elem_types = list(args)
        else:
            elem_types = [args[0]] * len(items)
        values = [parse_value(s, t, name=name, _inner=nested) for s, t in zip(items, elem_types, strict=True)]
        return tuple(values) if (origin or tp) is tuple else values
    if tp is bool:
        if stripped.lower() in _TRUE:
            return True
        if stripped.lower() in _FALSE:
            return False
        raise ValueError(f"`{name}` must be a bool (true/false, 1/0, yes/no, on/off), got {text!r}")
    if tp is int:
        try:
            return int(stripped)
        except ValueError:
            raise ValueError(f"`{name}` must be an int, got {text!r}") from None
    if tp is float:
        try:
            return float(stripped)
        except ValueError:
            raise ValueError(f"`{name}` must be a float, got {text!r}") from None
    if tp is str:
        return text
    if tp is Path:
        return Path(stripped)
    raise ValueError(f"`{name}` has type {_type_name(tp)}, which cannot be set from the command line")


def parse_overrides(config_class: type, assignments: Iterable[str]) -> dict[str, Any]:
    """Parse ``["key=value", ...]`` into typed field values of ``config_class``.

    Raises:
        ValueError: an assignment has no ``=``, names an unknown field (the message lists the valid
            ones), or has a value of the wrong type.
    """
    if isinstance(assignments, str | bytes) or not isinstance(assignments, Iterable):
        raise TypeError(f"`assignments` must be an iterable of 'key=value' strings, got {assignments!r:.80}")
    fields = field_types(config_class)
    out: dict[str, Any] = {}
    for index, assignment in enumerate(assignments):
        if not isinstance(assignment, str):
            raise TypeError(f"`assignments[{index}]` must be a 'key=value' str, got {assignment!r:.80}")
        key, sep, text = assignment.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ValueError(f"--set expects key=value, got {assignment!r}")
        if key not in fields:
            raise ValueError(f"unknown config key {key!r} for {config_class.__name__}; valid keys: {', '.join(fields)}")
        out[key] = parse_value(text, fields[key], name=key)
    return out


def apply_overrides(config: Any, assignments: Iterable[str]) -> Any:
    """Return ``config`` with ``--set``-style ``key=value`` assignments applied.

    The config's own validation (``__post_init__``) runs on the result, so its errors propagate.
    """
    if not dataclasses.is_dataclass(config) or isinstance(config, type):
        raise TypeError(f"`config` must be a dataclass instance, got {config!r}")
    return dataclasses.replace(config, **parse_overrides(type(config), assignments))


def config_to_json(config: Any) -> dict[str, Any]:
    """Return the config as the JSON-ready dict that ``results.db`` and ``run_info.json`` store.

    Tuples become lists and paths strings, exactly as a JSON round trip would give them, so a stored
    config and a requested one compare equal when and only when they are the same config.
    """
    if not dataclasses.is_dataclass(config) or isinstance(config, type):
        raise TypeError(f"`config` must be a dataclass instance, got {config!r}")
    return json.loads(json.dumps(dataclasses.asdict(config), default=str))


def _coerce(value: Any, tp: Any, name: str) -> Any:
    """Turn a JSON value back into ``tp`` (lists into tuples, strings into paths)."""
    origin = typing.get_origin(tp)
    if value is None or tp is Any:
        return value
    if _is_union(tp):
        for arg in typing.get_args(tp):
            if arg is type(None):
                continue
            try:
                return _coerce(value, arg, name)
            except (TypeError, ValueError):
                continue
        return value
    if (origin in (tuple, list) or tp in (tuple, list)) and isinstance(value, list):
        args = typing.get_args(tp)
        if args and not (origin is tuple and not (len(args) == 2 and args[1] is Ellipsis)):
            items = [_coerce(v, args[0], name) for v in value]
        elif args and len(args) == len(value):
            items = [_coerce(v, a, name) for v, a in zip(value, args, strict=True)]
        else:
            items = list(value)
        return tuple(items) if (origin or tp) is tuple else items
    if tp is Path and isinstance(value, str):
        return Path(value)
    if tp is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def _fits(value: Any, tp: Any) -> bool:
    """Whether ``value`` (after :func:`_coerce`) is a value of the field type ``tp``."""
    origin = typing.get_origin(tp)
    if tp is Any:
        return True
    if _is_union(tp):
        return any(_fits(value, arg) for arg in typing.get_args(tp))
    if tp is type(None):
        return value is None
    if origin is typing.Literal:
        return any(value == c and type(value) is type(c) for c in typing.get_args(tp))
    if origin in (tuple, list) or tp in (tuple, list):
        container = origin or tp
        if not isinstance(value, container):
            return False
        args = typing.get_args(tp)
        if not args:
            return True
        if container is tuple and not (len(args) == 2 and args[1] is Ellipsis):
            return len(value) == len(args) and all(_fits(v, a) for v, a in zip(value, args, strict=True))
        return all(_fits(v, args[0]) for v in value)
    if tp is bool:
        return isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if tp is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if isinstance(tp, type):
        return isinstance(value, tp)
    return True  # a type this module cannot check (e.g. a TypeVar) is left to the config class


def config_from_json(config_class: type, data: Mapping[str, Any]) -> Any:
    """Rebuild a config of ``config_class`` from :func:`config_to_json` output.

    Every stored value is checked against its field's type first, so a damaged or edited config
    is refused with the key named instead of failing later inside a unit or a report.

    Raises:
        ValueError: ``data`` has keys that are not fields of ``config_class``, or a value of the
            wrong type (the key is named); or the config class's own validation fails.
        TypeError: ``data`` is not a mapping.
    """
    if not isinstance(data, Mapping):
        raise TypeError(f"`data` (a saved config) must be a JSON object, got {type(data).__name__}")
    fields = field_types(config_class)
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise ValueError(
            f"saved config has keys {unknown} that {config_class.__name__} does not define; "
            f"valid keys: {', '.join(fields)}"
        )
    values = {}
    for key, value in data.items():
        coerced = _coerce(value, fields[key], key)
        if not _fits(coerced, fields[key]):
            shown = json.dumps(value)
            raise ValueError(
                f"saved config key {key!r} must be {_type_name(fields[key])}, got "
                f"{shown if len(shown) <= 60 else shown[:56] + '...'}"
            )
        values[key] = coerced
    return config_class(**values)


# Config fields that experiments pass straight to :func:`structnets.training.fit` (and the
# estimators), checked here with fit's own rules so that a bad value is refused before the run
# folder is created instead of failing in the first unit.
_TRAINING_FIELDS: dict[str, tuple[str, float, bool]] = {
    # name: (kind, lower bound, bound open?)
    "epochs": ("int", 1, False),
    "patience": ("int", 1, False),
    "batch_size": ("int", 1, False),
    "lr": ("float", 0.0, True),
    "weight_decay": ("float", 0.0, False),
}


def _default(field: dataclasses.Field[Any]) -> Any:
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        try:
            return field.default_factory()
        except Exception:  # noqa: BLE001 - no usable default: nothing to compare against
            return None
    return None


def _has_nonfinite(value: Any) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, (tuple, list)):
        return any(_has_nonfinite(v) for v in value)
    return False


def _is_utf8(value: Any) -> bool:
    """Whether every string in ``value`` (also inside tuples, lists and dicts) can be written as UTF-8."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return False
        return True
    if isinstance(value, (tuple, list)):
        return all(_is_utf8(v) for v in value)
    if isinstance(value, dict):
        return all(_is_utf8(k) and _is_utf8(v) for k, v in value.items())
    return True


def validate_config(config: Any) -> None:
    """Check a whole config before anything is run or written.

    On top of the config class's own ``__post_init__`` checks (which run whenever a config is
    built), this refuses:

    * a string that UTF-8 cannot encode (lone surrogates, as undecodable ``argv`` bytes become);
    * a NaN or infinite float anywhere (also inside tuples), unless the field's default is one;
    * a field that experiments pass to training (``epochs``, ``patience``, ``batch_size``: ints
      >= 1; ``lr``: a finite float > 0; ``weight_decay``: a finite float >= 0), also element-wise
      when the field is a tuple of them.

    Raises:
        InvalidConfigError: naming the field, the constraint and the value.
    """
    from .errors import InvalidConfigError

    if not dataclasses.is_dataclass(config) or isinstance(config, type):
        raise TypeError(f"`config` must be a dataclass instance, got {config!r}")
    for field in dataclasses.fields(config):
        if not field.init:
            continue
        value = getattr(config, field.name)
        if not _is_utf8(value):  # e.g. argv bytes that are not UTF-8: no file could hold the rows
            raise InvalidConfigError(f"`{field.name}` must be text that UTF-8 can encode, got {value!r}")
        if _has_nonfinite(value) and not _has_nonfinite(_default(field)):
            raise InvalidConfigError(f"`{field.name}` must be finite, got {value!r}")
        rule = _TRAINING_FIELDS.get(field.name)
        if rule is None:
            continue
        kind, low, open_ = rule
        items = value if isinstance(value, (tuple, list)) else (value,)
        for item in items:
            if item is None:
                continue  # e.g. `patience: int | None`, where None means "off"
            if kind == "int":
                ok = isinstance(item, int) and not isinstance(item, bool) and item >= low
                constraint = f"an int >= {int(low)}"
            else:
                ok = (
                    isinstance(item, (int, float))
                    and not isinstance(item, bool)
                    and math.isfinite(item)
                    and (item > low if open_ else item >= low)
                )
                constraint = f"a finite float {'>' if open_ else '>='} {low:g}"
            if not ok:
                raise InvalidConfigError(
                    f"`{field.name}` must be {constraint} (it is passed to training), got {value!r}"
                )


def config_differences(
    stored: Mapping[str, Any], requested: Mapping[str, Any], defaults: Mapping[str, Any] | None = None
) -> list[str]:
    """Describe how two JSON configs differ, one ``"key: stored X, requested Y"`` per field.

    ``defaults`` (the JSON of the config class's defaults): a field the stored config lacks (added
    to the config class after the run was stored) counts as equal when the requested value is
    its default, since a field is added with the default that keeps the old behaviour.
    """
    diffs = []
    for key in sorted(set(stored) | set(requested)):
        a = stored.get(key, "<missing>")
        b = requested.get(key, "<missing>")
        if key not in stored and defaults is not None and key in defaults and b == defaults[key]:
            continue
        if a != b:
            diffs.append(f"{key}: stored {json.dumps(a)}, requested {json.dumps(b)}")
    return diffs


def format_value(value: Any) -> str:
    """``value`` written as ``--set`` parses it back: sequences comma-separated (sequences of pairs
    ``1:1.0,2:2.0``), None as ``none``."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (tuple, list)):
        # sequences of sequences as parse_value reads them: ',' between, ':' within
        if any(isinstance(v, (tuple, list)) for v in value):
            return ",".join(
                ":".join(format_value(w) for w in v) if isinstance(v, (tuple, list)) else format_value(v) for v in value
            )
        return ",".join(format_value(v) for v in value)
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _field_docs(config_class: type) -> dict[str, str]:
    """``{field: text}`` from the ``Attributes:`` section of the class docstring (Google style).

    An entry may document several fields at once (``depths, widths: the grid``).
    """
    import inspect

    doc = inspect.getdoc(config_class) or ""
    docs: dict[str, str] = {}
    in_section, current, indent = False, [], None
    for line in doc.splitlines():
        stripped = line.strip()
        if stripped == "Attributes:":
            in_section, indent = True, None
            continue
        if not in_section:
            continue
        if not stripped:
            continue
        width = len(line) - len(line.lstrip())
        if width == 0:
            break  # the next section
        if indent is None:
            indent = width
        head, sep, text = stripped.partition(":")
        names = [n.strip() for n in head.split(",")]
        if width == indent and sep and all(n.isidentifier() for n in names):
            current = names
            for name in names:
                docs[name] = text.strip()
        elif current:
            for name in current:
                docs[name] = f"{docs[name]} {stripped}".strip()
    return docs


def describe_config(config_class: type) -> list[dict[str, str]]:
    """One row per config field: ``field``, ``type``, ``default``, ``quick`` and ``doc``.

    ``default`` and ``quick`` are written as ``--set`` accepts them (:func:`format_value`);
    ``quick`` is the value in the ``quick()`` preset (empty when the class has none), ``doc`` the
    field's text in the class docstring's ``Attributes:`` section.
    """
    types_ = field_types(config_class)
    try:
        default = config_class()
    except Exception:  # noqa: BLE001 - a config without defaults: show the field defaults alone
        default = None
    preset = getattr(config_class, "quick", None)
    quick = preset() if callable(preset) else None
    docs = _field_docs(config_class)
    rows = []
    for field in dataclasses.fields(config_class):
        if not field.init:
            continue
        value = getattr(default, field.name) if default is not None else _default(field)
        rows.append({
            "field": field.name,
            "type": _type_name(types_[field.name]),
            "default": format_value(value),
            "quick": "" if quick is None else format_value(getattr(quick, field.name)),
            "doc": docs.get(field.name, ""),
        })  # fmt: skip
    return rows

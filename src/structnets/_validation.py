"""Argument checks shared by every public constructor and function.

Each raises ``ValueError``/``TypeError`` naming the argument, the constraint and the value
(DESIGN.md, convention 2), so callers never see a bare ``assert``.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from collections.abc import Iterator
from numbers import Integral, Real
from typing import Any


def check_int(name: str, value: Any, *, low: int | None = None, high: int | None = None) -> int:
    """Return ``value`` as an int in ``[low, high]`` or raise naming ``name``.

    ``bool`` is rejected: ``True`` is an ``int`` to Python but never a width or a rank.
    """
    bounds = _bounds_text(low, high)
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise TypeError(f"`{name}` must be an int{bounds}, got {value!r} ({type(value).__name__})")
    value = int(value)
    if (low is not None and value < low) or (high is not None and value > high):
        raise ValueError(f"`{name}` must be an int{bounds}, got {value}")
    return value


def check_real(
    name: str,
    value: Any,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """Return ``value`` as a finite float within the given (open or closed) bounds."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"`{name}` must be a real number, got {value!r} ({type(value).__name__})")
    value = float(value)
    left = "(" if low_open else "["
    right = ")" if high_open else "]"
    interval = f" in {left}{'-inf' if low is None else low}, {'inf' if high is None else high}{right}"
    if not math.isfinite(value):
        raise ValueError(f"`{name}` must be finite{interval}, got {value}")
    too_low = low is not None and (value <= low if low_open else value < low)
    too_high = high is not None and (value >= high if high_open else value > high)
    if too_low or too_high:
        raise ValueError(f"`{name}` must be a real number{interval}, got {value}")
    return value


def check_choice(name: str, value: Any, choices: tuple[str, ...] | list[str]) -> str:
    """Return ``value`` if it is one of ``choices``, else raise listing them."""
    if value not in choices:
        raise ValueError(f"`{name}` must be one of {sorted(choices)}, got {value!r}")
    return value


def _bounds_text(low: int | None, high: int | None) -> str:
    if low is None and high is None:
        return ""
    if high is None:
        return f" >= {low}"
    if low is None:
        return f" <= {high}"
    return f" in [{low}, {high}]"


MAX_LAYERS = 100_000
"""Most layers (or loop steps that each build modules) a builder accepts.

A Python module costs kilobytes and microseconds to build even when its tensors are tiny, so a
depth of 10⁶ already takes minutes and gigabytes; larger counts are refused up front rather than
left to grow memory until the machine gives out.
"""

MAX_STEPS = 10**8
"""Most iterations a loop argument (epochs, ascent steps) accepts: each keeps a history entry."""


def check_bool(name: str, value: Any) -> bool:
    """Return ``value`` if it is a bool (numpy bools included), else raise naming ``name``.

    Strings are refused: ``"False"`` is truthy, so accepting it would silently mean True.
    """
    if isinstance(value, bool):
        return value
    import numpy as np

    if isinstance(value, np.bool_):
        return bool(value)
    raise TypeError(f"`{name}` must be a bool, got {value!r} ({type(value).__name__})")


def check_float_dtype(name: str, value: Any) -> Any:
    """Return ``value`` if it is a real floating-point ``torch.dtype``, else raise ``TypeError`` naming ``name``."""
    import torch

    if not isinstance(value, torch.dtype) or not value.is_floating_point:
        raise TypeError(f"`{name}` must be a real floating-point torch.dtype (e.g. torch.float64), got {value!r}")
    return value


def check_generator(name: str, value: Any) -> Any:
    """Return ``value`` if it is a ``torch.Generator``, else raise ``TypeError`` naming ``name``.

    A seed (an int) or a NumPy generator is refused rather than converted: the caller owns the
    generator's state, and a silently made one would not advance theirs.
    """
    import torch

    if not isinstance(value, torch.Generator):
        raise TypeError(f"`{name}` must be a torch.Generator, got {value!r:.80} ({type(value).__name__})")
    return value


def check_names(name: str, value: Any, choices: tuple[str, ...] | list[str]) -> list[str]:
    """Return ``value`` as a non-empty list of names from ``choices``, else raise naming ``name`` (and the entry).

    A bare string is refused: iterating ``"tanh"`` would give the names ``"t"``, ``"a"``, ...
    """
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise TypeError(
            f"`{name}` must be a list of names from {sorted(choices)}, got {value!r:.80} ({type(value).__name__})"
        )
    if not value:
        raise ValueError(f"`{name}` must hold at least one name from {sorted(choices)}, got {value!r}")
    for index, entry in enumerate(value):
        if not isinstance(entry, str) or entry not in choices:
            raise ValueError(f"`{name}[{index}]` must be one of {sorted(choices)}, got {entry!r:.80}")
    return list(value)


def memory_bytes() -> int:
    """Physical memory of this machine in bytes (2⁴⁰ where the OS does not say)."""
    import os

    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, OSError, ValueError):
        return 2**40


#: False while a stored config is rebuilt only to be read (:func:`memory_checks_skipped`)
_MEMORY_CHECKS = contextvars.ContextVar("structnets_memory_checks", default=True)


@contextlib.contextmanager
def memory_checks_skipped() -> Iterator[None]:
    """Skip :func:`check_fits_in_memory` inside: a config read back from a run folder allocates nothing.

    A folder made on a machine with more memory must still report on a smaller one; a run that
    resumes it rebuilds its config with the checks on.
    """
    token = _MEMORY_CHECKS.set(False)
    try:
        yield
    finally:
        _MEMORY_CHECKS.reset(token)


def check_fits_in_memory(names: str, elements: int, *, itemsize: int = 8, what: str = "values") -> None:
    """Refuse up front an allocation of ``elements`` items that cannot fit in physical memory.

    Skipped inside :func:`memory_checks_skipped` (a stored config rebuilt for reading).

    Args:
        names: the arguments that set the size, as the caller wrote them (e.g. "`width`=8, `depth`=10").
        elements: number of items the call would allocate.
        itemsize: bytes per item.
        what: what is counted, for the message ("parameters", "points", ...).
    """
    if not _MEMORY_CHECKS.get():
        return
    limit = memory_bytes()
    if elements * itemsize > limit:
        raise ValueError(
            f"{names} ask for {_magnitude(elements)} {what} ({_magnitude(elements * itemsize)} bytes), "
            f"more than this machine's memory ({_magnitude(limit)} bytes); reduce them"
        )


def _magnitude(value: int) -> str:
    # float() overflows above 1e308, and str() of an int past 4,300 digits raises: an int argument may be
    # 10**400 and a count 3**10**6, so the digits come from the bit length (exact to within one).
    digits = int(abs(value).bit_length() * math.log10(2)) + 1 if isinstance(value, int) else len(str(value))
    return f"{value:.3g}" if digits < 300 else f"~1e{digits - 1}"


def itemsize_of(dtype: Any) -> int:
    """Bytes per element of ``dtype`` (torch's default dtype when it is None or not a torch dtype)."""
    import torch

    return (dtype if isinstance(dtype, torch.dtype) else torch.get_default_dtype()).itemsize


def _distinct_key(value: Any) -> Any:
    # Floats compare at the 6 significant digits that unit keys write them with (``f"{x:g}"``), so
    # 2.0 and 2.0000001 are one value; tuples (e.g. (d, s) targets) compare entry by entry.
    if isinstance(value, float):
        return format(value, "g")
    if isinstance(value, (tuple, list)):
        return tuple(_distinct_key(v) for v in value)
    return value


def check_distinct(name: str, values: Any) -> None:
    """Refuse a repeated entry in the sequence ``values`` of the config field ``name``.

    Each entry of a swept or listed config field names its own units (or its own rows of a table),
    so a repeat would either give two units one key or silently run, count or average an entry
    twice. Floats count as repeats when they agree to 6 significant digits (``format(x, "g")``,
    the precision unit keys write them with).

    Raises:
        ValueError: naming ``name``, the constraint, the repeated value and the whole sequence.
    """
    if not isinstance(values, (tuple, list)):
        return  # the field's own type check reports it
    seen: dict[Any, int] = {}
    for index, value in enumerate(values):
        try:
            key = _distinct_key(value)
            first = seen.setdefault(key, index)
        except TypeError:  # unhashable: the field's own checks refuse it
            continue
        if first != index:
            raise ValueError(
                f"`{name}` must list distinct values (floats to 6 significant digits), got {values!r:.200}: "
                f"entries {first} and {index} are both {values[first]!r}"
                + ("" if values[first] == value else f" and {value!r}")
            )


SEED_MAX = 2**32 - 1
"""Largest seed every consumer takes: NumPy's ``RandomState`` and scikit-learn's ``random_state``
refuse more (and negatives), while ``torch.manual_seed`` and ``numpy.random.default_rng`` take it."""


def check_seeds(name: str, value: Any, *, high: int = SEED_MAX) -> None:
    """Refuse a seed (or a tuple of seeds) of ``name`` that is not an int in ``[0, high]``.

    A seed out of range passed the configs and then failed inside a unit ("Seed must be between 0
    and 2**32 - 1"), after the run folder existed. A field whose name ends in ``seeds`` is a tuple
    of seeds (a bare int there failed in ``units()``); any other is one seed.
    """
    if name.endswith("seeds") and not isinstance(value, (tuple, list)):
        raise TypeError(f"`{name}` must be a tuple of ints in [0, {high}], got {value!r:.80} ({type(value).__name__})")
    for seed in value if isinstance(value, (tuple, list)) else (value,):
        check_int(name, seed, low=0, high=high)


def check_row_cap(name: str, value: Any, *, low: int, rows: int, what: str) -> None:
    """Refuse a subsample size ``value`` (None: keep all) outside ``[low, rows]``.

    A cap above the ``rows`` a fixed-size split has silently kept all of them while the run's
    config recorded the larger number.

    Args:
        name: the config field.
        value: the cap, or None.
        low: the smallest cap accepted.
        rows: how many rows the split has.
        what: the split, for the message (e.g. "the MNIST training split").
    """
    if value is None:
        return
    check_int(name, value, low=low)
    if value > rows:
        raise ValueError(
            f"`{name}` must be an int in [{low}, {rows}] ({what} has {rows} rows; None keeps all), got {value}"
        )


def check_distinct_parsed(name: str, specs: Any, parse: Any, what: str = "targets") -> None:
    """Refuse two entries of ``specs`` that ``parse`` maps to one value (one target, two spellings).

    ``"power:1:1.5"`` and ``"power:1:1.50"`` are different strings, so different unit keys, but the
    same target: each of its units would run twice and the tables hold it twice.
    """
    if not isinstance(specs, (tuple, list)):
        return
    seen: dict[Any, Any] = {}
    for spec in specs:
        value = parse(spec)
        if value in seen and seen[value] != spec:
            raise ValueError(
                f"`{name}` must list distinct {what}, got {specs!r:.200}: {seen[value]!r} and {spec!r} are the same "
                f"target"
            )
        seen.setdefault(value, spec)


def _plain(value: Any) -> Any:
    import numpy as np

    if isinstance(value, np.ndarray):
        return tuple(_plain(v) for v in value.tolist()) if value.ndim else value.item()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (tuple, list)):
        items = [_plain(v) for v in value]
        if all(new is old for new, old in zip(items, value, strict=True)):
            return value
        return tuple(items) if isinstance(value, tuple) else items
    return value


def plain_fields(config: Any) -> None:
    """Turn NumPy scalars and arrays in the fields of a frozen dataclass config into Python values.

    ``np.int64(4)`` becomes ``4`` and ``np.array([4, 8])`` becomes ``(4, 8)`` (``.item()`` /
    ``.tolist()``: the same numbers). The checks accept NumPy integers as ints, but the runner stores
    configs and unit params as JSON, which refuses them: such a config passed validation and the run
    failed after its folder existed. Call first in ``__post_init__``.
    """
    import dataclasses

    for field in dataclasses.fields(config):
        value = getattr(config, field.name)
        plain = _plain(value)
        if plain is not value:
            object.__setattr__(config, field.name, plain)


def check_network_fits(fields: str, width: int, depth: int, in_features: int = 0) -> None:
    """Refuse a ``width`` × ``depth`` network whose float32 weights alone cannot fit in memory.

    A lower bound on what training needs (gradients and optimiser state come on top): ``depth``
    ``width``×``width`` matrices plus an ``in_features``×``width`` input layer. Configs call it so that
    a width of 10⁶ is refused before the run folder exists, not by the allocator inside every unit.

    Args:
        fields: the config fields that set the size, as the message should name them.
        width, depth, in_features: the network's size.
    """
    check_fits_in_memory(fields, width * width * depth + in_features * width, itemsize=4, what="float32 weights")

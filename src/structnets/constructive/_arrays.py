"""Conversion of user arrays to float64 with errors that name the argument.

``np.asarray(value, dtype=np.float64)`` raises ``could not convert string to float`` (naming no
argument) for text, turns ``None`` into NaN, and keeps only the real part of a complex array
with a warning; :func:`real_array` refuses each of these up front, naming the argument.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch


def is_complex(value: Any) -> bool:
    """Whether ``value`` is a complex tensor or array (whose imaginary part a float cast drops)."""
    if isinstance(value, torch.Tensor):
        return value.is_complex()
    return isinstance(value, np.ndarray) and np.iscomplexobj(value)


def real_array(name: str, value: Any) -> np.ndarray:
    """``value`` (array, tensor, nested sequence or scalar) as a float64 array, or raise naming ``name``.

    Args:
        name: the argument's name, for the message.
        value: real numbers (bool, int or float entries).

    Returns:
        a float64 ``np.ndarray`` of ``value``'s shape.

    Raises:
        TypeError: ``value`` is None, text, complex, or holds non-numbers (or is ragged).
    """
    if value is None or isinstance(value, str | bytes):
        raise TypeError(f"`{name}` must be an array of real numbers, got {value!r:.40} ({type(value).__name__})")
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    try:
        array = np.asarray(value)
    except (TypeError, ValueError) as error:  # ragged nested sequences
        raise TypeError(f"`{name}` must be an array of real numbers, got {type(value).__name__}: {error}") from error
    if array.dtype.kind not in "biuf":
        raise TypeError(f"`{name}` must be an array of real numbers, got dtype {array.dtype}")
    return array.astype(np.float64)

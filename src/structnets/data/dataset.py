"""The :class:`Dataset` container and the finiteness check shared with the estimators."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

Task = Literal["classification", "regression"]
TASKS: tuple[str, ...] = ("classification", "regression")


@dataclass(frozen=True, eq=False, repr=False)
class Dataset:
    """A loaded data set: features, targets and what was done to them.

    Attributes:
        name: the name given to :func:`structnets.data.load`.
        X: ``(n_samples, n_features)`` float64 features, one-hot encoded but NOT standardised
            (standardise inside each training fold to avoid leakage).
        y: ``(n_samples,)`` targets: int64 class indices ``0..k-1`` for classification, float64
            values min-max scaled to [0, 1] for regression.
        task: ``"classification"`` or ``"regression"``.
        feature_names: one name per column of ``X``; a one-hot column is ``"column=category"``.
        classes: original class labels, ``classes[i]`` is the label of index ``i``; None for
            regression.
        target_range: ``(min, max)`` of the original regression target, so that
            ``y_original = min + y · (max − min)`` (see :meth:`unscale_target`); None for
            classification.
        description: the source files and the preprocessing, in one paragraph.
        split: None, or ``(n_samples,)`` strings ``"train"``/``"test"`` marking an official
            split (MNIST: the first 60000 rows are ``"train"``, the last 10000 ``"test"``).

    ``eq`` is disabled: comparing arrays element-wise has no single truth value.
    """

    name: str
    X: np.ndarray
    y: np.ndarray
    task: Task
    feature_names: list[str]
    classes: list[str] | None = None
    target_range: tuple[float, float] | None = None
    description: str = ""
    split: np.ndarray | None = field(default=None)

    def __post_init__(self) -> None:
        if self.task not in TASKS:
            raise ValueError(f"`task` must be one of {list(TASKS)}, got {self.task!r}")
        if not isinstance(self.X, np.ndarray) or self.X.ndim != 2 or self.X.dtype != np.float64:
            raise ValueError(
                f"`X` must be a 2-D float64 ndarray, got {type(self.X).__name__} "
                f"{getattr(self.X, 'shape', None)} {getattr(self.X, 'dtype', None)}"
            )
        n = self.X.shape[0]
        if not isinstance(self.y, np.ndarray) or self.y.shape != (n,):
            raise ValueError(
                f"`y` must be an ndarray of shape ({n},) to match `X`, got {getattr(self.y, 'shape', None)}"
            )
        if len(self.feature_names) != self.X.shape[1]:
            raise ValueError(
                f"`feature_names` must have one name per column of `X` ({self.X.shape[1]}), "
                f"got {len(self.feature_names)}"
            )
        if self.task == "classification":
            if self.y.dtype != np.int64:
                raise ValueError(f"`y` must be int64 class indices, got dtype {self.y.dtype}")
            if self.classes is None:
                raise ValueError("`classes` must list the class labels for classification")
            if n and (self.y.min() < 0 or self.y.max() >= len(self.classes)):
                raise ValueError(
                    f"`y` must hold class indices in [0, {len(self.classes) - 1}], "
                    f"got range [{self.y.min()}, {self.y.max()}]"
                )
        else:
            if self.y.dtype != np.float64:
                raise ValueError(f"`y` must be float64 for regression, got dtype {self.y.dtype}")
            if self.target_range is None:
                raise ValueError("`target_range` must be set for regression")
        if self.split is not None and (not isinstance(self.split, np.ndarray) or self.split.shape != (n,)):
            raise ValueError(
                f"`split` must be None or an ndarray of shape ({n},), got {getattr(self.split, 'shape', None)}"
            )

    @property
    def n_samples(self) -> int:
        """Number of rows of ``X``."""
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        """Number of columns of ``X``."""
        return int(self.X.shape[1])

    @property
    def n_classes(self) -> int | None:
        """Number of classes, or None for regression."""
        return None if self.classes is None else len(self.classes)

    def unscale_target(self, y: Any) -> np.ndarray:
        """Map min-max scaled regression targets back to the original units.

        Args:
            y: array-like of scaled targets (any shape).

        Returns:
            float64 array ``min + y · (max − min)`` with ``(min, max) = target_range``.
            Errors (RMSE) scale by the same factor ``max − min``.
        """
        if self.target_range is None:
            raise ValueError(f"`unscale_target` needs a regression data set, {self.name!r} is not")
        low, high = self.target_range
        return low + np.asarray(y, dtype=np.float64) * (high - low)

    def __repr__(self) -> str:
        extra = f"classes={len(self.classes)}" if self.classes is not None else f"target_range={self.target_range}"
        return (
            f"Dataset(name={self.name!r}, task={self.task!r}, X={self.X.shape}, {extra}"
            f"{'' if self.split is None else ', split'})"
        )


def check_finite(X: Any, feature_names: Sequence[str] | None = None, *, argument: str = "X") -> np.ndarray:
    """Return ``X`` as a 2-D ndarray, or raise naming the first column with NaN or ±inf.

    Args:
        X: array-like of shape ``(n_samples, n_features)`` with a numeric dtype.
        feature_names: optional names of the columns, used in the message instead of the index.
        argument: how the message refers to ``X`` (e.g. ``"X"`` in an estimator's ``fit``).

    Returns:
        ``np.asarray(X)`` (no copy when ``X`` is already an ndarray).

    Raises:
        ValueError: ``X`` is not 2-D, ``feature_names`` has the wrong length, or a value is not
            finite; the message names the first offending column (by name when given, and index),
            how many rows are affected in it, and the first such row.
        TypeError: ``X`` does not have a numeric dtype.
    """
    array = np.asarray(X)
    if array.ndim != 2:
        raise ValueError(f"`{argument}` must be 2-D (n_samples, n_features), got shape {array.shape}")
    if array.dtype.kind not in "biuf":
        raise TypeError(f"`{argument}` must have a real numeric dtype, got {array.dtype}")
    if array.shape[0] == 0 or array.shape[1] == 0:
        raise ValueError(f"`{argument}` must hold at least one row and one column, got shape {array.shape}")
    if feature_names is not None and len(feature_names) != array.shape[1]:
        raise ValueError(
            f"`feature_names` must have one name per column of `{argument}` ({array.shape[1]}), "
            f"got {len(feature_names)}"
        )
    if array.dtype.kind in "biu":  # integers cannot hold NaN or inf
        return array
    finite = np.isfinite(array)
    if finite.all():
        return array
    bad_columns = np.flatnonzero(~finite.all(axis=0))
    column = int(bad_columns[0])
    bad_rows = np.flatnonzero(~finite[:, column])
    label = f"column {column}" if feature_names is None else (f"column {feature_names[column]!r} (index {column})")
    raise ValueError(
        f"`{argument}` must be finite, but {label} has {bad_rows.size} non-finite value(s) "
        f"(NaN or ±inf), first in row {int(bad_rows[0])}"
        + (f"; {bad_columns.size} columns are affected" if bad_columns.size > 1 else "")
    )


@dataclass(frozen=True, eq=False)
class Parsed:
    """A parsed data set as cached per process: read-only arrays, immutable metadata.

    ``X`` is float64, except for MNIST where it is ``uint8`` pixels and ``x_divisor`` is 255.
    """

    X: np.ndarray
    y: np.ndarray
    task: Task
    feature_names: tuple[str, ...]
    classes: tuple[str, ...] | None
    target_range: tuple[float, float] | None
    description: str
    split: np.ndarray | None = None
    x_divisor: float | None = None

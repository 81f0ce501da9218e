"""scikit-learn estimators over structnets MLPs: :class:`MLPClassifier` and :class:`MLPRegressor`.

Both wrap :func:`structnets.models.mlp` (dense, or the low-rank Swish network of Li et al.,
*Approximation to Smooth Functions by Low-Rank Swish Networks*, ICML 2025, with ``bottleneck``)
and :func:`structnets.training.fit`. They follow scikit-learn's contract: the constructor only
stores its arguments, every check happens in ``fit``, fitted state ends in ``_``, and both pass
``sklearn.utils.estimator_checks.check_estimator``; so they work in ``Pipeline``,
``GridSearchCV`` and ``cross_val_score``. With ``standardize=True`` the feature mean and standard
deviation are computed inside ``fit``, i.e. on each training fold only, never on the test fold.
"""

from __future__ import annotations

import copy
from numbers import Integral
from typing import Any

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.model_selection import train_test_split
from sklearn.utils import check_random_state
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_array, check_is_fitted, column_or_1d, validate_data

from ._validation import MAX_LAYERS, MAX_STEPS, check_choice, check_int, check_real
from .data import check_finite
from .models import bottleneck_width, mlp
from .nn import ACTIVATIONS
from .training import OPTIMIZERS, FitResult, fit, seeded

__all__ = ["InvalidParameterError", "MLPClassifier", "MLPRegressor"]

DTYPES: dict[str, torch.dtype] = {"float32": torch.float32, "float64": torch.float64}


class InvalidParameterError(ValueError, TypeError):
    """A constructor parameter has a bad value or type (raised by ``fit``).

    Subclasses both ``ValueError`` and ``TypeError``, like scikit-learn's own
    ``InvalidParameterError``, so ``except ValueError`` catches a wrong type too.
    """


class _BaseMLP(BaseEstimator):
    """Shared parameters, validation, standardisation and training of the MLP estimators."""

    _loss: str = "mse"

    def __init__(
        self,
        width: int = 64,
        depth: int = 2,
        bottleneck: int | float | None = None,
        activation: str = "swish",
        epochs: int = 200,
        batch_size: int | None = 128,
        lr: float = 1e-3,
        weight_decay: float = 0.0,
        optimizer: str = "adam",
        early_stopping: bool = False,
        validation_fraction: float = 0.1,
        patience: int = 20,
        standardize: bool = True,
        random_state: int | np.random.RandomState | None = None,
        dtype: str = "float32",
        device: str = "cpu",
    ) -> None:
        self.width = width
        self.depth = depth
        self.bottleneck = bottleneck
        self.activation = activation
        self.epochs = epochs
        self.batch_size = batch_size
        self.lr = lr
        self.weight_decay = weight_decay
        self.optimizer = optimizer
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.patience = patience
        self.standardize = standardize
        self.random_state = random_state
        self.dtype = dtype
        self.device = device

    # -- validation -----------------------------------------------------------------------

    def _check_params(self) -> None:
        """Raise :class:`InvalidParameterError` naming the first bad constructor parameter."""
        try:
            width = check_int("width", self.width, low=1)
            check_int("depth", self.depth, low=1, high=MAX_LAYERS)
            if self.bottleneck is not None:
                bottleneck_width(width, self.bottleneck)
            if not isinstance(self.activation, str):
                raise TypeError(f"`activation` must be one of {sorted(ACTIVATIONS)}, got {self.activation!r}")
            check_choice("activation", self.activation, ACTIVATIONS)
            check_int("epochs", self.epochs, low=1, high=MAX_STEPS)
            if self.batch_size is not None:
                check_int("batch_size", self.batch_size, low=1)
            check_real("lr", self.lr, low=0.0, low_open=True)
            check_real("weight_decay", self.weight_decay, low=0.0)
            check_choice("optimizer", self.optimizer, OPTIMIZERS)
            _check_bool("early_stopping", self.early_stopping)
            check_real(
                "validation_fraction",
                self.validation_fraction,
                low=0.0,
                high=1.0,
                low_open=True,
                high_open=True,
            )
            check_int("patience", self.patience, low=1)
            _check_bool("standardize", self.standardize)
            if not (
                self.random_state is None
                or isinstance(self.random_state, np.random.RandomState)
                or (isinstance(self.random_state, Integral) and not isinstance(self.random_state, bool))
            ):
                raise TypeError(
                    f"`random_state` must be None, an int or a numpy RandomState, got {self.random_state!r}"
                )
            check_choice("dtype", self.dtype, tuple(DTYPES))
            try:
                torch.device(self.device)
            except (RuntimeError, TypeError) as error:
                raise ValueError(f"`device` must name a torch device, got {self.device!r}") from error
            try:  # torch says "Torch not compiled with CUDA enabled" by an AssertionError
                torch.empty(0, device=self.device)
            except (AssertionError, RuntimeError) as error:
                raise ValueError(f"`device`={self.device!r} cannot be used here: {error}") from error
        except (TypeError, ValueError) as error:
            raise InvalidParameterError(str(error)) from error

    def _validate_X(self, X: Any, *, reset: bool) -> np.ndarray:
        """Validate ``X`` (2-D, numeric, finite), set or check ``n_features_in_`` and names."""
        names = _column_names(X)
        try:
            array = validate_data(self, X, reset=reset, dtype=(np.float64, np.float32), ensure_all_finite=False)
        except (TypeError, ValueError) as error:
            raise _named(error, "X") from error
        check_finite(array, names, argument="X")
        return array

    # -- training -------------------------------------------------------------------------

    def _fit_standardization(self, X: np.ndarray) -> None:
        self.feature_mean_: np.ndarray | None
        self.feature_scale_: np.ndarray | None
        if self.standardize:
            self.feature_mean_, self.feature_scale_ = _location_scale(X)
        else:
            self.feature_mean_ = self.feature_scale_ = None

    def _input_tensor(self, X: np.ndarray, dtype: type) -> torch.Tensor:
        X = np.asarray(X, dtype=np.float64)
        if self.feature_mean_ is not None:
            with np.errstate(over="ignore"):  # an overflow is refused by name below
                X = (X - self.feature_mean_) / self.feature_scale_
        standardized = self.feature_mean_ is not None
        return torch.from_numpy(_cast(X, dtype, "X", "standardize", standardized)).to(self.device)

    def _np_dtype(self) -> type:
        return np.float32 if self.dtype == "float32" else np.float64

    def _train(self, X: np.ndarray, target: np.ndarray, n_outputs: int, stratify: np.ndarray | None) -> None:
        """Build ``model_`` with seeded initial weights and train it on standardised ``X``."""
        rng = check_random_state(self.random_state)
        init_seed, fit_seed, split_seed = (int(s) for s in rng.randint(0, 2**31 - 1, size=3))
        # Drawn on the CPU and then moved: a seed gives the same initial weights on every device
        # (CUDA's generator would draw different numbers from the same seed).
        with seeded(init_seed):
            self.model_ = mlp(
                X.shape[1],
                n_outputs,
                self.width,
                self.depth,
                activation=self.activation,
                bottleneck=self.bottleneck,
                device="cpu",
                dtype=DTYPES[self.dtype],
            ).to(self.device)
        inputs = self._input_tensor(X, self._np_dtype())
        validation_data = None
        if self.early_stopping:
            inputs, target, validation_data = self._split(inputs, target, stratify, split_seed)
        self.fit_result_: FitResult = fit(
            self.model_,
            inputs,
            target,
            loss=self._loss,
            epochs=self.epochs,
            batch_size=self.batch_size,
            lr=self.lr,
            weight_decay=self.weight_decay,
            optimizer=self.optimizer,
            validation_data=validation_data,
            patience=self.patience if self.early_stopping else None,
            seed=fit_seed,
        )
        self.history_ = self.fit_result_.history
        self.n_iter_ = self.fit_result_.epochs_run

    def _split(
        self, inputs: torch.Tensor, target: np.ndarray, stratify: np.ndarray | None, seed: int
    ) -> tuple[torch.Tensor, np.ndarray, tuple[torch.Tensor, np.ndarray]]:
        n = inputs.shape[0]
        n_val = max(1, round(self.validation_fraction * n))
        if n - n_val < 1:
            raise ValueError(
                f"`early_stopping` needs at least 2 samples to hold out a validation set "
                f"(validation_fraction={self.validation_fraction}), got {n}"
            )
        if stratify is not None:
            counts = np.bincount(stratify)
            # Stratify when every class can appear on both sides; tiny sets fall back to random.
            if counts.min() < 2 or n_val < counts.size or n - n_val < counts.size:
                stratify = None
        index = np.arange(n)
        train_idx, val_idx = train_test_split(index, test_size=n_val, random_state=seed, stratify=stratify)
        train_t = torch.from_numpy(np.sort(train_idx)).to(inputs.device)
        val_t = torch.from_numpy(np.sort(val_idx)).to(inputs.device)
        return (
            inputs[train_t],
            target[np.sort(train_idx)],
            (inputs[val_t], target[np.sort(val_idx)]),
        )

    def _forward(self, X: Any) -> np.ndarray:
        """Raw network outputs (n, n_outputs) for validated ``X``, evaluated in float64.

        The trained weights are evaluated in float64 even when trained in float32: float32
        matrix products round differently for different batch sizes, so a row's prediction would
        depend (at the 1e-7 level) on which other rows are predicted with it. In float64 the
        prediction of a row is the same, to ~1e-15, however ``X`` is split or ordered.
        """
        check_is_fitted(self, "model_")
        array = self._validate_X(X, reset=False)
        model = self.model_
        if next(model.parameters()).dtype != torch.float64:
            model = copy.deepcopy(model).to(torch.float64)
        model.eval()
        with torch.no_grad():
            out = model(self._input_tensor(array, np.float64))
        return out.cpu().numpy()

    def __sklearn_tags__(self):  # noqa: D105  (scikit-learn's tag protocol)
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        tags.input_tags.sparse = False
        return tags


class MLPClassifier(ClassifierMixin, _BaseMLP):
    """MLP classifier (dense or low-rank Swish) trained with softmax cross-entropy.

    The network is ``mlp(n_features, n_classes, width, depth, activation, bottleneck)``: ``depth``
    nonlinear layers of ``width`` units; with ``bottleneck`` each hidden ``width × width`` map is
    replaced by the paper's rank-H factorisation ``LowRankLinear`` (Li et al., ICML 2025). It
    outputs one logit per class (two for binary problems) and is trained by Adam on the mean
    cross-entropy ``(1/n) Σᵢ [logsumexp(zᵢ) − zᵢ,yᵢ]``.

    Defaults are chosen to be a reasonable small-tabular baseline that also fits in well under a
    second on a few hundred rows, so ``check_estimator`` and grid searches stay fast:
    ``width=64, depth=2`` (small, well-conditioned); ``epochs=200`` with ``batch_size=128`` and
    ``lr=1e-3`` (Adam's standard rate; a few thousand steps on data sets of a few thousand rows);
    ``early_stopping=False`` (as in scikit-learn; when True, ``validation_fraction=0.1`` of the
    rows are held out, stratified when possible, and training stops after ``patience=20``
    epochs without improvement, restoring the best weights); ``standardize=True`` (zero mean, unit
    variance features, fitted on the training data only); float32 on CPU.

    Args:
        width: units per nonlinear layer (int >= 1).
        depth: number of nonlinear layers (int >= 1).
        bottleneck: None for dense hidden maps, else an int rank H in [1, width] or a float ratio
            of ``width`` in (0, 1] (the paper uses 1/3).
        activation: a name in :data:`structnets.nn.ACTIVATIONS` (``"swish"`` is x·sigmoid(x)).
        epochs: maximum passes over the training rows (int >= 1).
        batch_size: rows per Adam step (int >= 1), or None for full batch.
        lr: learning rate (> 0).
        weight_decay: L2 penalty (>= 0; decoupled for ``optimizer="adamw"``).
        optimizer: ``"adam"``, ``"adamw"`` or ``"sgd"`` (momentum 0.9).
        early_stopping: hold out ``validation_fraction`` of the rows and stop on their loss.
        validation_fraction: fraction in (0, 1) held out when ``early_stopping``.
        patience: epochs without validation improvement before stopping (int >= 1).
        standardize: standardise features with the training mean and std (constant columns: std 1).
        random_state: None, an int or a ``RandomState``; fixes initial weights, shuffling and
            the validation split, so the same int gives identical predictions.
        dtype: ``"float32"`` or ``"float64"`` for parameters and computation.
        device: torch device for training and prediction, e.g. ``"cpu"`` or ``"cuda"``.

    Attributes:
        classes_: (n_classes,) the sorted class labels.
        model_: the trained ``torch.nn.Sequential``.
        n_features_in_: number of features seen in ``fit``.
        feature_names_in_: (n_features_in_,) column names, when ``fit`` got a DataFrame.
        feature_mean_, feature_scale_: (n_features_in_,) standardisation statistics, or None.
        fit_result_: the :class:`structnets.training.FitResult` of the training run.
        history_: ``{"train_loss": [...], "val_loss": [...]}`` per epoch.
        n_iter_: epochs run.
    """

    _loss = "cross_entropy"

    def fit(self, X: Any, y: Any) -> MLPClassifier:
        """Train on ``X`` (n, n_features) and labels ``y`` (n,) of any hashable, sortable type.

        Args:
            X: (n_samples, n_features) finite numeric array or DataFrame.
            y: (n_samples,) class labels (ints, strings, ...); at least two distinct classes.

        Returns:
            self, fitted.
        """
        self._check_params()
        names = _column_names(X)
        X, y = _validate_Xy(self, X, y, dtype=(np.float64, np.float32), ensure_all_finite=False)
        check_finite(X, names, argument="X")
        try:
            check_classification_targets(y)
        except (TypeError, ValueError) as error:
            raise _named(error, "y") from error
        y = column_or_1d(y, warn=True)
        self.classes_, y_index = np.unique(y, return_inverse=True)
        if self.classes_.size < 2:
            raise ValueError(
                "MLPClassifier needs samples of at least 2 classes in `y`, but the data "
                f"contain only one class: {self.classes_[0]!r}"
            )
        self._fit_standardization(X)
        y_index = y_index.astype(np.int64)
        self._train(X, y_index, self.classes_.size, stratify=y_index)
        return self

    def decision_function(self, X: Any) -> np.ndarray:
        """Class scores: logits (n, n_classes), or for two classes z₁ − z₀ of shape (n,).

        Args:
            X: (n_samples, n_features).

        Returns:
            float64 scores; larger means more likely ``classes_[1]`` in the binary case.
        """
        logits = self._forward(X)
        if self.classes_.size == 2:
            return logits[:, 1] - logits[:, 0]
        return logits

    def predict_proba(self, X: Any) -> np.ndarray:
        """Softmax class probabilities.

        Args:
            X: (n_samples, n_features).

        Returns:
            (n_samples, n_classes) float64, rows sum to 1, columns ordered as ``classes_``.
        """
        logits = self._forward(X)
        logits -= logits.max(axis=1, keepdims=True)
        proba = np.exp(logits)
        proba /= proba.sum(axis=1, keepdims=True)
        return proba

    def predict_log_proba(self, X: Any) -> np.ndarray:
        """Log of :meth:`predict_proba`, computed stably (log-softmax).

        Args:
            X: (n_samples, n_features).

        Returns:
            (n_samples, n_classes) float64.
        """
        logits = self._forward(X)
        logits -= logits.max(axis=1, keepdims=True)
        return logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))

    def predict(self, X: Any) -> np.ndarray:
        """Most probable class label for each row.

        Args:
            X: (n_samples, n_features).

        Returns:
            (n_samples,) labels drawn from ``classes_``.
        """
        index = np.argmax(self._forward(X), axis=1)
        return self.classes_[index]


class MLPRegressor(RegressorMixin, _BaseMLP):
    """MLP regressor (dense or low-rank Swish) trained on mean squared error.

    The network is ``mlp(n_features, n_outputs, width, depth, activation, bottleneck)`` (see
    :class:`MLPClassifier`), trained by Adam on ``(1/(n·k)) Σ (f(xᵢ) − yᵢ)²``. ``y`` may be 1-D
    (predictions are 1-D) or 2-D (n, k) (predictions are (n, k)). With ``standardize_target``
    the targets are standardised with their training mean and std for training and predictions
    are mapped back, so the learning rate does not depend on the target's units (the loss
    histories are then in standardised units). Defaults as for :class:`MLPClassifier`.

    Args:
        width, depth, bottleneck, activation, epochs, batch_size, lr, weight_decay, optimizer,
        early_stopping, validation_fraction, patience, standardize, random_state, dtype,
        device: as in :class:`MLPClassifier` (the validation split is random).
        standardize_target: standardise ``y`` for training (constant targets: std 1).

    Attributes:
        model_, n_features_in_, feature_names_in_, feature_mean_, feature_scale_, fit_result_,
        history_, n_iter_: as in :class:`MLPClassifier`.
        target_mean_, target_scale_: (n_outputs,) target statistics, or None.
    """

    _loss = "mse"

    def __init__(
        self,
        width: int = 64,
        depth: int = 2,
        bottleneck: int | float | None = None,
        activation: str = "swish",
        epochs: int = 200,
        batch_size: int | None = 128,
        lr: float = 1e-3,
        weight_decay: float = 0.0,
        optimizer: str = "adam",
        early_stopping: bool = False,
        validation_fraction: float = 0.1,
        patience: int = 20,
        standardize: bool = True,
        standardize_target: bool = True,
        random_state: int | np.random.RandomState | None = None,
        dtype: str = "float32",
        device: str = "cpu",
    ) -> None:
        super().__init__(
            width=width,
            depth=depth,
            bottleneck=bottleneck,
            activation=activation,
            epochs=epochs,
            batch_size=batch_size,
            lr=lr,
            weight_decay=weight_decay,
            optimizer=optimizer,
            early_stopping=early_stopping,
            validation_fraction=validation_fraction,
            patience=patience,
            standardize=standardize,
            random_state=random_state,
            dtype=dtype,
            device=device,
        )
        self.standardize_target = standardize_target

    def fit(self, X: Any, y: Any) -> MLPRegressor:
        """Train on ``X`` (n, n_features) and real targets ``y`` of shape (n,) or (n, k).

        Args:
            X: (n_samples, n_features) finite numeric array or DataFrame.
            y: (n_samples,) or (n_samples, n_outputs) finite real targets.

        Returns:
            self, fitted.
        """
        self._check_params()
        try:
            _check_bool("standardize_target", self.standardize_target)
        except TypeError as error:
            raise InvalidParameterError(str(error)) from error
        names = _column_names(X)
        X, y = _validate_Xy(
            self,
            X,
            y,
            dtype=(np.float64, np.float32),
            ensure_all_finite=False,
            multi_output=True,
            y_numeric=True,
        )
        check_finite(X, names, argument="X")
        try:
            y = np.asarray(y, dtype=np.float64)
        except (TypeError, ValueError) as error:
            raise _named(error, "y") from error
        if not np.isfinite(y).all():
            raise ValueError("`y` must be finite, got NaN or infinite targets")
        self._y_ndim = y.ndim
        target = y.reshape(y.shape[0], -1)
        self.target_mean_: np.ndarray | None
        self.target_scale_: np.ndarray | None
        if self.standardize_target:
            self.target_mean_, self.target_scale_ = _location_scale(target)
            target = (target - self.target_mean_) / self.target_scale_
        else:
            self.target_mean_ = self.target_scale_ = None
        self._fit_standardization(X)
        target = _cast(target, self._np_dtype(), "y", "standardize_target", self.standardize_target)
        self._train(X, target, target.shape[1], stratify=None)
        return self

    def predict(self, X: Any) -> np.ndarray:
        """Predicted targets.

        Args:
            X: (n_samples, n_features).

        Returns:
            float64 array of shape (n_samples,) if ``fit`` got a 1-D ``y``, else
            (n_samples, n_outputs).
        """
        out = self._forward(X)
        if self.target_mean_ is not None:
            out = out * self.target_scale_ + self.target_mean_
        return out[:, 0] if self._y_ndim == 1 else out

    def __sklearn_tags__(self):  # noqa: D105
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        tags.target_tags.single_output = True
        return tags


def _validate_Xy(estimator: BaseEstimator, X: Any, y: Any, **kwargs: Any) -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's ``validate_data(X, y)``, with errors that say which argument is at fault."""
    try:
        return validate_data(estimator, X, y, **kwargs)
    except (TypeError, ValueError) as error:
        if "inconsistent numbers of samples" in str(error):
            raise _named(error, "X` and `y") from error
        try:
            check_array(X, dtype=kwargs.get("dtype", "numeric"), ensure_all_finite=False, input_name="X")
        except (TypeError, ValueError):
            raise _named(error, "X") from error
        raise _named(error, "y") from error


def _named(error: Exception, name: str) -> Exception:
    """The same kind of error, its message prefixed by the argument's name (kept whole, so
    scikit-learn's checks that match its wording still match)."""
    kind = ValueError if isinstance(error, ValueError) else TypeError
    verb = "are" if " and " in name else "is"
    return kind(f"`{name}` {verb} invalid: {error}")


def _location_scale(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-column float64 mean and standard deviation of ``values`` (n, k); constant columns get std 1.

    A column whose squares would overflow or underflow (largest magnitude above 1e150 or below
    1e-150) is computed in units of its largest magnitude: NumPy's std was inf (every standardised
    value 0) or 0 there. A column is constant when its std is round-off of its own mean (≤ 10ε|mean|,
    or 0), not of 1: a floor of 1 took every column of magnitude below ~1e-15 for constant.
    """
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):  # the extreme columns are redone below
        mean = values.mean(axis=0, dtype=np.float64)
        scale = values.std(axis=0, dtype=np.float64)
    largest = np.abs(values).max(axis=0).astype(np.float64)
    extreme = (largest > 1e150) | ((largest < 1e-150) & (largest > 0))
    if extreme.any():
        unit = values[:, extreme] / largest[extreme]
        mean[extreme] = unit.mean(axis=0, dtype=np.float64) * largest[extreme]
        scale[extreme] = unit.std(axis=0, dtype=np.float64) * largest[extreme]
    scale[scale <= 10 * np.finfo(np.float64).eps * np.abs(mean)] = 1.0
    return mean, scale


def _cast(values: np.ndarray, dtype: type, name: str, option: str, standardized: bool) -> np.ndarray:
    """``values`` as a contiguous array of ``dtype``; finite data beyond its range are refused by name (the training
    loop would call them non-finite; predictions would be inf)."""
    with np.errstate(over="ignore"):
        array: np.ndarray = np.ascontiguousarray(values, dtype=dtype)
    if not np.isfinite(array).all():
        limit = f"{np.dtype(dtype).name} range (|value| <= {float(np.finfo(dtype).max):.3g})"
        if standardized:
            raise ValueError(f"`{name}` is beyond the {limit} once standardised with the training mean and std")
        raise ValueError(
            f"`{name}` has values beyond the {limit} with {option}=False; use dtype='float64' or {option}=True"
        )
    return array


def _check_bool(name: str, value: Any) -> bool:
    if not isinstance(value, bool | np.bool_):
        raise TypeError(f"`{name}` must be a bool, got {value!r} ({type(value).__name__})")
    return bool(value)


def _column_names(X: Any) -> list[str] | None:
    """Column names of a DataFrame-like ``X`` (as strings), else None."""
    columns = getattr(X, "columns", None)
    if columns is None or not hasattr(X, "iloc"):
        return None
    return [str(c) for c in columns]

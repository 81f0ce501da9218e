"""Finding experiments: by registry name, or by an importable ``module.path:OBJECT`` spec."""

from __future__ import annotations

import importlib
import sys
from typing import Any

from .errors import UntrustedExperimentError
from .experiment import Experiment

BUILTIN_REFS = frozenset({"structnets.runner._toy:EXPERIMENT"})
"""Experiment specs outside the registry that a run folder may still name: structnets' own toy."""

_REQUIRED = ("name", "description", "config_class", "units", "run_unit", "report", "figures")


def check_experiment(obj: Any, what: str = "experiment") -> Experiment:
    """Return ``obj`` if it implements :class:`Experiment`, else raise ``TypeError`` naming what lacks."""
    missing = [attr for attr in _REQUIRED if not hasattr(obj, attr)]
    if missing:
        raise TypeError(f"{what} is not an experiment: it lacks {', '.join(missing)}")
    return obj


def resolve_experiment(spec: str | Experiment) -> Experiment:
    """Return the experiment named by ``spec``.

    Args:
        spec: a registered name (see :func:`structnets.experiments.names`), an importable
            ``"module.path:OBJECT"`` spec (for experiments outside the registry, e.g. the test toy
            ``"structnets.runner._toy:EXPERIMENT"``), or an experiment object (returned as is).

    Raises:
        ValueError: an unknown name (the message lists the valid names) or an unimportable spec.
        TypeError: the object found does not implement the experiment protocol.
    """
    if not isinstance(spec, str):
        return check_experiment(spec)
    if ":" in spec:
        module_name, _, attr = spec.partition(":")
        if not module_name or not attr:
            raise ValueError(f"experiment spec must look like 'module.path:OBJECT', got {spec!r}")
        try:
            obj: Any = importlib.import_module(module_name)
        except ImportError as e:
            raise ValueError(f"cannot import module {module_name!r} of experiment spec {spec!r}: {e}") from e
        for part in attr.split("."):
            try:
                obj = getattr(obj, part)
            except AttributeError:
                raise ValueError(f"module {module_name!r} has no attribute {attr!r} (experiment spec {spec!r})") from None
        return check_experiment(obj, f"{spec!r}")
    from .. import experiments  # deferred: experiments import the runner

    return check_experiment(experiments.get(spec), f"registered experiment {spec!r}")


def _shown(value: Any, limit: int = 80) -> str:
    """``repr`` of an untrusted stored value, cut to ``limit`` characters (one line, no control codes)."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 4] + "...'"


def resolve_stored_experiment(name: Any, ref: Any, where: Any) -> Experiment:
    """Return the experiment a run folder's ``results.db`` names, importing only trusted code.

    A run folder may come from someone else, so the names stored in it are data, never code to run:
    only a registered experiment name (:func:`structnets.experiments.names`) or one of
    :data:`BUILTIN_REFS` is accepted, and anything else is refused *before* any import. Callers that
    trust an experiment outside the registry pass it explicitly (``report(..., experiment=...)``,
    ``structnets report DIR --experiment MODULE:OBJECT``).

    Args:
        name: the stored experiment name (``meta.experiment``).
        ref: the stored reference (``meta.experiment_ref``; empty when none was stored).
        where: the run folder, for the message.

    Raises:
        UntrustedExperimentError: the folder names anything but a registered experiment.
    """
    from .. import experiments

    registered = experiments.names()
    spec = ref if isinstance(ref, str) and ref else name
    if not isinstance(spec, str) or not (spec in registered or spec in BUILTIN_REFS):
        raise UntrustedExperimentError(
            f"{where} names the experiment {_shown(spec)}, which is not a registered experiment "
            f"({', '.join(registered)}); structnets never imports code that a run folder names. "
            f"If you trust that code, name it yourself: structnets report {where} --experiment MODULE:OBJECT"
        )
    return resolve_experiment(spec)


def experiment_ref(experiment: Experiment) -> str | None:
    """Return a string that :func:`resolve_experiment` turns back into ``experiment``, if any.

    A registered experiment gives its name; a module-level object gives ``"module:ATTR"``. Worker
    processes and ``report`` use it to find the experiment again; ``None`` means the object itself
    must be pickled to workers and cannot be found again from a run folder alone.
    """
    from .. import experiments

    name = getattr(experiment, "name", None)
    if isinstance(name, str) and name in experiments.names():
        try:
            if experiments.get(name) is experiment:
                return name
        except Exception:  # noqa: BLE001 - a broken registry entry just means "not this one"
            pass
    module = sys.modules.get(getattr(type(experiment), "__module__", ""))
    if module is not None and module.__name__ not in ("__main__", "__mp_main__", "builtins"):
        for attr, value in vars(module).items():
            if value is experiment:
                return f"{module.__name__}:{attr}"
    return None

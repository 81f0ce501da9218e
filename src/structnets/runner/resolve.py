"""Finding experiments: by registry name, or by an importable ``module.path:OBJECT`` spec."""

from __future__ import annotations

import importlib
import sys
from typing import Any

from .experiment import Experiment

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

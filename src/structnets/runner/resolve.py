"""Finding experiments: by a name in a registry, or by an importable ``module.path:OBJECT`` spec.

The runner owns no list of experiments and imports nothing from :mod:`structnets.experiments`: a
*registry* is handed to it, a mapping from experiment names to ``"module.path:OBJECT"`` specs (plain
strings, so worker processes get specs and need no registry). The command line passes
:data:`structnets.experiments.REGISTRY`; functions called without one use the default registry, empty
until someone installs one explicitly (:func:`set_default_registry`, ``structnets.experiments.register()``);
importing a package never does.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Mapping
from typing import Any

from ..protocol import Experiment
from .errors import UntrustedExperimentError

Registry = Mapping[str, str]
"""Experiment names to the importable ``"module.path:OBJECT"`` spec of each experiment object."""

_REQUIRED = ("name", "description", "config_class", "units", "run_unit", "report", "figures")

_default_registry: Registry = {}


def set_default_registry(registry: Registry) -> None:
    """Make ``registry`` the one used where no registry is passed (``structnets.experiments`` calls it).

    Args:
        registry: a mapping from names to ``"module.path:OBJECT"`` specs (it may be a live view).

    Raises:
        TypeError: ``registry`` is not a Mapping.
    """
    global _default_registry
    if not isinstance(registry, Mapping):
        raise TypeError(
            f"`registry` must be a Mapping of names to 'module.path:OBJECT' specs, got {type(registry).__name__}"
        )
    _default_registry = registry


def get_registry(registry: Registry | None = None) -> Registry:
    """``registry``, or the default registry when it is None (empty until one is installed explicitly).

    Raises:
        TypeError: ``registry`` is neither None nor a Mapping.
    """
    if registry is None:
        return _default_registry
    if not isinstance(registry, Mapping):
        raise TypeError(
            f"`registry` must be a Mapping of names to 'module.path:OBJECT' specs, got {type(registry).__name__}"
        )
    return registry


def registered_names(registry: Registry | None = None) -> list[str]:
    """The names of ``registry`` (default: the default registry), sorted."""
    return sorted(get_registry(registry))


def check_experiment(obj: Any, what: str = "experiment") -> Experiment:
    """Return ``obj`` if it implements :class:`Experiment`, else raise ``TypeError`` naming what lacks."""
    missing = [attr for attr in _REQUIRED if not hasattr(obj, attr)]
    if missing:
        raise TypeError(f"{what} is not an experiment: it lacks {', '.join(missing)}")
    return obj


def _import_spec(spec: str) -> Any:
    """The object a ``"module.path:OBJECT"`` spec names; import failures become ``ValueError``."""
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
    return obj


def _registered(name: str, registry: Registry) -> Any:
    """The object registered as ``name``; an import failure of its module propagates as is (a broken install)."""
    spec = registry[name]
    if not isinstance(spec, str):
        raise TypeError(f"`registry` must map names to 'module.path:OBJECT' strings, got {spec!r:.80} for {name!r}")
    module_name, _, attr = spec.partition(":")
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def resolve_experiment(spec: str | Experiment, registry: Registry | None = None) -> Experiment:
    """Return the experiment named by ``spec``.

    Args:
        spec: a name in ``registry``, an importable ``"module.path:OBJECT"`` spec (for experiments
            outside the registry), or an experiment object (returned as is).
        registry: names to specs; None: the default registry (see :func:`set_default_registry`).

    Raises:
        ValueError: an unknown name (the message lists the valid names) or an unimportable spec.
        TypeError: the object found does not implement the experiment protocol.
    """
    if not isinstance(spec, str):
        return check_experiment(spec)
    if ":" in spec:
        return check_experiment(_import_spec(spec), f"{spec!r}")
    table = get_registry(registry)
    if spec not in table:
        if not table:
            raise ValueError(
                f"unknown experiment {spec!r}: no experiment is registered (pass `registry`, e.g. "
                "structnets.experiments.REGISTRY, or call structnets.experiments.register() to install it as the default)"
            )
        raise ValueError(f"unknown experiment {spec!r}; valid names: {', '.join(sorted(table))}")
    return check_experiment(_registered(spec, table), f"registered experiment {spec!r}")


def worker_spec(ref: str, registry: Registry | None = None) -> str:
    """The string worker processes resolve without a registry: a registered name's spec, else ``ref`` itself."""
    table = get_registry(registry)
    return table[ref] if ":" not in ref and ref in table else ref


def _shown(value: Any, limit: int = 80) -> str:
    """``repr`` of an untrusted stored value, cut to ``limit`` characters (one line, no control codes)."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 4] + "...'"


def resolve_stored_experiment(name: Any, ref: Any, where: Any, registry: Registry | None = None) -> Experiment:
    """Return the experiment a run folder's ``results.db`` names, importing only trusted code.

    A run folder may come from someone else, so the names stored in it are data, never code to run:
    only a name in ``registry`` or one of its specs is accepted, and anything else is refused
    *before* any import. Callers that trust an experiment outside the registry pass it explicitly
    (``report(..., experiment=...)``, ``structnets report DIR --experiment MODULE:OBJECT``).

    Args:
        name: the stored experiment name (``meta.experiment``).
        ref: the stored reference (``meta.experiment_ref``; empty when none was stored).
        where: the run folder, for the message.
        registry: the trusted names and specs; None: the default registry.

    Raises:
        UntrustedExperimentError: the folder names anything but a registered experiment.
    """
    table = get_registry(registry)
    registered = sorted(table)
    spec = ref if isinstance(ref, str) and ref else name
    trusted = isinstance(spec, str) and (spec in table or (":" in spec and spec in set(table.values())))
    if not trusted:
        raise UntrustedExperimentError(
            f"{where} names the experiment {_shown(spec)}, which is not a registered experiment "
            f"({', '.join(registered)}); structnets never imports code that a run folder names. "
            f"If you trust that code, name it yourself: structnets report {where} --experiment MODULE:OBJECT"
        )
    return resolve_experiment(spec, table)


def experiment_ref(experiment: Experiment, registry: Registry | None = None) -> str | None:
    """Return a string that :func:`resolve_experiment` turns back into ``experiment``, if any.

    A registered experiment gives its name; a module-level object gives ``"module:ATTR"``. Worker
    processes and ``report`` use it to find the experiment again; ``None`` means the object itself
    must be pickled to workers and cannot be found again from a run folder alone.

    Args:
        experiment: the experiment object.
        registry: names to specs; None: the default registry.
    """
    table = get_registry(registry)
    name = getattr(experiment, "name", None)
    if isinstance(name, str) and name in table:
        try:
            if _registered(name, table) is experiment:
                return name
        except Exception:  # noqa: BLE001 - a broken registry entry just means "not this one"
            pass
    module = sys.modules.get(getattr(type(experiment), "__module__", ""))
    if module is not None and module.__name__ not in ("__main__", "__mp_main__", "builtins"):
        for attr, value in vars(module).items():
            if value is experiment:
                return f"{module.__name__}:{attr}"
    return None

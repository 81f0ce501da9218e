"""Exceptions raised by the runner.

The CLI turns :class:`RunnerError` into a one-line ``error: ...`` message (exit status 2, or 1 for a
failed unit); library callers can catch the specific subclasses.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


class RunnerError(Exception):
    """Base class of every error the runner raises on purpose."""


class StoreError(RunnerError):
    """A problem with a run folder's ``results.db``."""


class CorruptStoreError(StoreError):
    """``results.db`` is not a readable structnets results database. The file is left untouched."""

    def __init__(self, path: Path, reason: str) -> None:
        self.path = Path(path)
        self.reason = reason
        super().__init__(
            f"{self.path} is not a usable structnets results database ({reason}); "
            "it was left untouched: move it away or use a different output folder (--out)"
        )


class ConfigMismatchError(StoreError):
    """A run folder holds results of a different experiment or configuration than requested."""

    def __init__(self, path: Path, differences: list[str], stored_config: dict[str, Any] | None = None) -> None:
        self.path = Path(path)
        self.differences = list(differences)
        #: the folder's stored config (JSON), when it holds the same experiment: the CLI turns
        #: it into the ``--set`` that would resume the folder
        self.stored_config = stored_config
        super().__init__(
            f"{self.path} holds a run with a different configuration, so it cannot be resumed "
            f"({'; '.join(self.differences)}); use a new output folder (--out) for this configuration"
        )


class ExperimentError(RunnerError, ValueError):
    """An experiment broke the runner protocol (duplicate keys, non-JSON params, bad result rows)."""


class UnitFailedError(RunnerError):
    """``run_unit`` raised. Units finished before it are saved; re-running resumes.

    Attributes:
        key: the failed unit's key.
        error: ``"ExceptionType: message"`` of the original exception.
        traceback: the formatted traceback from the process that ran the unit.
        finished_units: how many units the run folder holds (set by :func:`~structnets.runner.run`).
    """

    def __init__(self, key: str, error: str, traceback: str) -> None:
        self.key = key
        self.error = error
        self.traceback = traceback
        self.finished_units: int | None = None  # units stored in the run folder when it failed
        super().__init__(f"unit {key!r} failed: {error}")


class UntrustedExperimentError(RunnerError):
    """A run folder names an experiment that is not registered; nothing was imported."""


class RunLockedError(RunnerError):
    """Another live process is running into the same run folder."""


class InvalidConfigError(RunnerError, ValueError):
    """A config value is invalid; raised before the run folder is created or touched."""


class BackendUnavailableError(RunnerError, ImportError):
    """The requested backend needs a package that is not installed."""


class DeviceUnavailableError(RunnerError):
    """The requested device (``--device cuda``) cannot be used here; raised before any unit runs."""


class ChangedUnitsError(StoreError):
    """The run folder holds units stored with params the experiment no longer gives (its code changed).

    Resuming would keep their old results beside new ones in one table, so the run refuses before it
    writes anything. Attributes: ``path`` (the run folder), ``keys`` (the changed units, in unit order).
    """

    def __init__(self, path: Path, experiment: str, keys: list[str]) -> None:
        self.path = path
        self.keys = list(keys)
        shown = ", ".join(repr(k) for k in keys[:3]) + (", ..." if len(keys) > 3 else "")
        super().__init__(
            f"{path} holds {len(keys)} unit(s) of {experiment} stored with params that differ from what the "
            f"experiment now gives ({shown}); refusing to mix old and new results in one table: recompute just "
            f"those with --rerun-changed (rerun_changed=True; the other units are kept), or run into a new --out"
        )


class MixedRunWarning(RuntimeWarning):
    """A run folder read for its results holds units stored with params the experiment no longer gives."""

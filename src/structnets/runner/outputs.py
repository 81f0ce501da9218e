"""Writing a run folder's outputs from its results: ``results.csv``, ``table.md`` and ``figures/``.

:func:`~.orchestrate.run` writes them when a run finishes and :func:`~.orchestrate.report` rewrites them
from ``results.db`` alone. The table starts with a notice when the run is unfinished (units missing) or
mixed (units stored with params the experiment no longer gives).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import Any

import pandas as pd

from .. import atomic_io
from ..protocol import Experiment
from .checkpoints import CHECKPOINTS
from .errors import ExperimentError, RunnerError, StoreError

logger = logging.getLogger(__name__)

RESULTS_DB = "results.db"
RESULTS_CSV = "results.csv"
TABLE_MD = "table.md"
RUN_INFO = "run_info.json"
FIGURES = "figures"
#: the units' trained models (:mod:`.unit_models`)
MODELS = "models"


def check_own_files(folder: Path) -> None:
    """Refuse a run folder whose own files or folders are symbolic links or of the wrong kind (named).

    Through a link a run would write rows, models and figures into another folder (outside that
    folder's lock) and, when it finishes, delete the checkpoints there.

    Raises:
        StoreError: ``results.db`` (or its ``-wal``, ``-shm``, ``-journal``), ``checkpoints/``, ``models/``
            or ``figures/`` is a link (``results.db`` also a hard link); one of its files is a folder, or
            one of its folders a file.
    """
    sqlite_files = [RESULTS_DB + suffix for suffix in ("", "-wal", "-shm", "-journal")]
    files = (*sqlite_files, RESULTS_CSV, TABLE_MD, RUN_INFO)
    for name in (*files, CHECKPOINTS, MODELS, FIGURES):
        path = folder / name
        if path.is_symlink():
            raise StoreError(
                f"{path} is a symbolic link (to {os.readlink(path)}): a run would write into, and delete from, "
                f"what it points to; a run folder's {name} must be its own (replace the link with a copy)"
            )
        if name == RESULTS_DB and path.is_file() and path.stat().st_nlink > 1:
            raise StoreError(
                f"{path} is a hard link ({path.stat().st_nlink} names for one file, e.g. a cp -al copy): SQLite "
                "keeps a journal beside each name, so writing through two of them corrupts it; make it a copy (cp)"
            )
        if name in files and path.is_dir():
            raise StoreError(f"{path} is a folder, where the run folder's file {name} goes: move it away")
        if name not in files and path.exists() and not path.is_dir():
            raise StoreError(f"{path} is not a folder: the run folder keeps its {name} there; move the file away")


def remove_temporaries(folder: Path) -> None:
    """Delete what writes cut short (``kill -9``) left in the run folder ``folder``: the temporaries of
    :mod:`~structnets.atomic_io` beside ``results.csv``, ``table.md``, ``run_info.json`` and the models,
    and the ``.figures-*`` folders figures are drawn in. Only called while holding the run lock."""
    names = [f".{name}.*.tmp" for name in (RESULTS_CSV, TABLE_MD, RUN_INFO)]
    found = [p for pattern in names for p in folder.glob(pattern)]
    found += [*folder.glob(".figures-*"), *(folder / MODELS).glob(".*.pt.*.tmp")]
    for path in found:
        with contextlib.suppress(OSError):  # tidying up never fails a run
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()


def _write_figures(experiment: Experiment, frame: pd.DataFrame, config: Any, out: Path) -> list[Path]:
    """Draw figures into a temporary folder, then move each file into ``out/figures`` atomically.

    Raises:
        ExperimentError: ``experiment.figures`` raised (named, one line).
        StoreError: the figures cannot be written into ``out/figures``.
    """
    fig_dir = out / FIGURES
    moved: list[Path] = []
    try:
        fig_dir.mkdir(exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=".figures-", dir=out) as tmp:
            _experiment_call(experiment, "figures", experiment.figures, frame, config, Path(tmp))
            for src in sorted(p for p in Path(tmp).rglob("*") if p.is_file()):
                dest = fig_dir / src.relative_to(tmp)
                dest.parent.mkdir(parents=True, exist_ok=True)
                os.replace(src, dest)
                moved.append(dest)
    except OSError as e:
        raise StoreError(f"cannot write the figures into {fig_dir}: {e.strerror or e}; {_advice(e)}") from e
    except StoreError as e:  # a full disk while the experiment saved a figure
        raise StoreError(f"{e} (writing into {fig_dir})") from e
    return moved


def _write_text_output(path: Path, text: str, csv: pd.DataFrame | None = None) -> None:
    try:
        if csv is not None:
            atomic_io.write_csv(path, csv)
        else:
            atomic_io.write_text(path, text)
    except OSError as e:
        raise StoreError(f"cannot write {path}: {e.strerror or e}; {_advice(e)}") from e


#: errors of the file system, not of an experiment's code: a full disk or quota, a read-only mount
_DEVICE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS})


def _advice(e: OSError) -> str:
    """What to do about ``e`` when writing into a run folder."""
    if e.errno in (errno.ENOSPC, errno.EDQUOT):
        return "the disk (or quota) is full: free space and rerun the same command (finished units are kept)"
    if e.errno == errno.EROFS:
        return "the run folder is on a read-only file system: copy it somewhere writable"
    return "check the permissions of the run folder"


def _experiment_call(experiment: Experiment, what: str, call: Any, *args: Any) -> Any:
    """Call ``experiment.report``/``figures``; turn a crash into a one-line :class:`ExperimentError`."""
    try:
        return call(*args)
    except RunnerError:
        raise
    except OSError as e:
        if e.errno not in _DEVICE_ERRNOS:
            raise _experiment_error(experiment, what, e) from e
        # the disk, not the experiment: a figure saved into a full disk
        raise StoreError(f"cannot write the {what} of {experiment.name}: {e.strerror or e}; {_advice(e)}") from e
    except Exception as e:  # noqa: BLE001 - named, with the original chained for --traceback
        raise _experiment_error(experiment, what, e) from e


def _experiment_error(experiment: Experiment, what: str, e: Exception) -> ExperimentError:
    return ExperimentError(f"{experiment.name}.{what}() failed on the stored results: {type(e).__name__}: {e}")


def write_outputs(
    experiment: Experiment,
    config: Any,
    frame: pd.DataFrame,
    out: Path,
    missing: list[str] | None = None,
    changed: list[str] | None = None,
) -> tuple[str, list[Path]]:
    """Write ``results.csv``, ``table.md`` and ``figures/``.

    ``missing`` lists the units known but not finished (an unfinished run): the table then starts
    with a notice saying so, and when the experiment's own table or figures cannot be made from the
    rows that exist, the notice says that instead of failing. ``changed`` lists the units stored
    with params the experiment no longer gives (a mixed folder): the table then starts with a
    notice naming them, so a table of old and new results is never taken for one run's.
    """
    remove_temporaries(out)
    _write_text_output(out / RESULTS_CSV, "", frame)
    mixed = mixed_notice(experiment, changed, out) if changed else ""
    if missing is None:
        table = _experiment_call(experiment, "report", experiment.report, frame, config)
        if not isinstance(table, str):
            raise ExperimentError(f"{experiment.name}.report() must return Markdown text, got {type(table).__name__}")
        table = mixed + table
        if not table.endswith("\n"):
            table += "\n"
        _write_text_output(out / TABLE_MD, table)
        return table, _write_figures(experiment, frame, config, out)
    notice = mixed + _unfinished_notice(experiment, frame, missing, out)
    try:
        body = experiment.report(frame, config)
        if not isinstance(body, str):
            raise TypeError(f"report() returned {type(body).__name__}, not Markdown text")
    except Exception as e:  # noqa: BLE001 - an experiment's table may need rows that do not exist yet
        logger.info("%s.report() on an unfinished run: %s: %s", experiment.name, type(e).__name__, e)
        body = (
            f"The experiment's table cannot be made from the units finished so far "
            f"({type(e).__name__}: {' '.join(str(e).split())[:200]}); "
            f"the finished units are in {RESULTS_CSV}.\n"
        )
    table = notice + body + ("" if body.endswith("\n") else "\n")
    _write_text_output(out / TABLE_MD, table)
    try:
        with warnings.catch_warnings():  # e.g. "no artists with labels": expected of a partial figure
            warnings.simplefilter("ignore")
            figures = _write_figures(experiment, frame, config, out)
    except ExperimentError as e:  # as above: drawn once the run is finished
        logger.info("%s.figures() on an unfinished run: %s: %s", experiment.name, type(e).__name__, e)
        figures = []
    return table, figures


def _unfinished_notice(experiment: Experiment, frame: pd.DataFrame, missing: list[str], out: Path) -> str:
    done = len(frame)
    examples = ", ".join(f"`{k}`" for k in missing[:3]) + (", ..." if len(missing) > 3 else "")
    return (
        f"> **Unfinished run of {experiment.name}**: {done} of {done + len(missing)} units known so far are "
        f"finished; {len(missing)} missing ({examples}), and later stages may add more. "
        f"Rerun the `structnets run` command that started it, with `--out {out}`, to finish it.\n\n"
    )


def mixed_notice(experiment: Experiment, changed: list[str], out: Path) -> str:
    """The notice that starts ``table.md`` of a mixed folder: how many units are stale, which, and the fix."""
    examples = ", ".join(f"`{k}`" for k in changed[:3]) + (", ..." if len(changed) > 3 else "")
    return (
        f"> **Mixed run folder of {experiment.name}**: {len(changed)} stored unit(s) ({examples}) were computed "
        f"with params that differ from what the experiment now gives, so this table mixes old and new "
        f"results. Rerun just those with `structnets run {experiment.name} --out {out} --rerun-changed` "
        f"(with the options that started it), or run into a new `--out`.\n\n"
    )

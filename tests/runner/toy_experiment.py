"""A tiny staged experiment for testing the runner and the command line (a test fixture, not shipped).

It is imported as the top-level module ``toy_experiment`` (``tests/runner`` is put on ``sys.path`` and
``PYTHONPATH`` by the conftests of ``tests/runner`` and ``tests/cli``), so worker processes and
``python -m structnets.cli run toy_experiment:EXPERIMENT`` find it by its spec :data:`SPEC`, and tests hand
the runner :data:`REGISTRY` to run or report it by the name ``toy``. It needs no data and no
torch: stage 1 draws a seeded number per ``(arm, seed)``; once every stage-1 unit is finished,
stage 2 picks the arm with the highest mean and draws ``repeats`` numbers from it, so stage 2
depends on stage-1 results exactly as a grid search followed by cross-validation would.

Test hooks (environment variables, read by ``run_unit``: unlike a registry or a config field they reach
worker processes, and they do not change the config a run is resumed with):

* ``STRUCTNETS_TOY_CALL_LOG``: a directory; every ``run_unit`` call writes one file there, named
  after the unit key, so tests can count how often each unit ran.
* ``STRUCTNETS_TOY_FAIL_KEYS``: comma-separated unit keys whose ``run_unit`` raises ``RuntimeError``.
* ``STRUCTNETS_TOY_CHECKPOINTS``: a directory; every ``run_unit`` call appends a line
  ``key<TAB>path`` naming its :func:`~structnets.runner.checkpoints.unit_checkpoint` (``None``
  outside a run folder) to ``<dir>/log`` and writes a file at that path, as a training unit's
  ``fit`` would after its first epoch.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from structnets.protocol import JSONScalar, Unit, save_figure

FOLDER = Path(__file__).resolve().parent
"""The folder to put on ``sys.path`` (and ``PYTHONPATH``) so that ``import toy_experiment`` works."""

SPEC = "toy_experiment:EXPERIMENT"
"""The ``"module.path:OBJECT"`` spec of :data:`EXPERIMENT`."""

REGISTRY = {"toy": SPEC}
"""A registry (names to specs) to hand the runner: ``run("toy", ..., registry=REGISTRY)``."""


@dataclass(frozen=True)
class ToyConfig:
    """Config of the toy experiment.

    Attributes:
        arms: number of stage-1 arms.
        seeds: stage-1 seeds per arm.
        repeats: stage-2 units drawn from the best arm.
        scale: multiplies every draw.
        sleep: seconds each unit sleeps (to test interruption).
        label: a free string copied into every result row.
        plot: whether ``figures`` draws a figure.
        device: ``cpu``, ``cuda`` or ``auto``, resolved by the runner (``--device``) and copied
            into every result row; the toy itself computes with NumPy only.
    """

    arms: int = 4
    seeds: tuple[int, ...] = (0, 1, 2)
    repeats: int = 3
    scale: float = 1.0
    sleep: float = 0.0
    label: str = "toy"
    plot: bool = True
    device: str = "cpu"

    def __post_init__(self) -> None:
        if not isinstance(self.arms, int) or self.arms < 1:
            raise ValueError(f"`arms` must be a positive int, got {self.arms!r}")
        if self.sleep < 0:
            raise ValueError(f"`sleep` must be >= 0, got {self.sleep!r}")
        # as the real experiments' configs do: tests shrink the machine's memory to see the check
        from structnets._validation import check_fits_in_memory

        check_fits_in_memory(f"`arms`={self.arms}", self.arms, what="arms")

    @classmethod
    def quick(cls) -> ToyConfig:
        """The ``--quick`` preset."""
        return cls(arms=2, seeds=(0, 1), repeats=2)


def _draw(*seed: int) -> float:
    return float(np.random.default_rng(list(seed)).normal())


class ToyExperiment:
    """Two-stage toy experiment (see the module docstring)."""

    name = "toy"
    description = "Two-stage seeded toy experiment for testing the runner (no data, no torch)."
    config_class = ToyConfig

    def units(self, config: ToyConfig, finished: pd.DataFrame) -> list[Unit]:
        common = {"scale": config.scale, "sleep": config.sleep, "label": config.label, "device": config.device}
        stage1 = [
            Unit(
                f"stage1/arm={a}/seed={s}",
                {"unit": f"stage1/arm={a}/seed={s}", "stage": 1, "arm": a, "seed": s, **common},
            )
            for a in range(config.arms)
            for s in config.seeds
        ]
        done = set(finished["key"])
        if not all(u.key in done for u in stage1):
            return stage1
        s1 = finished[finished["stage"] == 1]
        best = int(s1.groupby("arm")["value"].mean().idxmax())
        stage2 = [
            Unit(
                f"stage2/arm={best}/repeat={r}",
                {"unit": f"stage2/arm={best}/repeat={r}", "stage": 2, "arm": best, "seed": 1000 + r, **common},
            )
            for r in range(config.repeats)
        ]
        return stage1 + stage2

    def run_unit(self, params: Mapping[str, Any]) -> dict[str, JSONScalar]:
        key = str(params["unit"])
        log_dir = os.environ.get("STRUCTNETS_TOY_CALL_LOG")
        if log_dir:
            name = key.replace("/", "_") + f".{os.getpid()}.{uuid.uuid4().hex[:8]}"
            (Path(log_dir) / name).write_text(key)
        checkpoint_log = os.environ.get("STRUCTNETS_TOY_CHECKPOINTS")
        if checkpoint_log:
            from structnets.runner.checkpoints import unit_checkpoint

            path = unit_checkpoint()
            with open(Path(checkpoint_log) / "log", "a") as f:
                f.write(f"{key}\t{path}\n")
            if path is not None:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(key)
        if params["sleep"]:
            time.sleep(params["sleep"])
        fail = os.environ.get("STRUCTNETS_TOY_FAIL_KEYS", "")
        if key in {k.strip() for k in fail.split(",") if k.strip()}:
            raise RuntimeError(f"toy failure requested for {key}")
        saved: dict[str, JSONScalar] = {}
        if os.environ.get("STRUCTNETS_TOY_MODELS"):  # save a small model seeded by the unit, as a training unit would
            import torch

            from structnets.runner.unit_models import save_unit_model

            torch.manual_seed(1000 * int(params["arm"]) + int(params["seed"]))
            saved = dict(save_unit_model(torch.nn.Linear(3, 2)))
        return {
            "stage": int(params["stage"]),
            "arm": int(params["arm"]),
            "seed": int(params["seed"]),
            "value": params["scale"] * _draw(int(params["arm"]), int(params["seed"])),
            "label": params["label"],
            "device": params.get("device", "cpu"),
            **saved,
        }

    def report(self, results: pd.DataFrame, config: ToyConfig) -> str:
        lines = ["# toy", "", "| stage | arm | units | mean value |", "| --- | --- | --- | --- |"]
        if len(results):
            for (stage, arm), group in results.groupby(["stage", "arm"], sort=True):
                lines.append(f"| {stage} | {arm} | {len(group)} | {group['value'].mean():.6f} |")
        return "\n".join(lines) + "\n"

    def figures(self, results: pd.DataFrame, config: ToyConfig, out_dir: Path) -> list[Path]:
        if not config.plot or not len(results):
            return []
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(4, 3))
        ax.scatter(results["arm"], results["value"], c=results["stage"])
        ax.set_xlabel("arm")
        ax.set_ylabel("value")
        return [save_figure(fig, Path(out_dir) / "values.png", dpi=60)]


EXPERIMENT = ToyExperiment()

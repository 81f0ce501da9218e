"""A report judges a preset's target only on that preset (``structnets.experiments.presets``)."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest

from structnets.experiments.lipschitz_mnist.config import LipschitzMNISTConfig
from structnets.experiments.lipschitz_mnist_conv.config import LipschitzMNISTConvConfig
from structnets.experiments.lipschitz_mnist_conv.report import report as conv_report
from structnets.experiments.presets import preset_of


@pytest.mark.parametrize("cls", [LipschitzMNISTConvConfig, LipschitzMNISTConfig])
def test_a_preset_is_recognised_up_to_its_seeds_and_device_and_nothing_else(cls: type) -> None:
    assert preset_of(cls()) == "full" and preset_of(cls.quick()) == "quick"
    assert preset_of(dataclasses.replace(cls(), seeds=(0, 1, 2, 3, 4), device="cuda")) == "full"
    assert preset_of(dataclasses.replace(cls.quick(), seeds=(3,), device="auto")) == "quick"
    # two epochs of the full preset (the old rule called any run of ≤ 3 epochs "quick"), or the quick
    # preset trained longer, are other protocols
    assert preset_of(dataclasses.replace(cls(), epochs=2)) is None
    assert preset_of(dataclasses.replace(cls.quick(), epochs=5)) is None
    assert preset_of(dataclasses.replace(cls.quick(), max_test=1000)) is None


def _conv_rows(certified: float, clean: float) -> pd.DataFrame:
    """One unit's row as the experiment writes it (the columns of a real run: two full-preset epochs)."""
    row = {
        "key": "train/gradient-step-conv/seed=0", "model": "gradient-step-conv", "seed": 0, "n_train": 60000,
        "n_test": 10000, "epochs": 2, "parameters": 529455, "seconds_per_epoch": 43.8, "accuracy": clean,
        "lipschitz_upper": 0.99999271316052, "lipschitz_lower": 0.9945874905087768, "lipschitz_used": 0.99999271316052,
        "certified_0.5": 0.7993, "certified_1": 0.6272, "certified_1.58": certified, "attack_points": 1000.0,
        "pgd_0.5": 0.774, "attack_certified_0.5": 0.766, "attack_broken_0.5": 0.0, "pgd_1": 0.603,
        "attack_certified_1": 0.569, "attack_broken_1": 0.0, "pgd_1.58": 0.365, "attack_certified_1.58": 0.318,
        "attack_broken_1.58": 0.0,
    }  # fmt: skip
    return pd.DataFrame([row])


def test_the_conv_report_judges_the_preset_it_ran_and_no_other() -> None:
    rows = _conv_rows(0.3728, 0.9058)
    two_epochs = dataclasses.replace(LipschitzMNISTConvConfig(), epochs=2)
    table = conv_report(rows, two_epochs)
    assert "No target judged" in table and "Target (" not in table
    assert "Target (quick preset)" in conv_report(rows, LipschitzMNISTConvConfig.quick())
    full = conv_report(_conv_rows(0.6353, 0.9778), dataclasses.replace(LipschitzMNISTConvConfig(), device="cuda"))
    assert "Target (full preset)" in full and "**met**" in full

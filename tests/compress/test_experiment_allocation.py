"""lowrank-compress with allocation="budget"/"calibrated": model-wide ranks; uniform units unchanged."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from structnets.experiments.lowrank_compress import LowRankCompressConfig, all_units, run_unit

TINY = LowRankCompressConfig(
    datasets=("iris",), ratios=(1 / 2, 1 / 4), seeds=(0,), width=16, depth=3, epochs=30, finetune_epochs=2,
    batch_size=128, lr=1e-2, finetune_lr=1e-3, architectures=(),
)  # fmt: skip


def test_uniform_units_keep_their_keys_and_params() -> None:
    keys = [unit.key for unit in all_units(TINY, None)]
    assert "compressed/iris/ratio=0.5/seed=0" in keys
    assert not any("allocation" in unit.params for unit in all_units(TINY, None))
    calibrated = all_units(dataclasses.replace(TINY, allocation="calibrated"), None)
    assert "compressed/iris/ratio=0.5/seed=0/allocation=calibrated" in [u.key for u in calibrated]
    dense = [u for u in calibrated if u.params["model"] == "dense"]
    assert [u.key for u in dense] == ["dense/iris/seed=0"]  # the dense net is shared by every allocation
    with pytest.raises(ValueError, match=r"`allocation`='budget' needs method='lowrank'"):
        dataclasses.replace(TINY, allocation="budget", method="dlor")
    with pytest.raises(ValueError, match="`allocation` must be one of"):
        dataclasses.replace(TINY, allocation="greedy")


@pytest.mark.parametrize("allocation", ["budget", "calibrated"])
def test_allocated_units_meet_the_flops_budget_of_the_compressed_layers(allocation: str, uci_data) -> None:
    config = dataclasses.replace(TINY, allocation=allocation)
    units = {u.key: u for u in all_units(config, None)}
    dense = run_unit(units["dense/iris/seed=0"].params)
    for ratio in ("0.5", "0.25"):
        rows = {m: run_unit(units[f"{m}/iris/ratio={ratio}/seed=0/allocation={allocation}"].params)
                for m in ("compressed", "finetuned", "scratch")}  # fmt: skip
        assert {row["allocation"] for row in rows.values()} == {allocation}
        # scratch re-initialises the compressed architecture: the same ranks, the same FLOPs
        assert rows["scratch"]["flops"] == rows["compressed"]["flops"] == rows["finetuned"]["flops"]
        # The budget covers the layers before the head (it stays dense, 16 → 3: 2·16·3 + 3 FLOPs per
        # row); compress and cost count FLOPs alike (2 per multiply-add, bias adds), so exactly:
        head = 2 * 16 * 3 + 3
        assert rows["compressed"]["flops"] - head <= float(ratio) * (dense["flops"] - head)
        assert rows["compressed"]["flops"] - head > (float(ratio) - 0.15) * (dense["flops"] - head)
        assert 0 <= rows["compressed"]["accuracy"] <= 1 and np.isfinite(rows["finetuned"]["accuracy"])

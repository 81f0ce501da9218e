"""``--set`` parsing by field type, and config JSON round trips."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Literal

import pytest
from toy_experiment import ToyConfig

from structnets.runner import apply_overrides, config_from_json, config_to_json, parse_overrides
from structnets.runner.config import config_differences, parse_value


@dataclasses.dataclass(frozen=True)
class _Cfg:
    n: int = 1
    lr: float = 0.1
    flag: bool = False
    name: str = "a"
    widths: tuple[int, ...] = (8, 16)
    names: tuple[str, ...] = ("x",)
    ratios: list[float] = dataclasses.field(default_factory=lambda: [0.5])
    pair: tuple[int, str] = (1, "b")
    limit: int | None = None
    mode: Literal["fast", "slow"] = "fast"
    root: Path = Path(".")


def test_parse_overrides_by_field_type() -> None:
    got = parse_overrides(
        _Cfg,
        [
            "n=3",
            "lr=1e-3",
            "flag=yes",
            "name= spaced ",
            "widths=4, 5,6",
            "names=a,b",
            "ratios=0.25,1",
            "pair=7,z",
            "limit=none",
            "mode=slow",
            "root=/tmp/x",
        ],
    )
    assert got == {
        "n": 3,
        "lr": 1e-3,
        "flag": True,
        "name": " spaced ",
        "widths": (4, 5, 6),
        "names": ("a", "b"),
        "ratios": [0.25, 1.0],
        "pair": (7, "z"),
        "limit": None,
        "mode": "slow",
        "root": Path("/tmp/x"),
    }
    assert isinstance(got["ratios"][1], float)
    assert parse_overrides(_Cfg, ["limit=12", "widths=", "flag=0"]) == {"limit": 12, "widths": (), "flag": False}


@pytest.mark.parametrize(
    ("assignment", "message"),
    [
        ("n=1.5", "`n` must be an int, got '1.5'"),
        ("lr=fast", "`lr` must be a float"),
        ("flag=maybe", "`flag` must be a bool"),
        ("widths=1,x", "`widths` must be an int, got 'x'"),
        ("pair=1", "`pair` must be 2 comma-separated values"),
        ("mode=medium", "`mode` must be one of 'fast', 'slow'"),
        ("limit=lots", "`limit` must be int | None"),
        ("nope=1", "unknown config key 'nope' for _Cfg; valid keys: n, lr, flag, name, widths"),
        ("n", "--set expects key=value, got 'n'"),
    ],
)
def test_parse_overrides_errors_name_the_field(assignment: str, message: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_overrides(_Cfg, [assignment])
    assert message in str(info.value)


def test_parse_value_rejects_unsupported_types() -> None:
    with pytest.raises(ValueError, match="`d` has type dict"):
        parse_value("1", dict, name="d")


def test_apply_overrides_runs_config_validation() -> None:
    cfg = apply_overrides(ToyConfig.quick(), ["seeds=5,6,7", "scale=2"])
    assert cfg == dataclasses.replace(ToyConfig.quick(), seeds=(5, 6, 7), scale=2.0)
    with pytest.raises(ValueError, match="`arms` must be a positive int"):
        apply_overrides(ToyConfig(), ["arms=0"])


def test_config_json_round_trip_restores_tuples() -> None:
    cfg = ToyConfig(seeds=(3, 4), scale=2.0, label="z")
    data = config_to_json(cfg)
    assert data["seeds"] == [3, 4]
    back = config_from_json(ToyConfig, data)
    assert back == cfg and isinstance(back.seeds, tuple)
    assert config_from_json(ToyConfig, {**data, "scale": 2}) == cfg  # an int in JSON for a float field
    with pytest.raises(ValueError, match="does not define"):
        config_from_json(ToyConfig, {**data, "ghost": 1})


def test_config_differences_lists_each_field() -> None:
    diffs = config_differences({"a": 1, "b": [1]}, {"a": 2, "b": [1], "c": "x"})
    assert diffs == ["a: stored 1, requested 2", 'c: stored "<missing>", requested "x"']

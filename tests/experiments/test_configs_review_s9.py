"""Review (session 9) of the experiments' config validation: bad values are refused before a run folder exists.

Every swept or listed field of every experiment config must hold distinct entries: a repeat gave two
units one key (``structnets run swish-construction --set Ms_1d=2,2`` failed after the run folder was
made, with "units() returned the key ... twice") or silently ran, averaged or counted an entry twice
(a repeated seed in a seed-batched training).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from structnets.cli import main
from structnets.experiments import get, names

# Fields whose entries describe one architecture stage by stage (or pair with another field's
# entries), where a repeat is a legitimate value rather than a repeated unit.
_REPEATS_ALLOWED = {
    ("lipschitz-density", "unbounded_widths"),  # pairs with unbounded_depths; the pairs are checked
    ("lipschitz-density", "unbounded_depths"),
    ("lipschitz-mnist-conv", "channels"),  # per stage
    ("lipschitz-mnist-conv", "depths"),  # per stage
    ("lipschitz-mnist-conv", "hidden_channels"),  # per stage
}


def _sequence_fields() -> list[tuple[str, str]]:
    out = []
    for name in names():
        config_class = get(name).config_class
        quick, default = config_class.quick(), config_class()
        for field in dataclasses.fields(config_class):
            value = getattr(quick, field.name) or getattr(default, field.name)
            if isinstance(value, tuple) and value and (name, field.name) not in _REPEATS_ALLOWED:
                out.append((name, field.name))
    return out


SEQUENCE_FIELDS = _sequence_fields()


def test_the_sweep_finds_the_fields() -> None:
    assert ("swish-construction", "Ms_1d") in SEQUENCE_FIELDS
    assert ("lowrank-uci", "seeds") in SEQUENCE_FIELDS
    assert len(SEQUENCE_FIELDS) > 60


@pytest.mark.parametrize(("name", "field"), SEQUENCE_FIELDS, ids=[f"{n}-{f}" for n, f in SEQUENCE_FIELDS])
def test_a_repeated_entry_is_refused(name: str, field: str) -> None:
    config_class = get(name).config_class
    quick = config_class.quick()
    base = quick if getattr(quick, field) else config_class()
    value = getattr(base, field)
    with pytest.raises(ValueError, match=rf"`{field}`.*(distinct|without repeats)") as error:
        dataclasses.replace(base, **{field: (*value, value[0])})
    assert repr(value[0]) in str(error.value)


@pytest.mark.parametrize(
    ("name", "field"),
    [(n, f) for n, f in SEQUENCE_FIELDS if isinstance(getattr(get(n).config_class(), f)[0], float)],
)
def test_floats_equal_at_key_precision_are_refused(name: str, field: str) -> None:
    # unit keys write floats with :g (6 significant digits): 2.0 and 2.0000001 would share a key
    config_class = get(name).config_class
    quick = config_class.quick()
    base = quick if getattr(quick, field) else config_class()
    value = getattr(base, field)
    with pytest.raises(ValueError, match=rf"`{field}`.*(distinct|without repeats)"):
        dataclasses.replace(base, **{field: (*value, value[0] * (1 + 1e-9))})


def test_smoothness_rates_repeated_target_pairs_are_refused() -> None:
    config_class = get("smoothness-rates").config_class
    with pytest.raises(ValueError, match="`targets` must list distinct values"):
        config_class.quick().__class__(targets=((1, 1.0), (1, 1.0000000001)))


def test_cli_repeated_grid_value_is_refused_before_the_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    code = main(["run", "swish-construction", "--quick", "--set", "Ms_1d=2,2", "--out", str(out)])
    assert code != 0
    assert not out.exists()
    assert "`Ms_1d` must list distinct values" in capsys.readouterr().err

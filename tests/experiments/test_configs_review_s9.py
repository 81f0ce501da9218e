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


def _seed_fields() -> list[tuple[str, str]]:
    out = []
    for name in names():
        for field in dataclasses.fields(get(name).config_class):
            if "seed" in field.name:
                out.append((name, field.name))
    return out


SEED_FIELDS = _seed_fields()


def test_the_seed_sweep_finds_the_fields() -> None:
    assert ("dlor-blindspot", "data_seed") in SEED_FIELDS
    assert ("lipschitz-moons", "claim_seeds") in SEED_FIELDS
    assert len(SEED_FIELDS) >= 20


@pytest.mark.parametrize(("name", "field"), SEED_FIELDS, ids=[f"{n}-{f}" for n, f in SEED_FIELDS])
@pytest.mark.parametrize("seed", [-1, 2**32, True, 1.5], ids=["negative", "2**32", "bool", "float"])
def test_a_seed_out_of_range_or_not_an_int_is_refused(name: str, field: str, seed: object) -> None:
    # NumPy's RandomState and scikit-learn refuse seeds outside [0, 2**32 - 1] ("Seed must be between
    # 0 and 2**32 - 1"): such a seed passed the config and failed inside the first unit
    config_class = get(name).config_class
    base = config_class.quick()
    value = (seed,) if isinstance(getattr(base, field), tuple) else seed
    with pytest.raises((ValueError, TypeError), match=rf"`{field}` must be (an int|ints)"):
        dataclasses.replace(base, **{field: value})


def test_the_largest_seed_is_accepted() -> None:
    config_class = get("dlor-blindspot").config_class
    config = dataclasses.replace(config_class.quick(), seeds=(2**32 - 1,), data_seed=2**32 - 1)
    assert config.seeds == (2**32 - 1,)


def test_lowrank_uci_seed_bound_keeps_the_estimator_seed_below_2_32() -> None:
    # the cv unit seeds its estimator with 1000·seed + fold: seed 5,000,000 passed and every cv unit failed
    config_class = get("lowrank-uci").config_class
    with pytest.raises(ValueError, match=r"`seeds` must be ints in \[0, 4294967\].*folds=3.*got 5000000"):
        dataclasses.replace(config_class.quick(), seeds=(5_000_000,))
    top = (2**32 - 3) // 1000
    assert 1000 * top + 2 <= 2**32 - 1
    dataclasses.replace(config_class.quick(), seeds=(top,))


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("validation_fraction", 0.0),
        ("validation_fraction", -1.0),
        ("validation_fraction", 1.0),
        ("latency_batch", 0),
        ("latency_batch", -1),
        ("latency_pairs", 0),
        ("latency_pairs", -1),
    ],
)
def test_lowrank_uci_refuses_what_its_units_fail_on(field: str, value: object) -> None:
    # each was accepted; the cv or efficiency units then failed (`validation_fraction` must be ... in
    # (0.0, 1.0); `pairs` must be an int >= 1; `input_shape` must be an int >= 0), and a batch of 0
    # timed an empty forward pass
    config_class = get("lowrank-uci").config_class
    with pytest.raises(ValueError, match=rf"`{field}` must be"):
        dataclasses.replace(config_class.quick(), **{field: value})


@pytest.mark.parametrize("value", [0.0, -1.0])
def test_dlor_sawtooth_refuses_a_dense_lr_that_is_not_positive(value: float) -> None:
    # accepted: the dense MLP of the correspondence then trained with a zero or negative step
    config_class = get("dlor-sawtooth").config_class
    with pytest.raises(ValueError, match=r"`dense_lr` must be a real number in \(0.0, inf\]"):
        dataclasses.replace(config_class.quick(), dense_lr=value)


@pytest.mark.parametrize("value", [0, -1])
def test_dlor_sawtooth_dense_width_error_names_dense_width(value: int) -> None:
    # the message blamed `width` ("`width` must be >= dim + 1 = 2 for target 'd1t2', got 8")
    config_class = get("dlor-sawtooth").config_class
    with pytest.raises(ValueError, match=rf"`dense_width` must be an int >= 1, got {value}"):
        dataclasses.replace(config_class.quick(), dense_width=value)


@pytest.mark.parametrize("field", ["depths", "widths"])
def test_lipschitz_mnist_refuses_an_empty_architecture_grid(field: str) -> None:
    # widths=() was accepted and units() died in an IndexError (widths[0]); depths=() made a run of
    # one timing unit and no training
    config_class = get("lipschitz-mnist").config_class
    with pytest.raises(ValueError, match=r"`depths` and `widths` must each list at least one value"):
        dataclasses.replace(config_class.quick(), **{field: ()})


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("test_points", 0),
        ("test_points", -1),
        ("approx_train", 0),
        ("approx_train", -1),
        ("input_scale", 0.0),
        ("input_scale", -1.0),
        ("levels", 0),
        ("levels", 65537),
    ],
)
def test_smoothness_rates_refuses_sizes_its_units_cannot_use(field: str, value: object) -> None:
    config_class = get("smoothness-rates").config_class
    with pytest.raises(ValueError, match=rf"`{field}` must be"):
        dataclasses.replace(config_class.quick(), **{field: value})


@pytest.mark.parametrize(
    ("field", "value"),
    [("Ms_1d", (0,)), ("Ms_2d", (-1,)), ("sweep_M_1d", 0), ("sweep_M_2d", 0), ("taus", (0.0,)), ("lams", (-1.0,))],
)
def test_swish_construction_errors_name_the_field(field: str, value: object) -> None:
    # the messages named `M`, `tau` and `lam`, fields that do not exist (`--set M=...` is refused)
    config_class = get("swish-construction").config_class
    with pytest.raises(ValueError, match=rf"^`{field}` must be"):
        dataclasses.replace(config_class.quick(), **{field: value})


@pytest.mark.parametrize(
    ("name", "field", "rows"),
    [
        ("lipschitz-mnist", "max_train", 60000),
        ("lipschitz-mnist", "max_test", 10000),
        ("lipschitz-mnist-conv", "max_train", 60000),
        ("lipschitz-mnist-conv", "max_test", 10000),
        ("lowrank-compress", "curve_max_train", 60000),
        ("lowrank-compress", "curve_max_test", 10000),
    ],
)
def test_an_mnist_cap_above_the_split_is_refused(name: str, field: str, rows: int) -> None:
    # max_test=20000 silently kept the 10,000 test images while run_info.json said 20000
    config_class = get(name).config_class
    with pytest.raises(ValueError, match=rf"`{field}` must be an int in \[10, {rows}\] .*got {rows + 1}"):
        dataclasses.replace(config_class.quick(), **{field: rows + 1})
    assert getattr(dataclasses.replace(config_class.quick(), **{field: rows}), field) == rows
    with pytest.raises(ValueError, match=rf"`{field}` must be an int >= 10, got 0"):
        dataclasses.replace(config_class.quick(), **{field: 0})


@pytest.mark.parametrize(
    ("name", "overrides", "message"),
    [
        # 0 units: the run "finished" with an empty table (rc 0)
        ("swish-construction", {"Ms_1d": (), "Ms_2d": (), "taus": (), "lams": ()}, r"`Ms_1d` must list at least one M"),
        ("swish-construction", {"targets": ("power:2:1.5",), "Ms_2d": ()}, r"`Ms_2d` must list at least one M"),
        # 0 units, then report() failed on the stored results: KeyError: 'target'
        ("smooth-constant-depth", {"Ks_1d": (), "Ks_2d": (), "Ks_3d": ()}, r"`Ks_1d` must list at least one K"),
        ("smooth-constant-depth", {"targets": ("sine:3:1",), "Ks_3d": ()}, r"`Ks_3d` must list at least one K"),
        ("lipschitz-moons", {"depths": (), "widths": ()}, r"`depths` and `widths` must not both be empty"),
    ],
)
def test_a_config_that_makes_no_units_is_refused(name: str, overrides: dict[str, object], message: str) -> None:
    config_class = get(name).config_class
    with pytest.raises(ValueError, match=message):
        dataclasses.replace(config_class.quick(), **overrides)


def test_every_quick_config_and_default_still_make_units() -> None:
    from structnets.runner.schedule import results_frame

    for name in names():
        experiment = get(name)
        for config in (experiment.config_class.quick(), experiment.config_class()):
            assert experiment.units(config, results_frame([])), name


def test_smooth_constant_depth_errors_name_the_field() -> None:
    config_class = get("smooth-constant-depth").config_class
    with pytest.raises(ValueError, match=r"^`Ks_2d` must be an int >= 1, got 0"):
        dataclasses.replace(config_class.quick(), Ks_2d=(0,))


def test_cli_empty_run_is_refused_before_the_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    argv = ["run", "smooth-constant-depth", "--quick", "--set", "Ks_1d=", "Ks_2d=", "Ks_3d=", "--out", str(out)]
    assert main(argv) != 0
    assert not out.exists()
    assert "`Ks_1d` must list at least one K" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("name", "targets"),
    [
        # the same target under two spellings: every unit ran twice, with two rows in the tables
        ("swish-construction", ("power:1:1.5", "power:1:1.50")),
        ("smooth-constant-depth", ("sine:1:1", "sine:01:1.0")),
        ("dlor-sawtooth", ("d1t2", "d01t2")),
    ],
)
def test_one_target_under_two_spellings_is_refused(name: str, targets: tuple[str, ...]) -> None:
    config_class = get(name).config_class
    with pytest.raises(ValueError, match=r"`targets` must list distinct targets, got .*: .* are the same target"):
        dataclasses.replace(config_class.quick(), targets=targets)


def test_lowrank_uci_sensitivity_ratios_equal_in_model_names_are_refused() -> None:
    # a model is named f"ratio={r:.4g}": 0.12345 and 0.12346 both became "ratio=0.1235", and one of
    # the two ratios was silently dropped from the cv stage
    config_class = get("lowrank-uci").config_class
    with pytest.raises(ValueError, match=r"`sensitivity` must be distinct to 4 significant digits"):
        dataclasses.replace(config_class.quick(), sensitivity=(0.12345, 0.12346))
    dataclasses.replace(config_class.quick(), sensitivity=(0.1234, 0.1235))


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"Ms_1d": (4, 10**12)}, r"`Ms_1d` entry M=1000000000000 \(target 'power:1:0.5', d=1\) ask for .* more than"),
        ({"Ms_2d": (4, 10**9)}, r"`Ms_2d` entry M=1000000000 \(target 'power:2:1.5', d=2\) ask for"),
        ({"sweep_M_1d": 10**12}, r"`sweep_M_1d` entry M=1000000000000"),
        ({"grid_1d": 10**13}, r"`grid_1d`=10000000000000 \(target 'power:1:0.5', d=1\) ask for .* grid values"),
        ({"grid_2d": 10**7}, r"`grid_2d`=10000000 \(target 'power:2:1.5', d=2\) ask for .* grid values"),
    ],
)
def test_swish_construction_refuses_units_larger_than_memory(overrides: dict[str, object], message: str) -> None:
    # accepted; each unit then failed in swish_approximator's own memory check, or tried to allocate
    # the evaluation grid (torch.linspace of 10^13 points)
    config_class = get("swish-construction").config_class
    with pytest.raises(ValueError, match=message):
        dataclasses.replace(config_class(), **overrides)


def _numpy_version(value: object) -> object:
    import numpy as np

    if isinstance(value, bool):
        return np.bool_(value)
    if isinstance(value, int):
        return np.int64(value)
    if isinstance(value, float):
        return np.float64(value)
    if isinstance(value, str):
        return np.str_(value)
    if isinstance(value, tuple):
        return tuple(_numpy_version(v) for v in value)
    return value


@pytest.mark.parametrize("name", names())
def test_numpy_scalars_become_the_python_values_they_equal(name: str) -> None:
    # a config built with np.int64 / np.float64 values (e.g. from a NumPy grid) passed its checks,
    # then the run failed after its folder existed: "params of unit ... are not JSON-serialisable:
    # Object of type int64 is not JSON serializable"
    import json

    from structnets.runner.schedule import results_frame

    experiment = get(name)
    quick = experiment.config_class.quick()
    values = {f.name: _numpy_version(getattr(quick, f.name)) for f in dataclasses.fields(quick) if f.init}
    config = dataclasses.replace(quick, **values)
    assert config == quick

    def plain(value: object) -> bool:
        if isinstance(value, tuple):
            return all(plain(v) for v in value)
        return value is None or type(value) in (bool, int, float, str)

    for field in dataclasses.fields(config):
        assert plain(getattr(config, field.name)), (field.name, getattr(config, field.name))
    for unit in experiment.units(config, results_frame([])):
        json.dumps(dict(unit.params), allow_nan=False)


def test_a_numpy_array_of_grid_values_becomes_a_tuple() -> None:
    import numpy as np

    config_class = get("swish-construction").config_class
    config = dataclasses.replace(config_class.quick(), Ms_1d=np.array([4, 8, 16]))
    assert config.Ms_1d == (4, 8, 16)
    assert all(type(M) is int for M in config.Ms_1d)


def test_lowrank_uci_refuses_more_folds_than_rows() -> None:
    # accepted; every cv unit then failed: "Cannot have number of splits n_splits=500 greater than the
    # number of samples: n_samples=414"
    config_class = get("lowrank-uci").config_class
    with pytest.raises(
        ValueError, match=r"`folds` must be at most the rows of every data set \('real-estate' has 414\)"
    ):
        config_class(datasets=("real-estate",), folds=500)
    with pytest.raises(ValueError, match=r"\('iris' has 60 with max_rows=60\), got 61"):
        config_class(datasets=("iris",), folds=61, max_rows=60)
    assert config_class(datasets=("real-estate",), folds=414).folds == 414


@pytest.mark.parametrize(
    ("n_samples", "fraction", "sides"),
    [(20, 0.01, "0 training and 20 test"), (20, 0.05, "1 training and 19 test"), (20, 0.95, "19 training and 1 test")],
)
def test_lipschitz_moons_refuses_a_split_without_both_moons(n_samples: int, fraction: float, sides: str) -> None:
    # accepted; every unit then failed in scikit-learn's split ("the resulting train set will be empty",
    # "The train_size = 1 should be greater or equal to the number of classes = 2")
    config_class = get("lipschitz-moons").config_class
    with pytest.raises(
        ValueError, match=rf"`train_fractions` entry {fraction} of `n_samples`={n_samples} gives {sides}"
    ):
        dataclasses.replace(config_class.quick(), n_samples=n_samples, train_fractions=(fraction,))
    dataclasses.replace(config_class.quick(), n_samples=21, train_fractions=(0.5,))


@pytest.mark.parametrize(
    ("name", "overrides", "message"),
    [
        ("lowrank-uci", {"widths": (32, 10**7)}, r"`widths` entry 10000000 \(`depths` up to 3\) ask for"),
        ("lowrank-uci", {"efficiency_widths": (10**7,)}, r"`efficiency_widths` entry 10000000 ask for"),
        ("rank-bounds", {"widths": (10**7,)}, r"`widths` entry 10000000 \(`depths` up to \d+\) ask for"),
        ("lipschitz-mnist", {"widths": (10**7,)}, r"`widths` entry 10000000 \(`depths` up to \d+\) ask for"),
        ("lipschitz-moons", {"widths": (10**7,)}, r"`widths` entry 10000000 \(`width_sweep_depth`=\d+\) ask for"),
        ("lipschitz-moons", {"depth_sweep_width": 10**7}, r"`depths` entry \d+ \(`depth_sweep_width`=10000000\) ask"),
        ("lowrank-compress", {"width": 10**7}, r"`width`=10000000, `depth`=\d+ ask for"),
    ],
)
def test_a_network_larger_than_memory_is_refused(name: str, overrides: dict[str, object], message: str) -> None:
    # accepted; every unit then died allocating 10^14 weights (or the machine ran out of memory)
    config_class = get(name).config_class
    with pytest.raises(ValueError, match=message + r" .*float32 weights.*more than this machine's memory"):
        dataclasses.replace(config_class.quick(), **overrides)


@pytest.mark.parametrize("name", ["swish-construction", "smooth-constant-depth"])
@pytest.mark.parametrize(
    ("spec", "message"),
    [
        # an OverflowError traceback out of `structnets run ... --set targets=sine:1:1e300`
        ("sine:1:1e300", r"`targets` entry 'sine:1:1e300': .*out of range"),
        # accepted; every unit failed: "`R` must be finite ..., got inf"
        ("power:1:1001", r"`targets` entry 'power:1:1001' is out of range: .* got order 1000 and R=inf"),
        # accepted; every unit failed: "OverflowError: int too large to convert to float"
        ("sine:1:300", r"`targets` entry 'sine:1:300' is out of range: .* got order 299"),
        ("power:1:-1", r"`targets` entry 'power:1:-1': `beta` must be"),
    ],
)
def test_a_target_the_constructions_cannot_build_is_refused(name: str, spec: str, message: str) -> None:
    config_class = get(name).config_class
    with pytest.raises(ValueError, match=message):
        dataclasses.replace(config_class.quick(), targets=(spec,))


def test_the_largest_taylor_order_is_accepted() -> None:
    config_class = get("swish-construction").config_class
    assert dataclasses.replace(config_class.quick(), targets=("sine:1:171",)).targets == ("sine:1:171",)


def test_cli_overflowing_target_is_a_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    assert main(["run", "swish-construction", "--quick", "--set", "targets=sine:1:1e300", "--out", str(out)]) == 2
    assert not out.exists()
    assert "`targets` entry 'sine:1:1e300'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("name", "assignment", "message"),
    [
        ("lipschitz-moons", "n_samples=" + "9" * 400, r"`n_samples`=9+ ask for"),
        ("swish-construction", "grid_2d=" + "9" * 400, r"`grid_2d`=9+ asks for more than 2\*\*64 grid points"),
    ],
)
def test_a_huge_int_is_a_value_error_not_an_overflow(name: str, assignment: str, message: str) -> None:
    from structnets.runner import apply_overrides

    config_class = get(name).config_class
    with pytest.raises(ValueError, match=message):
        apply_overrides(config_class.quick(), [assignment])


@pytest.mark.parametrize("value", ["foo", 1, None])
def test_lowrank_uci_refuses_an_unknown_activation(value: object) -> None:
    # not checked: the run made its folder and every unit's estimator refused it
    config_class = get("lowrank-uci").config_class
    with pytest.raises((ValueError, TypeError), match=r"`activation` must be one of"):
        dataclasses.replace(config_class.quick(), activation=value)


@pytest.mark.parametrize(("name", "field"), [(n, f) for n, f in SEED_FIELDS if f.endswith("seeds")])
def test_a_bare_int_for_a_tuple_of_seeds_is_refused(name: str, field: str) -> None:
    # dlor-sawtooth correspondence_seeds=5 passed and units() failed iterating an int; lowrank-compress
    # and lowrank-uci raised an unnamed "TypeError: 'int' object is not iterable"
    config_class = get(name).config_class
    with pytest.raises(TypeError, match=rf"`{field}` must be a tuple of ints"):
        dataclasses.replace(config_class.quick(), **{field: 5})


def test_lowrank_uci_huge_folds_names_folds() -> None:
    # the folds bound comes before the seed bound, which depends on folds
    config_class = get("lowrank-uci").config_class
    with pytest.raises(ValueError, match=r"^`folds` must be at most the rows"):
        dataclasses.replace(config_class.quick(), folds=10**20)


def test_dlor_sawtooth_refuses_correspondence_units_without_hs() -> None:
    # accepted; every correspondence unit then died in an UnboundLocalError (its loop over hs was empty)
    config_class = get("dlor-sawtooth").config_class
    with pytest.raises(ValueError, match=r"`hs` must list at least one h when `correspondence_seeds` is not empty"):
        dataclasses.replace(config_class.quick(), hs=())
    assert dataclasses.replace(config_class.quick(), hs=(), correspondence_seeds=()).hs == ()


def test_dlor_blindspot_refuses_decompose_sizes_without_kinds() -> None:
    # accepted; the decompose stage silently made no unit while decompose_sizes asked for it
    config_class = get("dlor-blindspot").config_class
    with pytest.raises(ValueError, match=r"`decompose_kinds` must name at least one of .* when `decompose_sizes`"):
        dataclasses.replace(config_class.quick(), decompose_kinds=())
    assert dataclasses.replace(config_class.quick(), decompose_kinds=(), decompose_sizes=()).decompose_kinds == ()


def test_smoothness_rates_refuses_approximation_units_of_no_seed() -> None:
    # approx_seeds=() made approximation units that fit no seed
    config_class = get("smoothness-rates").config_class
    with pytest.raises(ValueError, match=r"`approx_seeds` must not be empty when `parts` includes approximation"):
        dataclasses.replace(config_class.quick(), approx_seeds=())
    assert dataclasses.replace(config_class.quick(), parts=("estimation",), approx_seeds=()).approx_seeds == ()


@pytest.mark.parametrize("field", ["approx_targets", "approx_parameters"])
@pytest.mark.parametrize("parts", [("approximation",), ("estimation", "relu-floor")])
def test_smoothness_rates_refuses_a_named_part_without_units(field: str, parts: tuple[str, ...]) -> None:
    # a part named on its own with an empty grid was a part of 0 units; with every part (the default) an
    # empty grid still means "no such units", as the documented c_N = 32 run used it (docs/smoothness.md)
    config_class = get("smoothness-rates").config_class
    with pytest.raises(ValueError, match=rf"`{field}` must not be empty when `parts` names"):
        dataclasses.replace(config_class.quick(), parts=parts, **{field: ()})
    assert getattr(dataclasses.replace(config_class.quick(), **{field: ()}), field) == ()


@pytest.mark.parametrize(("part", "field"), [("deep-linear", "linear_depths"), ("fixed-norm", "norm_depths")])
def test_rank_bounds_refuses_a_named_part_without_units(part: str, field: str) -> None:
    # --set parts=deep-linear linear_depths= was a run of 0 units
    config_class = get("rank-bounds").config_class
    with pytest.raises(ValueError, match=rf"`{field}` must not be empty when `parts` names '{part}'"):
        dataclasses.replace(config_class.quick(), parts=(part,), **{field: ()})
    assert getattr(dataclasses.replace(config_class.quick(), **{field: ()}), field) == ()  # all parts: "empty: none"


def test_dlor_universality_refuses_a_neuron_count_whose_fit_cannot_fit_in_memory() -> None:
    # accepted; every unit then failed in fit_shallow's memory check (or its (points + J) × J system)
    config_class = get("dlor-universality").config_class
    with pytest.raises(ValueError, match=r"`neurons` entry 10000000 \(`fit_per_axis`=32\) ask for .* least-squares"):
        dataclasses.replace(config_class.quick(), neurons=(4, 10**7))


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"pieces_1d": (10**12,)}, r"`pieces_1d` entry 1000000000000 ask for .* knots and values"),
        ({"groups_2d": (10**12,)}, r"`groups_2d` entry 1000000000000 \(`group_size_2d`=2\) ask for .* slopes"),
        ({"group_size_2d": 10**12}, r"`groups_2d` entry 2 \(`group_size_2d`=1000000000000\) ask for"),
        ({"eval_per_axis_1d": 10**12}, r"`eval_per_axis_1d`=1000000000000 ask for .* coordinates"),
        ({"eval_per_axis_2d": 10**7}, r"`eval_per_axis_2d`=10000000 ask for .* coordinates"),
        ({"train_per_axis_2d": 10**20}, r"`train_per_axis_2d`=100000000000000000000 asks for more than 2\*\*64"),
    ],
)
def test_lipschitz_density_refuses_targets_and_grids_larger_than_memory(
    overrides: dict[str, object], message: str
) -> None:
    # pieces_1d=10**12 was accepted; units() then raised the constructions' memory error as a
    # traceback, after the run folder (results.db) existed
    config_class = get("lipschitz-density").config_class
    with pytest.raises(ValueError, match=message):
        dataclasses.replace(config_class.quick(), **overrides)


@pytest.mark.parametrize(
    ("budget", "message"),
    [
        (1e300, r"`budget`=1e\+300 (makes the estimation width at n=\d+, .* overflow|\(n=\d+, .*\) ask for)"),
        (1e12, r"`budget`=1000000000000.0 \(n=\d+, d=\d, s=[\d.]+, L=\d\) ask for .* float64 parameters"),
    ],
)
def test_smoothness_rates_refuses_a_budget_whose_networks_cannot_exist(budget: float, message: str) -> None:
    # budget=1e300 was accepted and units() raised "OverflowError: int too large to convert to float"
    config_class = get("smoothness-rates").config_class
    with pytest.raises(ValueError, match=message):
        dataclasses.replace(config_class.quick(), budget=budget)


@pytest.mark.parametrize(
    ("name", "field", "value"),
    [
        ("lipschitz-moons", "depth_sweep_width", 0),
        ("lipschitz-moons", "width_sweep_depth", 0),
        ("lowrank-uci", "efficiency_widths", (2,)),
    ],
)
def test_errors_name_the_field_not_its_neighbour(name: str, field: str, value: object) -> None:
    # they were reported as `widths` / `depths`
    config_class = get(name).config_class
    with pytest.raises(ValueError, match=rf"^`{field}` must be an int"):
        dataclasses.replace(config_class.quick(), **{field: value})

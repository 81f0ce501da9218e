"""``fit(..., checkpoint=path)``: a training killed between or inside epochs resumes to the same weights, bit for bit."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from structnets.models import lipschitz_convnet, lipschitz_resnet
from structnets.training import checkpoint as ckpt
from structnets.training import fit, seeded
from structnets.training.losses import certified_loss


class Killed(Exception):
    """Stands for SIGKILL: raised from inside a training step."""


def _killing(loss, at_step: int):
    """``loss`` that raises at optimiser step ``at_step`` (0-based) of this call."""
    count = [0]

    def wrapped(output, target):
        if count[0] == at_step:
            raise Killed
        count[0] += 1
        return loss(output, target)

    return wrapped


def _data(n: int, d: int, classes: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(n, d, generator=g), torch.randint(classes, (n,), generator=g)


def _same_weights(a: nn.Module, b: nn.Module) -> None:
    for (name, x), (_, y) in zip(a.state_dict().items(), b.state_dict().items(), strict=True):
        assert torch.equal(x, y), name


def _dense(seed: int = 0) -> nn.Module:
    with seeded(seed):
        return lipschitz_resnet(20, 4, 16, 3, bound="verified-batched")


def _conv(seed: int = 0) -> nn.Module:
    with seeded(seed):
        return lipschitz_convnet(
            1, 4, 8, channels=[4, 8], depths=[1, 1], kernel_size=3, head_width=16, head_depth=1,
            flat_input=True, bound="verified", head_bound="verified",
        )  # fmt: skip


CASES = {
    "dense verified-batched, cosine via scheduler": (
        _dense, 20, dict(schedule=lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=40),
                         optimizer=lambda p: torch.optim.Adam(p, lr=5e-3))
    ),
    "dense, fit's fused Adam, named cosine": (_dense, 20, dict(schedule="cosine", lr=5e-3)),
    "conv verified (per-frequency vectors and margins)": (_conv, 64, dict(schedule="cosine", lr=5e-3)),
    "dense, validation split and patience": (
        _dense, 20, dict(validation_fraction=0.25, patience=50, lr=5e-3)
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize(
    "kill_at", [13, 20, 47]
)  # 10 steps per epoch: inside epoch 1, at the first step of 2, inside 4
def test_resumed_training_equals_uninterrupted(tmp_path, case, kill_at):
    build, d, options = CASES[case]
    X, y = _data(160, d, 4)
    loss = certified_loss("margin-ce", margin=0.5, temperature=1.0)
    common = dict(epochs=6, batch_size=16 if "validation" not in case else 12, seed=3, **options)
    reference = build()
    expected = fit(reference, X, y, loss=loss, **common)

    model, path = build(), tmp_path / "fit.ckpt"
    with pytest.raises(Killed):
        fit(model, X, y, loss=_killing(loss, kill_at), checkpoint=path, **common)
    assert path.exists()
    resumed_model = build()  # a fresh process builds the model again from its seed
    result = fit(resumed_model, X, y, loss=loss, checkpoint=path, **common)
    _same_weights(resumed_model, reference)
    assert result.train_loss == expected.train_loss
    assert result.val_loss == expected.val_loss
    assert result.epochs_run == expected.epochs_run
    assert (result.best_epoch, result.best_loss) == (expected.best_epoch, expected.best_loss)
    if "verified" in case:  # the margins that set the next guess were restored too
        assert ckpt.training_state(resumed_model).keys() == ckpt.training_state(reference).keys()
        for name, state in ckpt.training_state(resumed_model).items():
            assert state["verified_margin"] == ckpt.training_state(reference)[name]["verified_margin"], name


@pytest.mark.parametrize(
    "case", ["dense, fit's fused Adam, named cosine", "conv verified (per-frequency vectors and margins)"]
)
def test_resumed_training_on_cuda_equals_uninterrupted_on_cuda(tmp_path, case, cuda_device):
    """The same on the GPU: the checkpoint holds device tensors, read back on the host (``map_location="cpu"``)
    and loaded into the device model and optimiser (a host moment meeting a device parameter would raise)."""
    build, d, options = CASES[case]
    X, y = (t.to(cuda_device) for t in _data(160, d, 4))
    loss = certified_loss("margin-ce", margin=0.5, temperature=1.0)
    common = dict(epochs=4, batch_size=16, seed=3, **options)
    reference = build().to(cuda_device)
    expected = fit(reference, X, y, loss=loss, **common)
    path = tmp_path / "fit.ckpt"
    with pytest.raises(Killed):
        fit(build().to(cuda_device), X, y, loss=_killing(loss, 23), checkpoint=path, **common)
    resumed_model = build().to(cuda_device)
    result = fit(resumed_model, X, y, loss=loss, checkpoint=path, **common)
    assert all(p.device.type == "cuda" for p in resumed_model.parameters())
    _same_weights(resumed_model, reference)
    assert (result.train_loss, result.val_loss) == (expected.train_loss, expected.val_loss)


def test_without_the_layer_state_the_resume_differs(tmp_path, monkeypatch):
    """The check above can fail: dropping the conv bounds' state makes the resumed weights differ."""
    X, y = _data(160, 64, 4)
    loss = certified_loss("margin-ce", margin=0.5, temperature=1.0)
    common = dict(epochs=4, batch_size=16, seed=3, schedule="cosine", lr=5e-3)
    reference = _conv()
    fit(reference, X, y, loss=loss, **common)
    path = tmp_path / "fit.ckpt"
    with pytest.raises(Killed):
        fit(_conv(), X, y, loss=_killing(loss, 25), checkpoint=path, **common)
    monkeypatch.setattr(ckpt, "load_training_state", lambda model, state: None)
    resumed = _conv()
    fit(resumed, X, y, loss=loss, checkpoint=path, **common)
    assert any(not torch.equal(a, b) for a, b in zip(resumed.state_dict().values(), reference.state_dict().values()))


def test_finished_checkpoint_trains_nothing_more(tmp_path):
    X, y = _data(64, 20, 4)
    path = tmp_path / "fit.ckpt"
    model = _dense()
    first = fit(model, X, y, loss="cross_entropy", epochs=3, batch_size=16, checkpoint=path)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    calls = []
    again = fit(model, X, y, loss="cross_entropy", epochs=3, batch_size=16, checkpoint=path,
                callback=lambda e, logs: calls.append(e))  # fmt: skip
    assert calls == [] and again.train_loss == first.train_loss and again.epochs_run == 3
    assert again.wall_time >= first.wall_time
    for k, v in model.state_dict().items():
        assert torch.equal(v, before[k]), k


def test_checkpoint_of_another_training_is_refused(tmp_path):
    X, y = _data(64, 20, 4)
    path = tmp_path / "fit.ckpt"
    fit(_dense(), X, y, loss="cross_entropy", epochs=2, batch_size=16, checkpoint=path)
    with pytest.raises(ValueError, match=r"`checkpoint`=.*another training.*lr"):
        fit(_dense(), X, y, loss="cross_entropy", epochs=2, batch_size=16, lr=2e-3, checkpoint=path)
    with pytest.raises(ValueError, match=r"another training.*data"):
        fit(_dense(), X + 1, y, loss="cross_entropy", epochs=2, batch_size=16, checkpoint=path)
    with seeded(0):
        other = lipschitz_resnet(20, 4, 8, 3, bound="verified-batched")
    with pytest.raises(ValueError, match=r"another training.*model"):
        fit(other, X, y, loss="cross_entropy", epochs=2, batch_size=16, checkpoint=path)


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage", "empty"])
def test_damaged_checkpoint_warns_and_trains_from_scratch(tmp_path, damage):
    X, y = _data(64, 20, 4)
    path = tmp_path / "fit.ckpt"
    reference = _dense()
    expected = fit(reference, X, y, loss="cross_entropy", epochs=3, batch_size=16)
    fit(_dense(), X, y, loss="cross_entropy", epochs=2, batch_size=16, checkpoint=path)
    data = bytearray(path.read_bytes())
    if damage == "truncate":
        data = data[: len(data) // 2]
    elif damage == "flip":
        data[-100] ^= 0x01
    elif damage == "garbage":
        data = bytearray(b"not a checkpoint at all")
    else:
        data = bytearray()
    path.write_bytes(bytes(data))
    with pytest.raises(ckpt.CheckpointUnusable):
        ckpt.load(path)
    model = _dense()
    with pytest.warns(RuntimeWarning, match="training starts from the first epoch"):
        result = fit(model, X, y, loss="cross_entropy", epochs=3, batch_size=16, checkpoint=path)
    assert result.train_loss == expected.train_loss
    _same_weights(model, reference)
    assert ckpt.load(path)["next_epoch"] == 3  # rewritten, usable again


@pytest.mark.parametrize(
    "bad, error, match",
    [(3, TypeError, "`checkpoint` must be a path"), (True, TypeError, "`checkpoint` must be a path"),
     ("", ValueError, "`checkpoint` must name a file")],
)  # fmt: skip
def test_bad_checkpoint_argument(bad, error, match):
    X, y = _data(16, 20, 4)
    with pytest.raises(error, match=match):
        fit(_dense(), X, y, loss="cross_entropy", epochs=1, checkpoint=bad)


def test_folder_is_refused(tmp_path):
    X, y = _data(16, 20, 4)
    with pytest.raises(ValueError, match="`checkpoint` must name a file"):
        fit(_dense(), X, y, loss="cross_entropy", epochs=1, checkpoint=tmp_path)


def test_wall_time_adds_the_earlier_calls(tmp_path):
    X, y = _data(64, 20, 4)
    path = tmp_path / "fit.ckpt"
    with pytest.raises(Killed):
        fit(_dense(), X, y, loss=_killing(certified_loss("margin-ce", margin=0.5), 6), epochs=3, batch_size=16,
            checkpoint=path)  # fmt: skip
    spent = ckpt.load(path)["elapsed"]
    assert spent > 0 and math.isfinite(spent)
    result = fit(_dense(), X, y, loss=certified_loss("margin-ce", margin=0.5), epochs=3, batch_size=16,
                 checkpoint=path)  # fmt: skip
    assert result.wall_time > spent


@pytest.mark.parametrize("bound", ["power", "verified", "exact"])
def test_calling_again_after_the_last_save_changes_nothing(tmp_path, bound):
    """A kill after the last epoch's save (before fit returns): the call again gives the same state, power vectors too.

    The best-weights restore once copied into the state-dict tensors read at entry, while the layers had
    replaced their power-vector buffers by new tensors: the resumed call restored them, the first did not.
    """
    X, y = _data(80, 12, 3)
    options = dict(loss="cross_entropy", epochs=4, batch_size=16, seed=1, lr=2e-2, validation_fraction=0.25)

    def build():
        with seeded(0):
            return lipschitz_resnet(12, 3, 16, 2, bound=bound)

    path = tmp_path / "fit.ckpt"
    first = build()
    fit(first, X, y, checkpoint=path, **options)
    again = build()
    fit(again, X, y, checkpoint=path, **options)
    _same_weights(again, first)


def test_state_that_cannot_be_saved_is_refused_before_training(tmp_path):
    class Holder:  # a LambdaLR's callable object: its __dict__ (with a lambda) goes into state_dict()
        def __init__(self):
            self.f = lambda step: 1.0

        def __call__(self, step):
            return self.f(step)

    X, y = _data(32, 20, 4)
    model = _dense()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    path = tmp_path / "fit.ckpt"
    with pytest.raises(ValueError, match=r"`checkpoint`: the training state cannot be saved"):
        fit(model, X, y, loss="cross_entropy", epochs=2, batch_size=16, checkpoint=path,
            schedule=lambda o: torch.optim.lr_scheduler.LambdaLR(o, Holder()))  # fmt: skip
    assert not path.exists()
    for k, v in model.state_dict().items():  # nothing trained
        assert torch.equal(v, before[k]), k


def test_state_the_safe_loader_refuses_is_refused_before_training(tmp_path):
    import numpy as np

    class Warm:  # plain class: its NumPy scalar goes into the scheduler's state_dict()
        def __init__(self):
            self.length = np.float64(5.0)

        def __call__(self, step):
            return min(1.0, (step + 1) / float(self.length))

    X, y = _data(32, 20, 4)
    with pytest.raises(ValueError, match=r"cannot be saved and read back"):
        fit(_dense(), X, y, loss="cross_entropy", epochs=2, batch_size=16, checkpoint=tmp_path / "fit.ckpt",
            schedule=lambda o: torch.optim.lr_scheduler.LambdaLR(o, Warm()))  # fmt: skip


def test_other_bound_mode_is_refused(tmp_path):
    X, y = _data(64, 20, 4)
    path = tmp_path / "fit.ckpt"
    with seeded(0):
        exact = lipschitz_resnet(20, 4, 16, 2, bound="exact")
    fit(exact, X, y, loss="cross_entropy", epochs=2, batch_size=16, checkpoint=path)
    with seeded(0):
        power = lipschitz_resnet(20, 4, 16, 2, bound="power")
    with pytest.raises(ValueError, match=r"another training.*bounds"):
        fit(power, X, y, loss="cross_entropy", epochs=2, batch_size=16, checkpoint=path)


def test_complete_looking_file_without_a_key_is_unusable(tmp_path):
    X, y = _data(64, 20, 4)
    path = tmp_path / "fit.ckpt"
    fit(_dense(), X, y, loss="cross_entropy", epochs=2, batch_size=16, checkpoint=path)
    state = ckpt.load(path)
    del state["generator"]
    ckpt.save(path, state)  # a valid checksum and format, an incomplete state
    with pytest.raises(ckpt.CheckpointUnusable, match="missing: generator"):
        ckpt.load(path)
    with pytest.warns(RuntimeWarning, match="missing: generator"):
        fit(_dense(), X, y, loss="cross_entropy", epochs=2, batch_size=16, checkpoint=path)

"""Review s10 of cost, memory, timing, cost_growth and the ℓ₂ attack: hand counts, known truths, bad arguments."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from structnets.analysis import cost, pgd_l2
from structnets.analysis.cost_growth import cost_growth, median_interval
from structnets.analysis.memory import saved_activation_bytes, training_memory_bytes
from structnets.analysis.timing import interleaved_ratio
from structnets.nn import LowRankMultiheadAttention

F64 = torch.float64


def _matmul_macs(model: nn.Module, shape: tuple[int, ...]) -> int:
    """Multiply-accumulates torch's own flop counter sees (it counts 2 per multiply-add, no bias)."""
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        model(torch.zeros(shape))
    return counter.get_total_flops() // 2


# --- cost: hand counts ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "conv, shape",
    [
        (nn.Conv2d(4, 6, (3, 2), stride=(2, 1), padding=(1, 2), dilation=(2, 1), groups=2), (2, 4, 9, 8)),
        (nn.Conv2d(4, 6, 3, padding="same", bias=False), (2, 4, 5, 5)),
        (nn.Conv1d(4, 6, 3, stride=2, padding=1, dilation=2, groups=2, padding_mode="circular"), (2, 4, 9)),
    ],
)
def test_convolutions_count_one_patch_per_output_element(conv: nn.Module, shape: tuple[int, ...]) -> None:
    with torch.no_grad():
        out = conv(torch.zeros(shape))
    patch = conv.in_channels // conv.groups * math.prod(conv.kernel_size)
    c = cost(conv, shape)
    assert c.macs == out.numel() * patch == _matmul_macs(conv, shape)
    assert c.flops == 2 * c.macs + (out.numel() if conv.bias is not None else 0)


@pytest.mark.filterwarnings("ignore:Initializing zero-element tensors is a no-op")
def test_linear_with_no_outputs_or_no_inputs_counts_what_it_does() -> None:
    # nn.Linear(4, 0) is a valid layer; cost() divided by out_features and raised ZeroDivisionError
    assert cost(nn.Linear(4, 0), (3, 4)).flops == 0
    assert cost(nn.Linear(0, 4), (3, 0)).flops == 3 * 4  # no products, one bias add per output


def test_a_layer_called_with_its_input_by_keyword_is_counted() -> None:
    class ByKeyword(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(4, 3)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.fc(input=x)

    # before: TypeError "cost() expects Linear to take and return tensors" (hooks saw no positional input)
    c = cost(ByKeyword(), (2, 4))
    assert c.flops == 2 * (2 * 4 * 3 + 3)
    assert c.per_layer[0].input_shape == (2, 4)


def test_shared_modules_skipped_children_and_user_hooks() -> None:
    shared, skipped = nn.Linear(4, 4), nn.Linear(4, 100)

    class Model(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.shared, self.skipped, self.act = shared, skipped, nn.Tanh()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.shared(self.act(self.shared(x)))  # `skipped` never runs

    model = Model()
    calls: list[int] = []
    shared.register_forward_hook(lambda m, a, o: calls.append(1))
    c = cost(model, (3, 4))
    assert c.flops == 2 * 3 * (2 * 16 + 4)
    assert c.activation_evaluations == 3 * 4
    assert c.parameters == 20 + 500  # parameters are the model's, run or not
    assert len(calls) == 2  # the user's hook ran and stays registered
    assert len(shared._forward_hooks) == 1


@pytest.mark.parametrize("batch_first", [True, False])
@pytest.mark.parametrize("training", [True, False])
def test_transformer_encoder_layer_names_what_it_cannot_count(batch_first: bool, training: bool) -> None:
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=batch_first).train(training)
    shape = (2, 5, 16) if batch_first else (5, 2, 16)
    with pytest.raises(TypeError, match=r"self_attn \(MultiheadAttention\).*norm1 \(LayerNorm\)"):
        cost(layer, shape)
    c = cost(layer, shape, strict=False)
    rows = 10
    assert c.flops == rows * (2 * 16 * 32 + 32) + rows * (2 * 32 * 16 + 16)  # linear1 and linear2
    assert set(c.uncounted) == {"self_attn (MultiheadAttention)", "norm1 (LayerNorm)", "norm2 (LayerNorm)"}


def test_low_rank_attention_is_not_counted_as_its_projections_alone() -> None:
    class Wrap(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.attention = LowRankMultiheadAttention(8, 2, batch_first=True)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.attention(x, x, x, need_weights=False)[0]

    torch.manual_seed(0)
    model, shape = Wrap(), (2, 3, 8)
    # before: strict cost() returned 3,264 FLOPs, the four projections only, with nothing uncounted;
    # the scores QKᵀ and the weighted sum of V (2·N·L·S·E = 288 multiply-adds here) were silently left out
    with pytest.raises(TypeError, match=r"attention \(LowRankMultiheadAttention\)"):
        cost(model, shape)
    c = cost(model, shape, strict=False)
    assert c.uncounted == ("attention (LowRankMultiheadAttention)",)
    assert c.flops == 4 * 6 * (2 * 8 * 8 + 8)  # its projections are still counted, each by hand


def test_cost_leaves_batchnorm_running_statistics_alone() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4)).train()
    with torch.no_grad():
        model[0].bias.fill_(1.0)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    # before: running_mean moved from 0 to 0.1 (momentum 0.1 times the zero input's bias 1) and
    # num_batches_tracked to 1, whether cost() then raised (strict) or not
    with pytest.raises(TypeError, match="BatchNorm1d"):
        cost(model, (3, 4))
    cost(model, (3, 4), strict=False)
    after = model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)
    assert model.training


# --- timing, cost growth and memory: statistics with a known truth, bad arguments -----------------------


def test_median_interval_covers_a_known_median_ratio_at_its_level() -> None:
    rng = np.random.default_rng(0)
    for n in (6, 30, 101):
        true, covered = 1.3, 0
        for _ in range(2000):
            ratios = rng.lognormal(0.0, 0.2, n) * true / rng.lognormal(0.0, 0.2, n)  # median ratio = 1.3
            _, low, high = median_interval(ratios)
            covered += low <= true <= high
        assert covered / 2000 >= 0.95 - 3 * math.sqrt(0.05 * 0.95 / 2000)


def test_cost_growth_and_median_interval_refuse_a_level_outside_0_1_and_nan_values() -> None:
    rng = np.random.default_rng(1)
    equal = rng.lognormal(0.0, 0.3, (30, 3)), rng.lognormal(0.0, 0.3, (30, 3))
    # before: alpha=5 made every interval the two middle values, and equal costs came out "refuted"
    for alpha in (5.0, 0.0, 1.0, -1.0, math.nan):
        with pytest.raises(ValueError, match="`alpha`"):
            cost_growth(*equal, [1, 2, 3], alpha=alpha)
        with pytest.raises(ValueError, match="`alpha`"):
            median_interval([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], alpha=alpha)
    # before: (nan, 1.0, nan), a NaN sorted last and taken as the top order statistic
    with pytest.raises(ValueError, match="`values` must be finite"):
        median_interval([1.0, math.nan, 2.0, 3.0, 4.0, 5.0, 6.0])


def test_interleaved_ratio_names_a_bad_target_or_callable_before_calling_anything() -> None:
    calls: list[int] = []

    def fn() -> None:
        calls.append(1)

    # before: ValueError "cannot convert float NaN to integer" / OverflowError from round(), after the warmup
    for target in (math.nan, math.inf, 0.0, -1.0):
        with pytest.raises(ValueError, match="`target_seconds`"):
            interleaved_ratio(fn, fn, repeat=None, target_seconds=target)
    with pytest.raises(ValueError, match="`repeat`"):
        interleaved_ratio(fn, fn, repeat=0)
    # before: "'int' object is not callable"
    with pytest.raises(TypeError, match="`b` must be a zero-argument callable"):
        interleaved_ratio(fn, 3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="`before_pair`"):
        interleaved_ratio(fn, fn, before_pair=3)  # type: ignore[arg-type]
    assert calls == []


def test_training_memory_counts_gradients_and_state_of_trainable_parameters_only() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 4))
    model[0].requires_grad_(False)  # a frozen first layer: no .grad, no Adam state
    inputs = torch.randn(2, 4)
    saved = saved_activation_bytes(model, inputs)
    # before: 4 · 160 + saved, gradients and Adam moments for the 80 frozen bytes too
    assert training_memory_bytes(model, inputs) == 160 + 3 * 80 + saved
    assert training_memory_bytes(model, inputs, optimizer_slots=0) == 160 + 80 + saved
    # before: -208 bytes for optimizer_slots=-5; 2.5 and True were taken as counts
    for slots in (-5, 2.5, True):
        with pytest.raises((TypeError, ValueError), match="`optimizer_slots`"):
            training_memory_bytes(model, inputs, optimizer_slots=slots)  # type: ignore[arg-type]


def test_saved_activation_bytes_refuses_inference_mode() -> None:
    model = nn.Sequential(nn.Linear(4, 4), nn.Tanh())
    assert saved_activation_bytes(model, torch.randn(2, 4)) == 2 * 4 * 4 * 2  # Linear's input, tanh's output
    # before: 0 bytes, silently: enable_grad() does not lift inference mode, so nothing was saved
    with torch.inference_mode(), pytest.raises(RuntimeError, match="inference_mode"):
        saved_activation_bytes(model, torch.randn(2, 4))


def test_cost_names_a_bad_dtype_or_device() -> None:
    layer = nn.Linear(3, 2)
    # before: torch's "zeros(): argument 'dtype' must be torch.dtype, not str"; "must have the same dtype"
    # quoted as an input shape that "does not fit the model"; a bare AssertionError for a device not built in
    for dtype in ("float32", torch.int64):
        with pytest.raises(TypeError, match="`dtype` must be a floating-point"):
            cost(layer, (2, 3), dtype=dtype)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="`device`"):
        cost(layer, (2, 3), device="not-a-device")
    assert cost(layer, (2, 3), dtype=torch.float32, device="cpu").flops == 2 * (2 * 6 + 2)


# --- pgd_l2 -----------------------------------------------------------------------------------------


def test_pgd_on_a_model_that_is_not_differentiable_or_ignores_its_input() -> None:
    torch.manual_seed(0)
    layer = nn.Linear(3, 2)
    inputs, labels = torch.randn(4, 3), torch.tensor([0, 1, 0, 1])
    # before: autograd's "element 0 of tensors does not require grad and does not have a grad_fn"
    with pytest.raises(ValueError, match="`model` must be differentiable in its input"):
        pgd_l2(lambda t: layer(t).detach(), inputs, labels, 0.5)

    # before: "appears to not have been used in the graph"; a constant function cannot be broken
    def constant(t: torch.Tensor) -> torch.Tensor:
        return torch.zeros(t.shape[0], 2) + layer.bias

    result = pgd_l2(constant, inputs, labels, 0.5, restarts=2)
    b = layer.bias.detach().double()
    assert torch.equal(result.margins, torch.where(labels == 0, b[0] - b[1], b[1] - b[0]))
    assert torch.equal(result.points, inputs)


def test_saved_activations_leave_out_and_leave_alone_the_model_buffers() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4)).train()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    inputs = torch.randn(2, 4)
    # saved: the input (Linear, 32 B), the Linear output (BatchNorm, 32 B), the batch mean and inverse
    # std (16 B each). before: 128, BatchNorm's running mean and variance (16 B each) counted as
    # activations, and both, with num_batches_tracked, moved by the measurement
    assert saved_activation_bytes(model, inputs) == 32 + 32 + 16 + 16
    parameters = (4 * 4 + 4 + 4 + 4) * 4
    assert training_memory_bytes(model, inputs) == parameters + 3 * parameters + 96
    after = model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)


def test_measuring_a_model_keeps_swish_on_its_fused_path() -> None:
    from structnets.models import mlp

    torch.manual_seed(0)
    model, inputs = mlp(5, 2, 8, 1), torch.randn(10, 5)
    swish = model[1]
    fused = saved_activation_bytes(model, inputs)  # SiLU saves its input only: 840 B here
    # copying every buffer back bumped β's version, and Swish left its fused path: 1,160 B afterwards
    cost(model, (10, 5))
    training_memory_bytes(model, inputs)
    assert saved_activation_bytes(model, inputs) == fused == 840
    assert swish._fused is not None and swish._fused[1] == swish.beta._version


def test_pgd_leaves_a_training_mode_model_as_it_found_it() -> None:
    from structnets.nn import NormConstrainedLinear

    torch.manual_seed(0)
    model = nn.Sequential(
        NormConstrainedLinear(3, 4, bound="power"), nn.BatchNorm1d(4), nn.Tanh(), nn.Linear(4, 2)
    ).train()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    inputs = torch.randn(8, 3)
    given = inputs.clone()
    # before: 51 forwards moved BatchNorm's running statistics (num_batches_tracked 0 -> 51) and the
    # power-iteration vector, i.e. the attack trained the model's buffers on its own points
    pgd_l2(model, inputs, torch.randint(0, 2, (8,)), 0.5)
    after = model.state_dict()
    assert [k for k in before if not torch.equal(before[k], after[k])] == []
    assert model.training and torch.equal(inputs, given)
    assert all(p.grad is None and p.requires_grad for p in model.parameters())


def test_settle_before_pair_names_a_bad_wait_or_threshold() -> None:
    from structnets.analysis.timing import settle_before_pair

    # before: a NaN wait gave a hook that never waited, a NaN or negative threshold one that always
    # waited the full max_wait, and "'<=' not supported between instances of 'str' and 'int'"
    for kwargs in ({"max_wait": math.nan}, {"max_wait": math.inf}, {"max_wait": 1.0, "threshold": math.nan},
                   {"max_wait": 1.0, "threshold": -0.1}):  # fmt: skip
        with pytest.raises(ValueError, match="`max_wait`|`threshold`"):
            settle_before_pair(**kwargs)
    with pytest.raises(TypeError, match="`max_wait`"):
        settle_before_pair("1")  # type: ignore[arg-type]
    assert settle_before_pair(0.0) is None


def test_cost_growth_names_a_non_finite_size() -> None:
    rng = np.random.default_rng(2)
    a, b = rng.lognormal(0.0, 0.3, (30, 2)), rng.lognormal(0.0, 0.3, (30, 2))
    # before: every slope NaN and the verdict "not reproduced" (NaN compares False) with no error
    for sizes in ([1.0, math.nan], [1.0, math.inf]):
        with pytest.raises(ValueError, match="`sizes` must be finite"):
            cost_growth(a, b, sizes)


def test_a_registered_counter_that_returns_no_leaf_count_is_named() -> None:
    from structnets.analysis import LeafCount, register_counter

    class Doubler(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return 2 * x

    register_counter(Doubler, lambda module, input, output: 5)  # type: ignore[arg-type,return-value]
    # before: AttributeError "'int' object has no attribute 'intermediate_elements'"
    with pytest.raises(TypeError, match="counter registered for Doubler must return a LeafCount, got int"):
        cost(Doubler(), (2, 3))
    register_counter(Doubler, lambda module, input, output: LeafCount(macs=output.numel()))
    assert cost(Doubler(), (2, 3)).flops == 12


def test_unconstrained_resnet_counts_its_relu_and_residual_like_the_gradient_step_one() -> None:
    from structnets.models import lipschitz_resnet

    torch.manual_seed(0)
    d, out, width, depth, rows = 4, 3, 8, 2, 5
    plain = lipschitz_resnet(d, out, width, depth, variant="unconstrained")
    c = cost(plain, (rows, d))
    h = width  # hidden defaults to the width
    block_flops = 2 * (2 * width * h) + h + width  # two products, inner bias, residual add
    lift_head = 2 * d * width + width + 2 * width * out + out
    # before: 3,255 FLOPs (80 less) and 0 activation evaluations (the blocks counted as their two
    # nn.Linear only: ReLU and residual add invisible), while GradientStepResidual counts both; now 3,335 and 80
    assert c.flops == rows * (lift_head + depth * block_flops)
    assert c.activation_evaluations == rows * depth * h
    constrained = cost(lipschitz_resnet(d, out, width, depth), (rows, d))
    assert constrained.activation_evaluations == c.activation_evaluations


def test_pgd_at_an_enormous_radius_breaks_what_it_can_or_refuses() -> None:
    torch.manual_seed(0)
    layer = nn.Linear(3, 2).double()
    inputs = torch.randn(20, 3, dtype=F64)
    with torch.no_grad():
        labels = layer(inputs).argmax(1)
    # every point of a 2-class linear model is breakable within 1e150 (or 1e160) of itself
    assert pgd_l2(layer, inputs, labels, 1e150, targets=1).robust_accuracy() == 0.0
    # before: at 1e160 the float64 ball check overflowed (‖δ‖² = inf), every candidate was dropped and
    # all 20 points were reported robust (robust accuracy 1.0); inputs of norm 1e200 overflow the same
    # float64 norms (the step radius became 0: no search at all)
    with pytest.raises(ValueError, match="`eps` must be a real number in"):
        pgd_l2(layer, inputs, labels, 1e160)
    with pytest.raises(ValueError, match="`inputs` must have rows of ℓ2 norm"):
        pgd_l2(layer, inputs * 1e200, labels, 1.0)


# --- checkpoint.spectrum_table ------------------------------------------------------------------------


def test_spectrum_table_refuses_a_complex_layer_instead_of_dropping_its_imaginary_part() -> None:
    from structnets.analysis import spectrum_table

    torch.manual_seed(0)
    weight = torch.randn(3, 4, dtype=torch.complex128)
    # before: the float64 cast kept the real part: σ₁ = 2.055 reported for a matrix whose σ₁ is 2.936,
    # with only torch's "discards the imaginary part" warning
    for source in ({"w.weight": weight}, nn.Linear(4, 3, dtype=torch.complex64)):
        with pytest.raises(TypeError, match="must be a real matrix, got dtype torch.complex"):
            spectrum_table(source)  # type: ignore[arg-type]
    real = spectrum_table({"w.weight": weight.real})[0]
    assert real.spectral_norm == pytest.approx(float(torch.linalg.matrix_norm(weight.real, ord=2)), rel=1e-12)

"""``bound="verified-batched"``: every map's training-time certificate computed together, never stale.

The batched Cholesky test must certify (Q ≥ ‖W‖₂² against a float64 SVD) on random and adversarial
matrices; every τ and norm bound a :class:`CertifiedBatch` hands to a layer must be certified for the
weight that layer uses in that forward, through optimizer steps, ``.data`` edits, state-dict loads,
hooks that edit a weight between the batch computation and its use, a block used twice, a block
called after the backward pass; the gradient is the ``"verified"`` mode's; bad options are refused.
"""

from __future__ import annotations

import copy
import math

import pytest
import torch
from torch import nn

from structnets.analysis import lipschitz_upper_bound
from structnets.functional import certified_step, verified_power_square
from structnets.models import lipschitz_resnet
from structnets.nn import CertifiedBatch, GradientStepResidual, NormConstrainedLinear
from structnets.nn._verified_gram import batched_verified_square, verified_ratio

F64 = torch.float64


@pytest.fixture(autouse=True, params=["fused-kernel", "tensor-operations"])
def certification_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test here runs on both computations of a batch: the compiled kernel and the tensor operations."""
    from structnets.nn import _fused_certify

    if request.param == "fused-kernel" and not _fused_certify.AVAILABLE:
        pytest.skip("numba (extra `fast`) is not installed: the tensor operations run everywhere")
    monkeypatch.setattr(_fused_certify, "AVAILABLE", request.param == "fused-kernel")
    return str(request.param)


def _sigma_squared(weight: torch.Tensor) -> float:
    return float(torch.linalg.matrix_norm(weight.detach().to(F64), ord=2)) ** 2


def _adversarial(rows: int, cols: int, count: int, seed: int) -> torch.Tensor:
    """(count, rows, cols): random, rank one, repeated top singular values, ill-conditioned."""
    generator = torch.Generator().manual_seed(seed)
    out = []
    for index in range(count):
        a = torch.randn(rows, cols, generator=generator, dtype=F64)
        u, _, vh = torch.linalg.svd(a, full_matrices=False)
        k = min(rows, cols)
        if index % 4 == 1:
            s = torch.zeros(k, dtype=F64)
            s[0] = 3.0
        elif index % 4 == 2:
            s = torch.ones(k, dtype=F64) * 2.0  # every singular value equal: the hardest case
            s[k // 2 :] = 1.999
        elif index % 4 == 3:
            s = torch.logspace(0, -12, k, dtype=F64)
        else:
            out.append(a)
            continue
        out.append((u * s) @ vh)
    return torch.stack(out)


@pytest.mark.parametrize("shape", [(7, 7), (5, 12), (12, 5), (1, 9), (30, 40)])
@pytest.mark.parametrize(
    "dtype, precision",
    [(torch.float64, None), (torch.float32, None), (torch.float32, torch.float64), (torch.bfloat16, None)],
)
def test_the_batched_test_certifies_above_and_fails_below_the_norm(
    shape: tuple[int, int], dtype: torch.dtype, precision: torch.dtype | None
) -> None:
    weights = _adversarial(*shape, count=8, seed=sum(shape)).to(dtype)
    sigma2 = torch.tensor([_sigma_squared(w) for w in weights], dtype=F64)
    _, _, vh = torch.linalg.svd(weights.to(F64))
    vectors = vh[:, 0]  # float64: a rounded top vector lowers the Rayleigh quotient by > 1e-8
    used = precision or (torch.float64 if dtype == torch.float64 else torch.float32)
    gap = 1e-8 if used == torch.float64 else 1e-4  # float32 Gram products err by ~n·2⁻²⁴
    factor = verified_ratio(min(shape), max(shape), used)
    assert factor - 1.0 < (1e-10 if used == torch.float64 else 0.02)
    for ratio, expect in ((1 + gap, True), (1 - gap, False)):
        # from the top vector with no power step the guess is σ₁²·ratio (the Rayleigh quotient × margin)
        square, passed, following, retried = batched_verified_square(
            weights, vectors, torch.full((8,), ratio, dtype=F64), iterations=0, retry=1.0, precision=precision
        )
        assert not bool(retried.any())
        for b in range(8):
            if expect:
                assert bool(passed[b]), f"matrix {b}: μ = σ₁²(1 + {gap}) failed"
                assert sigma2[b] <= square[b] <= sigma2[b] * ratio * factor * (1 + 1e-6)
            else:
                assert not bool(passed[b]), f"matrix {b}: μ = σ₁²(1 − {gap}) passed"
        assert torch.allclose(following.to(F64).norm(dim=1), torch.ones(8, dtype=F64), atol=1e-2)


def test_float32_is_used_only_where_its_rounding_factor_is_small() -> None:
    assert verified_ratio(200, 200, torch.float32) <= 1.02 and verified_ratio(100, 784, torch.float32) <= 1.02
    assert verified_ratio(400, 400, torch.float32) > 1.02
    margins = torch.full((1,), 1.05, dtype=F64)
    for size, expected in ((50, torch.float32), (400, torch.float64)):
        weights = torch.randn(1, size, size)
        vectors = torch.randn(1, size)
        chosen = batched_verified_square(weights, vectors, margins)[0]
        forced = batched_verified_square(weights, vectors, margins, precision=expected)[0]
        assert torch.equal(chosen, forced)


def test_autocast_does_not_lower_the_precision_of_the_test() -> None:
    weights = torch.randn(3, 40, 60)
    vectors = torch.randn(3, 60)
    margins = torch.full((3,), 1.05, dtype=F64)
    plain = batched_verified_square(weights, vectors, margins)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        inside = batched_verified_square(weights, vectors, margins)
    assert torch.equal(plain[0], inside[0]) and torch.equal(plain[1], inside[1])


def test_the_ratio_is_a_small_margin_and_grows_with_the_sizes() -> None:
    assert 1.0 < verified_ratio(1, 1) < verified_ratio(100, 100) < verified_ratio(100, 784) < 1 + 1e-10
    assert verified_ratio(100, 100) < verified_ratio(100, 100, torch.float32) < 1.01


def test_a_retry_certifies_a_low_first_guess_and_is_reported() -> None:
    weights = _adversarial(20, 20, count=4, seed=5)
    vectors = torch.randn(4, 20, dtype=F64, generator=torch.Generator().manual_seed(12))  # far from the top
    square, passed, _, retried = batched_verified_square(weights, vectors, torch.full((4,), 1.0001, dtype=F64), 0, 4.0)
    sigma2 = torch.tensor([_sigma_squared(w) for w in weights], dtype=F64)
    assert bool(retried.any())
    assert bool((square[passed] >= sigma2[passed]).all())


def test_non_finite_or_out_of_range_guesses_fail() -> None:
    generator = torch.Generator().manual_seed(11)
    weights = torch.randn(3, 4, 4, dtype=F64, generator=generator)
    vectors = torch.linalg.svd(weights)[2][:, 0]  # top vectors: the first matrix passes for certain
    weights[1, 0, 0] = math.nan
    weights[2] *= 1e-200  # ‖W‖² ≈ 1e-400: outside the tested range
    _, passed, following, _ = batched_verified_square(weights, vectors, torch.full((3,), 1.01, dtype=F64))
    assert passed.tolist() == [True, False, False]
    assert bool(torch.isfinite(following).all())


def _step_of(matrix: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """The τ (weight dtype) with matrix == W·(−τ) bit for bit: −M/W at W's largest entry, or a neighbour of it."""
    at = int(weight.abs().argmax())
    guess = -matrix.reshape(-1)[at] / weight.reshape(-1)[at]
    candidates = [guess]
    for direction in (math.inf, -math.inf):
        t = guess
        for _ in range(2):
            t = torch.nextafter(t, torch.tensor(direction, dtype=t.dtype))
            candidates.append(t)
    for tau in candidates:
        if torch.equal(matrix, weight * -tau):
            return tau
    raise AssertionError("the applied matrix is not W·(−τ) for any τ")


class _Recorder:
    """Wraps CertifiedBatch.take: every value (or applied matrix) handed out, with the layer that then uses it."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.records: list[tuple[str, nn.Module, torch.Tensor, bool]] = []
        self.matrices = 0
        original = CertifiedBatch.take
        recorder = self

        def take(batch, bound, weight, kind, matrix=False):  # type: ignore[no-untyped-def]
            result = original(batch, bound, weight, kind, matrix)
            if result is not None:
                layer = next(m for m in batch.members if m._bound is bound)
                recorder.records.append((kind, layer, result[0].detach().clone(), result[2]))
                recorder.matrices += int(result[2])
            return result

        monkeypatch.setattr(CertifiedBatch, "take", take)

    def check(self) -> None:
        """Each recorded value is certified for the layer's weight at the moment it was handed out.

        An applied matrix is checked as what it must be: −τ·W (the same bits as the layer's own product)
        for a τ with τ·‖W‖₂² ≤ s, or fl(V/s) with ‖fl(V/s)‖₂ ≤ 1 (float64 SVD).
        """
        for kind, layer, value, is_matrix in self.records:
            if kind == "tau":
                weight = layer.weight.detach()
                if is_matrix:
                    value = _step_of(value, weight)
                step = float(layer.step_size().detach()) if layer.step_logit is not None else layer.step
                product = float(value.to(F64)) * _sigma_squared(weight)
                assert product <= step * (1 + 1e-12), f"τ·‖W‖₂² = {product!r} > s = {step!r}"
                assert product <= 2.0
            elif is_matrix:
                assert _sigma_squared(value) <= 1.0
                assert value.shape == layer.raw_weight.shape
            else:
                assert math.sqrt(_sigma_squared(layer.raw_weight)) <= float(value.to(F64))
        self.records.clear()


@pytest.mark.parametrize("fused", [False, True])
def test_every_batched_training_step_is_certified_and_counted(
    monkeypatch: pytest.MonkeyPatch, fused: bool, certification_path: str
) -> None:
    torch.manual_seed(2)
    model = lipschitz_resnet(20, 4, width=16, depth=3, step=1.5, bound="verified-batched", variant="fixed-width")
    recorder = _Recorder(monkeypatch)
    generator = torch.Generator().manual_seed(3)
    x = torch.randn(128, 20, generator=generator)
    y = torch.randint(4, (128,), generator=generator)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05, fused=fused)  # large steps: σ₁ jumps
    model.train()
    for _ in range(25):
        optimizer.zero_grad()
        out = model(x)
        recorder.check()  # before the optimizer changes the weights the values were computed for
        nn.functional.cross_entropy(out, y).backward()
        optimizer.step()
        assert lipschitz_upper_bound(model) <= 1.0  # certification uses the exact path in training too
    batch = model.certified_batch
    members = len(batch.members)
    assert members == 1 + 3 + 3 + 1  # lift, blocks, the norm-constrained maps between, head
    assert batch.computations == 25 and batch.batched_calls == 25 * members and batch.unbatched_calls == 0
    fallbacks = sum(layer._bound.exact_fallbacks for layer in batch.members)
    verified = sum(layer._bound.verified_steps for layer in batch.members)
    assert verified + fallbacks == 25 * members and verified > fallbacks
    # the compiled path hands out the applied matrices (checked above as such), the tensor path values
    assert (recorder.matrices > 0) == (certification_path == "fused-kernel")
    model.eval()
    assert lipschitz_upper_bound(model) <= 1.0


def test_a_weight_edited_between_the_batch_and_its_use_is_detected(monkeypatch: pytest.MonkeyPatch) -> None:
    torch.manual_seed(4)
    model = lipschitz_resnet(6, 3, width=8, depth=3, step=2.0, learnable_step=False, bound="verified-batched")
    recorder = _Recorder(monkeypatch)
    block = model[2]

    def grow(module: nn.Module, args: tuple[torch.Tensor, ...]) -> None:
        with torch.no_grad():
            module.weight.data.mul_(3.0)  # after the lift's batch computation, before the block's use

    handle = block.register_forward_pre_hook(grow)
    model.train()
    x = torch.randn(16, 6)
    model(x).sum().backward()
    handle.remove()
    assert model.certified_batch.unbatched_calls == 1
    assert all(layer is not block for _, layer, _, _ in recorder.records)
    recorder.check()
    tau = float(block.tau().detach().to(F64))  # its own "verified" bound, for the grown weight
    assert tau * _sigma_squared(block.weight) <= 2.0


def test_a_step_edited_between_the_batch_and_its_use_is_detected() -> None:
    model = lipschitz_resnet(6, 3, width=8, depth=2, step=1.0, learnable_step=False, bound="verified-batched")
    handle = model[2].register_forward_pre_hook(lambda module, args: setattr(module, "step", 2.0))
    model.train()
    model(torch.randn(4, 6)).sum().backward()
    handle.remove()
    assert model.certified_batch.unbatched_calls == 1


@pytest.mark.parametrize("logit", [0.5, -0.0, math.nan])
def test_a_learnable_step_edited_between_the_batch_and_its_use_is_detected(logit: float) -> None:
    """θ written by a pre-hook after the leader's computation: that block computes its own τ (NaN too).

    -0.0 is the value θ = 0 as a number: the τ handed out was formed with s = 1, the step of θ = -0.0,
    so the batch serves it (the fused path compares θ as a float, the tensor path with torch.equal).
    """
    torch.manual_seed(3)
    model = lipschitz_resnet(6, 3, width=8, depth=2, step=1.0, learnable_step=True, bound="verified-batched")
    with torch.no_grad():
        model[2].step_logit.fill_(0.0)

    def edit(module: nn.Module, args: object) -> None:
        with torch.no_grad():
            module.step_logit.fill_(logit)

    handle = model[2].register_forward_pre_hook(edit)
    model.train()
    out = model(torch.randn(4, 6))
    handle.remove()
    assert model.certified_batch.unbatched_calls == (0 if logit == 0.0 else 1)
    if not math.isnan(logit):
        out.sum().backward()
        tau = float(model[2].tau().detach().to(F64))
        assert tau * _sigma_squared(model[2].weight) <= float(model[2].step_size().detach().to(F64))


@pytest.mark.parametrize("edit", ["data", "load_state_dict", "optimizer"])
def test_edits_between_forwards_are_recomputed(monkeypatch: pytest.MonkeyPatch, edit: str) -> None:
    torch.manual_seed(5)
    model = lipschitz_resnet(6, 3, width=8, depth=2, bound="verified-batched")
    recorder = _Recorder(monkeypatch)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    x = torch.randn(16, 6)
    model.train()
    for _ in range(3):
        optimizer.zero_grad()
        model(x).square().sum().backward()
        recorder.check()
        if edit == "data":
            model[1].weight.data.mul_(4.0)
        elif edit == "load_state_dict":
            state = {k: v * 2.0 if k.endswith("weight") else v for k, v in model.state_dict().items()}
            model.load_state_dict(state)
        else:
            optimizer.step()
    model(x).sum().backward()
    recorder.check()


def test_a_block_used_twice_computes_its_second_bound_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    torch.manual_seed(6)
    lift = NormConstrainedLinear(5, 8, bound="verified")
    block = GradientStepResidual(8, 8, bound="verified", learnable_step=True, step=1.0)
    head = NormConstrainedLinear(8, 2, bound="verified")
    batch = CertifiedBatch([lift, block, head])
    recorder = _Recorder(monkeypatch)
    model = nn.Sequential(lift, block, block, head).train()
    model(torch.randn(4, 5)).sum().backward()
    recorder.check()
    assert (batch.batched_calls, batch.unbatched_calls) == (3, 1)
    assert lipschitz_upper_bound(model) <= 1.0


def test_a_member_called_after_the_backward_pass_takes_its_own_bound() -> None:
    torch.manual_seed(7)
    leader, skipped = (GradientStepResidual(8, 8, bound="verified") for _ in range(2))
    batch = CertifiedBatch([leader, skipped])  # one group: one graph for both τ
    leader.train(), skipped.train()
    leader(torch.randn(4, 8)).sum().backward()  # the batch computed the skipped block's τ too
    skipped(torch.randn(4, 8)).sum().backward()  # that graph is spent: its own bound, no double backward
    assert (batch.batched_calls, batch.unbatched_calls) == (1, 1)


def test_the_gradient_is_the_verified_modes() -> None:
    torch.manual_seed(8)
    blocks = [GradientStepResidual(9, 12, bound="verified", learnable_step=True, step=1.2, dtype=F64) for _ in range(3)]
    batch = CertifiedBatch(blocks)
    for block in blocks:
        block.train()
        block.power_vector = torch.linalg.svd(block.weight.detach())[2][0]  # converged: σ̂ = σ₁
    taus = [block.tau() for block in blocks]  # the first member computes the batch
    assert batch.batched_calls == 3
    loss = sum((i + 1.0) * t for i, t in enumerate(taus))
    grads = torch.autograd.grad(loss, [p for b in blocks for p in (b.weight, b.step_logit)])
    for i, block in enumerate(blocks):
        square, _ = verified_power_square(block.weight, block.power_vector, 0.01)  # the smallest margin
        assert square is not None
        reference = certified_step(block.step_size(), square, F64)
        expected = torch.autograd.grad((i + 1.0) * reference, [block.weight, block.step_logit])
        # same value up to the certificate's rounding terms, same gradient
        assert float(taus[i].detach()) == pytest.approx(float(reference.detach()), rel=1e-9)
        assert torch.allclose(grads[2 * i], expected[0], rtol=1e-7, atol=1e-12)
        assert torch.allclose(grads[2 * i + 1], expected[1], rtol=1e-7, atol=1e-12)


def test_the_certificates_follow_the_unbatched_verified_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    torch.manual_seed(9)
    batched = lipschitz_resnet(12, 3, width=10, depth=3, bound="verified-batched")
    plain = lipschitz_resnet(12, 3, width=10, depth=3, bound="verified")
    plain.load_state_dict(batched.state_dict())
    seen: list[float] = []
    original = GradientStepResidual._negated_step_weight

    def applied(self: GradientStepResidual) -> torch.Tensor:
        matrix = original(self)  # W·(−τ): the batch's or the layer's own
        seen.append(float(_step_of(matrix.detach(), self.weight.detach())))
        return matrix

    monkeypatch.setattr(GradientStepResidual, "_negated_step_weight", applied)
    x, y = torch.randn(64, 12), torch.randint(3, (64,))
    optimizers = [torch.optim.SGD(m.parameters(), lr=0.1) for m in (batched, plain)]
    for _ in range(10):
        taus = []
        for model, optimizer in zip((batched, plain), optimizers, strict=True):
            model.train()
            optimizer.zero_grad()
            seen.clear()
            nn.functional.cross_entropy(model(x), y).backward()
            taus.append(list(seen))
            optimizer.step()
        assert len(taus[0]) == len(taus[1]) == 3
        for a, b in zip(*taus, strict=True):
            assert a == pytest.approx(b, rel=0.08)  # both s/((1 + m)σ₁²), margins within 1–8 %
    assert batched.certified_batch.unbatched_calls == 0
    for model in (batched, plain):
        model.eval()
    xs = torch.randn(8, 12)
    assert torch.allclose(batched(xs), plain(xs), rtol=1e-3, atol=1e-4)


def test_eval_copies_and_export_keep_the_exact_path() -> None:
    torch.manual_seed(10)
    batched = lipschitz_resnet(6, 2, width=8, depth=2, bound="verified-batched")
    exact = lipschitz_resnet(6, 2, width=8, depth=2, bound="exact")
    exact.load_state_dict(batched.state_dict())
    batched.train()
    batched(torch.randn(4, 6)).sum().backward()
    twin = copy.deepcopy(batched)  # pending values (with autograd history) are not copied
    assert twin.certified_batch.members[0] is twin[0]
    x = torch.randn(5, 6)
    for model in (batched, exact, twin):
        model.eval()
    assert torch.equal(batched(x), exact(x)) and torch.equal(twin(x), exact(x))
    with torch.no_grad():
        batched.train()
        assert torch.equal(batched(x), exact.train()(x))
    assert batched.certified_batch.computations == 1
    assert lipschitz_upper_bound(batched.eval()) <= 1.0
    twin.train()
    before = twin.certified_batch.batched_calls  # the counts are copied too
    twin(torch.randn(4, 6)).sum().backward()  # the copy's batch serves the copy's maps
    assert (twin.certified_batch.batched_calls - before, twin.certified_batch.unbatched_calls) == (4, 0)


def test_bad_options_are_refused_by_name() -> None:
    with pytest.raises(ValueError, match="`bound`"):
        lipschitz_resnet(4, 2, width=4, depth=1, bound="batched")
    with pytest.raises(TypeError, match="`maps`"):
        CertifiedBatch([])
    with pytest.raises(TypeError, match=r"`maps\[0\]`"):
        CertifiedBatch([nn.Linear(3, 3)])
    with pytest.raises(ValueError, match=r"`maps\[0\]`.*verified"):
        CertifiedBatch([GradientStepResidual(3, 3, bound="exact")])
    block = GradientStepResidual(3, 3, bound="verified")
    with pytest.raises(ValueError, match=r"`maps\[1\]`.*twice"):
        CertifiedBatch([block, block])
    CertifiedBatch([block])
    with pytest.raises(ValueError, match="already belongs"):
        CertifiedBatch([block])


def test_a_padded_batch_of_gram_matrices_tests_each_as_its_own_size() -> None:
    """Gram matrices of sizes 1–12 zero-padded into one factorisation: each test is its unpadded one.

    The power steps may round differently in a larger batch (another summation order), so the
    guesses agree to rounding; every passed Q is ≥ the exact σ₁², and the Cholesky test of one μ a
    hair away from λ_max(Ĝ) gives the same verdict padded and unpadded (at μ = λ_max itself the
    factorisation's rounding, which padding may reorder, decides; either verdict is then sound).
    """
    from structnets.nn._verified_gram import _certify_grams, _cholesky_test, _gram_and_start, _set_shift

    generator = torch.Generator().manual_seed(11)
    shapes = [(12, 12), (3, 12), (7, 5), (1, 4), (12, 30)]
    for precision, rel in ((torch.float64, 1e-12), (torch.float32, 1e-5)):
        single, padded, starts, margins, truths = [], [], [], [], []
        for index, shape in enumerate(shapes):
            weights = torch.randn(2, *shape, generator=generator, dtype=F64)
            vectors = torch.nn.functional.normalize(torch.randn(2, shape[1], generator=generator, dtype=F64), dim=1)
            # margins around the Ritz value: some pass, some fail, some pass only at the retry
            margin = torch.tensor([1.0 + 0.03 * index, 0.8 + 0.05 * index], dtype=F64)
            ratio = torch.full((2,), verified_ratio(min(shape), max(shape), precision), dtype=F64)
            _, gram, start = _gram_and_start(weights, vectors, precision)
            pad = 12 - gram.shape[-1]
            padded.append(torch.nn.functional.pad(gram, (0, pad, 0, pad)))
            starts.append(torch.nn.functional.pad(start, (0, pad)))  # a row (B, 1, n)
            # the same μ tested padded and unpadded: the same verdict
            for mu in (torch.linalg.eigvalsh(gram.to(F64))[:, -1] * f for f in (0.999, 1.001)):
                guess = mu.to(precision)
                alone, wide = gram.neg(), padded[-1].neg()
                _set_shift(alone, gram.diagonal(dim1=-2, dim2=-1), guess)
                _set_shift(wide, padded[-1].diagonal(dim1=-2, dim2=-1), guess)
                assert torch.equal(_cholesky_test(alone, guess), _cholesky_test(wide, guess))
            single.append(_certify_grams(gram.clone(), start, margin, ratio, 4, 1.15))
            margins.append((margin, ratio))
            truths.append(torch.tensor([_sigma_squared(w) for w in weights], dtype=F64))
        together = _certify_grams(
            torch.cat(padded),
            torch.cat(starts),
            torch.cat([m for m, _ in margins]),
            torch.cat([r for _, r in margins]),
            4,
            1.15,
        )
        passed_seen = set()
        for index, (square, passed, z, retried) in enumerate(single):
            part = slice(2 * index, 2 * index + 2)
            n = min(shapes[index])
            assert torch.equal(together[1][part], passed) and torch.equal(together[3][part], retried)
            assert torch.allclose(together[0][part], square, rtol=rel, atol=0)
            assert torch.allclose(together[2][part, :, :n], z, rtol=0, atol=rel) and not bool(
                together[2][part, :, n:].any()
            )
            for b in range(2):
                if bool(together[1][2 * index + b]):
                    assert float(together[0][2 * index + b]) >= float(truths[index][b])
            passed_seen.update(passed.tolist())
        assert passed_seen == {True, False}  # both outcomes were exercised


def test_padded_sets_merge_only_where_the_padding_is_cheap() -> None:
    from structnets.nn._certified_batch import _PAD_CUBES, _padded_sets

    assert _padded_sets([100, 100, 10], [1, 10, 1]) == [[0, 1, 2]]  # lift, blocks, padded head
    big = round(_PAD_CUBES ** (1 / 3)) + 1
    assert _padded_sets([10, big], [1, 1]) == [[1], [0]]  # a 10 × 10 Gram not padded to big³
    assert _padded_sets([big, big, 3], [4, 1, 2]) == [[0, 1], [2]]


def test_members_of_several_dtypes_precisions_and_kinds_are_each_certified(monkeypatch: pytest.MonkeyPatch) -> None:
    """float32 and float64 maps, float32 weights whose test needs float64 (K > 2 % at 400 × 400), both kinds."""
    torch.manual_seed(12)
    maps: list[nn.Module] = [
        NormConstrainedLinear(30, 400, bound="verified"),  # leader: float32, 400 × 30 (Gram 30 × 30)
        GradientStepResidual(400, 400, bound="verified"),  # float32 weights, tested in float64
        GradientStepResidual(6, 9, bound="verified", dtype=F64),
        NormConstrainedLinear(6, 6, bound="verified", dtype=F64),
        GradientStepResidual(6, 6, bound="verified", learnable_step=False, step=2.0, dtype=F64),
        NormConstrainedLinear(400, 3, bound="verified"),
    ]
    batch = CertifiedBatch(maps)
    recorder = _Recorder(monkeypatch)
    for layer in maps:
        layer.train()
    optimizer = torch.optim.Adam([p for layer in maps for p in layer.parameters()], lr=0.05)
    for _ in range(4):
        optimizer.zero_grad()
        hidden = maps[1](maps[0](torch.randn(8, 30)))
        head = maps[5](hidden)
        small = maps[4](maps[3](maps[2](torch.randn(8, 6, dtype=F64))))
        recorder.check()
        (head.square().sum() + small.square().sum().float()).backward()
        optimizer.step()
    assert batch.computations == 4 and batch.unbatched_calls == 0 and batch.batched_calls == 4 * len(maps)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16, torch.float16])
def test_the_batchs_rounding_gives_the_functional_values_bit_for_bit(dtype: torch.dtype) -> None:
    """The batch's lean no-gradient rounding (``_tau_values``, ``_norm_values``) equals
    :func:`certified_step` and :func:`sqrt_round_up` on random, tiny, huge, zero, infinite and NaN Q."""
    from structnets.functional import sqrt_round_up
    from structnets.nn._verified_gram import _norm_values, _tau_values

    generator = torch.Generator().manual_seed(5)
    exponents = torch.randint(-1074, 1024, (400,), generator=generator).to(F64)
    random = torch.rand(400, generator=generator, dtype=F64) * 2.0 ** exponents.clamp(max=1023)
    special = torch.tensor(
        [
            0.0,
            5e-324,
            2.0**-1022,
            2.0**-1021,
            2.0**-1020,
            1e-300,
            1.0,
            2.0,
            1e300,
            torch.finfo(F64).max,
            math.inf,
            math.nan,
        ],
        dtype=F64,
    )
    squares = torch.cat([random, special])
    steps = torch.rand(len(squares), generator=generator, dtype=F64) * 2.0
    steps[:3] = torch.tensor([0.0, 2.0, 1.0])
    batched_tau = _tau_values(steps, squares, dtype)
    batched_norm = _norm_values(squares, dtype)
    for index in range(len(squares)):
        tau = certified_step(steps[index], squares[index], dtype)
        norm = sqrt_round_up(squares[index], dtype)
        assert torch.equal(batched_tau[index], tau) or (tau.isnan() and batched_tau[index].isnan()), index
        assert torch.equal(batched_norm[index], norm) or (norm.isnan() and batched_norm[index].isnan()), index


def test_the_next_power_vector_keeps_the_old_one_where_no_unit_vector_comes_out() -> None:
    """``_following``: unit rows where W z is finite and non-zero; the old vector where it is 0, NaN or overflows."""
    from structnets.nn._verified_gram import _following

    generator = torch.Generator().manual_seed(3)
    old = torch.nn.functional.normalize(torch.randn(4, 6, generator=generator, dtype=F64), dim=1)
    for rows in (3, 6):  # wide W (the vector is Wᵀz) and square W (the vector is z)
        w = torch.randn(4, rows, 6, generator=generator, dtype=F64)
        z = torch.randn(4, 1, min(rows, 6), generator=generator, dtype=F64)
        z[1] = 0.0
        z[2, 0, 0] = math.nan
        if rows < 6:
            w[3] = 1e300  # the product overflows: no unit vector
        else:
            z[3] = 1e300 * torch.ones_like(z[3])
            z[3, 0, 0] = math.inf
        following = _following(w, z, old)
        assert torch.allclose(torch.linalg.vector_norm(following[0]), torch.tensor(1.0, dtype=F64))
        expected = (w[0].T @ z[0, 0]) if rows < 6 else z[0, 0]
        assert torch.allclose(following[0], expected / torch.linalg.vector_norm(expected))
        for b in (1, 2, 3):
            assert torch.equal(following[b], old[b]), (rows, b)


def _surrogates(members: list[nn.Module], vectors: list[torch.Tensor], margins: list[float]) -> list[torch.Tensor]:
    """The power-mode surrogates by hand: s/((1 + m)σ̂²) for gradient-step maps, √(1 + m)·σ̂ for norm maps, σ̂ = ‖Wv‖."""
    surrogates = []
    for member, v, factor in zip(members, vectors, margins, strict=True):
        if isinstance(member, GradientStepResidual):
            sigma = torch.linalg.vector_norm(member.weight @ v)
            step = member.step_size() if member.step_logit is not None else member.step
            surrogates.append(step / (sigma.square() * factor))
        else:
            sigma = torch.linalg.vector_norm(member.raw_weight @ v)
            surrogates.append(sigma * math.sqrt(factor))
    return surrogates


@pytest.mark.parametrize("dtype", [F64, torch.float32])
def test_the_written_out_gradient_equals_autograd_through_the_surrogate(dtype: torch.dtype) -> None:
    """``_PowerModeGradient``: d(value)/dW and d(value)/dθ are those of s/((1 + m)σ̂²) (τ maps, fixed or
    learnable s = 2·sigmoid(θ)) and √(1 + m)·σ̂ (norm maps, wide and tall), σ̂ = ‖Wv‖ with v fixed,
    taken by autograd on the same inputs, for every member of a mixed batch."""
    torch.manual_seed(4)
    members: list[nn.Module] = [
        GradientStepResidual(9, 12, bound="verified", learnable_step=True, step=1.3, dtype=dtype),
        NormConstrainedLinear(20, 6, bound="verified", dtype=dtype),  # wide: the Gram matrix is W Wᵀ
        GradientStepResidual(9, 12, bound="verified", step=1.5, dtype=dtype),
        NormConstrainedLinear(5, 8, bound="verified", dtype=dtype),  # tall
        GradientStepResidual(9, 12, bound="verified", learnable_step=True, step=0.7, dtype=dtype),
    ]
    batch = CertifiedBatch(members)
    for member in members:
        member.train()
    vectors = [m.power_vector.clone() for m in members]
    margins = [1.0 + m._bound.verified_margin for m in members]  # adapted by take(): read them first
    values = []
    for member in members:
        if isinstance(member, GradientStepResidual):
            values.append(member.tau())
        else:
            values.append(member._bound(member.raw_weight, member.power_vector, True)[0])
    assert batch.batched_calls == len(members)
    params = [
        p
        for m in members
        for p in (
            [m.weight, m.step_logit]
            if isinstance(m, GradientStepResidual) and m.step_logit is not None
            else [m.weight if isinstance(m, GradientStepResidual) else m.raw_weight]
        )
    ]
    weights = torch.arange(1.0, len(members) + 1.0, dtype=dtype)
    got = torch.autograd.grad(sum(c * v for c, v in zip(weights, values)), params)
    surrogates = _surrogates(members, vectors, margins)
    expected = torch.autograd.grad(sum(c * s for c, s in zip(weights, surrogates)), params)
    rtol = 1e-10 if dtype == F64 else 1e-4
    for a, b in zip(got, expected, strict=True):
        assert a.shape == b.shape and torch.allclose(a, b, rtol=rtol, atol=rtol * float(b.abs().max()))
    # the values are the certified ones, not the surrogates
    for value, surrogate in zip(values, surrogates):
        assert float(value.detach()) != float(surrogate.detach())


def test_lanczos_gives_the_top_eigenvalue_and_beats_the_power_iteration() -> None:
    """``_lanczos``: the Rayleigh quotient at 0 steps, λ_max at the full Krylov dimension, never above
    λ_max (float64), closer to it than the power iteration's Rayleigh quotient with as many products
    on spectra without a gap, safe on breakdowns, zero padding and non-finite matrices."""
    from structnets.nn._verified_gram import _lanczos

    generator = torch.Generator().manual_seed(21)
    a = torch.randn(6, 60, 60, generator=generator, dtype=F64)  # Marchenko–Pastur: no gap at the top
    gram = a.mT @ a
    top = torch.linalg.eigvalsh(gram)[:, -1]
    start = torch.randn(6, 1, 60, generator=generator, dtype=F64)
    ritz0, _ = _lanczos(gram, start, 0)
    assert torch.allclose(ritz0, (start @ gram * start).sum(dim=(1, 2)) / (start * start).sum(dim=(1, 2)))
    full, vector = _lanczos(gram, start, 59)
    assert torch.allclose(full, top, rtol=1e-10)
    residual = vector @ gram - full[:, None, None] * vector
    assert float(
        (torch.linalg.vector_norm(residual, dim=2) / torch.linalg.vector_norm(vector, dim=2)).max()
    ) < 1e-6 * float(top.max())
    for steps in (1, 3, 5, 8):
        ritz, _ = _lanczos(gram, start, steps)
        assert bool((ritz <= top * (1 + 1e-12)).all())
        z = start
        for _ in range(steps):
            z = torch.nn.functional.normalize(z @ gram, dim=2)
        rayleigh = (z @ gram * z).sum(dim=(1, 2))
        assert bool((top - ritz <= top - rayleigh + 1e-9 * top).all())
        if steps >= 5:  # measured: 3–44 % of the power iteration's deficit at 5 steps, 0.2–28 % at 8
            assert bool((top - ritz <= 0.5 * (top - rayleigh)).all())
    # an exact breakdown (the start is an eigenvector, β = 0): its eigenvalue, no NaN
    diagonal = torch.diag_embed(torch.arange(1.0, 9.0, dtype=F64)).expand(2, 8, 8)
    unit = torch.zeros(2, 1, 8, dtype=F64)
    unit[:, 0, 2] = 1.0
    ritz, vector = _lanczos(diagonal, unit, 5)
    assert torch.equal(ritz, torch.full((2,), 3.0, dtype=F64)) and torch.equal(vector.abs(), unit)
    # a breakdown up to rounding (a computed eigenvector) goes on from the rounding noise: still ≤ λ_max
    eigenvalues, eigenvectors = torch.linalg.eigh(gram)
    ritz, vector = _lanczos(gram, eigenvectors[:, :, -3].unsqueeze(1), 5)
    assert bool((ritz >= eigenvalues[:, -3] * (1 - 1e-10)).all() and (ritz <= top * (1 + 1e-12)).all())
    assert bool(torch.isfinite(vector).all())
    # zero padding stays zero; a zero matrix gives 0; a non-finite matrix gives NaN
    padded = torch.nn.functional.pad(gram, (0, 7, 0, 7))
    ritz, vector = _lanczos(padded, torch.nn.functional.pad(start, (0, 7)), 5)
    assert torch.allclose(ritz, _lanczos(gram, start, 5)[0], rtol=1e-12) and not bool(vector[:, :, 60:].any())
    ritz, _ = _lanczos(torch.zeros(2, 5, 5, dtype=F64), torch.ones(2, 1, 5, dtype=F64), 3)
    assert torch.equal(ritz, torch.zeros(2, dtype=F64))
    broken = gram.clone()
    broken[1, 3, 4] = math.nan
    broken[2, 0, 0] = math.inf
    ritz, _ = _lanczos(broken, start, 5)
    assert bool(ritz[1].isnan()) and bool(ritz[2].isnan()) and bool(torch.isfinite(ritz[[0, 3, 4, 5]]).all())


def test_second_derivatives_through_the_batch_are_those_of_the_surrogate() -> None:
    """``create_graph=True`` (gradient penalties, Hessian-vector products): the batch's values have the
    surrogate's higher derivatives too, for a mixed batch in float64."""
    torch.manual_seed(6)
    members: list[nn.Module] = [
        GradientStepResidual(7, 9, bound="verified", learnable_step=True, step=1.1, dtype=F64),
        NormConstrainedLinear(15, 5, bound="verified", dtype=F64),
        GradientStepResidual(7, 9, bound="verified", step=1.7, dtype=F64),
    ]
    batch = CertifiedBatch(members)
    for member in members:
        member.train()
    vectors = [m.power_vector.clone() for m in members]
    margins = [1.0 + m._bound.verified_margin for m in members]
    values = [
        m.tau() if isinstance(m, GradientStepResidual) else m._bound(m.raw_weight, m.power_vector, True)[0]
        for m in members
    ]
    assert batch.batched_calls == 3
    params = [members[0].weight, members[0].step_logit, members[1].raw_weight, members[2].weight]

    def penalty(scalars: list[torch.Tensor]) -> torch.Tensor:
        first = torch.autograd.grad(sum((i + 1.0) * v for i, v in enumerate(scalars)), params, create_graph=True)
        return sum((g**2).sum() for g in first)

    got = torch.autograd.grad(penalty(values), params)
    surrogates = _surrogates(members, vectors, margins)
    expected = torch.autograd.grad(penalty(surrogates), params)
    scale = max(float(b.abs().max()) for b in expected)  # the norm map's is 0 up to rounding (‖uvᵀ‖ = 1)
    assert scale > 1e-3
    for a, b in zip(got, expected, strict=True):
        assert torch.allclose(a, b, rtol=1e-9, atol=1e-12 * scale)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("shape", [(7, 9), (50, 784)])  # below and above the NumPy comparison's size
@pytest.mark.parametrize("as_array", [False, True])  # the tensor path's stored rows, the compiled path's NumPy views
def test_the_content_check_is_value_equality_at_every_size(
    dtype: torch.dtype, shape: tuple[int, int], as_array: bool
) -> None:
    """One changed last bit anywhere is a change; NaN matches nothing; −0.0 matches 0.0 (as ``torch.equal``);
    another dtype or shape is never the same content."""
    from structnets.nn._certified_batch import _same_tensor_content

    def same(stored: torch.Tensor, current: torch.Tensor) -> bool:
        return _same_tensor_content(stored.numpy() if as_array else stored, current)

    generator = torch.Generator().manual_seed(12)
    stored = torch.randn(shape, generator=generator, dtype=dtype)
    current = nn.Parameter(stored.clone())
    assert same(stored, current)
    assert same(stored, current.detach().t().contiguous().t())  # another layout, same values
    for at in (0, stored.numel() // 2, stored.numel() - 1):
        changed = stored.clone().reshape(-1)
        changed[at] = torch.nextafter(changed[at], torch.tensor(math.inf, dtype=dtype))
        assert not same(changed.view(shape), current), at
    zeros = torch.zeros(shape, dtype=dtype)
    assert same(-zeros, nn.Parameter(zeros.clone()))
    with_nan = stored.clone()
    with_nan[0, 0] = math.nan
    assert not same(with_nan, with_nan.clone())
    assert not same(stored, stored.to(torch.float16).to(dtype))  # every entry rounded
    assert not same(stored, nn.Parameter(stored.to(torch.float64 if dtype == torch.float32 else torch.float32)))
    assert not same(stored.reshape(-1), current.detach().reshape(-1)[:-1])

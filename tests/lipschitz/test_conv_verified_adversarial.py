"""An outside review of the conv layers' ``bound="verified"``: every training-time Q against an independent norm.

The claim under attack: in training mode (gradients on) the verified Q of
:class:`~structnets.nn.GradientStepConv2d` and :class:`~structnets.nn.NormConstrainedConv2d` is
**always** ≥ ‖W‖_op², whatever the power vectors hold, so the block x − τWᵀσ(Wx + b) keeps
τ‖W‖_op² ≤ s ≤ 2. The references here share no code with the library: the explicit dense matrix
of the "same" convolution built in numpy from the definition (zero padding, and circular as a
cross-check), and for circular padding the exact norm max_ω σ₁(K̂(ω)) over the n₁ × n₂ DFT
frequencies by ``numpy.fft`` and a float64 SVD (Sedghi, Gupta, Long, ICLR 2019, Thm. 6).

Attacks: adversarial training that grows the norm fast and moves its frequency between steps
(Adam and SGD, large rates), in-place edits between forwards (``.data``, ``torch.no_grad()``
in-place, ``load_state_dict``), a top eigenvalue pushed just past the Cholesky test's guess
μ = (1 + margin)·λ̂ (δ from −10⁻¹⁰ to +10⁻¹⁰ relative), flat spectra (every frequency tied),
clustered and rank-one kernels, junk power vectors, scales from 2⁻¹⁰⁷⁰ to 2⁵⁰⁰, float32 and
float64, odd/even kernels and inputs, both paddings, non-finite weights; and the whole block,
whose float64 Jacobian I − τWᵀDW must have norm ≤ 1 at the τ the training step used.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
import torch

from structnets.nn import GradientStepConv2d, NormConstrainedConv2d
from structnets.nn._conv_common import conv_same, conv_same_adjoint
from structnets.nn._conv_verified import training_conv_square

F64 = torch.float64
Layer = GradientStepConv2d | NormConstrainedConv2d


# ------------------------------------------------------------------------------------ references (numpy)


def dense_operator(kernel: torch.Tensor | np.ndarray, size: tuple[int, int], padding_mode: str) -> np.ndarray:
    """The (c_out·n₁n₂, c_in·n₁n₂) float64 matrix of y[o, i] = Σ_{c,p} K[o, c, p]·x[c, i + p − (k − 1)//2].

    Indices outside the n₁ × n₂ window read 0 (zeros) or wrap (circular): the stride-1 "same"
    convolution, pads (k − 1)//2 before and k//2 after, written from its definition.
    """
    k = np.asarray(kernel.detach().to(F64) if isinstance(kernel, torch.Tensor) else kernel, dtype=np.float64)
    c_out, c_in, kh, kw = k.shape
    n1, n2 = size
    matrix = np.zeros((c_out, n1, n2, c_in, n1, n2))
    i1, i2 = np.meshgrid(np.arange(n1), np.arange(n2), indexing="ij")
    for p in range(kh):
        for q in range(kw):
            j1, j2 = i1 + p - (kh - 1) // 2, i2 + q - (kw - 1) // 2
            if padding_mode == "circular":
                j1, j2 = j1 % n1, j2 % n2
            valid = (j1 >= 0) & (j1 < n1) & (j2 >= 0) & (j2 < n2)
            # one output position reads one input position per tap: no repeated index within a tap
            matrix[:, i1[valid], i2[valid], :, j1[valid], j2[valid]] += k[:, :, p, q]
    return matrix.reshape(c_out * n1 * n2, c_in * n1 * n2)


def dense_norm_squared(kernel: torch.Tensor, size: int | tuple[int, int], padding_mode: str) -> float:
    """σ₁² of :func:`dense_operator` (float64 SVD)."""
    pair = (size, size) if isinstance(size, int) else size
    return float(np.linalg.norm(dense_operator(kernel, pair, padding_mode), 2)) ** 2


def circular_norm_squared(kernel: torch.Tensor, size: int | tuple[int, int]) -> float:
    """max over the n₁n₂ DFT frequencies of σ₁(K̂(ω))², K̂ by numpy's FFT of the taps folded modulo n."""
    n1, n2 = (size, size) if isinstance(size, int) else size
    k = np.asarray(kernel.detach().to(F64), dtype=np.float64)
    folded = np.zeros((*k.shape[:2], n1, n2))
    for p in range(k.shape[2]):
        for q in range(k.shape[3]):
            folded[:, :, p % n1, q % n2] += k[:, :, p, q]
    spectrum = np.fft.fft2(folded, axes=(2, 3)).transpose(2, 3, 0, 1)
    return float(np.linalg.svd(spectrum, compute_uv=False)[..., 0].max()) ** 2


def true_square(kernel: torch.Tensor, padding_mode: str, input_size: tuple[int, int] | None) -> float:
    """‖K‖_op² for what the layer certifies: the given size, or (every size) the largest over a few sizes, both paddings.

    For input_size=None the certificate covers every size and both paddings, so every measured
    size must lie below it: odd and even, the kernel's own size, and a larger circular grid.
    """
    if input_size is not None:
        if padding_mode == "circular":
            return circular_norm_squared(kernel, input_size)
        return dense_norm_squared(kernel, input_size, "zeros")
    kh, kw = int(kernel.shape[2]), int(kernel.shape[3])
    sizes = [(kh, kw), (5, 5), (6, 7)]
    measured = [dense_norm_squared(kernel, s, "zeros") for s in sizes]
    measured += [circular_norm_squared(kernel, s) for s in [*sizes, (31, 32)]]
    return max(measured)


# ------------------------------------------------------------------------------------ recording helpers


def weight_of(layer: Layer) -> torch.nn.Parameter:
    return layer.weight if isinstance(layer, GradientStepConv2d) else layer.raw_weight


def record(layer: Layer, taus: list[float] | None = None) -> list[tuple[float, torch.Tensor, bool]]:
    """Log (Q, the weight it was computed for, whether the Cholesky test certified it) at every training call.

    With ``taus`` (a :class:`GradientStepConv2d`), also every τ the layer computes, as it uses it.
    """
    bound = layer._bound
    original = bound.squared
    log: list[tuple[float, torch.Tensor, bool]] = []

    def squared(weight: torch.Tensor, training: bool = False) -> torch.Tensor:
        before = bound.verified_steps
        value = original(weight, training)
        if training and torch.is_grad_enabled():
            log.append((float(value.detach()), weight.detach().to(F64).clone(), bound.verified_steps > before))
        return value

    bound.squared = squared  # type: ignore[method-assign]
    if taus is not None:
        assert isinstance(layer, GradientStepConv2d)
        original_tau = layer.tau

        def tau() -> torch.Tensor:
            value = original_tau()
            taus.append(float(value.detach()))
            return value

        layer.tau = tau  # type: ignore[method-assign]
    return log


def assert_every_q_certified(
    log: list[tuple[float, torch.Tensor, bool]], padding_mode: str, input_size: tuple[int, int] | None
) -> None:
    for step, (q, weight, passed) in enumerate(log):
        truth = true_square(weight, padding_mode, input_size)
        assert q >= truth, f"step {step} ({'verified' if passed else 'exact'}): Q = {q!r} < ‖W‖_op² = {truth!r}"


def frequency_input(channels: int, size: tuple[int, int], frequency: tuple[int, int], seed: int) -> torch.Tensor:
    """A batch of 2 images cos(2π(a·i/n₁ + b·j/n₂) + φ_c): drives the norm up at one chosen frequency."""
    generator = torch.Generator().manual_seed(seed)
    i = torch.arange(size[0], dtype=F64)[:, None] / size[0]
    j = torch.arange(size[1], dtype=F64)[None, :] / size[1]
    phase = torch.rand(2, channels, 1, 1, generator=generator, dtype=F64) * 2 * math.pi
    amplitude = torch.randn(2, channels, 1, 1, generator=generator, dtype=F64)
    return amplitude * torch.cos(2 * math.pi * (frequency[0] * i + frequency[1] * j) + phase)


# ------------------------------------------------------------------------------------ the references


@pytest.mark.parametrize("padding_mode", ["zeros", "circular"])
@pytest.mark.parametrize(("shape", "size"), [((3, 2, 3, 3), (5, 6)), ((2, 3, 2, 4), (4, 5)), ((1, 1, 1, 2), (3, 2))])
def test_references_are_the_layers_operator(
    shape: tuple[int, int, int, int], size: tuple[int, int], padding_mode: str
) -> None:
    """The numpy matrix is the operator the layers apply (and its transpose their adjoint); the FFT norm is its norm."""
    generator = torch.Generator().manual_seed(3)
    kernel = torch.randn(*shape, generator=generator, dtype=F64)
    x = torch.randn(2, shape[1], *size, generator=generator, dtype=F64)
    y = torch.randn(2, shape[0], *size, generator=generator, dtype=F64)
    matrix = torch.from_numpy(dense_operator(kernel, size, padding_mode))
    torch.testing.assert_close(conv_same(x, kernel, None, padding_mode).flatten(1), x.flatten(1) @ matrix.T)
    torch.testing.assert_close(conv_same_adjoint(y, kernel, padding_mode).flatten(1), y.flatten(1) @ matrix)
    if padding_mode == "circular":
        dense = dense_norm_squared(kernel, size, "circular")
        assert abs(circular_norm_squared(kernel, size) - dense) <= 1e-12 * dense


# ------------------------------------------------------------------------------------ adversarial training

CASES = [
    # (layer, c_in, c_out, kernel, padding, input_size, dtype, optimizer, lr)
    ("step", 1, 1, 3, "circular", (5, 5), F64, "sgd", 2.0),
    ("step", 3, 5, 2, "zeros", (4, 5), torch.float32, "adam", 0.5),
    ("step", 5, 3, (3, 2), "circular", (6, 6), F64, "adam", 0.5),
    ("step", 2, 6, 3, "zeros", None, F64, "sgd", 0.5),
    ("step", 4, 4, 4, "circular", (7, 7), torch.float32, "sgd", 1.0),
    ("lift", 3, 4, 3, "zeros", (5, 5), F64, "adam", 0.5),
    ("lift", 4, 2, 2, "circular", (5, 4), torch.float32, "sgd", 2.0),
    ("lift", 1, 6, (1, 3), "zeros", None, torch.float32, "adam", 0.3),
    ("step", 12, 16, 3, "circular", (5, 5), torch.float32, "adam", 0.3),
    ("lift", 16, 10, 2, "zeros", (4, 3), F64, "sgd", 1.0),
]


def _build(kind: str, c_in: int, c_out: int, kernel: int | tuple[int, int], padding_mode: str,
           input_size: tuple[int, int] | None, dtype: torch.dtype) -> Layer:  # fmt: skip
    if kind == "step":
        return GradientStepConv2d(c_in, c_out, kernel, padding_mode=padding_mode, input_size=input_size,
                                  bound="verified", dtype=dtype)  # fmt: skip
    return NormConstrainedConv2d(c_in, c_out, kernel, padding_mode=padding_mode, input_size=input_size,
                                 bound="verified", dtype=dtype)  # fmt: skip


@pytest.mark.parametrize(
    ("kind", "c_in", "c_out", "kernel", "padding_mode", "input_size", "dtype", "method", "lr"),
    CASES,
    ids=[f"{c[0]}-{c[1]}to{c[2]}-k{c[3]}-{c[4]}-{c[5]}-{str(c[6])[6:]}-{c[7]}" for c in CASES],
)
def test_adversarial_training_and_edits_never_undershoot(
    kind: str, c_in: int, c_out: int, kernel: int | tuple[int, int], padding_mode: str,
    input_size: tuple[int, int] | None, dtype: torch.dtype, method: str, lr: float,
) -> None:  # fmt: skip
    """Grow ‖W‖_op fast at a frequency that moves every step, shrink it, and edit W behind the vectors.

    Every training forward's Q (verified or fallen back) must be ≥ the measured ‖W‖_op² of the
    weight it was computed for; the run must certify most steps by the Cholesky test (not only by
    the exact fallback) and move ‖W‖_F by a factor ≥ 30.
    """
    torch.manual_seed(11)
    layer = _build(kind, c_in, c_out, kernel, padding_mode, input_size, dtype)
    layer.train()
    log = record(layer)
    weight = weight_of(layer)
    size = input_size if input_size is not None else (6, 5)
    optimizer: torch.optim.Optimizer
    if method == "adam":
        optimizer = torch.optim.Adam(layer.parameters(), lr=lr)
    else:
        optimizer = torch.optim.SGD(layer.parameters(), lr=lr)
    frequencies = [(0, 0), (size[0] // 2, size[1] // 2), (1, size[1] - 1), (size[0] - 1, 2), (0, 1), (2, 0)]
    generator = torch.Generator().manual_seed(5)
    for step in range(14):
        x = frequency_input(c_in, size, frequencies[step % len(frequencies)], seed=step).to(dtype)
        optimizer.zero_grad()
        out = layer(x)  # the verified Q under test
        # ascend ‖Wx‖ at this step's frequency (normalised by ‖W‖_F² so SGD grows it by a bounded factor)
        grown = conv_same(x, weight, None, padding_mode).square().sum() / weight.detach().square().sum()
        (out.square().mean() - grown).backward()
        optimizer.step()
        with torch.no_grad():
            if step % 5 == 2:
                weight.mul_(0.05)  # collapse: the next growth starts from a different top
            if step % 5 == 3:
                # a new kernel concentrated at a frequency the vectors never saw, written through .data
                sign = torch.tensor([(-1.0) ** (p + q) for p in range(weight.shape[2]) for q in range(weight.shape[3])])
                pattern = sign.reshape(weight.shape[2:]).to(dtype)
                left = torch.randn(weight.shape[0], 1, generator=generator)
                rank_one = (left @ torch.randn(1, weight.shape[1], generator=generator)).to(dtype)
                weight.data = weight.data + 20.0 * rank_one[:, :, None, None] * pattern
            if step % 5 == 4:
                state = layer.state_dict()
                name = "weight" if kind == "step" else "raw_weight"
                state[name] = state[name] * 7.0 + torch.randn(state[name].shape, generator=generator).to(dtype)
                layer.load_state_dict(state)
    assert len(log) == 14
    assert_every_q_certified(log, padding_mode, input_size)
    passed = sum(p for _, _, p in log)
    assert passed >= 7, f"only {passed} Cholesky certificates: the verified path was barely exercised"
    norms = [float(torch.linalg.vector_norm(w)) for _, w, _ in log]
    assert max(norms) >= 30 * min(norms), "the attack barely moved the weight"


# ------------------------------------------------------------------------------------ the Cholesky test's edge


def _aligned_kernel(
    singular: tuple[float, ...], seed: int, shape: tuple[int, int, int] = (3, 3, 3)
) -> tuple[torch.Tensor, torch.Tensor]:
    """(kernel with one tap A = U diag(s) Vᵀ, the eigenvectors of its Gram side): K̂(ω) = A·e^{−iω·t}, a flat spectrum.

    ``shape`` = (c_out, c_in, k): the tap sits at the centre ((k − 1)//2, the "same" convolution's
    origin), so both paddings apply A pixelwise and ‖K‖_op = s₁ for every input size.
    """
    c_out, c_in, k = shape
    generator = torch.Generator().manual_seed(seed)
    u, _ = torch.linalg.qr(torch.randn(c_out, c_out, generator=generator, dtype=F64))
    v, _ = torch.linalg.qr(torch.randn(c_in, c_in, generator=generator, dtype=F64))
    r = len(singular)
    kernel = torch.zeros(c_out, c_in, k, k, dtype=F64)
    kernel[:, :, (k - 1) // 2, (k - 1) // 2] = u[:, :r] @ torch.diag(torch.tensor(singular, dtype=F64)) @ v[:, :r].T
    return kernel, (v if c_in <= c_out else u)  # the Gram matrix is K̂ᴴK̂ when c_in ≤ c_out, else K̂K̂ᴴ


@pytest.mark.parametrize(("padding_mode", "shape"), [("circular", (3, 3, 3)), ("zeros", (2, 4, 2))])
@pytest.mark.parametrize("delta", [-1e-10, -1e-14, 0.0, 1e-15, 1e-14, 1e-13, 1e-10])
def test_top_eigenvalue_just_past_the_guess_is_caught(
    delta: float, padding_mode: str, shape: tuple[int, int, int]
) -> None:
    """Vectors on the old top eigenvector, the new top (1 + m)(1 + δ)·λ̂ on an orthogonal one, at every frequency.

    The warm estimate is λ̂ = 1 (v is still an eigenvector), so μ = (1 + m) and λ_max = μ(1 + δ):
    for δ > 0 the test must fail (fall back) or its Q' must still cover λ_max; at δ ≤ 0 it may
    certify, and Q' ≥ λ_max must then come from its rounding slack alone (δ = 0: μ = λ_max).
    """
    margin, n = 0.01, 5
    rank = min(shape[:2])
    singular = (1.0, 0.5, 0.3)[:rank]
    old, v = _aligned_kernel(singular, 1, shape)
    new, v_new = _aligned_kernel((1.0, math.sqrt((1 + margin) * (1 + delta)), 0.3)[:rank], 1, shape)
    assert torch.equal(v, v_new)
    grid = n if padding_mode == "circular" else n + shape[2] - 1
    vectors = v[:, 0].to(torch.complex128).expand(grid * (grid // 2 + 1), -1).contiguous()
    square, _, passed = training_conv_square(old, vectors, margin, padding_mode, n)
    assert passed and float(square) >= true_square(old, padding_mode, (n, n))
    square, _, passed = training_conv_square(new, vectors, margin, padding_mode, n)
    truth = true_square(new, padding_mode, (n, n))
    assert abs(truth - (1 + margin) * (1 + delta)) <= 1e-14  # the construction did what it says
    assert float(square) >= truth, (delta, passed, float(square), truth)
    if delta >= 1e-13:  # μ is below λ_max by more than any rounding: no certificate from this guess
        assert not passed
    if delta <= -1e-10:
        assert passed and float(square) <= truth * (1 + 1e-9)


@pytest.mark.parametrize("edit", ["data", "no_grad", "load_state_dict"])
def test_layer_edit_just_past_the_guess_keeps_the_block_certified(edit: str) -> None:
    """Through the layer: converge the vectors, edit W so λ_max = (1 + m)(1 + 10⁻¹⁴)·λ̂, check τ·‖W‖_op² ≤ 2 exactly."""
    n = 5
    layer = GradientStepConv2d(3, 3, 3, bias=False, padding_mode="circular", step=2.0, learnable_step=False,
                               input_size=n, bound="verified", dtype=F64)  # fmt: skip
    old, _ = _aligned_kernel((1.0, 0.5, 0.3), 2)
    layer.load_state_dict({**layer.state_dict(), "weight": old})
    layer.train()
    taus: list[float] = []
    log = record(layer, taus)
    x = torch.randn(2, 3, n, n, generator=torch.Generator().manual_seed(0), dtype=F64)
    for _ in range(4):
        layer(x)
    assert log[-1][2], "the vectors did not converge: the edit below would not sit at the guess"
    margin = layer._bound.verified_margin
    new, _ = _aligned_kernel((1.0, math.sqrt((1 + margin) * (1 + 1e-14)), 0.3), 2)
    if edit == "data":
        layer.weight.data = new.clone()
    elif edit == "no_grad":
        with torch.no_grad():
            layer.weight.copy_(new)
    else:
        layer.load_state_dict({**layer.state_dict(), "weight": new})
    layer(x)
    q = log[-1][0]
    truth = circular_norm_squared(new, n)
    assert q >= truth
    # the τ that forward used, in exact rational arithmetic: τ·‖W‖² ≤ 2 up to the SVD's own 10⁻¹⁵
    # (far below the 1 % the guess was off by)
    assert Fraction(taus[-1]) * Fraction(truth) <= 2 * (1 + Fraction(1, 10**14))


# ------------------------------------------------------------------------------------ degenerate spectra


def _degenerate_kernels() -> list[tuple[str, torch.Tensor]]:
    generator = torch.Generator().manual_seed(7)
    out = []
    q, _ = torch.linalg.qr(torch.randn(6, 6, generator=generator, dtype=F64))
    flat = torch.zeros(6, 6, 3, 3, dtype=F64)
    flat[:, :, 1, 1] = q  # every singular value 1 at every frequency: 6·F tied eigenvalues
    out.append(("orthogonal flat", flat))
    out.append(
        ("orthogonal flat, clustered 1e-12", flat + 1e-12 * torch.randn(flat.shape, generator=generator, dtype=F64))
    )
    u, v = torch.randn(4, 1, generator=generator, dtype=F64), torch.randn(1, 3, generator=generator, dtype=F64)
    h = torch.randn(3, 3, generator=generator, dtype=F64)
    out.append(("rank one", (u @ v)[:, :, None, None] * h))
    out.append(("rank one, 1x1 taps", (u @ v)[:, :, None, None] * torch.ones(1, 1, 2, 2, dtype=F64)))
    sign = torch.tensor([[1.0, -1.0], [-1.0, 1.0]], dtype=F64)
    out.append(("checkerboard even", (v.T @ u.T)[:, :, None, None] * sign))  # top only at (π, π)
    shift = torch.zeros(2, 2, 3, 3, dtype=F64)
    shift[0, 0, 0, 0], shift[1, 1, 2, 2] = 1.0, 1.0  # |K̂(ω)| ≡ 1: two pure shifts, all frequencies tied
    out.append(("pure shifts", shift))
    out.append(("zero", torch.zeros(2, 3, 3, 3, dtype=F64)))
    return out


DEGENERATE = _degenerate_kernels()


def _junk_vectors(frequencies: int, n: int, kernel: torch.Tensor) -> list[tuple[str, torch.Tensor]]:
    generator = torch.Generator().manual_seed(9)
    random = torch.randn(frequencies, n, generator=generator, dtype=torch.complex128)
    out = [("random", random / random.abs().square().sum(-1, keepdim=True).sqrt()), ("zeros", torch.zeros_like(random)),
           ("nan", torch.full_like(random, complex(math.nan, 0.0))), ("inf", torch.full_like(random, complex(math.inf, 0.0))),
           ("huge", random * 1e300), ("tiny", random * 1e-300), ("wrong dtype", random.to(torch.complex64)),
           ("wrong shape", random[:-1])]  # fmt: skip
    c_out, c_in = kernel.shape[:2]
    matrix = kernel.sum(dim=(2, 3))
    gram = matrix.T @ matrix if c_in <= c_out else matrix @ matrix.T
    if float(gram.abs().max()) > 0:
        bottom = torch.linalg.eigh(gram)[1][:, 0]  # the null space of a rank-one kernel: Gv ≈ 0
        out.append(("bottom eigenvector", bottom.to(torch.complex128).expand(frequencies, -1).contiguous()))
    return out


@pytest.mark.parametrize("padding_mode", ["zeros", "circular"])
@pytest.mark.parametrize(("name", "kernel"), DEGENERATE, ids=[name for name, _ in DEGENERATE])
def test_degenerate_spectra_and_junk_vectors(name: str, kernel: torch.Tensor, padding_mode: str) -> None:
    """Tied and clustered tops, rank-one kernels, the zero kernel; vectors zero, NaN, ±∞, huge, tiny, misshapen."""
    n = (5, 6)
    grid = n if padding_mode == "circular" else (n[0] + kernel.shape[2] - 1, n[1] + kernel.shape[3] - 1)
    frequencies, side = grid[0] * (grid[1] // 2 + 1), min(kernel.shape[:2])
    truth = true_square(kernel, padding_mode, n)
    for label, vectors in _junk_vectors(frequencies, side, kernel):
        current: torch.Tensor | None = vectors
        for step in range(3):  # the junk, then what the library made of it
            square, current, passed = training_conv_square(kernel, current, 0.01, padding_mode, n)
            assert float(square) >= truth, (label, step, passed, float(square), truth)
            assert current is not None and bool(torch.isfinite(torch.view_as_real(current)).all()), (label, step)
            if truth > 0:  # and never vacuous: within the margin, plus the zero-padding torus slack
                assert float(square) <= truth * (1.02 if padding_mode == "circular" else 1.5), (label, step)
            else:
                assert float(square) == 0.0


# ------------------------------------------------------------------------------------ scales and dtypes


@pytest.mark.parametrize(
    ("dtype", "exponent"),
    [
        (torch.float32, 60),
        (torch.float32, -60),
        (F64, 60),
        (F64, -60),
        (F64, 500),
        (F64, -900),
        (F64, -1030),
        (F64, -1070),
    ],
)
def test_extreme_scales_are_certified_and_the_step_stays_finite(dtype: torch.dtype, exponent: int) -> None:
    """W·2^e (exact): Q ≥ ‖W‖_op²·2^{2e} in exact rational arithmetic, τ·Q ≤ 2, and a finite output.

    2⁻¹⁰³⁰ and 2⁻¹⁰⁷⁰ put the whole kernel in float64's subnormal range (a finite kernel: it has a
    certificate, the smallest subnormal when ‖W‖² underflows); 2⁵⁰⁰ overflows ‖W‖² (Q = +∞, τ = 0).
    """
    n = 5
    generator = torch.Generator().manual_seed(4)
    base = torch.randn(4, 3, 3, 3, generator=generator).to(dtype).to(F64)  # representable in ``dtype``
    if exponent <= -1000:
        base = torch.round(base * 4) / 4  # two fractional bits: base·2^e stays exact among the subnormals
    truth = Fraction(circular_norm_squared(base, n)) * Fraction(2) ** (2 * exponent)
    layer = GradientStepConv2d(3, 4, 3, padding_mode="circular", step=2.0, learnable_step=False, input_size=n,
                               bound="verified", dtype=dtype)  # fmt: skip
    scaled = (base * 2.0**exponent).to(dtype)
    power = Fraction(2) ** exponent
    assert all(Fraction(a) == Fraction(b) * power for a, b in zip(scaled.flatten().tolist(), base.flatten().tolist()))
    layer.load_state_dict({**layer.state_dict(), "weight": scaled})
    taus: list[float] = []
    log = record(layer, taus)
    layer.train()
    x = torch.randn(2, 3, n, n, generator=generator, dtype=F64).to(dtype)
    for _ in range(3):
        out = layer(x)
        assert bool(torch.isfinite(out).all()), f"2^{exponent} in {dtype}: a non-finite output"
    assert len(log) == len(taus) == 3 and log[-1][2]  # the warm vectors' Cholesky test certified the last step
    for (q, _, _), tau in zip(log, taus):
        assert q >= 0.0 and not math.isnan(q)
        assert math.isinf(q) or Fraction(q) >= truth * (1 - Fraction(1, 10**12)), (exponent, q)
        # τ as the forward used it: finite, and τ·‖W‖_op² ≤ s = 2 in exact arithmetic
        assert math.isfinite(tau) and Fraction(tau) * truth <= 2 * (1 + Fraction(1, 10**12)), (exponent, tau)
    lift = NormConstrainedConv2d(3, 4, 3, padding_mode="circular", input_size=n, bound="verified", dtype=dtype)
    lift.load_state_dict({**lift.state_dict(), "raw_weight": scaled})
    lift.train()
    for _ in range(2):
        square = float(lift._bound.squared(lift.raw_weight, True).detach())
        assert math.isinf(square) or Fraction(square) >= truth * (1 - Fraction(1, 10**12))
    assert bool(torch.isfinite(lift(x)).all())
    if exponent < 0:  # ‖V‖ < 1, so A = V and the certificate min(1, B) must cover ‖V‖_op
        assert Fraction(lift.lipschitz_bound()) ** 2 >= truth * (1 - Fraction(1, 10**12))


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("dtype", [torch.float32, F64])
def test_non_finite_weights_never_certify_and_do_not_poison_the_vectors(value: float, dtype: torch.dtype) -> None:
    n = 6
    layer = GradientStepConv2d(2, 3, 2, padding_mode="zeros", input_size=n, bound="verified", dtype=dtype)
    lift = NormConstrainedConv2d(2, 3, 3, padding_mode="circular", input_size=n, bound="verified", dtype=dtype)
    x = torch.randn(2, 2, n, n, generator=torch.Generator().manual_seed(1), dtype=F64).to(dtype)
    logs = [record(layer), record(lift)]
    layer.train(), lift.train()
    for _ in range(3):
        layer(x), lift(x)
    good = [weight_of(m).detach().clone() for m in (layer, lift)]
    for module in (layer, lift):
        with torch.no_grad():
            weight_of(module)[0, 0, -1, 0] = value
        # the output must show it (NaN wherever the bad tap reaches), never pass for a certified one
        assert bool(torch.isnan(module(x)).any()), f"{type(module).__name__}: a non-finite weight, a finite output"
    for log in logs:
        q, _, passed = log[-1]
        assert math.isnan(q) and not passed
    for module, name in ((layer, "weight"), (lift, "raw_weight")):
        with pytest.raises(ValueError, match=f"`{name}` has non-finite"):
            module.lipschitz_bound()
    # restored: the vectors the NaN step left behind are finite guesses, certified again within two steps
    for module, weight in zip((layer, lift), good):
        with torch.no_grad():
            weight_of(module).copy_(weight)
    for _ in range(2):
        layer(x), lift(x)
    assert logs[0][-1][2] and logs[1][-1][2]
    assert_every_q_certified([e for e in logs[0] if not math.isnan(e[0])], "zeros", (n, n))
    assert_every_q_certified([e for e in logs[1] if not math.isnan(e[0])], "circular", (n, n))


# ------------------------------------------------------------------------------------ the whole block


def _block_jacobians(layer: GradientStepConv2d, tau: float, points: torch.Tensor, shift: float) -> list[np.ndarray]:
    """Jacobians of x ↦ x − τWᵀReLU(Wx + b + shift) in float64 (a float64 copy of W, b), by autograd."""
    w = layer.weight.detach().to(F64)
    b = (layer.bias.detach().to(F64) if layer.bias is not None else torch.zeros(w.shape[0], dtype=F64)) + shift
    shape = (1, w.shape[1], *points.shape[-2:])

    def block(flat: torch.Tensor) -> torch.Tensor:
        x = flat.reshape(shape)
        hidden = torch.relu(conv_same(x, w, b, layer.padding_mode))
        return (x - tau * conv_same_adjoint(hidden, w, layer.padding_mode)).flatten()

    return [torch.autograd.functional.jacobian(block, p.flatten()).numpy() for p in points]


@pytest.mark.parametrize(
    ("dtype", "padding_mode", "kernel", "input_size", "channels", "hidden"),
    [
        (F64, "circular", 3, (5, 5), 2, 3),
        (torch.float32, "circular", 2, (6, 5), 3, 2),
        (F64, "zeros", 3, None, 1, 4),
        (torch.float32, "zeros", (2, 3), (5, 6), 2, 2),
    ],
)
def test_block_jacobian_at_the_training_tau_is_nonexpansive(
    dtype: torch.dtype, padding_mode: str, kernel: int | tuple[int, int], input_size: tuple[int, int] | None,
    channels: int, hidden: int,
) -> None:  # fmt: skip
    """s = 2 (the edge of the certificate), weights pushed up by Adam: at the τ each training step used,
    ‖I − τWᵀDW‖₂ ≤ 1 + 10⁻¹² at random points, and with every ReLU on (b + 10³) its least eigenvalue
    1 − τ‖W‖² is ≥ −1 − 10⁻¹² (and ≤ −0.8: the test sits at the edge, a 10 % undershoot would fail it)."""
    torch.manual_seed(3)
    layer = GradientStepConv2d(channels, hidden, kernel, padding_mode=padding_mode, step=2.0, learnable_step=False,
                               input_size=input_size, bound="verified", dtype=dtype)  # fmt: skip
    taus: list[float] = []
    log = record(layer, taus)
    size = input_size if input_size is not None else (5, 6)
    optimizer = torch.optim.Adam(layer.parameters(), lr=0.3)
    layer.train()
    for step in range(6):
        x = frequency_input(channels, size, (step, 2 * step), seed=step).to(dtype)
        optimizer.zero_grad()
        out = layer(x)
        grown = conv_same(x, layer.weight, None, padding_mode).square().sum() / layer.weight.detach().square().sum()
        (out.square().mean() - grown).backward()
        optimizer.step()
    assert sum(p for _, _, p in log) >= 3
    points = torch.randn(3, channels, *size, generator=torch.Generator().manual_seed(2), dtype=F64)
    assert len(taus) == len(log) == 6
    for (_, weight, passed), tau in zip(log[-3:], taus[-3:]):  # the weight and τ of one training forward
        with torch.no_grad():
            layer.weight.copy_(weight.to(dtype))
        for jacobian in _block_jacobians(layer, tau, points, 0.0):
            assert np.linalg.norm(jacobian, 2) <= 1.0 + 1e-12, passed
        (on,) = _block_jacobians(layer, tau, points[:1], 1e3)  # D = I: J = I − τWᵀW, symmetric
        least = float(np.linalg.eigvalsh((on + on.T) / 2)[0])
        assert -1.0 - 1e-12 <= least, (passed, least)
        if input_size is not None and padding_mode == "circular":
            assert least <= -0.8  # the certificate is tight here: the check above has teeth


# ------------------------------------------------------------------------------------ geometry edits


def test_changed_padding_or_input_size_moves_the_certificate_with_the_forward() -> None:
    """``layer.padding_mode`` / ``layer.input_size`` set after construction: Q must follow the operator applied.

    A zero-padding certificate on 5 × 5 (the 7 × 7 torus) does not cover the 5 × 5 circular
    operator; before the geometry lived in one place, this layer's τ·‖W‖_op² was 2.035 > 2 there.
    """
    torch.manual_seed(0)
    n = 5
    layer = GradientStepConv2d(3, 3, 3, padding_mode="zeros", step=2.0, learnable_step=False, input_size=n,
                               bound="verified", dtype=F64)  # fmt: skip
    lift = NormConstrainedConv2d(3, 3, 3, padding_mode="zeros", input_size=n, bound="verified", dtype=F64)
    with torch.no_grad():
        lift.raw_weight.mul_(10.0)  # B > 1: A = V/B sits on the unit ball
    taus: list[float] = []
    record(layer, taus)
    x = torch.randn(2, 3, n, n, generator=torch.Generator().manual_seed(0), dtype=F64)
    for training in (True, False):  # warm vectors, then a cached eval Q: neither may survive the change
        layer.train(training), lift.train(training)
        with torch.set_grad_enabled(training):
            layer(x), lift(x)
    assert Fraction(taus[-1]) * Fraction(circular_norm_squared(layer.weight, n)) > 2  # the attack needs this
    layer.padding_mode = lift.padding_mode = "circular"
    for size in ((n, n), (7, 6)):
        if size != (n, n):
            layer.input_size = lift.input_size = size
            x = torch.randn(2, 3, *size, generator=torch.Generator().manual_seed(1), dtype=F64)
        for training in (True, False):
            layer.train(training), lift.train(training)
            with torch.set_grad_enabled(training):
                layer(x)
                kernel = lift.kernel().detach()
            truth = circular_norm_squared(layer.weight, size)
            assert Fraction(taus[-1]) * Fraction(truth) <= 2 * (1 + Fraction(1, 10**12)), (size, training)
            assert circular_norm_squared(kernel, size) <= 1 + 1e-12, (size, training)
        assert lift.lipschitz_bound() ** 2 >= circular_norm_squared(lift.kernel().detach(), size) * (1 - 1e-12)
    for module in (layer, lift):
        with pytest.raises(ValueError, match="`padding_mode`"):
            module.padding_mode = "reflect"
        with pytest.raises(ValueError, match="must not exceed `input_size`"):
            module.input_size = 2
        assert (module.padding_mode, module.input_size) == ("circular", (7, 6))
        assert "padding_mode='circular'" in repr(module) and "input_size=(7, 6)" in repr(module)

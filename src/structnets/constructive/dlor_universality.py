"""Universal approximation by deep DLoR networks of width n + m + 2, as an explicit construction.

Chen, Li, Kim, Lavaei, *Structural Correspondence and Universal Approximation in Diagonal plus
Low-Rank Neural Networks* (arXiv 2605.05659), Theorems 5–8: deep DLoR networks (every weight
αI + UVᵀ, N×N) of bounded width N = n + m + 2 are dense in C(K, ℝᵐ) (Theorem 5); the guarantee
of any dense network transfers to a DLoR network (Theorem 7); and the parameter cost of the deep
form matches that of dense networks (Theorem 8).

The construction, for a continuous target f: K = [low, high]ⁿ → ℝᵐ:

1. :func:`fit_shallow`: a one-hidden-layer network g(x) = c₀ + Σ_{j=1}^{J} c_j σ(w_jᵀx + b_j)
   (random features w_j, hyperplanes through random points of K, output weights by
   least squares on a grid). One hidden layer with a non-polynomial σ is dense in C(K, ℝᵐ)
   (Leshno–Lin–Pinkus–Schocken), so ‖g − f‖_∞ → 0 as J grows; the fit measures it.
2. :func:`dlor_from_shallow`: the *register network* of width N = n + m + 2 that evaluates g
   one neuron at a time (the narrow-network construction behind the width-(n + m + 2) theorem
   of Kidger and Lyons, 2020), whose every weight is a DLoR matrix. Coordinates:
   ``X`` = 0 … n−1 carry x, ``Y`` = n … n+m−1 accumulate Σ c_j σ(·), ``t`` = n + m holds the
   current neuron, ``n + m + 1`` is spare (it is the "+2" of the theorem, needed for
   polynomial-like σ; here it stays at 0). Registers pass σ in its near-linear regime:
   a value z is stored as σ(h_i z + c), c the operating point, s = σ'(c) ≠ 0, and read back
   as λ(a) = (a − σ(c))/(h_i s) = z + O(h_i z²) (O(h_i² z³) when σ''(c) = 0, exact for ReLU
   at c = 1). Re-storing a register is the diagonal: pre-activation a/s + (c − σ(c)/s) =
   h_i λ(a) + c for *every* register, so all hidden layers have α = 1/s, and only
   * computing neuron j in ``t`` (row t := w_jᵀλ(a_X) + b_j, its own diagonal removed):
     the rank-1 update e_t (w_j/(h_x s) − e_t/s)ᵀ, and
   * adding c_j σ(·) to ``Y`` (column t read into Y with weight h_y c_j): the rank-1 update
     (h_y c_j) e_tᵀ
   differ from 1/s·I. With ``rank=2`` both happen in one layer (add neuron j − 1, compute
   neuron j): J + 1 hidden layers; with ``rank=1`` they alternate: 2J hidden layers. Then m
   rank-1 layers move Y_i into coordinate i (the output is read from the first m coordinates),
   and the output map is αI, α = 1/(h_y s), U = V = 0, bias c₀ − σ(c)/(h_y s). The first
   layer takes the zero-padded raw input, so its α = h_x stores x directly.

   The same matrices, read as dense ``nn.Linear`` maps, form the narrow dense network
   (``narrow``): the transfer of Theorem 7 is here exact, weight by weight (each dense
   weight *is* αI + UVᵀ, bit for bit), so the DLoR network and the narrow network compute the
   same function up to rounding. The generic route of Theorem 7,
   :func:`~structnets.constructive.dlor_network_from_dense` (``"deep"``) on ``narrow``,
   factors every weight into up to ⌈(2N − 1)/r⌉ DLoR matrices and adds an O(h) error.
3. :func:`wide_dlor_from_shallow`: the depth-1 DLoR network of width J that computes g exactly
   (rank max(n, m)), and :func:`dlor_universal_approximator`, steps 1–2 in one call.

Scales: h_x = h / max|x| over K and h_y = h / max over the fit grid of the partial sums
|c₀ + Σ_{k≤j} c_k σ(·)|, so every register holds h_i|z| ≤ h (up to the fit grid) and the
Taylor error is the same relative size in every register.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from .._validation import check_choice, check_fits_in_memory, check_int, check_real
from ..nn import ACTIVATIONS, DLoRLinear
from .dlor_factor import DLoRFactor, _load_factor
from .dlor_network import _value_and_slope

F64 = torch.float64

RANKS: tuple[int, ...] = (1, 2)
"""Ranks the register construction uses: 1 (two layers per neuron) or 2 (one layer per neuron)."""


def universal_activations() -> tuple[str, ...]:
    """The names of :data:`structnets.nn.ACTIVATIONS` but ``identity``: σ must be non-polynomial (Leshno et al. 1993)."""
    return tuple(a for a in ACTIVATIONS if a != "identity")


# --------------------------------------------------------------------------------------------
# The shallow approximant


@dataclass(frozen=True)
class ShallowNetwork:
    """g(x) = c₀ + Σ_j c_j σ(w_jᵀx + b_j), the one-hidden-layer network the construction evaluates.

    Attributes:
        weight: (J, n) float64, the rows w_j.
        bias: (J,) float64, the b_j.
        coefficients: (m, J) float64, the columns c_j.
        offset: (m,) float64, c₀.
        activation: σ, a name from :data:`structnets.nn.ACTIVATIONS` (not ``identity``).
        low, high: the box K = [low, high]ⁿ it was fitted on.
    """

    weight: torch.Tensor
    bias: torch.Tensor
    coefficients: torch.Tensor
    offset: torch.Tensor
    activation: str
    low: float = -1.0
    high: float = 1.0

    @property
    def in_features(self) -> int:
        return int(self.weight.shape[1])

    @property
    def out_features(self) -> int:
        return int(self.coefficients.shape[0])

    @property
    def neurons(self) -> int:
        return int(self.weight.shape[0])

    def hidden(self, x: torch.Tensor) -> torch.Tensor:
        """σ(x Wᵀ + b): (rows, J) float64 for x of shape (rows, n)."""
        from ..nn import activation

        return activation(self.activation)(x.to(F64) @ self.weight.T + self.bias)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """g(x): (rows, m) float64 for x of shape (rows, n)."""
        return self.hidden(x) @ self.coefficients.T + self.offset

    def partial_sums(self, x: torch.Tensor) -> torch.Tensor:
        """c₀ + Σ_{k≤j} c_k σ(w_kᵀx + b_k) for j = 0 … J: (J + 1, rows, m) float64."""
        terms = self.hidden(x).T[:, :, None] * self.coefficients.T[:, None, :]  # (J, rows, m)
        start = self.offset.expand(x.shape[0], -1)[None]
        return torch.cat([start, start + torch.cumsum(terms, dim=0)], dim=0)

    def to_dense(self) -> nn.Sequential:
        """The dense network ``Linear(n, J), σ, Linear(J, m)`` (float64) computing g."""
        from ..nn import activation

        first, last = (
            nn.Linear(self.in_features, self.neurons, dtype=F64),
            nn.Linear(self.neurons, self.out_features, dtype=F64),
        )
        with torch.no_grad():
            first.weight.copy_(self.weight)
            first.bias.copy_(self.bias)
            last.weight.copy_(self.coefficients)
            last.bias.copy_(self.offset)
        return nn.Sequential(first, activation(self.activation).to(F64), last)

    def parameter_count(self) -> int:
        """Parameters of :meth:`to_dense`: J(n + 1) + m(J + 1)."""
        return self.neurons * (self.in_features + 1) + self.out_features * (self.neurons + 1)


def grid(in_features: int, points_per_axis: int, low: float = -1.0, high: float = 1.0) -> torch.Tensor:
    """The tensor grid of ``points_per_axis``ⁿ points on [low, high]ⁿ, (points, n) float64."""
    in_features = check_int("in_features", in_features, low=1)
    points_per_axis = check_int("points_per_axis", points_per_axis, low=2)
    if in_features >= 22 or points_per_axis**in_features > 4_000_000:  # 2**22 > 4e6: no huge power formed
        raise ValueError(
            f"`points_per_axis`={points_per_axis} and `in_features`={in_features} must keep "
            f"points_per_axis**in_features <= 4,000,000 grid points"
        )
    axis = torch.linspace(low, high, points_per_axis, dtype=F64)
    mesh = torch.meshgrid(*([axis] * in_features), indexing="ij")
    return torch.stack([m.reshape(-1) for m in mesh], dim=1)


def evaluate_target(target: Any, x: torch.Tensor) -> torch.Tensor:
    """f(x) as a (rows, m) float64 tensor; ValueError naming ``target`` if it is not usable.

    ``target`` receives a (rows, n) float64 tensor (NumPy functions accept it too) and must
    return (rows,) or (rows, m) finite values.
    """
    if not callable(target):
        raise ValueError(f"`target` must be callable, got {type(target).__name__}")
    out = target(x)
    try:
        values = torch.as_tensor(np.asarray(out.detach() if isinstance(out, torch.Tensor) else out, dtype=np.float64))
    except (TypeError, ValueError) as error:
        raise ValueError(f"`target` must return real numbers, got {type(out).__name__}") from error
    if values.ndim == 1:
        values = values[:, None]
    if values.ndim != 2 or values.shape[0] != x.shape[0]:
        raise ValueError(
            f"`target` must map (rows, n) inputs to (rows,) or (rows, m) values, got shape "
            f"{tuple(values.shape)} for {x.shape[0]} rows"
        )
    bad = ~torch.isfinite(values)
    if bad.any():
        row = int(bad.nonzero()[0, 0])
        raise ValueError(
            f"`target` must be finite on the domain, got {float(values[bad][0])} at x = {x[row].tolist()} "
            f"({int(bad.sum())} non-finite values)"
        )
    return values


def fit_shallow(
    target: Callable[[torch.Tensor], Any],
    in_features: int,
    neurons: int,
    *,
    low: float = -1.0,
    high: float = 1.0,
    activation: str = "tanh",
    scale: float = 4.0,
    points_per_axis: int = 48,
    ridge: float = 1e-10,
    seed: int = 0,
) -> ShallowNetwork:
    """Fit g(x) = c₀ + Σ_{j≤J} c_j σ(w_jᵀx + b_j) to ``target`` on [low, high]ⁿ.

    Random features, nested in J (the first J features of any larger fit are the same):
    w_j = (scale/(high − low))·ζ_j with ζ_j ~ N(0, I_n), and b_j = −w_jᵀp_j with p_j uniform on
    K (the hyperplane w_jᵀx + b_j = 0 passes through a random point of K). The output weights
    minimise Σ_grid ‖g(x) − f(x)‖² + λ‖(c_1, …, c_J)‖², λ = ridge · (number of grid points),
    in float64 (a small λ bounds the c_j, hence the partial sums the registers must hold).

    Args:
        target: f, mapping a (rows, n) float64 tensor to (rows,) or (rows, m) finite values.
        in_features: n ≥ 1.
        neurons: J ≥ 1.
        low, high: the box K = [low, high]ⁿ, low < high.
        activation: σ, a name from :data:`structnets.nn.ACTIVATIONS` except ``identity``.
        scale: typical |w_j| times (high − low), > 0 (the feature sharpness).
        points_per_axis: fit grid size per axis, ≥ 2.
        ridge: λ per grid point, ≥ 0.
        seed: seed of the features.

    Returns:
        a :class:`ShallowNetwork`.

    Raises:
        ValueError: a bad argument (named), a target that is not callable or not finite on the grid.
    """
    in_features = check_int("in_features", in_features, low=1)
    neurons = check_int("neurons", neurons, low=1)
    check_fits_in_memory(
        f"`neurons`={neurons}, `in_features`={in_features}", neurons * (in_features + 2), what="weights"
    )
    low, high = _check_box(low, high)
    check_choice("activation", activation, universal_activations())
    scale = check_real("scale", scale, low=0.0, low_open=True)
    ridge = check_real("ridge", ridge, low=0.0)
    seed = check_int("seed", seed, low=0)
    if not callable(target):
        raise ValueError(f"`target` must be callable, got {type(target).__name__}")
    X = grid(in_features, points_per_axis, low, high)
    Y = evaluate_target(target, X)
    # Two streams, filled row by row, so the first J features do not depend on the total J.
    directions = np.random.default_rng([seed, 0]).standard_normal((neurons, in_features))
    anchors = np.random.default_rng([seed, 1]).uniform(low, high, (neurons, in_features))
    weight = torch.as_tensor(directions * (scale / (high - low)), dtype=F64)
    bias = -(weight * torch.as_tensor(anchors, dtype=F64)).sum(dim=1)
    partial = ShallowNetwork(
        weight,
        bias,
        torch.zeros(Y.shape[1], neurons, dtype=F64),
        torch.zeros(Y.shape[1], dtype=F64),
        activation,
        low,
        high,
    )
    features = torch.cat([torch.ones(len(X), 1, dtype=F64), partial.hidden(X)], dim=1)
    penalty = math.sqrt(ridge * len(X))
    regulariser = torch.cat([torch.zeros(neurons, 1, dtype=F64), penalty * torch.eye(neurons, dtype=F64)], dim=1)
    system = torch.cat([features, regulariser], dim=0)
    rhs = torch.cat([Y, torch.zeros(neurons, Y.shape[1], dtype=F64)], dim=0)
    solution = torch.linalg.lstsq(system, rhs, driver="gelsd").solution  # (J + 1, m)
    return ShallowNetwork(weight, bias, solution[1:].T.contiguous(), solution[0].clone(), activation, low, high)


def _check_box(low: Any, high: Any) -> tuple[float, float]:
    low = check_real("low", low)
    high = check_real("high", high)
    if not low < high:
        raise ValueError(f"`high` must be greater than `low`, got low = {low}, high = {high}")
    return low, high


# --------------------------------------------------------------------------------------------
# The register network: width n + m + 2, every weight αI + UVᵀ


@dataclass(frozen=True)
class RegisterNetwork:
    """The width-(n + m + 2) networks of :func:`dlor_from_shallow`.

    Attributes:
        shallow: the network g they evaluate.
        network: the deep DLoR network, ``structnets.models.dlor_mlp(n, m, N, depth, rank, "deep")``
            layout (``ZeroPad``, ``[DLoRLinear, σ] × depth``, ``DLoRLinear``, ``TakeFirst``), float64.
        narrow: the same computation as a dense MLP ``Linear(n, N), σ, [Linear(N, N), σ] × (depth − 1),
            Linear(N, m)``, float64; its weights are the DLoR matrices (first n columns of the first,
            first m rows of the last).
        factors: the depth + 1 DLoR matrices M_ℓ = α_ℓI + U_ℓV_ℓᵀ, in order.
        biases: their depth + 1 bias vectors (N,).
        width: N = n + m + 2.
        depth: nonlinear layers: J + 1 + m (rank 2) or 2J + m (rank 1).
        rank: r of every U_ℓ, V_ℓ.
        h, center: the register scale and σ's operating point c.
        h_x, h_y: the scales of the input and output registers.
    """

    shallow: ShallowNetwork
    network: nn.Sequential
    narrow: nn.Sequential
    factors: tuple[DLoRFactor, ...]
    biases: tuple[torch.Tensor, ...]
    width: int
    depth: int
    rank: int
    h: float
    center: float
    h_x: float
    h_y: float

    @property
    def parameters(self) -> int:
        """Parameters of ``network``: (depth + 1)(2Nr + 1 + N)."""
        return sum(p.numel() for p in self.network.parameters())


def register_depth(neurons: int, out_features: int, rank: int) -> int:
    """Nonlinear layers of the register network: J + 1 + m (rank 2) or 2J + m (rank 1)."""
    neurons = check_int("neurons", neurons, low=1)
    out_features = check_int("out_features", out_features, low=1)
    if rank not in RANKS:
        raise ValueError(f"`rank` must be one of {sorted(RANKS)}, got {rank!r}")
    return neurons + 1 + out_features if rank == 2 else 2 * neurons + out_features


def dlor_from_shallow(
    shallow: ShallowNetwork,
    *,
    rank: int = 2,
    h: float | None = None,
    center: float | None = None,
) -> RegisterNetwork:
    """The deep DLoR network of width N = n + m + 2 that evaluates ``shallow`` neuron by neuron.

    Layer by layer (module docstring: registers X, Y, t; s = σ'(c), v = σ(c); every hidden
    layer but the first has α = 1/s and register bias c − v/s; e_t the neuron slot):

    * first layer: α = h_x (it sees raw x), U = e_t, V = (w_1, 0), bias (c, …, c, b_1, c);
    * rank 2, layer j = 2 … J: U = [h_y c_{j−1} on Y, e_t], V = [e_t, w_j/(h_x s) − e_t/s],
      bias of t: b_j − (v/(h_x s))Σ_k w_jk; then one layer adding c_J (U = h_y c_J on Y, V = e_t);
    * rank 1: the same two updates in separate layers (compute j; add j);
    * m move layers: U = e_i, V = (e_{n+i} − e_i)/s, copying register Y_i to coordinate i;
    * output map: α = 1/(h_y s), U = V = 0, bias c₀ − v/(h_y s) (first m coordinates).

    With σ''(c) = 0 (tanh, sigmoid at c = 0) the error against g is O(h²) as h → 0; with ReLU
    (c = 1) it is exactly 0 up to rounding (every register stays on the linear piece); for other
    σ it is O(h). Chen et al. (arXiv 2605.05659), Theorems 5 and 7: every weight is DLoR and
    the width is n + m + 2, so the density of shallow networks carries over.

    Args:
        shallow: g, e.g. from :func:`fit_shallow`.
        rank: 1 or 2 (rank of every DLoR update).
        h: register scale in (0, 1]: smaller is closer to linear. Decoding a − σ(c) cancels
            when σ(c) ≠ 0 (rounding ~ ε/h per layer), not when σ(c) = 0 (tanh, swish, GELU:
            rounding stays relative, so h can be tiny). Default: 1e-10 when σ(c) = 0 (measured
            at J = 256: ‖F − g‖_∞ at rounding level for tanh, 6e-8 for GELU), else 1e-5.
        center: σ's operating point c (default 1 for ReLU, 0 otherwise); σ'(c) must be ≠ 0.

    Returns:
        a :class:`RegisterNetwork` (the DLoR network, the equal narrow dense network, its factors).

    Raises:
        ValueError: ``shallow`` not a :class:`ShallowNetwork` with finite weights; ``rank`` not 1
            or 2; ``h`` outside (0, 1]; ``center`` where σ' = 0.
    """
    from ..models import dlor_mlp
    from ..nn import activation as make_activation

    if not isinstance(shallow, ShallowNetwork):
        raise ValueError(f"`shallow` must be a ShallowNetwork (see fit_shallow), got {type(shallow).__name__}")
    for name in ("weight", "bias", "coefficients", "offset"):
        if not torch.isfinite(getattr(shallow, name)).all():
            raise ValueError(f"`shallow` must have finite {name}")
    rank = check_int("rank", rank, low=1, high=2)
    if h is not None:
        h = check_real("h", h, low=0.0, high=1.0, low_open=True)
    sigma = make_activation(shallow.activation).to(F64)
    c = (1.0 if isinstance(sigma, nn.ReLU) else 0.0) if center is None else check_real("center", center)
    v, s = _value_and_slope(sigma, c)
    if s == 0.0 or not math.isfinite(s):
        raise ValueError(f"`center` must be a point where the activation's slope is non-zero, got {c} (slope {s})")
    if h is None:
        h = 1e-10 if v == 0.0 else 1e-5

    n, m, J = shallow.in_features, shallow.out_features, shallow.neurons
    N = n + m + 2
    X, Y, t = slice(0, n), slice(n, n + m), n + m
    radius = max(abs(shallow.low), abs(shallow.high))
    h_x = h / radius
    # The largest partial sum on the fit grid (clamped away from 0) fixes h_y: h_y|y| ≤ h there.
    points = grid(n, _grid_size_for(n), shallow.low, shallow.high)
    largest = float(shallow.partial_sums(points).abs().max())
    h_y = h / max(largest, 1e-300)

    register_bias = c - v / s
    eye = torch.eye(N, dtype=F64)

    def zeros() -> tuple[torch.Tensor, torch.Tensor]:
        return torch.zeros(N, rank, dtype=F64), torch.zeros(N, rank, dtype=F64)

    def compute_column(j: int) -> tuple[torch.Tensor, torch.Tensor, float]:
        """(u, v, bias_t) of 'row t := w_jᵀλ(a_X) + b_j' in a layer with α = 1/s."""
        w = shallow.weight[j]
        right = torch.zeros(N, dtype=F64)
        right[X] = w / (h_x * s)
        right[t] = -1.0 / s
        return eye[:, t].clone(), right, float(shallow.bias[j] - (v / (h_x * s)) * w.sum())

    def add_column(j: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(u, v) of 'Y += c_j a_t' (stored at scale h_y)."""
        left = torch.zeros(N, dtype=F64)
        left[Y] = h_y * shallow.coefficients[:, j]
        return left, eye[:, t].clone()

    factors: list[DLoRFactor] = []
    biases: list[torch.Tensor] = []

    def layer(alpha: float, updates: list[tuple[torch.Tensor, torch.Tensor]], bias: torch.Tensor) -> None:
        U, V = zeros()
        for k, (left, right) in enumerate(updates):
            U[:, k], V[:, k] = left, right
        factors.append(DLoRFactor(alpha, U, V))
        biases.append(bias)

    # First layer: raw x in X, zeros elsewhere; α = h_x stores x, row t computes neuron 1.
    bias = torch.full((N,), c, dtype=F64)
    bias[t] = shallow.bias[0]
    first = torch.zeros(N, dtype=F64)
    first[X] = shallow.weight[0]
    layer(h_x, [(eye[:, t].clone(), first)], bias)

    def hidden_bias(bias_t: float | None) -> torch.Tensor:
        out = torch.full((N,), register_bias, dtype=F64)
        out[t] = 0.0 if bias_t is None else bias_t  # t is overwritten or never read again
        return out

    for j in range(1, J):
        u_c, v_c, bias_t = compute_column(j)
        if rank == 2:
            layer(1.0 / s, [add_column(j - 1), (u_c, v_c)], hidden_bias(bias_t))
        else:
            layer(1.0 / s, [add_column(j - 1)], hidden_bias(None))
            layer(1.0 / s, [(u_c, v_c)], hidden_bias(bias_t))
    layer(1.0 / s, [add_column(J - 1)], hidden_bias(None))
    for i in range(m):  # coordinate i := register Y_i (coordinates < i are outputs already)
        right = torch.zeros(N, dtype=F64)
        right[n + i] += 1.0 / s
        right[i] -= 1.0 / s
        layer(1.0 / s, [(eye[:, i].clone(), right)], hidden_bias(None))
    out_bias = torch.full((N,), -v / (h_y * s), dtype=F64)
    out_bias[:m] += shallow.offset
    layer(1.0 / (h_y * s), [], out_bias)

    depth = len(factors) - 1
    network = dlor_mlp(n, m, N, depth, rank, "deep", _fresh(shallow.activation), dtype=F64)
    for module, factor, b in zip((mod for mod in network if isinstance(mod, DLoRLinear)), factors, biases, strict=True):
        _load_factor(module, factor, b)
    narrow = _narrow(factors, biases, n, m, shallow.activation)
    return RegisterNetwork(shallow, network, narrow, tuple(factors), tuple(biases), N, depth, rank, h, c, h_x, h_y)


def _grid_size_for(in_features: int) -> int:
    """Points per axis of the grid that sets h_y: about 4,000 points in all (at least 3 per axis)."""
    return max(3, int(round(4000 ** (1.0 / in_features))))


def _fresh(name: str) -> nn.Module:
    from ..nn import activation

    return activation(name).to(F64)


def _narrow(factors: list[DLoRFactor], biases: list[torch.Tensor], n: int, m: int, activation: str) -> nn.Sequential:
    """The dense MLP with the DLoR matrices as weights (first n columns in, first m rows out)."""
    layers: list[nn.Module] = []
    last = len(factors) - 1
    for index, (factor, bias) in enumerate(zip(factors, biases, strict=True)):
        weight = factor.dense()
        rows = slice(0, m) if index == last else slice(None)
        cols = slice(0, n) if index == 0 else slice(None)
        weight = weight[rows, cols]
        linear = nn.Linear(weight.shape[1], weight.shape[0], dtype=F64)
        with torch.no_grad():
            linear.weight.copy_(weight)
            linear.bias.copy_(bias[rows])
        layers.append(linear)
        if index != last:
            layers.append(_fresh(activation))
    return nn.Sequential(*layers)


# --------------------------------------------------------------------------------------------
# The wide counterpart and the one-call construction


def wide_dlor_from_shallow(shallow: ShallowNetwork) -> nn.Sequential:
    """The depth-1 DLoR network of width max(J, n, m, 2) + … that computes ``shallow`` exactly.

    ``dlor_mlp(n, m, W, 1, r, "deep")`` with W = max(J, n + 1, m + 1, 2), r = max(n, m): the
    hidden map αI + UVᵀ with α = 1, V = [e_1 … e_n] and U's row i equal to w_i − αe_i (i ≤ n)
    or w_i (i > n) gives pre-activations w_iᵀx + b_i (the input is zero beyond coordinate n);
    the output map with α = 1, U = [e_1 … e_m] and V's column i equal to c_i − αe_i gives
    c₀ + Σ_j c_j σ(·) in the first m coordinates. It is the one-layer ("wide") DLoR network of
    the same function: exact, so its error equals g's.

    Args:
        shallow: g, e.g. from :func:`fit_shallow`.

    Returns:
        an ``nn.Sequential`` (float64), input (*, n) → output (*, m).
    """
    from ..models import dlor_mlp

    if not isinstance(shallow, ShallowNetwork):
        raise ValueError(f"`shallow` must be a ShallowNetwork (see fit_shallow), got {type(shallow).__name__}")
    n, m, J = shallow.in_features, shallow.out_features, shallow.neurons
    width = max(J, n + 1, m + 1, 2)
    r = max(n, m)
    network = dlor_mlp(n, m, width, 1, r, "deep", _fresh(shallow.activation), dtype=F64)
    first, last = (mod for mod in network if isinstance(mod, DLoRLinear))
    U = torch.zeros(width, r, dtype=F64)
    U[:J, :n] = shallow.weight
    U[:n, :n] -= torch.eye(n, dtype=F64)
    V = torch.zeros(width, r, dtype=F64)
    V[:n, :n] = torch.eye(n, dtype=F64)
    bias = torch.zeros(width, dtype=F64)
    bias[:J] = shallow.bias
    # Units J … width−1 (only when J ≤ n or J ≤ m) must contribute nothing: their output weights are 0.
    _load_factor(first, DLoRFactor(1.0, U, V), bias)
    U_out = torch.zeros(width, r, dtype=F64)
    U_out[:m, :m] = torch.eye(m, dtype=F64)
    V_out = torch.zeros(width, r, dtype=F64)
    V_out[:J, :m] = shallow.coefficients.T
    V_out[:m, :m] -= torch.eye(m, dtype=F64)
    out_bias = torch.zeros(width, dtype=F64)
    out_bias[:m] = shallow.offset
    _load_factor(last, DLoRFactor(1.0, U_out, V_out), out_bias)
    return network


def dlor_universal_approximator(
    target: Callable[[torch.Tensor], Any],
    in_features: int,
    neurons: int,
    *,
    low: float = -1.0,
    high: float = 1.0,
    activation: str = "tanh",
    rank: int = 2,
    h: float | None = None,
    scale: float = 4.0,
    points_per_axis: int = 48,
    ridge: float = 1e-10,
    seed: int = 0,
) -> RegisterNetwork:
    """A deep DLoR network of width n + m + 2 approximating ``target`` on [low, high]ⁿ.

    :func:`fit_shallow` (J = ``neurons`` random features, least squares) then
    :func:`dlor_from_shallow`. Error: ‖F − f‖_∞ ≤ ‖g − f‖_∞ + ‖F − g‖_∞, the first term the
    shallow approximation (→ 0 as J → ∞ for non-polynomial σ), the second the register error
    (O(h²) for tanh/sigmoid, 0 for ReLU, O(h) otherwise). Chen et al. (arXiv 2605.05659),
    Theorem 5: deep DLoR networks of width n + m + 2 are dense in C(K, ℝᵐ); depth J + 1 + m
    (rank 2) or 2J + m (rank 1).

    Args:
        target: f, mapping a (rows, n) float64 tensor to (rows,) or (rows, m) finite values.
        in_features: n ≥ 1.
        neurons: J ≥ 1, the number of shallow neurons (depth grows linearly with it).
        low, high, activation, scale, points_per_axis, ridge, seed: as in :func:`fit_shallow`.
        rank, h: as in :func:`dlor_from_shallow`.

    Returns:
        a :class:`RegisterNetwork`; ``.network`` is the DLoR network.
    """
    check_int("rank", rank, low=1, high=2)
    if h is not None:
        check_real("h", h, low=0.0, high=1.0, low_open=True)
    shallow = fit_shallow(
        target, in_features, neurons, low=low, high=high, activation=activation, scale=scale,
        points_per_axis=points_per_axis, ridge=ridge, seed=seed,
    )  # fmt: skip
    return dlor_from_shallow(shallow, rank=rank, h=h)


__all__ = [
    "RANKS",
    "RegisterNetwork",
    "ShallowNetwork",
    "dlor_from_shallow",
    "dlor_universal_approximator",
    "evaluate_target",
    "fit_shallow",
    "grid",
    "register_depth",
    "universal_activations",
    "wide_dlor_from_shallow",
]

""":func:`compress`: replace the matrices of any model by low-rank (or DLoR) factorisations."""

from __future__ import annotations

import copy
import fnmatch
import math
from collections.abc import Mapping, Sequence

import torch
from torch import nn

from .._module_walk import replace_children, unique_modules
from .._validation import check_choice, check_int, check_real
from ..nn.low_rank_attention import LowRankMultiheadAttention
from . import allocation, kinds
from . import calibration as calib
from .kinds import Candidate
from .report import CompressionReport, LayerCompression, count_flops, count_parameters

METHODS: tuple[str, ...] = ("lowrank", "dlor")

_SUPPORTED = "nn.Linear, nn.Conv1d/nn.Conv2d (groups=1), nn.MultiheadAttention, transformers Conv1D"


def compress(
    model: nn.Module,
    method: str = "lowrank",
    rank: int | None = None,
    ratio: float | None = None,
    energy: float | None = None,
    *,
    flops: float | None = None,
    params: float | None = None,
    calibration: object = None,
    example_input: object = None,
    ridge: float = calib.DEFAULT_RIDGE,
    min_params: int = 0,
    include: str | Sequence[str] | None = None,
    exclude: str | Sequence[str] | None = None,
    inplace: bool = False,
) -> CompressionReport:
    """Replace the compressible layers of ``model`` by low-rank (or DLoR) factorisations.

    Compressible layers (see :mod:`structnets.compression.kinds`): ``nn.Linear``; ``nn.Conv1d`` /
    ``nn.Conv2d`` with groups = 1 (any stride, padding, dilation, padding mode), as a k×k
    convolution to r channels followed by a 1×1 one (:class:`structnets.nn.LowRankConv2d`);
    ``transformers.pytorch_utils.Conv1D`` (GPT-2); and the packed q, k, v and output projections of
    ``nn.MultiheadAttention``, which is rewritten as :class:`structnets.nn.LowRankMultiheadAttention`
    (the same outputs) so that each projection can be factorised. Every other module holding
    weights is left alone and named in ``report.skipped`` with the reason, as is a layer (or
    attention) with forward or backward hooks (``spectral_norm``, pruning, your own), which a
    replacement would not run.

    A layer W (m × n) of rank r becomes U V with U (m × r), V (r × n):

    * without ``calibration``: the truncated SVD W_r (Eckart–Young: the best rank-r approximation
      in Frobenius norm);
    * with ``calibration``: the whitened truncation Ŵ = [W S]_r S⁻¹, S Sᵀ = X Xᵀ + λI, the
      minimiser of ‖(W − Ŵ)X‖_F² + λ‖W − Ŵ‖_F² over rank r, X the layer's inputs on the data
      (:mod:`structnets.compression.calibration`; SVD-LLM, Wang et al. 2024);
    * ``method="dlor"``: square linear layers become αI + U Vᵀ (best α, Chen, Li, Kim, Lavaei,
      arXiv 2605.05659); non-square layers and convolutions fall back to low rank (said in the
      layer's ``note``).

    Ranks, from exactly one of:

    * ``rank``: r for every layer, capped at the layer's largest (min(m, n); N − 1 for DLoR).
    * ``ratio``: each layer keeps at most this fraction of its weight's parameters (at least
      rank 1: a layer where rank 1 costs more keeps rank 1, said in its ``note``).
    * ``energy``: the smallest r keeping this fraction of Σσ² (of ‖WX‖² with calibration); a
      layer where that r saves nothing is kept dense.
    * ``flops`` / ``params``: a model-wide budget, a fraction of the compressible layers' FLOPs
      (applied once per row: per token, per output position) or parameters; ranks are allocated
      greedily by error decrease per unit of cost (:mod:`structnets.compression.allocation`),
      never above the target, and ``report.reached`` says what was reached. ``flops`` weighs
      each layer by the rows it is applied to, counted on ``calibration`` or ``example_input``
      (required when the model has convolutions).

    The model is copied unless ``inplace=True``; either way the compressed model is
    ``report.model``, and on any error the input model is left unchanged. Calibration runs the
    model in eval mode without gradients (train/eval flags restored). ``report`` also gives
    whole-model parameters and FLOPs before and after (``torch.utils.flop_counter`` on the first
    batch). A state dict of the compressed model loads into
    ``structnets.compression.skeleton(dense_model, report.plan())``.

    Args:
        model: any ``nn.Module``.
        method: ``"lowrank"`` or ``"dlor"``.
        rank: an int ≥ 1, at most the largest rank of a qualifying layer.
        ratio, energy, flops, params: reals in (0, 1].
        calibration: a tensor (one batch), an iterable of batches or a ``DataLoader``; a batch is
            a tensor (the input), a dict (keyword arguments, e.g. ``input_ids``) or a tuple whose
            first element is the input. Floating inputs must have the model's dtype and device.
        example_input: data of the same forms, used only to count rows and whole-model FLOPs
            (plain SVD); ignored when ``calibration`` is given.
        ridge: relative ridge of the whitening, ≥ 0: λ = ridge·tr(X Xᵀ)/n per layer.
        min_params: an int ≥ 0: layers whose weight has fewer entries are left dense.
        include, exclude: glob pattern(s) (``fnmatch``) on qualified layer names.
        inplace: replace the layers of ``model`` itself.

    Returns:
        a :class:`CompressionReport`.

    Raises:
        ValueError / TypeError: a bad argument (named; with the layer where one is at fault), a
            qualifying layer with non-finite weights, or no layer qualifies (each one's reason is
            given).
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"`model` must be a torch.nn.Module, got {type(model).__name__}")
    check_choice("method", method, METHODS)
    rules = {"rank": rank, "ratio": ratio, "energy": energy, "flops": flops, "params": params}
    given: dict[str, float] = {k: v for k, v in rules.items() if v is not None}
    if len(given) != 1:
        shown = ", ".join(f"{k}={v!r}" for k, v in given.items()) or "none"
        raise ValueError(f"give exactly one of `rank`, `ratio`, `energy`, `flops`, `params`; got {shown}")
    for key in ("ratio", "energy", "flops", "params"):
        if given.get(key) is not None:
            given[key] = check_real(key, given[key], low=0.0, high=1.0, low_open=True)
    if rank is not None:
        rank = check_int("rank", rank, low=1)
    ridge = check_real("ridge", ridge, low=0.0)
    min_params = check_int("min_params", min_params, low=0)
    includes = _patterns("include", include)
    excludes = _patterns("exclude", exclude)
    if not isinstance(inplace, bool):
        raise TypeError(f"`inplace` must be a bool, got {inplace!r}")
    budget = next(((k, float(given[k])) for k in ("flops", "params") if k in given), None)
    if method == "dlor" and (budget is not None or calibration is not None):
        raise ValueError(
            "method='dlor' takes `rank`, `ratio` or `energy` without `calibration`; a budget "
            "(`flops`/`params`) and calibrated truncation are implemented for method='lowrank'"
        )

    work = copy.deepcopy(model)
    original_of = {id(c): o for c, o in zip(work.modules(), model.modules())}
    reference = _reference(work)
    skipped: list[tuple[str, str]] = []
    notes: list[str] = []
    work, unpacked = _unpack_attention(work, skipped)
    chosen = _choose(work, method, min_params, includes, excludes, skipped)
    if not chosen:
        details = "; ".join(f"{n}: {r}" for n, r in skipped[:10]) + (" …" if len(skipped) > 10 else "")
        raise ValueError(
            f"`model` has no layer that qualifies for method={method!r} (compressible kinds: {_SUPPORTED})"
            + (f"; found: {details}" if details else "; it holds no such layer")
        )
    if rank is not None:
        largest = max(_max_rank(item, method) for item in chosen)
        if rank > largest:
            raise ValueError(
                f"`rank` must be an int in [1, {largest}] (the largest rank of a qualifying layer "
                f"for method={method!r}), got {rank}"
            )

    data_name, data = ("calibration", calibration) if calibration is not None else ("example_input", example_input)
    stats: dict[str, calib.Statistics] = {}
    first: object = None
    if data is not None:
        stats, first = calib.collect(work, chosen, data_name, data, gram=calibration is not None, reference=reference)
        reached = [item for item in chosen if stats[item.name].rows > 0]
        for item in chosen:
            if stats[item.name].rows == 0:
                skipped.append((item.name, f"not applied to any row of `{data_name}` (left alone)"))
        if not reached:
            raise ValueError(f"no qualifying layer of `model` is applied to the `{data_name}` data")
        chosen = reached
    elif budget is not None and budget[0] == "flops":
        convs = [item.name for item in chosen if item.kind in ("conv1d", "conv2d")]
        if convs:
            raise ValueError(
                "`flops` needs `calibration` or `example_input` to count the output positions of the "
                f"convolutions ({', '.join(convs[:3])}{' …' if len(convs) > 3 else ''})"
            )
    flops_before = _model_flops(work, first, notes) if first is not None else None
    params_before = count_parameters(model)

    spectra: dict[str, calib.Spectrum] = {}
    lambdas: dict[str, float] = {}
    for item in chosen:
        if kinds.uses_dlor(item, method):
            continue
        weight = item.matrix()
        factor = None
        record = stats.get(item.name)
        if record is not None and record.gram is not None:
            if float(torch.diagonal(record.gram).sum()) > 0:
                factor, lambdas[item.name] = calib.whitening(record.gram, ridge, item.name)
        spectra[item.name] = calib.spectrum(weight, factor)

    budget_before: int | None = None
    budget_after: int | None = None
    if budget is not None:
        ranks, budget_before, budget_after = _budget_ranks(chosen, method, spectra, stats, budget)
        fraction = budget_after / budget_before if budget_before else 0.0
        if fraction < budget[1] - 0.02:
            notes.append(
                f"budget {budget[0]}={budget[1]}: reached only {fraction:.4f} (the next rank step of every layer "
                "would exceed the target)"
            )
        if budget[0] == "flops" and data is None:
            notes.append("budget flops without data: every layer counted once per row (per input vector)")
    else:
        ranks = _rule_ranks(chosen, method, spectra, rank, given)

    rows: list[LayerCompression] = []
    replacements: dict[int, nn.Module] = {}
    for item in chosen:
        new, row = _build(item, method, ranks[item.name], spectra.get(item.name), stats.get(item.name), given)
        rows.append(row)
        if new is not None:
            replacements[id(item.module)] = new

    # An attention none of whose projections changed goes back to the original module.
    reverts: dict[int, nn.Module] = {}
    for attention_id, (attention, original) in unpacked.items():
        projections = (attention.q_proj, attention.k_proj, attention.v_proj, attention.out_proj)
        if not any(id(p) in replacements for p in projections):
            reverts[attention_id] = original
    if id(work) in reverts:
        work = reverts[id(work)]
    replace_children(work, reverts)
    if id(work) in replacements:
        target = replacements[id(work)]
    else:
        replace_children(work, replacements)
        target = work
    if inplace:
        target = _transplant(model, work, target, original_of)
    notes.extend(_disable_nested_tensor(target, set(map(id, replacements.values()))))

    if method == "dlor" and any("falls back" in r.note for r in rows):
        notes.append("method='dlor': non-square layers and convolutions were compressed as low rank")
    model_flops_after = _model_flops(target, first, notes) if flops_before is not None else None
    return CompressionReport(
        model=target,
        layers=tuple(rows),
        method=method,
        skipped=tuple(skipped),
        calibrated=calibration is not None,
        ridge=ridge if calibration is not None else None,
        budget=budget,
        budget_before=budget_before,
        budget_after=budget_after,
        model_params_before=params_before,
        model_params_after=count_parameters(target),
        model_flops_before=flops_before,
        model_flops_after=model_flops_after,
        notes=tuple(notes),
    )


def _patterns(name: str, value: str | Sequence[str] | None) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, Sequence) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise TypeError(f"`{name}` must be a glob pattern string, a sequence of them, or None; got {value!r}")


def _reference(model: nn.Module) -> torch.Tensor | None:
    for tensor in (*model.parameters(), *model.buffers()):
        if tensor.is_floating_point():
            return tensor
    return None


def _tied_parameters(model: nn.Module) -> dict[int, list[str]]:
    """id of each parameter held by more than one module (tied weights) → the qualified parameter names."""
    owners: dict[int, dict[int, str]] = {}
    for name, module in model.named_modules(remove_duplicate=False):
        for key, parameter in module.named_parameters(recurse=False):
            owners.setdefault(id(parameter), {}).setdefault(id(module), f"{name}.{key}" if name else key)
    return {pid: list(mods.values()) for pid, mods in owners.items() if len(mods) > 1}


def _walk(root: nn.Module) -> list[tuple[str, nn.Module]]:
    """(name, module) once per module, not entering already factorised structnets layers."""
    out: list[tuple[str, nn.Module]] = []
    seen: set[int] = set()

    def visit(name: str, module: nn.Module) -> None:
        if id(module) in seen:
            return
        seen.add(id(module))
        out.append((name, module))
        if kinds.is_factorised(module):
            return
        for child_name, child in module._modules.items():
            if child is not None:
                visit(f"{name}.{child_name}" if name else child_name, child)

    visit("", root)
    return out


def _unpack_attention(
    work: nn.Module, skipped: list[tuple[str, str]]
) -> tuple[nn.Module, dict[int, tuple[LowRankMultiheadAttention, nn.MultiheadAttention]]]:
    unpacked: dict[int, tuple[LowRankMultiheadAttention, nn.MultiheadAttention]] = {}
    swaps: dict[int, nn.Module] = {}
    for name, module in _walk(work):
        if type(module) is not nn.MultiheadAttention:
            continue
        reason = kinds.unpackable(module)
        if reason:
            skipped.append((name or "<model>", reason))
            continue
        new = kinds.unpack(module)
        unpacked[id(new)] = (new, module)
        swaps[id(module)] = new
    if id(work) in swaps:
        return swaps[id(work)], unpacked
    replace_children(work, swaps)
    return work, unpacked


def _type_reason(module: nn.Module) -> str:
    kind = type(module).__name__
    if isinstance(module, (nn.Embedding, nn.EmbeddingBag)):
        return f"{kind}: a lookup table, no matrix product to factor"
    norms = (nn.LayerNorm, nn.GroupNorm, nn.RMSNorm, nn.modules.batchnorm._NormBase)
    if isinstance(module, norms) or "norm" in kind.lower():
        return f"{kind}: a normalisation (per-feature scale and shift), nothing to factor"
    if kinds.is_factorised(module):
        return f"{kind}: already factorised"
    if isinstance(module, nn.Linear):
        return f"a subclass of nn.Linear ({kind}) whose owner may read .weight directly"
    return f"{kind} holds weights but is not a compressible kind ({_SUPPORTED})"


def _choose(
    work: nn.Module,
    method: str,
    min_params: int,
    includes: tuple[str, ...],
    excludes: tuple[str, ...],
    skipped: list[tuple[str, str]],
) -> list[Candidate]:
    tied = _tied_parameters(work)
    named = {name for name, _ in skipped}
    chosen: list[Candidate] = []
    for name, module in _walk(work):
        shown = name or "<model>"
        item = kinds.candidate(name, module)
        if item is None:
            own = list(module.parameters(recurse=False))
            if own and shown not in named and not isinstance(module, LowRankMultiheadAttention):
                skipped.append((shown, _type_reason(module)))
            continue
        reason = ""
        if includes and not any(fnmatch.fnmatchcase(name, p) for p in includes):
            reason = f"name does not match include={list(includes)}"
        elif any(fnmatch.fnmatchcase(name, p) for p in excludes):
            reason = f"name matches exclude={list(excludes)}"
        elif item.in_features * item.out_features < min_params:
            reason = f"weight has {item.in_features * item.out_features} entries < min_params={min_params}"
        elif any(id(p) in tied for p in module.parameters(recurse=False)):
            shared = [
                n for p in module.parameters(recurse=False) for n in tied.get(id(p), ()) if not n.startswith(f"{name}.")
            ]
            reason = "its parameters are tied to another module" + (f" ({', '.join(shared)})" if shared else "")
        else:
            reason = kinds.why_not(item, method)
        if reason:
            skipped.append((shown, reason))
            continue
        if item.weight_param.is_floating_point() and not bool(torch.isfinite(item.weight_param.detach()).all()):
            raise ValueError(f"`model` layer {shown!r} has non-finite weights (nan or inf); it cannot be factorised")
        chosen.append(item)
    return chosen


def _max_rank(item: Candidate, method: str) -> int:
    low = min(item.in_features, item.out_features)
    return low - 1 if kinds.uses_dlor(item, method) else low


def _budget_ranks(
    chosen: list[Candidate],
    method: str,
    spectra: dict[str, calib.Spectrum],
    stats: dict[str, calib.Statistics],
    budget: tuple[str, float],
) -> tuple[dict[str, int | None], int, int]:
    options = []
    for item in chosen:
        sigma_sq = spectra[item.name].singular.square()
        total = float(sigma_sq.sum())
        share = sigma_sq / total if total > 0 else torch.zeros_like(sigma_sq)
        record = stats.get(item.name)
        rows = record.rows if record is not None and budget[0] == "flops" else 1
        options.append(
            allocation.Option(item.out_features, item.in_features, item.bias, rows, share, _max_rank(item, method))
        )
    ranks, before, after, _ = allocation.budget_ranks(options, budget[1], budget[0])
    return {item.name: r for item, r in zip(chosen, ranks)}, before, after


def _rule_ranks(
    chosen: list[Candidate],
    method: str,
    spectra: dict[str, calib.Spectrum],
    rank: int | None,
    given: Mapping[str, float],
) -> dict[str, int | None]:
    out: dict[str, int | None] = {}
    for item in chosen:
        m, n = item.out_features, item.in_features
        dlor = kinds.uses_dlor(item, method)
        if rank is not None:
            out[item.name] = min(rank, _max_rank(item, method))
        elif given.get("ratio") is not None:
            ratio = float(given["ratio"])
            out[item.name] = allocation.dlor_ratio_rank(n, ratio) if dlor else allocation.ratio_rank(m, n, ratio)
        else:
            energy = float(given["energy"])
            if dlor:
                out[item.name] = allocation.dlor_energy_rank(item.matrix(), energy)
            else:
                sigma_sq = spectra[item.name].singular.square()
                total = float(sigma_sq.sum())
                share = sigma_sq / total if total > 0 else torch.ones_like(sigma_sq) / sigma_sq.numel()
                out[item.name] = allocation.energy_rank(share, energy, m, n)
    return out


@torch.no_grad()
def _build(
    item: Candidate,
    method: str,
    rank: int | None,
    spec: calib.Spectrum | None,
    record: calib.Statistics | None,
    given: Mapping[str, float],
) -> tuple[nn.Module | None, LayerCompression]:
    m, n, bias = item.out_features, item.in_features, item.bias
    weight = item.matrix()
    gram = record.gram if record is not None else None
    rows = record.rows if record is not None else None
    dense_params = allocation.params_of(m, n, None, bias)
    dense_flops = allocation.flops_of(m, n, None, bias)

    def row(new_method: str, r: int | None, alpha: float | None, p: int, f: int, error: float,
            out_error: float | None, note: str) -> LayerCompression:  # fmt: skip
        return LayerCompression(
            name=item.name, in_features=n, out_features=m, replaced=r is not None, method=new_method, rank=r,
            alpha=alpha, params_before=dense_params, params_after=p, flops_before=dense_flops, flops_after=f,
            relative_error=error, note=note, kind=item.kind, rows=rows, output_error=out_error,
        )  # fmt: skip

    if rank is None:
        if given.get("energy") is not None:
            note = f"kept dense: no rank that saves parameters keeps energy {given['energy']}"
        else:
            note = "kept dense: the budget is better spent here dense than at the largest saving rank"
        return None, row("dense", None, None, dense_params, dense_flops, 0.0, 0.0 if gram is not None else None, note)
    note = ""
    alpha = None
    new: nn.Module
    if kinds.uses_dlor(item, method):
        dlor = kinds.build_dlor(item, rank)
        new, alpha = dlor, float(dlor.alpha.detach())
        u, v = dlor.U.detach().to(torch.float64), dlor.V.detach().to(torch.float64)
        approx = alpha * torch.eye(n, dtype=torch.float64, device=u.device) + u @ v.T  # as stored, unrounded
        params, flops = allocation.dlor_params(n, rank, bias), allocation.dlor_flops(n, rank, bias)
        new_method = "dlor"
    else:
        if spec is None:
            raise RuntimeError(f"internal: no spectrum for layer {item.name!r}")
        # The layer holds U and V rounded to its dtype: its matrix is their product, not W_r rounded.
        left, right = (f.to(item.weight_param.dtype) for f in spec.factors(rank))
        new = kinds.build_low_rank(item, left, right)
        approx = left.to(torch.float64) @ right.to(torch.float64)
        params, flops = allocation.params_of(m, n, rank, bias), allocation.flops_of(m, n, rank, bias)
        new_method = "lowrank"
        if method == "dlor":
            shape = "a convolution" if item.kind in ("conv1d", "conv2d") else f"not square ({m}×{n})"
            note = f"dlor falls back to low rank: {shape}; DLoR needs a square linear map"
        elif gram is not None and spec.factor is None:
            note = "its calibration inputs are all zero: plain SVD"
    if given.get("ratio") is not None and params - dense_params + m * n > float(given["ratio"]) * m * n:
        note = (note + "; " if note else "") + (
            f"ratio={given['ratio']} is below rank 1's share of the weight: rank 1 kept "
            f"({params - dense_params + m * n} of {m * n} weight entries)"
        )
    total = float(weight.square().sum())
    error = math.sqrt(float((weight - approx).square().sum()) / total) if total > 0 else 0.0
    out_error = calib.output_error(weight, approx, gram) if gram is not None else None
    return new, row(new_method, rank, alpha, params, flops, error, out_error, note)


def _model_flops(model: nn.Module, batch: object, notes: list[str]) -> int | None:
    """Whole-model FLOPs of one pass on ``batch``; None (with a note) where the counter fails."""
    try:
        with calib._eval_without_fast_path(model):
            return count_flops(model, lambda: calib.call(model, batch))
    except Exception as error:  # noqa: BLE001  (a counting failure must not lose the compression)
        notes.append(
            f"whole-model FLOPs not counted: torch.utils.flop_counter failed ({type(error).__name__}: {error})"
        )
        return None


def _transplant(model: nn.Module, work: nn.Module, target: nn.Module, original_of: dict[int, nn.Module]) -> nn.Module:
    """Apply the changes made in ``work`` (a deep copy of ``model``) to ``model`` itself."""
    if target is not work or original_of.get(id(work)) is not model:  # the root itself was replaced
        return target  # (a single layer, or an attention unpacked into LowRankMultiheadAttention)
    swaps: dict[int, nn.Module] = {}
    for parent in unique_modules(work):
        original_parent = original_of.get(id(parent))
        if original_parent is None:
            continue
        for child_name, child in parent._modules.items():
            if child is None or id(child) in original_of:
                continue
            old = original_parent._modules.get(child_name)
            if old is not None:
                swaps[id(old)] = child
    replace_children(model, swaps)
    return model


def _disable_nested_tensor(model: nn.Module, new_ids: set[int]) -> list[str]:
    """Turn off ``nn.TransformerEncoder``'s nested-tensor fast path where a layer was factorised.

    That path converts the input to a NestedTensor, which only torch's fused kernels (taking dense
    weights) accept; factorised layers are then called on ordinary tensors, with the same outputs.
    """
    notes = []
    for name, module in model.named_modules():
        if isinstance(module, nn.TransformerEncoder) and getattr(module, "use_nested_tensor", False):
            if any(id(m) in new_ids for m in module.modules()) or any(
                isinstance(m, LowRankMultiheadAttention) for m in module.modules()
            ):
                module.use_nested_tensor = False
                notes.append(
                    f"{name or '<model>'}: nn.TransformerEncoder.use_nested_tensor set to False (its fused "
                    "nested-tensor path takes dense weights only)"
                )
    return notes

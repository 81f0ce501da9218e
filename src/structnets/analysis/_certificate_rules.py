"""The rules a certified ℓ₂ Lipschitz bound follows: the model is walked as it will compute, or refused.

Lip(f ∘ g) ≤ Lip(f)·Lip(g) certifies a composition only if the walk meets every call the forward
makes, in order, and every factor holds for the values the forward will use. Each rule below
closes a path on which an earlier certificate fell below the measured constant (issue 30,
``docs/lipschitz.md``, "Paths the certificate refuses"):

* positions, not modules: an ``nn.Sequential`` is walked slot by slot (``_modules``), so one
  module placed at k positions contributes its constant k times (``named_children`` yields it once);
* only containers whose ``forward`` is ``nn.Sequential.forward`` are walked; a layer's own
  ``lipschitz_bound()`` is trusted only for the ``forward`` it was written beside (a subclass that
  overrides ``forward`` without its own ``lipschitz_bound`` is refused), and a method or ``forward``
  replaced on the instance is refused; a subclass of a trusted class (a layer with its own
  ``lipschitz_bound``, ``nn.Sequential``, ``nn.Linear``) may add names but redefine none the forward
  may use (``tau``, ``__iter__``, ``__getattr__``; only construction, printing and metadata), and
  no module may replace what ``nn.Module.__call__`` runs (``_call_impl``, ``_wrapped_call_impl``,
  an instance ``_compiled_call_impl`` other than ``module.compile()``'s);
* forward hooks and pre-hooks (on any module, or global) change what the model computes: refused,
  naming the module and the hook, unless ``trust_hooks=True``, which the returned value records;
* every floating parameter and buffer must be finite, must not be a tensor subclass with its own
  ``__torch_function__``, and no torch-function or dispatch mode may be active; a parametrized
  tensor must give the same value at every access (no random parametrization), computed afresh
  (inside ``parametrize.cached()`` two reads agree while the forward after it draws again);
* modes: ``Dropout`` in training mode is the diagonal map with entries in {0, 1/(1 − p)}, so its
  constant is 1/(1 − p); a layer whose training-mode step is uncertified refuses in its own
  ``lipschitz_bound``;
* reduced precision: inside ``torch.autocast`` (or with ``autocast_dtype=``) every layer must
  certify its matmul operands as rounded to that dtype (``lipschitz_bound(operand_dtype=...)``),
  else it is refused.
"""

from __future__ import annotations

import contextlib
import inspect
import math
import types
from collections.abc import Iterator
from fractions import Fraction
from typing import Any, cast

import torch
from torch import nn
from torch.nn.modules import module as module_globals
from torch.nn.parameter import UninitializedTensorMixin  # type: ignore[attr-defined]
from torch.nn.utils import parametrize

from ..functional import round_operand, spectral_norm_bound

# Certified ℓ₂ Lipschitz constants of elementwise activations (max |σ'|), matched by exact type.
ACTIVATION_CONSTANTS: dict[type[nn.Module], float] = {
    nn.ReLU: 1.0,
    nn.Tanh: 1.0,
    nn.Sigmoid: 0.25,
    nn.Identity: 1.0,
    nn.Flatten: 1.0,
    nn.SiLU: 1.0999,  # max σ(x)(1 + x(1 − σ(x))) = 1.09984… at x ≈ 2.3994
    nn.GELU: 1.1290,  # max Φ(x) + xφ(x) = 1.12899… at x = √2
}
# Dropout variants whose training-mode map is x ↦ m ⊙ x / (1 − p), m ∈ {0, 1}ⁿ.
DROPOUTS: tuple[type[nn.Module], ...] = (nn.Dropout, nn.Dropout1d, nn.Dropout2d, nn.Dropout3d)
# Reduced precisions an autocast region may round matmul operands to.
OPERAND_DTYPES: tuple[torch.dtype, ...] = (torch.float16, torch.bfloat16)

_STANDARD_TORCH_FUNCTIONS = (
    inspect.getattr_static(torch.Tensor, "__torch_function__"),
    inspect.getattr_static(nn.Parameter, "__torch_function__"),
)
# Attributes nn.Module.__init__ puts in every instance's __dict__ (none shadows a method).
_HOOK_TABLES = ("_forward_hooks", "_forward_pre_hooks")
# What nn.Module.__call__ runs: a class or instance that replaces one changes every call, not `forward`.
_CALL_PATH = ("_wrapped_call_impl", "_call_impl")
# Names a subclass of a trusted class (a layer with its own lipschitz_bound, nn.Sequential, nn.Linear) may
# redefine: construction, initialisation, printing and class metadata. Any other redefinition (a helper
# the forward calls, `__iter__` of a Sequential, `__getattr__`) changes what the trusted forward computes.
_REDEFINITIONS_ALLOWED = frozenset(
    {
        "__init__", "reset_parameters", "extra_repr", "__repr__", "__str__", "_version", "__constants__",
        "_save_to_state_dict", "_load_from_state_dict",
        "__module__", "__qualname__", "__doc__", "__dict__", "__weakref__", "__annotations__", "__slots__",
        "__firstlineno__", "__static_attributes__", "__orig_bases__", "__parameters__", "__abstractmethods__",
        "_abc_impl",
    }
)  # fmt: skip
_MISSING = object()
# Dtypes a constant operand of an activation or Dropout may be rounded to by the forward.
_ROUNDING_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


class LipschitzBound(float):
    """A certified ℓ₂ Lipschitz upper bound, a ``float``, with what it rests on.

    Attributes:
        assumptions: empty unless the caller opted in to something the certificate cannot check
            (``trust_hooks=True``): then one sentence per hook assumed not to change the outputs.
        operand_dtype: the reduced precision (``torch.float16``/``bfloat16``) of matmul operands
            the bound accounts for (an autocast region), or None for the stored parameters.
    """

    assumptions: tuple[str, ...]
    operand_dtype: torch.dtype | None

    def __new__(
        cls, value: float, assumptions: tuple[str, ...] = (), operand_dtype: torch.dtype | None = None
    ) -> LipschitzBound:
        self = super().__new__(cls, value)
        self.assumptions = tuple(assumptions)
        self.operand_dtype = operand_dtype
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (LipschitzBound, (float(self), self.assumptions, self.operand_dtype))

    def __repr__(self) -> str:
        if not self.assumptions and self.operand_dtype is None:
            return float.__repr__(self)
        return (
            f"LipschitzBound({float.__repr__(self)}, assumptions={self.assumptions!r}, "
            f"operand_dtype={self.operand_dtype})"
        )


class CertificateRefused(ValueError):
    """A model (or one of its modules) computes something the certificate cannot cover."""


def certify_model(model: nn.Module, *, trust_hooks: bool, autocast_dtype: torch.dtype | None) -> LipschitzBound:
    """The certified bound of ``model`` under every rule of this module (see its docstring)."""
    if not isinstance(trust_hooks, bool):
        raise TypeError(f"`trust_hooks` must be a bool, got {trust_hooks!r}")
    operand_dtype = _operand_dtype(model, autocast_dtype)
    walk = _Walk(trust_hooks=trust_hooks, operand_dtype=operand_dtype)
    walk.check_tree(model)
    with torch.no_grad(), _autocast_off(model):
        value = walk.bound(model, "model")
    return LipschitzBound(value, tuple(walk.assumptions), operand_dtype)


def _device_types(model: nn.Module) -> set[str]:
    types_ = {t.device.type for t in model.parameters()} | {t.device.type for t in model.buffers()}
    return types_ or {"cpu"}


def _autocast_enabled(device_type: str) -> bool:
    try:
        return bool(torch.is_autocast_enabled(device_type))
    except (RuntimeError, ValueError):  # a device type autocast does not know (meta, ...)
        return False


def _operand_dtype(model: nn.Module, autocast_dtype: torch.dtype | None) -> torch.dtype | None:
    """The dtype matmul operands will be rounded to: ``autocast_dtype``, or an active autocast region's."""
    if autocast_dtype is not None:
        if not isinstance(autocast_dtype, torch.dtype) or autocast_dtype not in OPERAND_DTYPES:
            raise ValueError(
                f"`autocast_dtype` must be None or one of torch.float16, torch.bfloat16, got {autocast_dtype!r}"
            )
        return autocast_dtype
    active = {torch.get_autocast_dtype(d) for d in sorted(_device_types(model)) if _autocast_enabled(d)}
    if not active:
        return None
    if len(active) > 1:
        raise CertificateRefused(f"autocast regions with several dtypes are active ({sorted(map(str, active))})")
    (dtype,) = active
    if dtype not in OPERAND_DTYPES:
        raise CertificateRefused(f"autocast to {dtype} is active; certificates cover float16 and bfloat16 operands")
    return dtype


@contextlib.contextmanager
def _autocast_off(model: nn.Module) -> Iterator[None]:
    """No autocast while the certificate is computed (its float64 maths must not be rounded)."""
    with contextlib.ExitStack() as stack:
        for device_type in sorted(_device_types(model) | {"cpu"}):
            if _autocast_enabled(device_type):
                stack.enter_context(torch.autocast(device_type=device_type, enabled=False))
        yield


def _is_compiled_wrapper(module: nn.Module) -> bool:
    """``torch.compile(module)``'s OptimizedModule: it runs its ``_orig_mod``'s forward."""
    try:
        from torch._dynamo.eval_frame import OptimizedModule
    except ImportError:  # pragma: no cover - every supported torch has it
        return False
    return isinstance(module, OptimizedModule)


def _resolve(cls: type, key: str) -> object:
    """What ``cls.key`` resolves to along the MRO (descriptors unbound), or ``_MISSING``."""
    for klass in cls.__mro__:
        if key in vars(klass):
            return vars(klass)[key]
    return _MISSING


def _redefinition(module: nn.Module, owner: type) -> tuple[type, str] | None:
    """The first class of ``module``'s MRO and name it resolves otherwise than ``owner`` does (outside the allowed).

    Only classes of the MRO that are not in ``owner``'s can make a name resolve differently. The class
    ``torch.nn.utils.parametrize`` puts on a parametrized module redefines ``__getstate__``, ``__deepcopy__``
    and a property per parametrized tensor (checked by ``_check_parametrizations``): allowed.
    """
    cls, inherited = type(module), set(owner.__mro__)
    injected: frozenset[str] = frozenset()
    if parametrize.is_parametrized(module):
        injected = frozenset({"__getstate__", "__deepcopy__", *cast(Any, module).parametrizations.keys()})
    for klass in cls.__mro__:
        if klass in inherited:
            continue
        for key in vars(klass):
            if key in _REDEFINITIONS_ALLOWED or (klass is cls and key in injected):
                continue
            theirs = _resolve(owner, key)
            if theirs is not _MISSING and _resolve(cls, key) is not theirs:
                return klass, key
    return None


def _compiled_by_module_compile(module: nn.Module, compiled: object) -> bool:
    """``module.compile()`` stores ``torch.compile(module._call_impl)``: the same computation, compiled."""
    original = getattr(compiled, "_torchdynamo_orig_callable", None)
    return (
        isinstance(original, types.MethodType)
        and original.__self__ is module
        and (original.__func__ is _resolve(type(module), "_call_impl"))
    )


def _compiles(wrapper: nn.Module, original: nn.Module) -> bool:
    """Whether ``torch.compile``'s wrapper runs ``original``: its forward was made from the module it wrapped
    then (``original.__call__`` or ``wrap_inline(original)``), and assigning ``_orig_mod`` later leaves it."""
    state = vars(wrapper)
    compiled = state.get("_forward", state.get("forward"))  # `_forward` when a lazy-module check wraps it
    target = getattr(compiled, "_torchdynamo_orig_callable", None)
    return any(getattr(target, key, None) is original for key in ("__self__", "__wrapped__"))


def _hook_name(hook: object) -> str:
    return getattr(hook, "__qualname__", None) or getattr(hook, "__name__", None) or type(hook).__name__


def _multiply_round_up(a: float, b: float) -> float:
    """a·b rounded towards +∞ (a rounded-to-nearest product could fall below the exact one); 0·∞ = 0.

    0·∞ is 0: a factor with constant 0 is a constant map, so the composition is constant.
    """
    if a == 0.0 or b == 0.0:
        return 0.0
    product = a * b
    if math.isfinite(product) and Fraction(product) < Fraction(a) * Fraction(b):
        product = math.nextafter(product, math.inf)
    return product


class _Walk:
    """One certification: the tree checks, then the bound at every call position."""

    def __init__(self, *, trust_hooks: bool, operand_dtype: torch.dtype | None) -> None:
        self.trust_hooks = trust_hooks
        self.operand_dtype = operand_dtype
        self.assumptions: list[str] = []

    # ------------------------------------------------------------------ checks on the whole tree

    def check_tree(self, model: nn.Module) -> None:
        """Hooks, modes, instance overrides and non-finite or overriding tensors, anywhere in ``model``."""
        stack = torch.overrides._get_current_function_mode_stack()
        modes = [mode for mode in stack if type(mode).__name__ != "DeviceContext"]
        if modes:
            raise CertificateRefused(
                f"a torch function mode is active ({type(modes[-1]).__name__}): it may change every operation"
            )
        from torch.utils._python_dispatch import _len_torch_dispatch_stack

        if _len_torch_dispatch_stack() > 0:
            raise CertificateRefused("a torch dispatch mode is active: it may change every operation")
        for table in ("_global_forward_hooks", "_global_forward_pre_hooks"):
            for hook in getattr(module_globals, table).values():
                kind = "forward hook" if table == "_global_forward_hooks" else "forward pre-hook"
                self._hook(f"global {kind} `{_hook_name(hook)}` (register_module_{kind.replace(' ', '_')})")
        for path, module in model.named_modules(prefix="model"):
            self._check_module(path, module)

    def _hook(self, description: str) -> None:
        if not self.trust_hooks:
            raise CertificateRefused(
                f"{description} may change what the model computes; remove it, or pass trust_hooks=True "
                "to certify on the assumption that it changes no output (recorded in the bound's `assumptions`)"
            )
        self.assumptions.append(f"{description} changes no output")

    def _check_module(self, path: str, module: nn.Module) -> None:
        name = type(module).__name__
        if type(module).__call__ is not nn.Module.__call__ and not _is_compiled_wrapper(module):
            raise CertificateRefused(f"`{path}` ({name}) overrides __call__: its calls cannot be certified")
        if not _is_compiled_wrapper(module):
            for key in _CALL_PATH:
                if _resolve(type(module), key) is not _resolve(nn.Module, key):
                    raise CertificateRefused(
                        f"`{path}` ({name}) overrides `{key}`, which nn.Module.__call__ runs instead of "
                        "forward(): its calls cannot be certified"
                    )
            compiled = getattr(module, "_compiled_call_impl", None)  # on the instance or its class
            if compiled is not None and not _compiled_by_module_compile(module, compiled):
                raise CertificateRefused(
                    f"`{path}` ({name}) has `_compiled_call_impl` set to {_hook_name(compiled)}, which "
                    "nn.Module.__call__ runs instead of forward(): only module.compile()'s is certified"
                )
        if parametrize.is_parametrized(module):
            self._check_parametrizations(path, module)
        # torch.compile's wrapper stores its compiled forward on the instance; it runs `_orig_mod`
        for key in () if _is_compiled_wrapper(module) else vars(module):
            attribute = inspect.getattr_static(type(module), key, None)
            if isinstance(attribute, (types.FunctionType, staticmethod, classmethod)) or inspect.ismethoddescriptor(
                attribute
            ):
                raise CertificateRefused(
                    f"`{path}` ({name}) has its method `{key}` replaced on the instance: the certificate "
                    "covers the class's method only"
                )
        tensors: list[tuple[str, str, torch.Tensor]] = [
            ("parameter", n, t) for n, t in module._parameters.items() if t is not None
        ]
        tensors += [("buffer", n, t) for n, t in module._buffers.items() if t is not None]
        for kind, key, tensor in tensors:
            where = f"{kind} `{path}.{key}` ({name})"
            if isinstance(tensor, UninitializedTensorMixin):
                raise CertificateRefused(f"{where} is not initialised yet (a lazy module): run a forward pass first")
            if inspect.getattr_static(type(tensor), "__torch_function__") not in _STANDARD_TORCH_FUNCTIONS:
                raise CertificateRefused(
                    f"{where} is a {type(tensor).__name__} with its own __torch_function__: it may change "
                    "every operation it enters"
                )
            if tensor.is_complex():
                raise CertificateRefused(
                    f"{where} is complex ({tensor.dtype}): the certificate covers real maps only (a bound read "
                    "off its real part would drop the imaginary one)"
                )
            if tensor.is_floating_point() and not bool(torch.isfinite(tensor.detach()).all()):
                raise CertificateRefused(f"{where} has non-finite values: the model computes NaN or ±inf")
        for table in _HOOK_TABLES:
            kind = "forward hook" if table == "_forward_hooks" else "forward pre-hook"
            for hook in getattr(module, table, {}).values():
                self._hook(f"{kind} `{_hook_name(hook)}` on `{path}` ({name})")
        if isinstance(module, nn.Linear) and type(module).forward is nn.Linear.forward:
            # layers that read a child nn.Linear's weight (UnconstrainedResidual) check only its forward
            _refuse_redefinition(module, path, nn.Linear)

    @staticmethod
    def _check_parametrizations(path: str, module: nn.Module) -> None:
        """A parametrized tensor must be one function of its originals: the bound reads it once, the forward again."""
        for key, chain in cast(Any, module).parametrizations.items():
            for part_path, part in chain.named_modules(prefix=f"{path}.parametrizations.{key}"):
                if part.training and type(part) in (*DROPOUTS, nn.AlphaDropout, nn.FeatureAlphaDropout):
                    raise CertificateRefused(
                        f"`{part_path}` ({type(part).__name__}) in training mode makes `{path}.{key}` random: "
                        "each forward would use another tensor than the one certified"
                    )
            # chain() computes afresh even inside parametrize.cached(), where two reads of the attribute
            # give the cached tensor and a random parametrization would pass; the forward after it draws again
            first, second, read = chain(), chain(), getattr(module, key)
            if not (torch.equal(first, second) and torch.equal(first, read)):
                raise CertificateRefused(
                    f"the parametrization of `{path}.{key}` gives another tensor at every access: the certificate "
                    "could not cover the one the forward uses"
                )

    # ------------------------------------------------------------------ the bound, position by position

    def bound(self, module: nn.Module, path: str) -> float:
        """The certified constant of one call of ``module`` (found at ``path``)."""
        if _is_compiled_wrapper(module):
            original = cast(nn.Module, module._orig_mod)
            if not _compiles(module, original):
                raise CertificateRefused(
                    f"`{path}` (OptimizedModule) runs another module than its `_orig_mod` "
                    f"({type(original).__name__}, replaced after torch.compile?): its calls cannot be certified"
                )
            return self.bound(original, f"{path}._orig_mod")
        if callable(inspect.getattr_static(type(module), "lipschitz_bound", None)):
            return self._own_bound(module, path)
        name = type(module).__name__
        if isinstance(module, nn.Sequential):
            if type(module).forward is not nn.Sequential.forward:
                raise CertificateRefused(
                    f"`{path}` ({name}) is an nn.Sequential that overrides forward() and has no lipschitz_bound()"
                )
            _refuse_redefinition(module, path, nn.Sequential)
            product = 1.0
            for key, child in module._modules.items():  # every slot, repeated modules included
                if child is None:
                    raise CertificateRefused(f"`{path}.{key}` is None: the Sequential cannot run")
                product = _multiply_round_up(product, self.bound(child, f"{path}.{key}"))
            return product
        if isinstance(module, nn.Linear) and type(module).forward is nn.Linear.forward:
            _refuse_redefinition(module, path, nn.Linear)
            weight = module.weight.detach()
            return float(spectral_norm_bound(round_operand(weight, self.operand_dtype).to(torch.float64)))
        if type(module) in DROPOUTS:
            return _dropout_constant(module, path)
        if type(module) is nn.LeakyReLU:
            slope = float(module.negative_slope)
            if not math.isfinite(slope):
                raise CertificateRefused(f"`{path}` (LeakyReLU) has a non-finite negative_slope {slope!r}")
            # the forward multiplies by the slope as the input's dtype (or float32 opmath) rounds it
            rounded = (abs(float(torch.tensor(slope, dtype=dtype))) for dtype in _ROUNDING_DTYPES)
            return max(1.0, abs(slope), *rounded)
        constant = ACTIVATION_CONSTANTS.get(type(module))
        if constant is not None:
            return constant
        raise TypeError(
            f"`model` contains a layer `{path}` of type {name} whose Lipschitz constant is "
            "unknown; give it a `lipschitz_bound()` method"
        )

    def _own_bound(self, module: nn.Module, path: str) -> float:
        name = type(module).__name__
        owner = next(cls for cls in type(module).__mro__ if "lipschitz_bound" in vars(cls))
        forward_owner = next(cls for cls in type(module).__mro__ if "forward" in vars(cls))
        if not issubclass(owner, forward_owner):
            raise CertificateRefused(
                f"`{path}` ({name}) overrides forward() of {owner.__name__} without its own lipschitz_bound(): "
                f"{owner.__name__}'s certificate does not cover it"
            )
        _refuse_redefinition(module, path, owner)
        method = cast(Any, module).lipschitz_bound
        try:
            if self.operand_dtype is None:
                value = method()
            elif "operand_dtype" in inspect.signature(method).parameters:
                value = method(operand_dtype=self.operand_dtype)
            else:
                raise CertificateRefused(
                    f"`{path}` ({name}) cannot certify matmul operands rounded to {self.operand_dtype} "
                    "(an autocast region): certify it outside autocast"
                )
        except CertificateRefused:
            raise
        except ValueError as error:
            raise CertificateRefused(f"layer `{path}` ({name}) has no valid certificate: {error}") from None
        value = float(value)
        if math.isnan(value) or value < 0.0:
            raise CertificateRefused(f"layer `{path}` ({name}) returned an invalid Lipschitz bound {value!r}")
        return value


def _refuse_redefinition(module: nn.Module, path: str, owner: type) -> None:
    """Refuse a subclass of ``owner`` that redefines a name ``owner``'s forward may use (see _REDEFINITIONS_ALLOWED)."""
    found = _redefinition(module, owner)
    if found is not None:
        klass, key = found
        raise CertificateRefused(
            f"`{path}` ({type(module).__name__}) overrides `{key}` of {owner.__name__} (in {klass.__name__}): "
            f"{owner.__name__}'s certificate covers its own {key} only"
        )


def _dropout_constant(module: nn.Module, path: str) -> float:
    """1 in eval mode; in training mode the largest entry of the diagonal map (0 or 1/(1 − p)) as any dtype rounds it."""
    p = float(cast(Any, module).p)
    if not 0.0 <= p <= 1.0:
        raise CertificateRefused(f"`{path}` ({type(module).__name__}) has p={p!r} outside [0, 1]")
    if not module.training or p == 0.0:
        return 1.0
    if p == 1.0:
        return 0.0  # every entry dropped: the constant map 0
    scale = 1.0 / (1.0 - p)
    keep = Fraction(1) - Fraction(p)
    if Fraction(scale) * keep < 1:
        scale = math.nextafter(scale, math.inf)
    # the forward scales its mask in the input's dtype (noise.div_(1 − p)): that rounded operand,
    # e.g. 1.4296875 in bfloat16 and 1.4285714626 in float32 for p = 0.3, can exceed 1/(1 − p)
    for dtype in _ROUNDING_DTYPES:
        scale = max(scale, float(torch.ones(64, dtype=dtype).div_(1.0 - p).max()))
    return scale


__all__ = [
    "ACTIVATION_CONSTANTS",
    "DROPOUTS",
    "OPERAND_DTYPES",
    "CertificateRefused",
    "LipschitzBound",
    "certify_model",
]

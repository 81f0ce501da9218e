"""The step s of a gradient-step layer, validated at every assignment (issue 30: a step set after construction)."""

from __future__ import annotations

from .._validation import check_real


class ValidatedStep:
    """Mixin for layers x − τ Wᵀσ(Wx + b) with τ = s/‖W‖²: ``step`` is a property checked whenever it is set.

    s ∈ [0, 2] (in (0, 2) when ``learnable_step``, where s only seeds θ): τ·‖W‖₂² ≤ s ≤ 2 is what
    makes the layer 1-Lipschitz, so ``layer.step = 20.0`` is refused at once, not only in
    ``__init__``. Set ``learnable_step`` before ``step``. :meth:`_check_step` repeats the check at
    certification time, for a value written behind the property (``__dict__``).
    """

    _step: float
    learnable_step: bool

    @property
    def step(self) -> float:
        """s in [0, 2] (in (0, 2) when learnable: then only θ's initial value); validated when set."""
        return self._step

    @step.setter
    def step(self, value: float) -> None:
        open_ = bool(self.__dict__.get("learnable_step", False))
        self._step = check_real("step", value, low=0.0, high=2.0, low_open=open_, high_open=open_)

    def _check_step(self) -> None:
        """Raise ValueError (naming `step`) when the stored s left [0, 2]."""
        check_real("step", self.__dict__.get("_step"), low=0.0, high=2.0)


__all__ = ["ValidatedStep"]

"""Layers: one private file per concept, re-exported here."""

from .activation import ACTIVATIONS, activation
from .dlor_linear import DLoRLinear, RankOneLinear
from .low_rank_linear import LowRankLinear
from .gradient_step_residual import GradientStepResidual, ResidualExport
from .maxmin import MaxMin
from .norm_constrained_linear import NormConstrainedLinear
from .orthogonal_linear import OrthogonalLinear
from .swish import Swish

__all__ = ["GradientStepResidual", "MaxMin", "NormConstrainedLinear", "OrthogonalLinear", "ResidualExport"]
__all__ += ["ACTIVATIONS", "LowRankLinear", "Swish", "activation"]
__all__ += ["DLoRLinear", "RankOneLinear"]

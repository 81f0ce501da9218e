"""Layers: one private file per concept, re-exported here."""

from ._certified_batch import CertifiedBatch
from .activation import ACTIVATIONS, activation
from .dlor_branches import DLoRBranches
from .dlor_linear import DLoRLinear, RankOneLinear
from .dlor_parallel import DLoRParallel
from .flat_to_image import FlatToImage
from .gradient_step_conv2d import GradientStepConv2d
from .gradient_step_residual import GradientStepResidual, ResidualExport
from .invertible_downsample import InvertibleDownsample
from .l2_norm_pool2d import L2NormPool2d
from .low_rank_attention import LowRankMultiheadAttention
from .low_rank_conv import LowRankConv1d, LowRankConv2d
from .low_rank_linear import LowRankLinear
from .maxmin import MaxMin
from .norm_constrained_conv2d import NormConstrainedConv2d
from .norm_constrained_linear import NormConstrainedLinear
from .orthogonal_linear import OrthogonalLinear
from .power_clamped_residual import PowerClampedResidual
from .swish import Swish
from .take_first import TakeFirst
from .unconstrained_residual import UnconstrainedResidual
from .zero_pad import ZeroPad

__all__ = ["GradientStepResidual", "MaxMin", "NormConstrainedLinear", "OrthogonalLinear", "ResidualExport"]
__all__ += ["ACTIVATIONS", "LowRankLinear", "Swish", "activation"]
__all__ += ["DLoRLinear", "RankOneLinear"]
__all__ += ["DLoRBranches", "DLoRParallel", "TakeFirst", "ZeroPad"]
__all__ += ["PowerClampedResidual", "UnconstrainedResidual"]
__all__ += ["FlatToImage", "GradientStepConv2d", "InvertibleDownsample", "L2NormPool2d", "NormConstrainedConv2d"]
__all__ += ["LowRankConv1d", "LowRankConv2d", "LowRankMultiheadAttention"]
__all__ += ["CertifiedBatch"]

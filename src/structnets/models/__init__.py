"""Builders that assemble layers into models."""

from .dlor_mlp import dlor_mlp, dlor_parameter_count, rank_one_mlp
from .mlp import bottleneck_width, mlp
from .lipschitz_resnet import UnconstrainedResidual, export_model, lipschitz_resnet

__all__ = ["bottleneck_width", "mlp"]
__all__ += ["dlor_mlp", "dlor_parameter_count", "rank_one_mlp"]
__all__ += ["UnconstrainedResidual", "export_model", "lipschitz_resnet"]

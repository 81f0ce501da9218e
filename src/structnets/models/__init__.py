"""Builders that assemble layers into models."""

from .batched_dlor import BatchedDLoRNet, build_batched  # noqa: F401
from .dlor_mlp import dlor_mlp, dlor_parameter_count, rank_one_mlp
from .ensemble_mlp import EnsembleMLP  # noqa: F401
from .lipschitz_convnet import lipschitz_convnet
from .lipschitz_resnet import export_model, lipschitz_resnet
from .mlp import bottleneck_width, mlp

__all__ = ["bottleneck_width", "mlp"]
__all__ += ["dlor_mlp", "dlor_parameter_count", "rank_one_mlp"]
__all__ += ["export_model", "lipschitz_resnet"]
__all__ += ["lipschitz_convnet"]

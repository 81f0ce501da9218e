"""Explicit networks from proofs: each function builds what a theorem describes and cites it."""

from .dlor import DLoRFactor, dlor_network_from_dense, dlor_product, dlor_sum, rank_one_interpolant  # noqa: F401
from .dlor_universality import (  # noqa: F401
    RegisterNetwork,
    ShallowNetwork,
    dlor_from_shallow,
    dlor_universal_approximator,
    fit_shallow,
    wide_dlor_from_shallow,
)
from .lipschitz_targets import (  # noqa: F401
    LipschitzTarget,
    check_target,
    grid_points,
    max_secant_ratio,
    random_lattice_target_1d,
    random_maxmin_target,
)
from .maxmin import evaluate_maxmin, lattice_pieces_1d, maxmin_lipschitz_bound, maxmin_network  # noqa: F401
from .smooth_constant_depth import (  # noqa: F401
    ConstantDepthCertificate,
    SmoothConstantDepthApproximation,
    smooth_constant_depth_approximator,
)
from .swish_approximator import ErrorBound, SwishApproximation, swish_approximator  # noqa: F401

"""Pure measurement functions: cost (parameters, FLOPs, memory), and the tools each issue adds."""

from .attack import AttackResult, pgd_l2
from .bounds import (
    CoveringBound,
    PacBayesBound,
    SpectralBound,
    dudley_entropy_bound,
    layer_spectra,
    margin_for_bounds,
    margin_loss,
    margins,
    pac_bayes_bound,
    parameter_count_bound,
    rank_sparse_bound,
    rank_sparse_bounds,
    schatten_ball_log_covering,
    spectral_bound,
)
from .certify import certified_radii, certify
from .checkpoint import LayerSpectrum, format_spectrum_table, load_state_dict, spectrum_table
from .cost import Cost, LayerCost, LeafCount, cost, register_counter
from .dense_matrices import dense_matrices, factor_ranks, hidden_representations, linear_layers, stored_parameters
from .lipschitz import (
    LipschitzBound,
    certified_accuracy,
    jacobian_spectral_norms,
    lipschitz_lower_bound,
    lipschitz_upper_bound,
)
from .piecewise_linear import piecewise_linear_floor, relu_piece_bound
from .rates import SlopeFit, loglog_slope, minimax_exponent, relu_depth_cap_exponent, relu_estimation_exponent
from .spectral import bottleneck_rank, effective_rank, numerical_rank, schatten_norm, singular_values, stable_rank

__all__ = ["Cost", "LayerCost", "LeafCount", "cost", "register_counter"]
__all__ += ["AttackResult", "pgd_l2"]
__all__ += [
    "LipschitzBound",
    "certified_accuracy",
    "jacobian_spectral_norms",
    "lipschitz_lower_bound",
    "lipschitz_upper_bound",
]
__all__ += [
    "bottleneck_rank",
    "effective_rank",
    "numerical_rank",
    "schatten_norm",
    "singular_values",
    "stable_rank",
    "dense_matrices",
    "hidden_representations",
    "linear_layers",
    "CoveringBound",
    "PacBayesBound",
    "SpectralBound",
    "dudley_entropy_bound",
    "layer_spectra",
    "margin_for_bounds",
    "margin_loss",
    "margins",
    "pac_bayes_bound",
    "parameter_count_bound",
    "rank_sparse_bound",
    "rank_sparse_bounds",
    "schatten_ball_log_covering",
    "spectral_bound",
    "LayerSpectrum",
    "format_spectrum_table",
    "load_state_dict",
    "spectrum_table",
]
__all__ += ["SlopeFit", "loglog_slope", "minimax_exponent", "relu_depth_cap_exponent", "relu_estimation_exponent"]
__all__ += ["factor_ranks", "stored_parameters"]
__all__ += ["piecewise_linear_floor", "relu_piece_bound"]
__all__ += ["certified_radii", "certify"]

"""Layers: one private file per concept, re-exported here."""

from .activation import ACTIVATIONS, activation
from .low_rank_linear import LowRankLinear
from .swish import Swish

__all__ = ["ACTIVATIONS", "LowRankLinear", "Swish", "activation"]

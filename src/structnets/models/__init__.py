"""Builders that assemble layers into models."""

from .mlp import bottleneck_width, mlp

__all__ = ["bottleneck_width", "mlp"]

"""structnets: structured neural networks backed by approximation and generalization theory."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("structnets")
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0.0.0+unknown"

from . import functional, models, nn  # noqa: E402  (light imports; data/analysis/runner load on demand)
from .compression import CompressionReport, LayerCompression, compress  # noqa: E402
from .exporting import export  # noqa: E402

__all__ = ["CompressionReport", "LayerCompression", "__version__", "compress", "export", "functional", "models", "nn"]

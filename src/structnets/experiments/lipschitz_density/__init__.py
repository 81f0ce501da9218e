from .units import *  # noqa: F403 (transitional)
from .units import EXPERIMENT, run  # noqa: F401

"""``python -m structnets.cli``: the same command line as the ``structnets`` script."""

from __future__ import annotations

import sys

from . import main

if __name__ == "__main__":
    sys.exit(main())

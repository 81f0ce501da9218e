"""A one-stage experiment whose unit keys hold characters a URL fragment or an HTML ``id`` cannot hold as
they are (space, ``#``, ``%``, quotes, markup, non-ASCII), for checking that a claim's link reaches its
unit's row on the run page (a test fixture, not shipped; imported as the top-level module
``odd_keys_experiment``, with ``tests/html`` on ``sys.path``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from structnets.protocol import JSONScalar, Unit

ODD_KEYS: tuple[str, ...] = (
    "plain/seed=0",
    "with space/seed=1",
    'hash#and%20percent "quoted" <b>bold</b>/é=2',
    "q?x=1&y=2/seed=3",
)
"""The unit keys: one plain, the rest each needing the anchor's or the fragment's encoding."""


@dataclass(frozen=True)
class OddKeysConfig:
    """Config: the unit keys to run."""

    keys: tuple[str, ...] = ODD_KEYS

    @classmethod
    def quick(cls) -> OddKeysConfig:
        return cls()


class OddKeysExperiment:
    name = "odd-keys"
    description = "One unit per odd key (a test fixture of the HTML pages)."
    config_class = OddKeysConfig

    def units(self, config: OddKeysConfig, finished: pd.DataFrame) -> list[Unit]:
        return [Unit(key, {"index": i}) for i, key in enumerate(config.keys)]

    def run_unit(self, params: Mapping[str, Any]) -> dict[str, JSONScalar]:
        return {"value": float(params["index"])}

    def report(self, results: pd.DataFrame, config: OddKeysConfig) -> str:
        return f"# odd keys\n\n{len(results)} units.\n"

    def figures(self, results: pd.DataFrame, config: OddKeysConfig, out_dir: Path) -> list[Path]:
        return []


EXPERIMENT = OddKeysExperiment()

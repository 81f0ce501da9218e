"""Suite-wide set-up: one torch thread per worker, and the verified data files without the network.

The Makefile and ``.ci/run`` set ``STRUCTNETS_DATA``; when a test run starts without it (plain
``pytest``), point it at ``../shared/data`` beside the repository if that exists, so tests (and the
runner's worker processes, which inherit the environment) never try to download.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from pretend_cuda import pretend_cuda

# `make test` runs two pytest workers on two cores: one intra-op thread each avoids oversubscription,
# under which tiny kernels stall for milliseconds.
torch.set_num_threads(1)

_SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"
if "STRUCTNETS_DATA" not in os.environ and _SHARED.is_dir():
    os.environ["STRUCTNETS_DATA"] = str(_SHARED)


@pytest.fixture
def uci_data() -> Path:
    """The folder holding the verified data files; skips the test when there is none."""
    folder = os.environ.get("STRUCTNETS_DATA")
    if not folder or not Path(folder).is_dir():
        pytest.skip("no data files: set STRUCTNETS_DATA to the verified data folder (../shared/data)")
    return Path(folder)


_GPUS = [
    "pretend-cuda",
    pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device here")),
]


def _placed(kind: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The device name tests use for ``kind``: ``"pretend-cuda"`` is ``"cuda"`` inside :func:`pretend_cuda`."""
    if kind == "pretend-cuda":
        with pretend_cuda(monkeypatch):
            yield "cuda"
    else:
        yield kind


@pytest.fixture(params=_GPUS)
def cuda_device(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """``"cuda"``, twice: a GPU where there is one (``benchmarks/device_check.sh``), and everywhere the pretend device
    of ``tests/pretend_cuda.py`` (host arithmetic; a host tensor meeting a device one raises, as on a GPU)."""
    yield from _placed(request.param, monkeypatch)


@pytest.fixture(params=["cpu", *_GPUS])
def every_device(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """``"cpu"``, then ``"cuda"`` as :func:`cuda_device` gives it."""
    yield from _placed(request.param, monkeypatch)

"""``resolve_device`` takes ``cuda:N`` as torch parses it (session 10).

Its name check used ``str.isdigit``: ``cuda:²`` passed and then ``int('²')`` raised a bare
ValueError, and ``cuda:01`` / ``cuda:128`` (refused or wrapped to another device by torch) passed.
"""

from __future__ import annotations

import pytest

from structnets.runner.device import resolve_device
from structnets.runner.errors import InvalidConfigError


@pytest.mark.parametrize(
    "device", ["cuda:²", "cuda:٣", "cuda:01", "cuda:128", "cuda:255", "cuda:-1", "cuda:", "gpu", 3]
)
def test_names_torch_would_refuse_or_misread_are_refused_by_name(device: object) -> None:
    with pytest.raises(InvalidConfigError, match="`device` must be one of"):
        resolve_device(device)  # type: ignore[arg-type]


def test_plain_names_resolve() -> None:
    assert resolve_device("cpu") == "cpu"
    assert resolve_device("auto") in ("cpu", "cuda")

"""``keep_freed_memory``: freed tensors' pages are reused, not unmapped and faulted in again."""

from __future__ import annotations

import json
import platform
import subprocess
import sys

import pytest

from structnets.runner.allocator import keep_freed_memory

GLIBC = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"

# 40 rounds of a 64 MiB tensor written and freed: above glibc's largest dynamic mmap threshold
# (32 MiB), so by default every round maps fresh pages and faults each of its 16,384 pages.
_SCRIPT = """
import json, resource, sys, torch
from structnets.runner.allocator import keep_freed_memory
applied = keep_freed_memory() if sys.argv[1] == "on" else None
for _ in range(2):
    torch.empty(16 << 20).fill_(1.0)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(40):
    torch.empty(16 << 20).fill_(1.0)
print(json.dumps({"applied": applied, "faults": resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before}))
"""


def _faults(mode: str) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-c", _SCRIPT, mode], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not GLIBC, reason="the setting is glibc's mallopt")
def test_freed_large_tensors_are_reused_instead_of_faulted_in_again() -> None:
    off, on = _faults("off"), _faults("on")
    assert on["applied"] is True
    pages = 40 * (64 << 20) // 4096
    assert off["faults"] >= pages // 2  # glibc's default: mapped and faulted every round
    # kept: the same pages every round (at most two rounds' worth faulted, seen once under load)
    assert on["faults"] <= 2 * (64 << 20) // 4096


@pytest.mark.skipif(not GLIBC, reason="the setting is glibc's mallopt")
def test_keep_freed_memory_is_idempotent() -> None:
    # in a child process: the setting is process-wide and this test process should keep glibc's defaults
    script = "from structnets.runner.allocator import keep_freed_memory as k; print(k(), k())"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["True", "True"]


def test_elsewhere_it_changes_nothing_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(platform, "system", lambda: "Darwin")
    assert keep_freed_memory() is False

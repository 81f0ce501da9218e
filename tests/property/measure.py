"""Count the outcomes of every generated bad-input call: ``python -m tests.property.measure [prefix ...]``.

Runs the same cases and values as ``test_bad_input.py`` without stopping at a failure, under an
address-space limit (so a call that tries to allocate without bound fails instead of swapping),
and prints how many calls ended in a clear error naming the argument and the rest by kind.
"""

from __future__ import annotations

import collections
import resource
import sys
import time

import torch
from hypothesis import given
from hypothesis import strategies as st

from .strategies import BAD_INPUT, CASES, elsewhere, outcome


def _drive(case, totals, findings) -> None:
    @BAD_INPUT
    @given(data=st.data())
    def drive(data):
        kind, detail = outcome(case, data.draw(case.bad))
        totals[kind] += 1
        if kind != "clear":
            findings[case.id].append(detail)

    drive()


def main() -> int:
    torch.set_num_threads(1)
    limit = 8 * 2**30
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    totals: collections.Counter[str] = collections.Counter()
    by_owner = {True: collections.Counter(), False: collections.Counter()}
    findings: dict[str, list[str]] = collections.defaultdict(list)
    start = time.perf_counter()
    only = tuple(sys.argv[1:])  # optional entry-point prefixes, e.g. ``nn.ZeroPad training.``
    for case in CASES:
        if only and not case.entry.startswith(only):
            continue
        before = totals.copy()
        _drive(case, totals, findings)
        by_owner[elsewhere(case)].update(totals - before)
    elapsed = time.perf_counter() - start
    calls = sum(totals.values())
    chosen = [case for case in CASES if not only or case.entry.startswith(only)]
    entries = len({case.entry.split("[")[0] for case in chosen})
    print(
        f"{calls} generated bad-input calls over {entries} public entry points ({len(chosen)} arguments) in {elapsed:.0f} s"
    )
    for kind in ("clear", "unnamed", "other-error", "accepted", "hang"):
        print(f"  {kind:12s} {totals[kind]:6d}  {100 * totals[kind] / max(calls, 1):6.2f} %")
    for other, label in ((False, "entry points in this suite's own files"), (True, "entry points owned elsewhere")):
        counts = by_owner[other]
        n = sum(counts.values())
        n_entries = len({c.entry.split("[")[0] for c in chosen if elsewhere(c) == other})
        print(
            f"{label}: {n} calls over {n_entries} entry points, {counts['clear']} clear "
            f"({100 * counts['clear'] / max(n, 1):.2f} %)"
        )
    print(f"not clear: {sum(len(d) for d in findings.values())} calls in {len(findings)} arguments")
    for case_id, details in sorted(findings.items()):
        print(f"\n{case_id}: {len(details)} not clear")
        for detail in sorted(set(details))[:4]:
            print("   ", detail)
    return 0 if not findings else 1  # every call clear (named, or by the naming policy)


if __name__ == "__main__":
    sys.exit(main())

"""The written policies name rules that exist, and render as one table row each."""

from __future__ import annotations

import re

from structnets.claims import rules, rules_trend
from structnets.claims.policies import POLICIES, policies_markdown


def test_every_policy_names_an_existing_rule_of_claims_rules() -> None:
    named = [m.group(1) for p in POLICIES for m in [re.search(r"\(`(\w+)`\)", p.kind)] if m]
    assert len(named) == len(POLICIES) - 1  # the exact-construction kind has exact inequalities, no test
    for name in named:
        # rules_trend holds the pooled trend test (split from rules to keep files short)
        assert callable(getattr(rules, name, None) or getattr(rules_trend, name)), name


def test_policies_markdown_has_one_row_per_policy_and_no_stray_pipes() -> None:
    lines = policies_markdown().splitlines()
    rows = [line for line in lines if line.startswith("| **")]
    assert len(rows) == len(POLICIES)
    for row in rows:
        # three cells: a '|' inside a cell must be escaped or it would split the row
        assert len(re.split(r"(?<!\\)\|", row.strip().strip("|"))) == 3, row[:80]


def test_the_generated_claims_page_carries_the_policy_table() -> None:
    import pandas as pd

    from structnets.claims.table import COLUMNS, claims_markdown

    page = claims_markdown(pd.DataFrame(columns=list(COLUMNS)))
    assert policies_markdown() in page
    assert page.index("## Policies") < page.index("Verdicts: ")


def test_the_claims_html_page_carries_the_policy_table() -> None:
    import pandas as pd

    from structnets.claims.table import COLUMNS
    from structnets.html.claims_page import render_claims_page

    page = render_claims_page(pd.DataFrame(columns=list(COLUMNS)))
    section = page[page.index('id="policies"') :]
    assert section.count("<tr>") == len(POLICIES) + 1  # header row + one per policy
    assert "<code>upper_bound_rate</code>" in section

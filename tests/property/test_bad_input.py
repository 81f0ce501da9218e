"""Every public entry point refuses generated bad arguments with an error naming the argument.

One test per (entry point, argument): hypothesis draws values the documentation rules out for
that argument (see ``strategies.py``), every other argument stays valid, and the call must raise
``ValueError``/``TypeError`` naming it: not another exception type, not an unnamed message, not
a hang, and never a silently returned result. The few arguments whose refusal names the value or
entry instead, by policy, are the allow-list ``cases_more.NAMING_POLICY``; none is expected to fail.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from .strategies import BAD_INPUT, CASES, outcome


@pytest.mark.parametrize("case", [pytest.param(case, id=case.id) for case in CASES])
@BAD_INPUT
@given(data=st.data())
def test_bad_argument_is_refused_naming_it(case, data):
    value = data.draw(case.bad, label=case.arg)
    kind, detail = outcome(case, value)
    assert kind == "clear", detail

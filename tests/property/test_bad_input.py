"""Every public entry point refuses generated bad arguments with an error naming the argument.

One test per (entry point, argument): hypothesis draws values the documentation rules out for
that argument (see ``strategies.py``), every other argument stays valid, and the call must raise
``ValueError``/``TypeError`` naming it: not another exception type, not an unnamed message, not
a hang, and never a silently returned result.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from .strategies import BAD_INPUT, CASES, XFAIL, outcome


def _param(case):
    marks = [pytest.mark.xfail(strict=True, reason=XFAIL[case.id])] if case.id in XFAIL else []
    return pytest.param(case, id=case.id, marks=marks)


@pytest.mark.parametrize("case", [_param(case) for case in CASES])
@BAD_INPUT
@given(data=st.data())
def test_bad_argument_is_refused_naming_it(case, data):
    value = data.draw(case.bad, label=case.arg)
    kind, detail = outcome(case, value)
    assert kind == "clear", detail

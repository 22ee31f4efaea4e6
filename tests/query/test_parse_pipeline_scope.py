"""parse_pipeline sets the parse scope (``expressions.PARSE_SCOPE``, what ``defined_variables`` sets) to its
context's variables itself: references are checked against exactly those while it parses, and the
caller's scope is back afterwards, whether the parse succeeded or failed."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.protocol.errors import MongoError
from tidemark.query.expressions import PARSE_SCOPE, defined_variables
from tidemark.query.pipeline import PipelineContext, parse_pipeline

NAMES = ["a", "b", "c"]


@settings(max_examples=60, deadline=None)
@given(outer=st.none() | st.sets(st.sampled_from(NAMES)), defined=st.sets(st.sampled_from(NAMES)),
       used=st.sampled_from(NAMES), check=st.booleans(), bad_stage=st.booleans())
def test_scope_is_the_contexts_and_the_callers_after(outer, defined, used, check, bad_stage):
    ctx = PipelineContext(variables={n: 1 for n in defined}, check_variables=check)
    pipeline = [{"$project": {"x": f"$${used}"}}] + ([{"$noSuchStage": {}}] if bad_stage else [])
    with defined_variables(outer):
        before = PARSE_SCOPE.get()
        try:
            parse_pipeline(pipeline, ctx)
            code = None
        except MongoError as exc:
            code = exc.code
        assert PARSE_SCOPE.get() == before
    if check and used not in defined:
        assert code == 17276
    elif bad_stage:
        assert code == 40324
    else:
        assert code is None


def test_an_unchecked_parse_leaves_references_to_run_time():
    with defined_variables(["a"]):
        parse_pipeline([{"$project": {"x": "$$zz"}}])  # (no context: its caller's variables are unknown)
    with pytest.raises(MongoError) as err, defined_variables(["a"]):
        parse_pipeline([{"$project": {"x": "$$zz"}}], PipelineContext(variables={"a": 1}))
    assert err.value.code == 17276

"""A $group spec's parse is remembered by its BSON (``stage_group._PARSED``): specs that differ only in a
constant (2, 2.0, Int64(2), True, "2", 0.0, -0.0...) each get their own answer, in any order, and so does a
spec reading a ``let`` variable (not remembered) — against the same spec made another BSON by an extra
field, which the memo has never seen."""

import itertools

import pytest
from bson.int64 import Int64
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

_salt = itertools.count()
_CONSTANTS = [0, 2, -3, 2.0, 0.0, -0.0, 2.5, Int64(2), Int64(-3), True, False, None, "2", "a"]


def _spec(c, acc, let):
    spec = {"_id": {"t": {"$type": [c]}, "k": {"$cond": [{"$gt": ["$g", c]}, "$g", c]}},
            "s": {acc: {"$add": ["$x", c]}}, "m": {"$max": {"$type": c}}}
    if let:
        spec["n"] = {"$sum": "$$k"}
    return spec


def _run(coll, spec, k):
    try:
        out = list(coll.aggregate([{"$group": spec}, {"$sort": {"_id": 1}}], let={"k": k}))
    except OperationFailure as exc:
        return ("error", exc.code)
    return ("ok", [{**d, "s_type": type(d["s"]).__name__, "m_type": type(d["m"]).__name__} for d in out])


@pytest.mark.commands("aggregate")
def test_group_specs_differing_in_a_constant_each_answer_for_their_own(db):
    coll = db.c
    coll.insert_many([{"g": i % 3, "x": i} for i in range(9)])

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                     HealthCheck.too_slow])
    @given(runs=st.lists(st.tuples(st.sampled_from(_CONSTANTS), st.sampled_from(["$sum", "$max", "$push"]),
                                   st.sampled_from([1, 2.5, Int64(7), "v"]), st.booleans()), min_size=2, max_size=6))
    def check(runs):
        for c, acc, k, let in runs:
            got = _run(coll, _spec(c, acc, let), k)
            fresh = _run(coll, {**_spec(c, acc, let), f"z{next(_salt)}": {"$sum": 0}}, k)
            if fresh[0] == "ok":
                fresh = ("ok", [{f: v for f, v in d.items() if not f.startswith("z")} for d in fresh[1]])
            assert got == fresh, (c, acc, k)

    check()

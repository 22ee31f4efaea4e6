"""``field_deps.check_match_paths``: a later ``$match`` on a query path with a '$'-prefixed component
(``"a.$c"``) fails 16410 exactly when mongod's dependency set is finite (a stage naming its output
fields follows, with only field-passing stages between) — and a pipeline of legal paths never does,
whatever its stages (illegal_reference_in_match.js)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tidemark.protocol.errors import MongoError
from tidemark.query.field_deps import check_match_paths

LEGAL = st.sampled_from(["a", "a.b", "a.0", "x.y.z", "a.$id", "b"])
BAD = st.sampled_from(["a.$c", "x.$y.z", "x.y.$z"])
PASSING = st.sampled_from([{"$limit": 3}, {"$skip": 1}, {"$sort": {"k": 1}}, {"$addFields": {"k": "$m"}},
                           {"$unwind": "$u"}, {"$project": {"e": 0}}, {"$unset": "e"}])
NAMING = st.sampled_from([{"$project": {"n": "$dummy"}}, {"$project": {"n": 1}}, {"$group": {"_id": "$g"}},
                          {"$count": "n"}, {"$replaceRoot": {"newRoot": "$r"}}])
UNKNOWN = st.sampled_from([{"$lookup": {"from": "o", "localField": "l", "foreignField": "f", "as": "j"}},
                           {"$match": {"$where": "true"}}, {"$project": {"w": "$$ROOT"}}])


def _match(path: str) -> dict:
    return {"$match": {path: 4}}


@given(st.lists(st.one_of(PASSING, NAMING, UNKNOWN, LEGAL.map(_match)), max_size=6))
def test_legal_paths_never_fail(stages):
    check_match_paths(stages)


@given(before=st.lists(PASSING, max_size=2), bad=BAD, between=st.lists(PASSING, max_size=2), naming=NAMING)
def test_a_bad_path_before_a_naming_stage_fails_16410(before, bad, between, naming):
    stages = [*before, _match(bad), *between, naming]
    if any(bad.split(".")[0] in repr(s) for s in [*before, *between, naming]):
        return  # (a stage reading its first component: mongod's set may hold the parent instead)
    with pytest.raises(MongoError) as e:
        check_match_paths(stages)
    assert e.value.code == 16410


@given(bad=BAD, unknown=UNKNOWN, naming=NAMING, unknown_first=st.booleans())
def test_unknown_needs_or_no_naming_stage_do_not_fail(bad, unknown, naming, unknown_first):
    check_match_paths([_match(bad), {"$limit": 1}])  # no naming stage: the set is not finite
    stages = [unknown, _match(bad), naming] if unknown_first else [_match(bad), unknown, naming]
    check_match_paths(stages)

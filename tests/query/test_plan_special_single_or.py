"""plan_special: a one-branch ``$or`` is read as its branch before $text / $near are looked for, as mongod's
canonical query does (so ``{$or: [{loc: {$near: P}}]}`` is a top-level $near)."""

from __future__ import annotations

import pytest

from tidemark.protocol.errors import MongoError
from tidemark.query import plan
from tidemark.query.plan_special import _collapse_single_or

SPHERE = {"v": 2, "key": {"loc": "2dsphere"}, "name": "loc_2dsphere", "2dsphereIndexVersion": 3}
NEAR = {"loc": {"$nearSphere": [1, 2]}}


@pytest.mark.parametrize(("filter", "expected"), [
    ({"$or": [NEAR]}, {"$and": [NEAR]}),
    ({"$or": [NEAR], "$and": [{"a": 1}]}, {"$and": [{"a": 1}, NEAR]}),
    ({"$and": [{"$or": [NEAR]}]}, {"$and": [{"$and": [NEAR]}]}),
    ({"$or": [NEAR, {"a": 1}]}, {"$or": [NEAR, {"a": 1}]}),
])
def test_single_branch_or_collapses(filter, expected):
    assert _collapse_single_or(filter) == expected


def test_near_in_a_one_branch_or_is_planned():
    assert plan.choose_plan([SPHERE], {"$or": [NEAR]}).kind == "GEO_NEAR"
    assert plan.choose_plan([SPHERE], {"$and": [{"$or": [NEAR]}]}).kind == "GEO_NEAR"


def test_near_in_a_two_branch_or_is_still_refused():
    with pytest.raises(MongoError) as info:
        plan.choose_plan([SPHERE], {"$or": [NEAR, {"a": 1}]})
    assert info.value.code == 2

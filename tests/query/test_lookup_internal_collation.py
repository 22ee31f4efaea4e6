"""``$lookup``'s ``_internalCollation`` (mongod's fromCollator): the localField/foreignField equality and
the sub-pipeline run under it instead of the pipeline's collation; an empty object changes nothing; a
non-object is 10065."""

from __future__ import annotations

import pytest

from tidemark.protocol.errors import MongoError
from tidemark.query.collation import parse_collation
from tidemark.query.pipeline import PipelineContext, run_pipeline

LOCAL = [{"_id": "a"}, {"_id": "b"}]
FOREIGN = [{"_id": "A"}, {"_id": "b"}]
CI = {"locale": "en_US", "strength": 1}


def joined(lookup: dict, collation=None) -> dict:
    ctx = PipelineContext(db="test", collation=collation,
                          resolve_collection=lambda db, coll: iter([dict(d) for d in FOREIGN]))
    out = run_pipeline([{"$lookup": {"from": "f", "as": "m", **lookup}}], iter([dict(d) for d in LOCAL]), ctx)
    return {d["_id"]: [m["_id"] for m in d["m"]] for d in out}


EQUALITY = {"localField": "_id", "foreignField": "_id"}
PIPELINE = {"let": {"v": "$_id"}, "pipeline": [{"$match": {"$expr": {"$eq": ["$_id", "$$v"]}}}]}


@pytest.mark.parametrize("shape", [EQUALITY, PIPELINE], ids=["equality", "pipeline"])
def test_internal_collation_decides_the_join(shape):
    assert joined(shape) == {"a": [], "b": ["b"]}
    assert joined({**shape, "_internalCollation": CI}) == {"a": ["A"], "b": ["b"]}
    assert joined({**shape, "_internalCollation": {"locale": "simple"}}, parse_collation(CI)) == {"a": [], "b": ["b"]}
    assert joined({**shape, "_internalCollation": {}}, parse_collation(CI)) == {"a": ["A"], "b": ["b"]}


@pytest.mark.parametrize("value", ["en_US", 1, ["x"]])
def test_internal_collation_must_be_an_object(value):
    with pytest.raises(MongoError) as info:
        joined({**EQUALITY, "_internalCollation": value})
    assert info.value.code == 10065

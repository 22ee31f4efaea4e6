"""An executed explain of distinct, update, delete and findAndModify counts what its plan examined.

mongod 7.0 reports, at executionStats, the index keys and documents the plan read (totalKeysExamined,
totalDocsExamined; ``keysExamined`` / ``docsExamined`` in the plan's stages) for every explained command,
the writes included, beside the write stage's own nMatched / nWouldModify / nWouldDelete
(jstests/core/query/explain/explain_delete.js, explain_distinct.js). Tidemark read the read's counters
before the read ran and reported 0 and 0 whatever the plan scanned.

The family: random documents, with or without an index on ``a``, a random filter; each explained
distinct / update / delete / findAndModify examines what the equivalent find examines (the same filter,
``limit: 1`` for a single-document write), and the explain changes no document.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.commands("explain", "distinct", "update", "delete", "findAndModify")

HYPO = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

_docs = st.lists(st.fixed_dictionaries({"a": st.integers(0, 4), "b": st.integers(0, 3)}), max_size=20)
_filters = st.one_of(
    st.builds(lambda v: {"a": v}, st.integers(0, 4)),
    st.builds(lambda v: {"a": {"$gte": v}}, st.integers(0, 4)),
    st.builds(lambda v, w: {"a": {"$lte": v}, "b": w}, st.integers(0, 4), st.integers(0, 3)),
    st.builds(lambda w: {"b": w}, st.integers(0, 3)),
    st.just({}),
)


def _explain(db, cmd):
    return db.command("explain", cmd, verbosity="executionStats")["executionStats"]


def _examined(execution):
    return execution["totalKeysExamined"], execution["totalDocsExamined"]


def _stage(execution, name):
    node = execution["executionStages"]
    while node["stage"] != name:
        node = node["inputStage"]
    return node


def _explained(flt, single):
    """(command name, explained command, find options it reads as)."""
    limit = {"limit": 1} if single else {}
    return [
        ("distinct", {"distinct": "c", "key": "b", "query": flt}, {}),
        ("update", {"update": "c", "updates": [{"q": flt, "u": {"$inc": {"b": 1}}, "multi": not single}]}, limit),
        ("delete", {"delete": "c", "deletes": [{"q": flt, "limit": 1 if single else 0}]}, limit),
        ("findAndModify", {"findAndModify": "c", "query": flt, "update": {"$set": {"z": 1}}}, {"limit": 1}),
        ("findAndModify", {"findAndModify": "c", "query": flt, "remove": True}, {"limit": 1}),
    ]


@HYPO
@given(docs=_docs, indexed=st.booleans(), flt=_filters, single=st.booleans())
def test_examined_as_the_equivalent_find(db, docs, indexed, flt, single):
    db.c.drop()
    if docs:
        db.c.insert_many([dict(d, _id=i) for i, d in enumerate(docs)])
    else:
        db.create_collection("c")
    if indexed:
        db.c.create_index("a")
    before = list(db.c.find().sort("_id", 1))
    for _, cmd, options in _explained(flt, single):
        found = _explain(db, {"find": "c", "filter": flt, **options})
        execution = _explain(db, cmd)
        assert _examined(execution) == _examined(found), (cmd, execution, found)
    assert list(db.c.find().sort("_id", 1)) == before  # an explain writes nothing


def test_write_stage_counters_beside_what_was_examined(db):
    """A delete over a COLLSCAN of 10 documents, 3 matching: 10 examined, 3 would be deleted; with an
    index on the filter's field, 3 keys and 3 documents examined (explain_delete.js's counts)."""
    db.c.insert_many([{"a": i % 3} for i in range(9)] + [{"a": 5}])
    delete = {"delete": "c", "deletes": [{"q": {"a": 1}, "limit": 0}]}
    execution = _explain(db, delete)
    assert _examined(execution) == (0, 10)
    assert execution["executionStages"]["nWouldDelete"] == 3
    assert _stage(execution, "COLLSCAN")["docsExamined"] == 10
    db.c.create_index("a")
    execution = _explain(db, delete)
    assert _examined(execution) == (3, 3)
    update = {"update": "c", "updates": [{"q": {"a": 1}, "u": {"$set": {"z": 1}}, "multi": True}]}
    execution = _explain(db, update)
    assert _examined(execution) == (3, 3)
    assert (execution["executionStages"]["nMatched"], execution["executionStages"]["nWouldModify"]) == (3, 3)
    assert db.c.count_documents({"z": 1}) == 0 and db.c.count_documents({}) == 10

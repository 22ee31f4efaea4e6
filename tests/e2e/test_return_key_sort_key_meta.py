"""find ``returnKey`` keeps the projection's ``{$meta: "sortKey"}`` fields beside the index key.

mongod's ReturnKeyStage returns each document's index key and sets every projection field that is
``{$meta: "sortKey"}`` (its sortKeyMetaFields, dotted paths nested) to the document's sort key; any
other projection field is ignored. The property, over random data, hints, sorts and field paths: the
documents of ``returnKey`` with such a projection are those of ``returnKey`` alone, in the same order,
each with the sort key the same find shows without ``returnKey``."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.commands("find")

SCALARS = st.one_of(st.integers(-3, 3), st.sampled_from(["x", "y", None]))
# (only a holds arrays: the compound index refuses parallel arrays)
DOCS = st.lists(st.fixed_dictionaries({"a": SCALARS | st.lists(st.integers(0, 2), max_size=2), "b": SCALARS}),
                min_size=1, max_size=8)
HINTS = st.sampled_from([{"a": 1}, {"a": -1, "b": 1}, {"b": 1}])
SORTS = st.lists(st.tuples(st.sampled_from(["a", "b"]), st.sampled_from([1, -1])), min_size=1, max_size=2,
                 unique_by=lambda t: t[0])
FIELDS = st.lists(st.sampled_from(["k", "s.t", "u", "a"]), min_size=1, max_size=2, unique=True)


def _find(db, **kw) -> list[dict]:
    return db.command("find", "c", **kw)["cursor"]["firstBatch"]


def _nest(doc: dict, path: str, value) -> dict:
    head, _, rest = path.partition(".")
    return {**doc, head: _nest(doc.get(head) if isinstance(doc.get(head), dict) else {}, rest, value)} \
        if rest else {**doc, head: value}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(docs=DOCS, hint=HINTS, sort=SORTS, fields=FIELDS, other=st.booleans())
def test_return_key_sets_sort_key_meta_fields(db, docs, hint, sort, fields, other):
    db.drop_collection("c")
    db.c.insert_many([{"_id": i, **d} for i, d in enumerate(docs)])
    db.c.create_index(list(hint.items()))
    order = dict(sort) | {"_id": 1}  # (the _id tie-break fixes the order)
    projection = {f: {"$meta": "sortKey"} for f in fields} | ({"b": 1} if other and "a" not in fields else {})
    keys = _find(db, sort=order, hint=hint, returnKey=True, batchSize=100)
    shown = _find(db, sort=order, hint=hint, projection={"_id": 1, "sk": {"$meta": "sortKey"}}, batchSize=100)
    got = _find(db, sort=order, hint=hint, projection=projection, returnKey=True, batchSize=100)
    expected = []
    for key, doc in zip(keys, shown, strict=True):
        for f in fields:
            key = _nest(key, f, doc["sk"])
        expected.append(key)
    assert got == expected

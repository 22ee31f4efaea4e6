"""Random documents and random operator updates (every supported operator but ``$currentDate``,
whose value is the clock) through the three ways a document gets updated, against a real server:

- the ``update`` command and ``findAndModify`` (``new: true``) leave the same bytes (field order and
  numeric types included), return that document, and answer the same error (code and message);
- an upsert whose query holds the document's fields as equalities, in any order (its seed is the
  document, fields in the byte order of their names: pathsupport::addEqualitiesToDoc) inserts what
  updating the stored document makes (``$setOnInsert`` applying as ``$set``), or fails with the
  same error, through ``update`` and ``findAndModify`` alike;
- an update answered with an error changes nothing;
- ``nModified`` is 0 exactly when the stored bytes did not change (so a no-op leaves the document
  byte-identical), except that mongod counts a ``$push`` with ``$sort`` as a modification even when
  the order was already right (push_node.cpp: a ``$sort`` always rewrites the array).

The generated updates meet conflicts (40), type errors (14), non-viable paths (28), ``_id``
immutability (66) and array-filter mistakes as often as successes. A last property checks where a
``$rename`` runs: at its target's place in mongod's path order (the RenameNode sits at the target,
update_object_node.cpp parseAndMerge), so the fields it and ``$set`` create come in that order.
"""

from __future__ import annotations

import pytest
from bson import Decimal128, Int64
from bson.codec_options import CodecOptions
from bson.raw_bson import RawBSONDocument
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("update", "findAndModify", "insert", "find", "drop")

RAW = CodecOptions(document_class=RawBSONDocument)
NAMES = ["a", "b", "c", "0", "1", "10"]

scalars = st.one_of(
    st.integers(-3, 3),
    st.integers(-3, 3).map(Int64),
    st.sampled_from([0.0, -0.0, 1.5, 2.0, float("inf")]),
    st.sampled_from([Decimal128("1.0"), Decimal128("0")]),
    st.sampled_from(["x", "y", ""]),
    st.none(),
    st.booleans(),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3),
    ),
    max_leaves=6,
)
documents = st.dictionaries(st.sampled_from(NAMES), values, max_size=4)

PLAIN_PATHS = ["a", "b", "c", "10", "a.b", "a.c", "a.0", "a.1", "b.a", "b.0.a", "_id", "_id.a"]
ARRAY_PATHS = ["a.$[]", "b.$[]", "a.$[]", "a.$[e]", "b.$[e].a"]
numbers = st.one_of(st.integers(-3, 3), st.integers(-3, 3).map(Int64), st.sampled_from([0.0, 1.0, 2.5]),
                    st.just(Decimal128("1")))


def _arg(op: str):
    if op in ("$set", "$setOnInsert", "$min", "$max"):
        return values
    if op == "$unset":
        return st.just("")
    if op in ("$inc", "$mul"):
        return numbers
    if op == "$push":
        modifiers = st.fixed_dictionaries(
            {"$each": st.lists(scalars, max_size=3)},
            optional={"$slice": st.integers(-3, 3), "$sort": st.sampled_from([1, -1]),
                      "$position": st.integers(-3, 3)})
        return st.one_of(values, modifiers)
    if op == "$addToSet":
        return st.one_of(values, st.fixed_dictionaries({"$each": st.lists(scalars, max_size=3)}))
    if op == "$pop":
        return st.sampled_from([1, -1])
    if op == "$pull":
        return st.one_of(scalars, st.just({"$gte": 1}), st.just({"a": 1}), st.just({}))
    if op == "$pullAll":
        return st.lists(scalars, max_size=3)
    if op == "$bit":
        return st.dictionaries(st.sampled_from(["and", "or", "xor"]), st.integers(0, 7), min_size=1, max_size=2)
    return st.sampled_from(PLAIN_PATHS)  # $rename: a target


OPERATORS = ["$set", "$setOnInsert", "$unset", "$inc", "$mul", "$min", "$max", "$push", "$addToSet", "$pop",
             "$pull", "$pullAll", "$bit", "$rename"]


@st.composite
def updates(draw):
    """``(update, arrayFilters or None)``: one to three operators, one or two paths each."""
    update: dict = {}
    for op in draw(st.lists(st.sampled_from(OPERATORS), min_size=1, max_size=3, unique=True)):
        pool = PLAIN_PATHS if op == "$rename" else PLAIN_PATHS + ARRAY_PATHS
        paths = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=2, unique=True))
        update[op] = {path: draw(_arg(op)) for path in paths}
    uses_filter = any("$[e]" in path for fields in update.values() for path in fields)
    return update, ([{"e": draw(st.sampled_from([{"$gte": 0}, {"$type": "object"}, 1]))}] if uses_filter else None)


def _update(coll, q, u, filters, **options) -> tuple:
    statement = {"q": q, "u": u, **options}
    if filters is not None:
        statement["arrayFilters"] = filters
    reply = coll.database.command("update", coll.name, updates=[statement])
    errors = reply.get("writeErrors")
    return reply, ((errors[0]["code"], errors[0]["errmsg"]) if errors else None)


def _find_and_modify(coll, q, u, filters, **options) -> tuple:
    fields = {"query": q, "update": u, "new": True, **options}
    if filters is not None:
        fields["arrayFilters"] = filters
    try:
        reply = coll.database.command("findAndModify", coll.name, codec_options=RAW, **fields)
    except OperationFailure as e:
        return None, (e.code, e.details.get("errmsg"))
    return reply["value"], None


def _stored(coll) -> list[bytes]:
    return [d.raw for d in coll.with_options(codec_options=RAW).find()]


def _fresh(db, name: str, doc: dict | None):
    coll = db[name]
    coll.drop()
    if doc is not None:
        coll.insert_one(doc)
    return coll


def _as_insert(update: dict) -> dict:
    """The update an upsert's insert applies: ``$setOnInsert`` is ``$set`` then (in its place: a
    conflict's message names the path met first)."""
    return {"$set" if op == "$setOnInsert" else op: fields for op, fields in update.items()}


SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.mark.slow
@SETTINGS
@given(doc=documents, spec=updates())
def test_update_and_find_and_modify_agree_and_report_changes_exactly(db, doc, spec):
    """``update`` and ``findAndModify`` store the same bytes or fail alike; an error leaves the
    document as it was; ``nModified`` is 0 iff the bytes are unchanged ($push $sort aside)."""
    u, filters = spec
    doc = {"_id": 1, **doc}
    by_update = _fresh(db, "by_update", doc)
    before = _stored(by_update)
    reply, error = _update(by_update, {"_id": 1}, u, filters)
    after = _stored(by_update)
    by_fam = _fresh(db, "by_fam", doc)
    returned, fam_error = _find_and_modify(by_fam, {"_id": 1}, u, filters)
    assert fam_error == error
    assert _stored(by_fam) == after
    if error is not None:
        assert after == before, error
        return
    assert returned.raw == after[0]
    sorts = any(isinstance(arg, dict) and "$sort" in arg for arg in u.get("$push", {}).values())
    if reply["nModified"] == 0:
        assert after == before
    elif not sorts:
        assert after != before


@pytest.mark.slow
@SETTINGS
@given(doc=documents, spec=updates())
def test_an_upsert_inserts_what_updating_its_seed_makes(db, doc, spec):
    """An upsert seeded with the whole document (its fields as the query's equalities) inserts the
    bytes that updating the stored document with the insert's update leaves, or fails alike; through
    ``update`` and ``findAndModify`` the same."""
    u, filters = spec
    if any(path.split(".")[0] == "_id" for fields in u.values() if isinstance(fields, dict) for path in fields):
        return  # (an _id change is refused either way, but the upsert's message may name a seeded path)
    assume("$set" not in u or "$setOnInsert" not in u)
    # the seed holds the query's equalities in the byte order of their paths (mongod's EqualityMatches
    # map), whatever order the query lists them in: here the reverse
    doc = {"_id": 1, **dict(sorted(doc.items()))}
    existing = _fresh(db, "existing", doc)
    _, error = _update(existing, {"_id": 1}, _as_insert(u), filters)
    expected = _stored(existing)
    query = dict(reversed(list(doc.items())))
    upserted = _fresh(db, "upserted", None)
    reply, upsert_error = _update(upserted, query, u, filters, upsert=True)
    assert upsert_error == error
    by_fam = _fresh(db, "upserted_fam", None)
    returned, fam_error = _find_and_modify(by_fam, query, u, filters, upsert=True)
    assert fam_error == error
    if error is not None:
        assert _stored(upserted) == [] and _stored(by_fam) == []
        return
    assert reply["upserted"] == [{"index": 0, "_id": 1}]
    assert _stored(upserted) == expected == _stored(by_fam)
    assert returned.raw == expected[0]


@pytest.mark.slow
@SETTINGS
@given(target=st.sampled_from(["b", "d", "f", "10", "9"]), others=st.lists(st.sampled_from(["c", "e", "g", "2"]),
                                                                          min_size=1, max_size=3, unique=True))
def test_rename_creates_its_target_in_path_order(db, target, others):
    """The fields a ``$rename`` and a ``$set`` create appear in mongod's path order (names starting
    with a digit by length, then byte order), the rename's target in its own place, not its source's."""
    coll = _fresh(db, "c", {"_id": 1, "z": 0})
    _, error = _update(coll, {"_id": 1}, {"$rename": {"z": target}, "$set": dict.fromkeys(others, 1)}, None)
    assert error is None
    created = [k for k in coll.find_one() if k != "_id"]

    def key(name: str) -> tuple:
        return (0, len(name), name) if name[0].isdigit() else (1, 0, name)

    assert created == sorted([target, *others], key=key)

"""Writes on a time-series collection against a regular collection holding the same documents, as
families, whether the buckets are in memory or stored:

- 7.0's arbitrary deletes: any filter the query grammar makes (harness.pipeline_grammar) deletes the
  measurements it deletes from the regular collection — the same ``n``, the same documents left (or the
  same error code) —, with or without a metaField; ``deleteOne`` removes one measurement the filter
  matches, or none when it matches none;
- the command's ``let`` variables reach a time-series delete's filter (``$expr`` over ``$$name``): a
  delete or a findAndModify ``remove`` with a generated comparison of a field with a variable (alone or
  beside a generated filter) removes what it removes from the regular collection; the time-series path
  answered 17276 "Use of undefined variable" (found by porting jstests/core/timeseries/timeseries_delete.js);
- meta updates (multi, operators on the metaField only): any meta filter and update leave the
  documents the regular collection is left with, and match as many."""

import random

import pytest
from harness.pipeline_grammar import MEASUREMENT_FIELDS, Grammar, State, documents
from harness.ts_differential import normal
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("delete", "update", "find", "findAndModify")

DOCUMENTS = documents(random.Random(20261205), 60)
SETTLE = {"_id": -1}  # matches nothing; a direct write settles every bucket to storage


@pytest.fixture(scope="module")
def database(client):
    database = client["ts_delete_differential"]
    client.drop_database(database.name)
    database.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    database.create_collection("tsnm", timeseries={"timeField": "t"})
    database.create_collection("reg")
    database["all"].insert_many([dict(d, _id=i) for i, d in enumerate(DOCUMENTS)])  # never deleted from
    yield database
    client.drop_database(database.name)


def refill(database, stored: bool) -> None:
    for name in ("reg", "ts", "tsnm"):
        database[name].delete_many({})
        database[name].insert_many([dict(d, _id=i) for i, d in enumerate(DOCUMENTS)])
        if stored and name != "reg":
            database[name].delete_many(SETTLE)


def delete(collection, flt, many: bool):
    try:
        result = collection.delete_many(flt) if many else collection.delete_one(flt)
        return "ok", result.deleted_count
    except OperationFailure as exc:
        return "error", exc.code


def left(collection) -> list:
    return sorted((normal(d) for d in collection.find({}, sort=[("_id", 1)])), key=repr)


def matches(database, flt, _id) -> bool:
    """Document ``_id`` matches ``flt`` (asked of that document alone: the filter may fail on others,
    which a delete that stops at its first match never reads)."""
    return database["all"].find_one({"$and": [{"_id": _id}, flt]}) is not None


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture],
          database=None)
@given(seed=st.integers(0, 2**32 - 1), stored=st.booleans(), many=st.booleans())
def test_a_delete_removes_what_it_removes_from_a_regular_collection(database, seed, stored, many):
    flt = Grammar(random.Random(seed)).filter(State(dict(MEASUREMENT_FIELDS)))
    refill(database, stored)
    regular = database["reg"]
    expected = delete(regular, flt, many)
    for name in ("ts", "tsnm"):
        got = delete(database[name], flt, many)
        assert got == expected, f"{name}: filter {flt!r}, stored={stored}, many={many}: {got} vs regular {expected}"
        if expected[0] != "ok":
            continue
        if many:
            assert left(database[name]) == left(regular), f"{name}: filter {flt!r}, stored={stored}"
        else:  # one measurement the filter matches, not necessarily the regular collection's
            ids = {d["_id"] for d in database[name].find({}, {"_id": 1})}
            gone = set(range(len(DOCUMENTS))) - ids
            assert len(gone) == expected[1], f"{name}: filter {flt!r}, stored={stored}"
            assert all(matches(database, flt, _id) for _id in gone), f"{name}: filter {flt!r} deleted {gone}"


LET_FIELDS = ("m", "m.h", "v", "w", "s", "d", "b", "o.x", "a", "t")
COMPARISONS = ("$eq", "$ne", "$lt", "$lte", "$gt", "$gte")


def let_filter(rng: random.Random) -> tuple[dict, dict]:
    """(filter, let): a field compared with a variable holding a value some document has (or one no
    document has), alone or beside a filter of the grammar."""
    field = rng.choice(LET_FIELDS)
    holders = [d for d in DOCUMENTS if _get(d, field) is not _MISSING]
    value = _get(rng.choice(holders), field) if holders and rng.random() < 0.8 else rng.choice([0, "h1", None, 2.5])
    flt: dict = {"$expr": {rng.choice(COMPARISONS): [f"${field}", "$$v"]}}
    if rng.random() < 0.3:
        flt = {"$and": [flt, Grammar(rng).filter(State(dict(MEASUREMENT_FIELDS)))]}
    return flt, {"v": value, "unused": {"$add": [1, 2]}}


_MISSING = object()


def _get(doc, path: str):
    for part in path.split("."):
        if not isinstance(doc, dict) or part not in doc:
            return _MISSING
        doc = doc[part]
    return doc


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture],
          database=None)
@given(seed=st.integers(0, 2**32 - 1), stored=st.booleans(), many=st.booleans())
def test_a_delete_reads_the_commands_let_variables(database, seed, stored, many):
    flt, let = let_filter(random.Random(seed))
    refill(database, stored)

    def run(collection):
        try:
            if many:
                return "ok", collection.delete_many(flt, let=let).deleted_count
            removed = collection.find_one_and_delete(flt, let=let)
            return "ok", removed is not None
        except OperationFailure as exc:
            return "error", exc.code

    expected = run(database["reg"])
    for name in ("ts", "tsnm"):
        got = run(database[name])
        assert got == expected, f"{name}: filter {flt!r} let {let!r}, stored={stored}: {got} vs regular {expected}"
        if expected[0] == "ok" and many:
            assert left(database[name]) == left(database["reg"]), f"{name}: filter {flt!r} let {let!r}"


META_FIELDS = {"m": "any", "m.h": "str"}
REFUSED = ("$expr", "$jsonSchema", "$where", "$comment")  # (generated clauses naming other fields)


def meta_filter(rng: random.Random) -> dict | None:
    """A filter of the grammar on the meta alone (None: it named another field)."""
    flt = Grammar(rng).filter(State(dict(META_FIELDS)))
    return flt if _on_meta(flt) else None


def _on_meta(node) -> bool:
    if isinstance(node, list):
        return all(_on_meta(x) for x in node)
    if not isinstance(node, dict):
        return True
    for key, value in node.items():
        if key in REFUSED:
            return False
        if key in ("$and", "$or", "$nor"):
            if not _on_meta(value):
                return False
        elif not key.startswith("$") and key != "m" and not key.startswith("m."):
            return False
    return True


def meta_update(rng: random.Random) -> dict:
    """Operators on paths inside the meta ``m``."""
    host = rng.choice(["h0", "h1", "h9", "", 7])
    return rng.choice([
        {"$set": {"m.h": host}},
        {"$set": {"m": {"h": host, "r": rng.choice(["eu", "us"])}}},
        {"$set": {"m.r": "ap", "m.n": rng.randrange(3)}},
        {"$unset": {"m.r": ""}},
        {"$unset": {"m.h": "", "m.z": ""}},
        {"$rename": {"m.r": "m.q"}},
        {"$rename": {"m.h": "m.a.b"}},
        {"$inc": {"m.k": rng.choice([1, 2.5])}},
        {"$max": {"m.h": "h1"}},
        {"$min": {"m.h": "h1"}},
        {"$push": {"m.l": rng.randrange(3)}},
        {"$addToSet": {"m.z.l": 1}},
        {"$set": {"m.h": "h2"}, "$unset": {"m.r": ""}},
        {"$mul": {"m.k": 2}},
        {"$set": {"m.z.k": 5}},
    ])


def update(collection, flt, upd):
    try:
        return "ok", collection.update_many(flt, upd).matched_count
    except OperationFailure as exc:
        return "error", exc.code


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture],
          database=None)
@given(seed=st.integers(0, 2**32 - 1), stored=st.booleans())
def test_a_meta_update_leaves_what_it_leaves_in_a_regular_collection(database, seed, stored):
    rng = random.Random(seed)
    flt = meta_filter(rng)
    assume(flt is not None)
    upd = meta_update(rng)
    refill(database, stored)
    expected = update(database["reg"], flt, upd)
    got = update(database["ts"], flt, upd)
    if expected[0] == "error" or got[0] == "error":
        # a multi update stops at the first failing document, which depends on the read order: only
        # whether it fails, and how, is compared
        assert got[0] == expected[0] == "error" and got[1] == expected[1], f"filter {flt!r}, update {upd!r}: {got} vs {expected}"
        return
    assert got == expected, f"filter {flt!r}, update {upd!r}, stored={stored}: {got} vs regular {expected}"
    assert left(database["ts"]) == left(database["reg"]), f"filter {flt!r}, update {upd!r}, stored={stored}"

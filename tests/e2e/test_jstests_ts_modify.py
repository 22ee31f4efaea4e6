"""MongoDB's own time-series update/delete jstests, ported to pymongo against a real Tidemark server.

Sources (``mongodb/mongo``; the 7.0-era file at the root of ``jstests/core/timeseries/`` where one is
stored, else ``jstests/core/timeseries/write/<name>``): timeseries_delete_multi.js,
timeseries_delete_one.js, timeseries_delete_with_meta.js, timeseries_delete_collation.js,
timeseries_update.js (its 7.0 content, split since into write/timeseries_update.js and
write/timeseries_update_arbitrary_updates_not_enabled.js), timeseries_update_one.js,
timeseries_update_multi.js, timeseries_update_normalize_metadata.js, timeseries_update_collation.js,
timeseries_find_and_modify_remove.js and timeseries_find_and_modify_update.js.

What 7.0 answers (spec §6 and "Decisions for this project"): deletes take any filter (7.0's arbitrary
deletes, ``deleteOne`` removes one measurement); updates follow the 5.1+ rules (multi only, operator
updates of metaField paths only, a metaField-only query, no upsert), each violation a write error
InvalidOptions (72) with mongod's message. The jstests written for arbitrary updates
(``featureFlagTimeseriesUpdatesSupport`` / ``requires_fcv_71``) are therefore ported to 7.0's answer:
their meta-only statements succeed with the counts the jstest expects, every other statement is
refused with 72 and leaves the collection as it was. Explain shapes (TS_MODIFY, parsedQuery) are not
ported.
"""

from __future__ import annotations

import datetime as dt

import pytest
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("delete", "update", "findAndModify")

TIME, META = "time", "tag"
DT = dt.datetime(2021, 7, 12, 16, 0, 0)

NON_MULTI = "Cannot perform a non-multi update on a time-series collection"
UPSERT = "Cannot perform an upsert on a time-series collection"
NO_META = "Cannot perform an update on a time-series collection that does not have a metaField"
QUERY = ("Cannot perform an update or delete on a time-series collection when querying on a field that "
         "is not the metaField 'tag'")
FIELD = ("Cannot perform an update on a time-series collection which updates a field that is not the "
         "metaField 'tag'")
PIPELINE = "Cannot perform an update on a time-series collection using a pipeline update"
REPLACEMENT = "Cannot perform an update on a time-series collection using a replacement document"

CASE_SENSITIVE = {"locale": "en", "strength": 3}
CASE_INSENSITIVE = {"locale": "en", "strength": 2}
SIMPLE = {"locale": "simple"}


def _create(db, name="t", meta=True, **options):
    ts = {"timeField": TIME}
    if meta:
        ts["metaField"] = META
    ts.update(options.pop("timeseries", {}))
    db.create_collection(name, timeseries=ts, **options)
    return db[name]


def _prepare(db, docs, name="t", meta=True, **options):
    coll = _create(db, name, meta, **options)
    if docs:
        coll.insert_many([dict(d) for d in docs])
    return coll


def _same_members(actual, expected):
    """Equal as multisets of documents (field order ignored, as assert.sameMembers does)."""
    rest = list(actual)
    for doc in expected:
        assert doc in rest, f"{doc} missing from {actual}"
        rest.remove(doc)
    assert not rest, f"unexpected {rest} (expected {expected})"


def _update(db, name, updates, **extra):
    """Run one update command; returns the reply (write errors do not raise)."""
    return db.command({"update": name, "updates": updates, **extra})


def _errors(reply):
    return [(e["code"], e["errmsg"]) for e in reply.get("writeErrors", [])]


# ============================================================================= timeseries_delete_multi.js

D1 = {"_id": 1, TIME: DT, META: "A"}
D2 = {"_id": 2, TIME: DT, META: "A", "f": 101}
D3 = {"_id": 3, TIME: DT, META: "A", "f": 102}
D4 = {"_id": 4, TIME: DT, META: "B", "f": 103}
D5 = {"_id": 5, TIME: DT, META: "B", "f": 104}
D6 = {"_id": 6, TIME: DT, META: "C", "f": 105}
D7 = {"_id": 7, TIME: DT, META: "C", "f": 106}
ALL7 = [D1, D2, D3, D4, D5, D6, D7]

_HALF_HOUR = dt.timedelta(seconds=1800)
TIMES = [DT - _HALF_HOUR, DT, DT + _HALF_HOUR, DT + 2 * _HALF_HOUR]
D8 = {"_id": 8, TIME: TIMES[0], META: "C", "f": 101}
D9 = {"_id": 9, TIME: TIMES[1], META: "C", "f": 106}
D10 = {"_id": 10, TIME: TIMES[2], META: "C"}
D11 = {"_id": 11, TIME: TIMES[3], META: "C"}
D12_NO_META = {"_id": 12, TIME: TIMES[3]}
FIXED = {"bucketMaxSpanSeconds": 3600, "bucketRoundingSeconds": 3600}

DELETE_MULTI_CASES = {
    "zero_measurements": ([D1, D2, D3], {"_id": {"$gt": 3}}, [D1, D2, D3], 0, None),
    "partial_bucket_1": ([D1, D2, D3], {"_id": {"$lt": 2}}, [D2, D3], 1, None),
    "partial_bucket_2": ([D1, D2, D3], {"_id": {"$lt": 3}}, [D3], 2, None),
    "full_bucket": ([D1, D2, D3], {TIME: DT}, [], 3, None),
    "multi_bucket": (ALL7, {"f": {"$lt": 106}}, [D1, D7], 5, None),
    "meta_and_metric": (ALL7, {"f": {"$in": [101, 102, 104, 105]}, META: {"$in": ["A", "C"]}},
                        [D1, D4, D5, D7], 3, None),
    "fixed_buckets_aligned_lt": ([D8, D9, D10, D11], {TIME: {"$lt": TIMES[3]}}, [D11], 3, FIXED),
    "fixed_buckets_meta_and_gte": ([D8, D9, D12_NO_META], {TIME: {"$gte": TIMES[1]}, META: "C"},
                                   [D8, D12_NO_META], 1, FIXED),
    "fixed_buckets_lte": ([D9, D10, D11], {TIME: {"$lte": TIMES[1]}}, [D10, D11], 1, FIXED),
}


@pytest.mark.parametrize("case", list(DELETE_MULTI_CASES))
def test_delete_multi(db, case):
    """timeseries_delete_multi.js: a multi delete (``limit: 0``) with any filter — on ``_id``, the time
    field, a measurement, meta plus measurement, and fixed buckets (bucketMaxSpanSeconds ==
    bucketRoundingSeconds) with time predicates on or off the bucket boundaries — returns ``n`` = the
    measurements deleted and leaves exactly the other measurements, unchanged."""
    initial, flt, left, n, fixed = DELETE_MULTI_CASES[case]
    coll = _prepare(db, initial, timeseries=fixed or {})
    reply = db.command({"delete": "t", "deletes": [{"q": flt, "limit": 0}]})
    assert reply["n"] == n
    _same_members(list(coll.find()), left)


# ============================================================================== timeseries_delete_one.js

def _year(i):
    return dt.datetime(2000 + i, 1, 1)


O1 = {"_id": 1, TIME: _year(1), META: "A"}
O2 = {"_id": 2, TIME: _year(2), META: "A", "f": 101}
O3 = {"_id": 3, TIME: _year(3), META: "A", "f": 102}
O4 = {"_id": 4, TIME: _year(4), META: "B", "f": 103}
O5 = {"_id": 5, TIME: _year(5), META: "B", "f": 104}
O6 = {"_id": 6, TIME: _year(6), META: "C", "f": 105}
O7 = {"_id": 7, TIME: _year(7), META: "C", "f": 106}
OALL = [O1, O2, O3, O4, O5, O6, O7]


def _matches(doc, flt):
    """The handful of predicates the deleteOne / findAndModify cases use."""
    for field, cond in flt.items():
        value = doc.get(field)
        if isinstance(cond, dict):
            (op, arg), = cond.items()
            assert op == "$gt"
            if not isinstance(value, int) or not value > arg:
                return False
        elif value != cond:
            return False
    return True


DELETE_ONE_CASES = {
    "zero_measurements": ([O1, O4, O6], {"f": 17}, 0, [O1, O4, O6]),
    "partial_bucket": ([O1, O2, O3], {"f": 101}, 1, [O1, O3]),
    "full_bucket": ([O2], {"f": 101}, 1, []),
    "meta_matches_all_deletes_one": ([O1, O2, O3], {META: "A"}, 1, None),
    "meta_and_metric_deletes_one": ([O1, O2, O3], {META: "A", "f": {"$gt": 100}}, 1, None),
    "multi_bucket_match_deletes_one": (OALL, {"f": {"$gt": 101}}, 1, None),
    "empty_filter_deletes_one": (OALL, {}, 1, None),
}


@pytest.mark.parametrize("case", list(DELETE_ONE_CASES))
def test_delete_one(db, case):
    """timeseries_delete_one.js: ``deleteOne`` on a time-series collection deletes exactly one
    measurement the filter matches (or none when nothing matches), whether the matches sit in one
    bucket or several, and ``deletedCount`` says so; the other measurements stay as they were."""
    initial, flt, n, left = DELETE_ONE_CASES[case]
    coll = _prepare(db, initial)
    assert coll.delete_one(flt).deleted_count == n
    remaining = list(coll.find())
    assert len(remaining) == len(initial) - n
    if left is not None:
        _same_members(remaining, left)
    else:  # any one matching measurement may go: the one missing must match, the rest are intact
        gone = [d for d in initial if d not in remaining]
        assert len(gone) == 1 and _matches(gone[0], flt)
        _same_members(remaining, [d for d in initial if d != gone[0]])


# ======================================================================== timeseries_delete_with_meta.js

T0 = dt.datetime(2024, 3, 1, 12, 0, 0)
OBJ_A = {TIME: T0, "measurement": {"A": "cpu"}, META: {"a": "A"}}
OBJ_B = {TIME: T0, "measurement": {"A": "cpu"}, META: {"b": "B"}}
OBJ_C = {TIME: T0, "measurement": {"A": "cpu"}, META: {"d": "D"}}
NESTED_A = {TIME: T0, "measurement": {"A": "cpu"}, META: {"a": {"b": "B"}}}
NESTED_B = {TIME: T0, "measurement": {"A": "cpu"}, META: {"b": {"a": "A"}}}
NESTED_C = {TIME: T0, "measurement": {"A": "cpu"}, META: {"d": "D"}}
NESTED_META = {TIME: T0, META: {META: "A"}}

DELETE_WITH_META_CASES = {
    "meta_equality": ([{TIME: T0, META: "A"}], [{"q": {META: "A"}, "limit": 0}], [], 1),
    "meta_dotted": ([OBJ_A], [{"q": {"tag.a": "A"}, "limit": 0}], [], 1),
    "meta_dotted_two_measurements": ([OBJ_A, OBJ_A], [{"q": {"tag.a": "A"}, "limit": 0}], [], 2),
    "meta_dotted_and": ([{TIME: T0, META: {"a": "A", "b": "B"}}],
                        [{"q": {"$and": [{"tag.a": "A"}, {"tag.b": "B"}]}, "limit": 0}], [], 1),
    "two_statements": ([OBJ_A, OBJ_B, OBJ_C],
                       [{"q": {META: {"a": "A"}}, "limit": 0},
                        {"q": {"$or": [{META: {"d": "D"}}, {META: {"c": "C"}}]}, "limit": 0}],
                       [OBJ_B], 2),
    "nested_object": ([NESTED_A, NESTED_B, NESTED_C], [{"q": {META: {"a": {"b": "B"}}}, "limit": 0}],
                      [NESTED_B, NESTED_C], 1),
    "nested_dotted": ([NESTED_B, NESTED_C], [{"q": {"tag.b.a": "A"}, "limit": 0}], [NESTED_C], 1),
    "dollar_string_value": ([{TIME: T0, "measurement": {"A": "cpu"}, META: {"b": "$tag"}}],
                            [{"q": {META: {"b": "$tag"}}, "limit": 0}], [], 1),
    "json_schema_required_meta": ([NESTED_A, NESTED_B, NESTED_C],
                                  [{"q": {"$jsonSchema": {"required": [META]}}, "limit": 0}], [], 3),
    "json_schema_meta_subfield_named_like_meta": (
        [OBJ_A, NESTED_META],
        [{"q": {"$jsonSchema": {"required": [META], "properties": {META: {"required": [META]}}}},
          "limit": 0}],
        [OBJ_A], 1),
    "meta_inside_nested_logical_operators": (
        [OBJ_A, OBJ_B, OBJ_C],
        [{"q": {"$and": [{"$or": [{META: {"$ne": "B"}}, {META: {"a": {"$eq": "B"}}}]}, {META: {"a": "A"}}]},
          "limit": 0}],
        [OBJ_B, OBJ_C], 1),
}


@pytest.mark.parametrize("case", list(DELETE_WITH_META_CASES))
def test_delete_with_meta(db, case):
    """timeseries_delete_with_meta.js (the arbitrary-deletes branch 7.0 takes): deletes whose filter
    names only the metaField — equality on the whole meta object, dotted sub-paths, ``$and``/``$or``
    nesting, a ``"$tag"`` string value, ``$jsonSchema`` ``required``/``properties`` — and several
    statements in one command; ``n`` counts measurements and exactly the non-matching ones remain."""
    initial, deletes, left, n = DELETE_WITH_META_CASES[case]
    coll = _prepare(db, initial)
    reply = db.command({"delete": "t", "deletes": deletes, "ordered": True})
    assert "writeErrors" not in reply
    assert reply["n"] == n
    _same_members(list(coll.find({}, {"_id": 0})), left)


def test_delete_with_meta_query_collation(db):
    """timeseries_delete_with_meta.js: a meta delete with the statement collation
    ``de@collation=phonebook`` ("Günter" sorts before "Gunter") deletes only "Günter" for
    ``{tag: {$lt: "Gunter"}}``."""
    coll = _prepare(db, [{TIME: T0, META: "Günter"}, {TIME: T0, META: "Gunter"}])
    reply = db.command({"delete": "t", "deletes": [
        {"q": {META: {"$lt": "Gunter"}}, "limit": 0, "collation": {"locale": "de@collation=phonebook"}}]})
    assert reply["n"] == 1
    assert list(coll.find({}, {"_id": 0})) == [{TIME: T0, META: "Gunter"}]


def test_delete_with_meta_without_meta_field_empty_query(db):
    """timeseries_delete_with_meta.js: on a collection without a metaField, ``{q: {}, limit: 0}``
    removes every measurement (a field merely named "meta" is an ordinary measurement field)."""
    coll = _prepare(db, [{TIME: T0, "meta": "A"}], meta=False)
    assert db.command({"delete": "t", "deletes": [{"q": {}, "limit": 0}]})["n"] == 1
    assert list(coll.find()) == []


# ======================================================================== timeseries_delete_collation.js
# and timeseries_update_collation.js share the documents and the expected counts.

COLLATION_DOCS = [
    {"_id": 0, TIME: DT, META: "A", "str": "HELLO"},
    {"_id": 1, TIME: DT, META: "A", "str": "hello"},
    {"_id": 2, TIME: DT, META: "A", "str": "goodbye"},
    {"_id": 3, TIME: DT, META: "A"},
    {"_id": 4, TIME: DT, META: "B", "str": "HELLO"},
    {"_id": 5, TIME: DT, META: "B", "str": "hello"},
    {"_id": 6, TIME: DT, META: "B", "str": "goodbye"},
    {"_id": 7, TIME: DT, META: "B"},
    {"_id": 8, TIME: DT, "str": "HELLO"},
    {"_id": 9, TIME: DT, "str": "hello"},
    {"_id": 10, TIME: DT, "str": "goodbye"},
    {"_id": 11, TIME: DT},
]

# name: (filter, query collation, collection collation, measurements matched)
COLLATION_CASES = {
    "none_residual_Hello": ({"str": "Hello"}, None, None, 0),
    "none_residual_hello": ({"str": "hello"}, None, None, 3),
    "none_meta_a": ({META: "a"}, None, None, 0),
    "none_meta_A": ({META: "A"}, None, None, 4),
    "query_cs_residual": ({"str": "Hello"}, CASE_SENSITIVE, None, 0),
    "query_ci_residual": ({"str": "Hello"}, CASE_INSENSITIVE, None, 6),
    "query_cs_meta": ({META: "a"}, CASE_SENSITIVE, None, 0),
    "query_ci_meta": ({META: "a"}, CASE_INSENSITIVE, None, 4),
    "coll_cs_residual": ({"str": "Hello"}, None, CASE_SENSITIVE, 0),
    "coll_ci_residual": ({"str": "Hello"}, None, CASE_INSENSITIVE, 6),
    "coll_cs_meta": ({META: "a"}, None, CASE_SENSITIVE, 0),
    "coll_ci_meta": ({META: "a"}, None, CASE_INSENSITIVE, 4),
    "override_ci_ci_residual": ({"str": "Hello"}, CASE_INSENSITIVE, CASE_INSENSITIVE, 6),
    "override_ci_cs_residual": ({"str": "Hello"}, CASE_INSENSITIVE, CASE_SENSITIVE, 6),
    "override_ci_cs_meta_and_residual": ({META: "A", "str": "Hello"}, CASE_INSENSITIVE, CASE_SENSITIVE, 2),
    "override_ci_ci_meta": ({META: "a"}, CASE_INSENSITIVE, CASE_INSENSITIVE, 4),
    "override_ci_cs_meta": ({META: "a"}, CASE_INSENSITIVE, CASE_SENSITIVE, 4),
    "simple_over_ci_residual_Hello": ({"str": "Hello"}, SIMPLE, CASE_INSENSITIVE, 0),
    "simple_over_ci_residual_hello": ({"str": "hello"}, SIMPLE, CASE_INSENSITIVE, 3),
    "simple_over_ci_meta_a_and_residual": ({META: "a", "str": "hello"}, SIMPLE, CASE_INSENSITIVE, 0),
    "simple_over_ci_meta_A_and_residual": ({META: "A", "str": "HELLO"}, SIMPLE, CASE_INSENSITIVE, 1),
    "simple_over_ci_meta_a": ({META: "a"}, SIMPLE, CASE_INSENSITIVE, 0),
    "simple_over_ci_meta_A": ({META: "A"}, SIMPLE, CASE_INSENSITIVE, 4),
}


def _collation_collection(db, coll_collation):
    options = {"collation": coll_collation} if coll_collation else {}
    return _prepare(db, COLLATION_DOCS, **options)


@pytest.mark.parametrize("case", list(COLLATION_CASES))
def test_delete_collation(db, case):
    """timeseries_delete_collation.js: a multi delete honours the statement's collation, else the
    collection's default, on measurement fields and on the metaField alike ("simple" overrides a
    case-insensitive default); ``n`` is the number of measurements the jstest expects deleted."""
    flt, query_collation, coll_collation, n = COLLATION_CASES[case]
    coll = _collation_collection(db, coll_collation)
    statement = {"q": flt, "limit": 0}
    if query_collation:
        statement["collation"] = query_collation
    assert db.command({"delete": "t", "deletes": [statement]})["n"] == n
    assert coll.count_documents({}) == len(COLLATION_DOCS) - n


@pytest.mark.parametrize("case", list(COLLATION_CASES))
def test_update_collation(db, case):
    """timeseries_update_collation.js, as 7.0 answers it: the jstest's ``{$inc: {newField: 1}}`` is a
    measurement update, refused with 72 (a filter naming ``str`` is refused first, for querying a
    non-meta field) and nothing changes. Where the filter names only the metaField, the same filter
    with a metaField update matches the number of measurements the jstest expects under the statement
    / collection collation."""
    flt, query_collation, coll_collation, n = COLLATION_CASES[case]
    coll = _collation_collection(db, coll_collation)
    statement = {"q": flt, "u": {"$inc": {"newField": 1}}, "multi": True}
    if query_collation:
        statement["collation"] = query_collation
    reply = _update(db, "t", [statement])
    assert _errors(reply) == [(72, QUERY if "str" in flt else FIELD)]
    assert (reply["n"], reply["nModified"]) == (0, 0)
    assert coll.count_documents({"newField": {"$exists": True}}) == 0
    if "str" not in flt:
        reply = _update(db, "t", [dict(statement, u={"$set": {"tag": "Z"}})])
        assert "writeErrors" not in reply
        assert (reply["n"], reply["nModified"]) == (n, n)
        assert coll.count_documents({META: "Z"}) == n


# =============================================================================== timeseries_update.js

U1 = {"_id": 1, TIME: DT, META: {"a": "A", "b": "B"}}
U2 = {"_id": 2, TIME: DT, META: {"c": "C", "d": 2}, "f": [{"k": "K", "v": "V"}]}
U3 = {"_id": 3, TIME: DT, "f": "F"}
U4 = {"_id": 4, TIME: DT, META: {"a": "A", "b": "B"}, "f": "F"}
U5 = {"_id": 5, TIME: DT, META: {"a": "A", "b": "B", "c": "C"}}
ARR1 = {"_id": 1, TIME: DT, META: [1, 4, 7, 11, 13]}
ARR2 = {"_id": 2, TIME: DT, META: [2, 5, 9, 12]}
ARR3 = {"_id": 3, TIME: DT, META: [3, 6, 10]}
NESTED_META_6 = {"_id": 6, TIME: DT, META: {META: "A"}}


def _with(doc, **fields):
    return {**doc, **fields}


def _without_meta(doc):
    return {k: v for k, v in doc.items() if k != META}


def _multi(q, u, **extra):
    return {"q": q, "u": u, "multi": True, **extra}


# name: (initial, updates, expected documents, n, nModified, expected write errors, options)
UPDATE_CASES = {
    # --- refused by the 5.1+ rules (write errors, earlier statements of an ordered batch applied)
    "non_multi": ([U1], [{"q": {META: {"b": "B"}}, "u": {"$set": {META: {"b": "C"}}}}], [U1], 0, 0,
                  [NON_MULTI], {}),
    "query_not_meta": ([U1], [_multi({"measurement": "cpu"}, {"$set": {META: {"c": "C"}}})], [U1], 0, 0,
                       [QUERY], {}),
    "update_not_meta": ([U2], [_multi({META: {"c": "C", "d": 2}}, {"$set": {"f2": "f2"}})], [U2], 0, 0,
                        [FIELD], {}),
    "query_meta_and_not_meta": ([U1], [_multi({META: {"a": "A", "b": "B"}, "measurement": "cpu"},
                                              {"$set": {META: {"c": "C"}}})], [U1], 0, 0, [QUERY], {}),
    "update_meta_and_not_meta": ([U2], [_multi({META: {"c": "C", "d": 2}},
                                               {"$set": {META: {"e": "E"}, "f3": "f3"}, "$inc": {"f2": 3},
                                                "$unset": {"f1": ""}})], [U2], 0, 0, [FIELD], {}),
    "query_not_meta_dotted": ([U1], [_multi({"measurement.A": "cpu"}, {"$set": {META: {"c": "C"}}})], [U1],
                              0, 0, [QUERY], {}),
    "rename_meta_field": ([U1, U2, U4], [_multi({"tag.a": "A"}, {"$rename": {META: "Z"}})], [U1, U2, U4],
                          0, 0, [FIELD], {}),
    "rename_meta_subfield_out_of_meta": ([U1, U2, U4],
                                         [_multi({"tag.a": "A"}, {"$rename": {"tag.a": "notMetaField.a"}})],
                                         [U1, U2, U4], 0, 0, [FIELD], {}),
    "ordered_second_queries_not_meta": (
        [U1], [_multi({META: {"a": "A", "b": "B"}}, {"$set": {META: {"c": "C", "d": 1}}}),
               _multi({"measurement": "cpu", "tag.d": 1}, {"$set": {"tag.c": "CC"}})],
        [_with(U1, tag={"c": "C", "d": 1})], 1, 1, [QUERY], {}),
    "ordered_second_updates_not_meta": (
        [U2], [_multi({META: {"c": "C", "d": 2}}, {"$inc": {"tag.d": 6}}),
               _multi({META: {"c": "C", "d": 8}}, {"$set": {"f1.0": "f2"}})],
        [_with(U2, tag={"c": "C", "d": 8})], 1, 1, [FIELD], {}),
    "ordered_first_fails": (
        [U2], [_multi({META: {"c": "C", "d": 2}}, {"$set": {"f1.0": "f2"}}),
               _multi({META: {"c": "C", "d": 2}}, {"$inc": {"tag.d": 6}})],
        [U2], 0, 0, [FIELD], {}),
    "unordered_first_fails": (
        [U2], [_multi({META: {"c": "C", "d": 2}}, {"$set": {"f1.0": "f2"}}),
               _multi({META: {"c": "C", "d": 2}}, {"$inc": {"tag.d": 6}})],
        [_with(U2, tag={"c": "C", "d": 8})], 1, 1, [FIELD], {"ordered": False}),
    "ordered_three_stops_at_second": (
        [U2], [_multi({META: {"c": "C", "d": 2}}, {"$inc": {"tag.d": 6}}),
               _multi({META: {"c": "C", "d": 8}}, {"$set": {"f1.0": "f2"}}),
               _multi({META: {"c": "C", "d": 8}}, {"$inc": {"tag.d": 7}})],
        [_with(U2, tag={"c": "C", "d": 8})], 1, 1, [FIELD], {}),
    "unordered_three_applies_first_and_last": (
        [U2], [_multi({META: {"c": "C", "d": 2}}, {"$inc": {"tag.d": 6}}),
               _multi({META: {"c": "C", "d": 8}}, {"$set": {"f1.0": "f2"}}),
               _multi({META: {"c": "C", "d": 8}}, {"$inc": {"tag.d": 7}})],
        [_with(U2, tag={"c": "C", "d": 15})], 2, 2, [FIELD], {"ordered": False}),
    "json_schema_required_dotted_meta": ([U1, U2, U3],
                                         [_multi({"$jsonSchema": {"required": ["tag.a"]}},
                                                 {"$set": {META: "a"}})],
                                         [U1, U2, U3], 0, 0, [QUERY], {}),
    "json_schema_required_not_meta": ([U1, U2, U3],
                                      [_multi({"$jsonSchema": {"required": [META, TIME]}},
                                              {"$set": {META: "a"}})],
                                      [U1, U2, U3], 0, 0, [QUERY], {}),
    "json_schema_property_not_meta": ([U1, NESTED_META_6],
                                      [_multi({"$jsonSchema": {"required": [META], "properties": {
                                          "measurement": {"description": "can be any value"}}}},
                                          {"$set": {META: "a"}})],
                                      [U1, NESTED_META_6], 0, 0, [QUERY], {}),
    "upsert": ([U1, U4, U5], [_multi({META: "Z"}, {"$set": {META: 5}}, upsert=True)], [U1, U4, U5], 0, 0,
               [UPSERT], {}),
    "pipeline": ([U1], [_multi({}, [{"$addFields": {"tag.c": "C", "tag.e": "E"}}, {"$unset": "tag.e"}])],
                 [U1], 0, 0, [PIPELINE], {}),
    "replacement": ([U2], [_multi({META: {"c": "C", "d": 2}}, {"f2": {"e": "E", "f": "F"}, "f3": 7})], [U2],
                    0, 0, [REPLACEMENT], {}),
    "replacement_empty": ([U2], [_multi({META: {"c": "C", "d": 2}}, {})], [U2], 0, 0, [REPLACEMENT], {}),
    "no_meta_field_query": ([U3], [_multi({"f": "F"}, {"$set": {"f": "FF"}})], [U3], 0, 0, [NO_META],
                            {"meta": False}),
    "no_meta_field_empty_query": ([U3], [_multi({}, {"$set": {"f": "FF"}})], [U3], 0, 0, [NO_META],
                                  {"meta": False}),
    # --- metaField-only updates: applied
    "set_meta": ([U1], [_multi({META: {"a": "A", "b": "B"}}, {"$set": {META: {"c": "C"}}})],
                 [_with(U1, tag={"c": "C"})], 1, 1, [], {}),
    "set_meta_with_measurements": ([U2], [_multi({META: {"c": "C", "d": 2}}, {"$set": {META: {"e": "E"}}})],
                                   [_with(U2, tag={"e": "E"})], 1, 1, [], {}),
    "set_meta_subfield_of_one_match": (
        [U1, U2, U4, U5], [_multi({"$and": [{"tag.c": "C"}, {"tag.d": 2}]}, {"$set": {"tag.c": 1}})],
        [U1, _with(U2, tag={"c": 1, "d": 2}), U4, U5], 1, 1, [], {"ordered": False}),
    "unset_meta_subfield_of_many": (
        [U1, U2, U4, U5], [_multi({"tag.a": "A"}, {"$unset": {"tag.a": ""}})],
        [_with(U1, tag={"b": "B"}), U2, _with(U4, tag={"b": "B"}), _with(U5, tag={"b": "B", "c": "C"})],
        3, 3, [], {"ordered": False}),
    "mul_meta_nin_matches_missing_meta": (
        [{"_id": 1, TIME: DT, META: 200, "f": "F"}, U3],
        [_multi({META: {"$nin": [5, 15]}}, {"$mul": {META: 10}})],
        [{"_id": 1, TIME: DT, META: 2000, "f": "F"}, _with(U3, tag=0)], 2, 2, [], {}),
    "mul_meta_exists_and_nin": (
        [{"_id": 1, TIME: DT, META: 200, "f": "F"}, U3],
        [_multi({META: {"$exists": True, "$nin": [5, 15]}}, {"$mul": {META: 10}})],
        [{"_id": 1, TIME: DT, META: 2000, "f": "F"}, U3], 1, 1, [], {}),
    "and_of_dotted_meta": ([U1], [_multi({"$and": [{"tag.a": "A"}, {"tag.b": "B"}]},
                                         {"$set": {META: {"c": "C"}}})],
                           [_with(U1, tag={"c": "C"})], 1, 1, [], {}),
    "dotted_meta_query": ([U1], [_multi({"tag.a": "A"}, {"$set": {META: {"c": "C"}}})],
                          [_with(U1, tag={"c": "C"})], 1, 1, [], {}),
    "inc_meta_subfield": ([U2], [_multi({"tag.c": "C"}, {"$inc": {"tag.d": 10}})],
                          [_with(U2, tag={"c": "C", "d": 12})], 1, 1, [], {}),
    "empty_query_updates_all": ([U1, U2], [_multi({}, {"$set": {META: {"z": "Z"}}})],
                                [_with(U1, tag={"z": "Z"}), _with(U2, tag={"z": "Z"})], 2, 2, [], {}),
    "unset_meta": ([U1], [_multi({META: {"a": "A", "b": "B"}}, {"$unset": {META: ""}})],
                   [_without_meta(U1)], 1, 1, [], {}),
    "rename_meta_subfield_in_meta": ([U1, U2], [_multi({"tag.a": "A"}, {"$rename": {"tag.a": "tag.z"}})],
                                     [_with(U1, tag={"z": "A", "b": "B"}), U2], 1, 1, [], {}),
    "positional_on_meta_array": (
        [{"_id": 1, TIME: DT, META: [1, 2, 2]}, {"_id": 2, TIME: DT, META: [2, 3, 4]}],
        [_multi({META: 2}, {"$set": {"tag.$": 1000}})],
        [{"_id": 1, TIME: DT, META: [1, 1000, 2]}, {"_id": 2, TIME: DT, META: [1000, 3, 4]}], 2, 2, [], {}),
    "all_positional_inc": ([ARR2, ARR3], [_multi({}, {"$inc": {"tag.$[]": -3}})],
                           [_with(ARR2, tag=[-1, 2, 6, 9]), _with(ARR3, tag=[0, 3, 7])], 2, 2, [], {}),
    "pull_gt": ([ARR1, ARR2], [_multi({}, {"$pull": {META: {"$gt": 10}}})],
                [_with(ARR1, tag=[1, 4, 7]), _with(ARR2, tag=[2, 5, 9])], 2, 2, [], {}),
    "pull_in": ([ARR2, ARR3], [_multi({}, {"$pull": {META: {"$in": [1, 2, 3, 4, 5]}}})],
                [_with(ARR2, tag=[9, 12]), _with(ARR3, tag=[6, 10])], 2, 2, [], {}),
    "ordered_chain_of_meta_sets": (
        [U2], [_multi({META: {"c": "C", "d": 2}}, {"$set": {META: 1}}),
               _multi({META: 1}, {"$set": {META: 2}}),
               _multi({META: 2}, {"$set": {META: 3}})],
        [_with(U2, tag=3)], 3, 3, [], {}),
    "min_max_mul": ([{"_id": 1, TIME: DT, META: 200, "f": "F"}],
                    [_multi({}, {"$min": {META: 180}}), _multi({}, {"$max": {META: 190}}),
                     _multi({}, {"$mul": {META: 3}})],
                    [{"_id": 1, TIME: DT, META: 570, "f": "F"}], 3, 3, [], {}),
    "pop_both_ends": (
        [{"_id": 1, TIME: DT, META: {"arr": [3, 6, 10], "f": 10}},
         {"_id": 2, TIME: DT, META: {"arr": [1, 2], "f": 3}}],
        [_multi({"tag.arr": {"$ne": 7}}, {"$pop": {"tag.arr": 1}}),
         _multi({"tag.f": {"$mod": [2, 1]}}, {"$pop": {"tag.arr": -1}})],
        [{"_id": 1, TIME: DT, META: {"arr": [3, 6], "f": 10}}, {"_id": 2, TIME: DT, META: {"arr": [], "f": 3}}],
        3, 3, [], {}),
    "second_statement_sees_first": (
        [U1], [_multi({META: {"a": "A", "b": "B"}}, {"$set": {META: {"c": "C", "d": 1}}}),
               _multi({"tag.d": 1}, {"$set": {"tag.c": "CC"}})],
        [_with(U1, tag={"c": "CC", "d": 1})], 2, 2, [], {}),
    "unordered_two_statements_many_matches": (
        [U1, U2, U4, U5], [_multi({"tag.a": "A"}, {"$unset": {"tag.a": ""}}),
                           _multi({"tag.c": "C"}, {"$set": {"tag.d": 5}})],
        [_with(U1, tag={"b": "B"}), _with(U2, tag={"c": "C", "d": 5}), _with(U4, tag={"b": "B"}),
         _with(U5, tag={"b": "B", "c": "C", "d": 5})], 5, 5, [], {"ordered": False}),
    "one_match_is_a_noop": (
        [U1, U4, U5], [_multi({"tag.a": "A"}, {"$set": {"tag.c": "C"}})],
        [_with(U1, tag={"a": "A", "b": "B", "c": "C"}), _with(U4, tag={"a": "A", "b": "B", "c": "C"}), U5],
        3, 2, [], {}),
    "json_schema_required_meta": ([U1, U2, U3], [_multi({"$jsonSchema": {"required": [META]}},
                                                         {"$set": {META: "a"}})],
                                  [_with(U1, tag="a"), _with(U2, tag="a"), U3], 2, 2, [], {}),
    "json_schema_meta_subfield_named_like_meta": (
        [U1, NESTED_META_6],
        [_multi({"$jsonSchema": {"required": [META], "properties": {META: {"required": [META]}}}},
                {"$set": {META: "a"}})],
        [U1, _with(NESTED_META_6, tag="a")], 1, 1, [], {}),
    "array_filters_all": ([ARR1, ARR2, ARR3],
                          [_multi({}, {"$set": {"tag.$[i]": 100}}, arrayFilters=[{"i": {"$gte": 7}}])],
                          [_with(ARR1, tag=[1, 4, 100, 100, 100]), _with(ARR2, tag=[2, 5, 100, 100]),
                           _with(ARR3, tag=[3, 6, 100])], 3, 3, [], {}),
    "array_filters_some": ([ARR1, ARR2, ARR3],
                           [_multi({META: {"$lt": 3}}, {"$inc": {"tag.$[i]": 2000}},
                                   arrayFilters=[{"$and": [{"i": {"$gt": 6}}, {"i": {"$lt": 15}}]}])],
                           [_with(ARR1, tag=[1, 4, 2007, 2011, 2013]), _with(ARR2, tag=[2, 5, 2009, 2012]),
                            ARR3], 2, 2, [], {}),
    "array_filters_unset": ([ARR1, ARR2, ARR3],
                            [_multi({META: {"$lt": 2}}, {"$unset": {"tag.$[i]": ""}},
                                    arrayFilters=[{"$or": [{"i": {"$lt": 5}}, {"i": {"$gt": 10}}]}])],
                            [_with(ARR1, tag=[None, None, 7, None, None]), ARR2, ARR3], 1, 1, [], {}),
    "array_filters_on_subdocuments": (
        [{"_id": 1, TIME: DT, META: [{"a": 0, "b": 2, "c": 4}, {"a": 6, "b": 8, "c": 10}]},
         {"_id": 2, TIME: DT, META: [{"a": 1, "b": 3, "c": 5}, {"a": 7, "b": 9, "c": 11}, {"a": 3, "b": 6, "c": 9}]}],
        [_multi({}, {"$set": {"tag.$[i].c": 0}}, arrayFilters=[{"i.a": {"$gt": 5}}])],
        [{"_id": 1, TIME: DT, META: [{"a": 0, "b": 2, "c": 4}, {"a": 6, "b": 8, "c": 0}]},
         {"_id": 2, TIME: DT, META: [{"a": 1, "b": 3, "c": 5}, {"a": 7, "b": 9, "c": 0}, {"a": 3, "b": 6, "c": 9}]}],
        2, 2, [], {}),
    "meta_inside_nested_logical_operators": (
        [U1, U2, U3],
        [_multi({"$and": [{"$or": [{META: {"$ne": "B"}}, {META: {"a": {"$eq": "B"}}}]}, {META: {"a": "A", "b": "B"}}]},
                {"$set": {META: "a"}})],
        [_with(U1, tag="a"), U2, U3], 1, 1, [], {}),
    "no_match_no_upsert": ([U1, U4, U5], [_multi({META: "Z"}, {"$set": {META: 5}})], [U1, U4, U5], 0, 0, [], {}),
    "let_variable_is_literal_in_update_document": (
        [U1], [_multi({"tag.a": "A"}, {"$set": {META: "$$myVar"}})], [_with(U1, tag="$$myVar")], 1, 1, [],
        {"let": {"myVar": "aaa"}}),
    "collation_strength_1": (
        [{"_id": 1, TIME: DT, META: "café"}, {"_id": 2, TIME: DT, META: "cafe"}, {"_id": 3, TIME: DT, META: "cafE"}],
        [_multi({META: "cafe"}, {"$set": {META: "Updated"}}, collation={"locale": "fr", "strength": 1})],
        [{"_id": i, TIME: DT, META: "Updated"} for i in (1, 2, 3)], 3, 3, [], {}),
    "collation_default_strength": (
        [{"_id": 1, TIME: DT, META: "café"}, {"_id": 2, TIME: DT, META: "cafe"}, {"_id": 3, TIME: DT, META: "cafE"}],
        [_multi({META: "cafe"}, {"$set": {META: "Updated"}}, collation={"locale": "fr"})],
        [{"_id": 1, TIME: DT, META: "café"}, {"_id": 2, TIME: DT, META: "Updated"},
         {"_id": 3, TIME: DT, META: "cafE"}], 1, 1, [], {}),
}


@pytest.mark.parametrize("case", list(UPDATE_CASES))
def test_update(db, case):
    """timeseries_update.js (7.0: the rules now in write/timeseries_update_arbitrary_updates_not_enabled.js,
    plus the metaField-only updates of write/timeseries_update.js): each statement's write error (code
    72 and mongod's message), ``n``/``nModified`` (measurements of the matched / changed buckets), ordered
    batches stopping at the first error and unordered ones applying every valid statement, and the
    documents left — metaField updates with ``$set/$unset/$inc/$mul/$min/$max/$rename/$pull/$pop``,
    positional ``$``/``$[]``/``$[i]`` with arrayFilters, ``$jsonSchema`` queries, ``let`` and collation."""
    initial, updates, expected, n, n_modified, errors, options = UPDATE_CASES[case]
    options = dict(options)
    coll = _prepare(db, initial, meta=options.pop("meta", True))
    reply = _update(db, "t", updates, **options)
    assert [msg for _code, msg in _errors(reply)] == errors
    assert all(code == 72 for code, _msg in _errors(reply))
    assert (reply["n"], reply["nModified"]) == (n, n_modified)
    assert "upserted" not in reply
    _same_members(list(coll.find()), expected)


# =========================================================================== timeseries_update_one.js

T_01 = dt.datetime(2023, 2, 6, 19, 19, 1)
T_02 = dt.datetime(2023, 2, 6, 19, 19, 2)
T_2023 = dt.datetime(2023, 2, 6, 19, 19, 0)
T_2022 = dt.datetime(2022, 2, 6, 19, 19, 0)
M1_A_B = {TIME: T_01, META: 1, "_id": 1, "a": 1, "b": 1}
A_B = {TIME: T_01, "_id": 1, "a": 1, "b": 1}
M1_B = {TIME: T_01, META: 1, "_id": 1, "b": 1}
STRING_M1_A_B = {TIME: T_01, META: "string", "_id": 1, "a": 1, "b": 1}
M1_C_D = {TIME: T_02, META: 1, "_id": 2, "c": 1, "d": 1}
Q_M1_A1 = {"a": {"$eq": 1}, META: {"$eq": 1}}
Q_M1_B1 = {"b": {"$eq": 1}, META: {"$eq": 1}}
R_2023_M1_ID1 = {TIME: T_2023, META: 1, "_id": 1, "a": 1}
R_2022_M2_ID2 = {TIME: T_2022, META: 2, "_id": 2, "a": 2}
NO_METRICS_1 = {"_id": 1, TIME: DT, META: {"a": "A", "b": "B"}}

# name: (initial, statement without multi) — every one is a single (multi: false) update
UPDATE_ONE_CASES = {
    "unset_metric": ([M1_A_B, M1_C_D], {"q": Q_M1_A1, "u": {"$unset": {"a": ""}}}),
    "add_metric": ([M1_B, M1_C_D], {"q": Q_M1_B1, "u": {"$set": {"a": 1}}}),
    "change_metric_type": ([M1_A_B, M1_C_D], {"q": Q_M1_A1, "u": {"$set": {"a": ["arr", "ay"]}}}),
    "noop_unset_one_match": ([M1_A_B, M1_C_D], {"q": Q_M1_A1, "u": {"$unset": {"z": ""}}}),
    "noop_unset_many_matches": ([M1_A_B, M1_C_D], {"q": {}, "u": {"$unset": {"z": ""}}}),
    "many_matches_update_one": ([A_B, M1_A_B, M1_C_D], {"q": {}, "u": {"$set": {"a": 100}}}),
    "match_none": ([A_B, M1_A_B, M1_C_D], {"q": {META: {"z": "Z"}}, "u": {"$set": {"a": 100}}}),
    "case_sensitive_collation": ([A_B, M1_A_B, STRING_M1_A_B],
                                 {"q": {META: "STRING"}, "u": {"$unset": {META: ""}},
                                  "collation": {"locale": "en", "strength": 3}}),
    "case_insensitive_collation": ([A_B, M1_A_B, STRING_M1_A_B],
                                   {"q": {META: "STRING"}, "u": {"$unset": {META: ""}},
                                    "collation": {"locale": "en", "strength": 1}}),
    "meta_only": ([M1_A_B, M1_C_D], {"q": {META: 1}, "u": {"$set": {META: 2}}}),
    "remove_meta": ([M1_A_B, M1_C_D], {"q": Q_M1_A1, "u": {"$unset": {META: ""}}}),
    "add_meta": ([A_B], {"q": {}, "u": {"$set": {META: 1}}}),
    "set_meta": ([M1_B], {"q": {}, "u": {"$set": {META: 2}}}),
    "change_meta_type": ([M1_A_B, M1_C_D], {"q": Q_M1_A1, "u": {"$set": {META: "string"}}}),
    "pipeline_set_time_meta_new_field": ([R_2023_M1_ID1], {"q": {"a": {"$eq": 1}, META: {"$eq": 1}}, "u": [
        {"$set": {TIME: T_2022}}, {"$set": {META: 2}}, {"$set": {"newField": 42}}]}),
    "pipeline_unset_time": ([R_2023_M1_ID1], {"q": {}, "u": [{"$set": {META: 2}}, {"$unset": TIME}]}),
    "pipeline_time_to_string": ([R_2023_M1_ID1], {"q": {}, "u": [{"$set": {TIME: "string"}}]}),
    "replacement_with_id": ([R_2023_M1_ID1], {"q": {}, "u": R_2022_M2_ID2}),
    "replacement_without_id": ([R_2023_M1_ID1, R_2022_M2_ID2],
                               {"q": {"_id": 1}, "u": {TIME: T_2022, META: 2, "a": 2}}),
    "replacement_duplicate_id": ([R_2023_M1_ID1, R_2022_M2_ID2], {"q": {"_id": 1}, "u": R_2022_M2_ID2}),
    "replacement_no_time": ([R_2023_M1_ID1, R_2022_M2_ID2], {"q": {"_id": 1}, "u": {META: 1, "a": 1, "_id": 10}}),
    "replacement_time_wrong_type": ([R_2023_M1_ID1, R_2022_M2_ID2],
                                    {"q": {"_id": 1}, "u": {META: 1, "a": 1, "_id": 10, TIME: "string"}}),
    "replacement_meta_only": ([R_2023_M1_ID1, R_2022_M2_ID2], {"q": {META: 1}, "u": {META: 3}}),
    "upsert_replacement": ([R_2023_M1_ID1], {"q": {META: {"$eq": 2}}, "u": R_2022_M2_ID2, "upsert": True}),
    "upsert_noop_match": ([R_2023_M1_ID1], {"q": {}, "u": {"$unset": {"z": ""}}, "upsert": True}),
    "upsert_replacement_id_in_query": ([R_2023_M1_ID1], {"q": {"_id": 100}, "u": {TIME: T_01, "a": 5},
                                                         "upsert": True}),
    "upsert_no_id": ([NO_METRICS_1], {"q": {META: {"z": "Z"}}, "u": {"$set": {TIME: DT}}, "upsert": True}),
    "upsert_with_id": ([NO_METRICS_1], {"q": {"_id": 100}, "u": {"$set": {TIME: DT}}, "upsert": True}),
    "upsert_updates_match": ([NO_METRICS_1], {"q": {"tag.a": "A"}, "u": {"$set": {"f": 10}}, "upsert": True}),
    "upsert_into_matched_bucket": ([NO_METRICS_1], {"q": {META: {"a": "A", "b": "B"}, "f": 111},
                                                    "u": {"$set": {TIME: DT}}, "upsert": True}),
    "upsert_no_time": ([NO_METRICS_1], {"q": {META: {"z": "Z"}}, "u": {"$set": {"f": 10}}, "upsert": True}),
    "upsert_time_in_query": ([NO_METRICS_1], {"q": {TIME: dt.datetime(2023, 1, 27, 16)},
                                              "u": {"$set": {"f": 10}}, "upsert": True}),
}


@pytest.mark.parametrize("case", list(UPDATE_ONE_CASES))
def test_update_one_is_refused(db, case):
    """timeseries_update_one.js (requires_fcv_71: arbitrary single updates), as 7.0 answers it: every
    ``multi: false`` update — operator, pipeline or replacement, with or without upsert, metaField or
    measurement — is refused with 72 "Cannot perform a non-multi update on a time-series collection";
    ``n``/``nModified`` are 0, nothing is upserted and the documents are unchanged."""
    initial, statement = UPDATE_ONE_CASES[case]
    coll = _prepare(db, initial)
    reply = _update(db, "t", [dict(statement, multi=False)])
    assert _errors(reply) == [(72, NON_MULTI)]
    assert (reply["n"], reply["nModified"]) == (0, 0)
    assert "upserted" not in reply
    _same_members(list(coll.find()), initial)


# ========================================================================= timeseries_update_multi.js

DT_UPDATED = dt.datetime(2023, 1, 27, 16, 0, 0)
M_1 = {"_id": 1, TIME: DT, META: {"a": "A", "b": "B"}}
M_2 = {"_id": 2, TIME: DT, META: {"a": "A", "b": "B"}, "f": [{"k": "K", "v": "V"}]}
M_3 = {"_id": 3, TIME: DT, META: {"a": "A", "b": "B"}, "f": "F"}
M_4 = {"_id": 4, TIME: DT, "f": "F"}
M_5 = {"_id": 5, TIME: DT, META: {"a": "A", "c": "C"}, "f": [2, 3]}
M_6 = {"_id": 6, TIME: DT, META: {"a": "A", "c": "C"}, "f": [1, 10]}
M_7 = {"_id": 7, TIME: DT, "g": 1}
M_8 = {"_id": 8, TIME: DT, META: [1, 2, 3, 4], "f": [4, 3, 2, 1]}

# name: (initial, statement, expected error message or None, n, nModified, create with metaField)
UPDATE_MULTI_CASES = {
    "query_id_update_meta": ([M_1, M_2], ({"_id": {"$lt": 10}}, {"$set": {META: {"c": "C"}}}), QUERY),
    "query_matches_nothing": ([M_1, M_2, M_5], ({"someField": "doesNotExist"}, {"$set": {META: {"c": "C"}}}),
                              QUERY),
    "query_meta_update_time": ([M_1, M_2, M_5], ({META: {"a": "A", "b": "B"}}, {"$set": {TIME: DT_UPDATED}}),
                               FIELD),
    "query_meta_and_metric": ([M_3, M_2], ({META: {"a": "A", "b": "B"}, "f": "F"}, {"$set": {META: {"c": "C"}}}),
                              QUERY),
    "query_meta_and_metric_ci": ([M_3, M_2], ({META: {"a": "A", "b": "B"}, "f": "f"}, {"$set": {META: {"c": "C"}}},
                                              {"collation": {"locale": "en", "strength": 2}}), QUERY),
    "update_meta_and_metric": ([M_3, M_2], ({META: {"a": "A", "b": "B"}}, {"$set": {META: {"c": "C"}, "f": "FF"}}),
                               FIELD),
    "unset_time": ([M_3, M_5], ({"f": "F"}, {"$unset": {TIME: ""}}), QUERY),
    "time_to_string": ([M_3, M_5], ({"f": "F"}, {"$set": {TIME: "hello"}}), QUERY),
    "query_time_unset_meta": ([M_1, M_2, M_5], ({TIME: DT}, {"$unset": {META: ""}}), QUERY),
    "rename_meta_field": ([M_3], ({}, {"$rename": {META: "Z"}}), FIELD),
    "rename_meta_subfield_out_of_meta": ([M_3], ({"tag.a": "A"}, {"$rename": {"tag.a": "Z.a"}}), FIELD),
    "expand_metric": ([M_1, M_2], ({META: {"a": "A", "b": "B"}}, {"$set": {"f": "x" * (3 * 1024 * 1024)}}),
                      FIELD),
    "change_metric_type": ([M_2, M_3], ({META: {"a": "A", "b": "B"}}, {"$set": {"f": "X"}}), FIELD),
    "add_metric": ([M_1, M_2, M_3], ({"_id": {"$lt": 3}}, {"$set": {"g": 42}}), QUERY),
    "positional_on_metric": ([M_2, M_5, M_6], ({"f": {"$gt": 2}}, {"$set": {"f.$": 20}}), QUERY),
    "positional_on_meta_and_metric_set": ([M_8, M_2], ({META: {"$gt": 2}}, {"$set": {"tag.$": 20, "f": 10}}),
                                          FIELD),
    "positional_meta_and_metric_query": ([M_8, M_2], ({META: {"$gt": 2}, "f": {"$gt": 2}},
                                                      {"$set": {"tag.$": 20, "f.$": 10}}), QUERY),
    "positional_metric_no_filter": ([M_3, M_5], ({}, {"$set": {"f.$": 20}}), FIELD),
    "positional_metric_meta_filter": ([M_3, M_5], ({META: {"a": "A", "c": "C"}}, {"$set": {"f.$": 20}}), FIELD),
    "array_element_type": ([M_2, M_5, M_6], ({"f": {"$lte": 2}}, {"$set": {"f.$": {"k": "v"}}}), QUERY),
    "change_measurement_id": ([M_1], ({}, {"$set": {"_id": 10}}), FIELD),
    "halloween_meta_and_metric": ([M_2, M_3], ({}, {"$set": {"tag.a": "B"}, "$inc": {"x": 1}}), FIELD),
    "pipeline_sum": ([M_5, M_6], ({META: {"a": "A", "c": "C"}}, [{"$set": {"sumF": {"$sum": "$f"}}}]), PIPELINE),
    "pipeline_no_meta_collection": ([M_4, M_7], ({}, [{"$set": {"newField": True}}]), NO_META),
    "pipeline_split_bucket": ([M_1, M_2, M_3], ({}, [{"$set": {META: "$f"}}]), PIPELINE),
    "pipeline_only_meta": ([M_1, M_6], ({META: {"a": "A", "b": "B"}}, [{"$set": {META: "$tag.a"}}]), PIPELINE),
    "upsert_no_id": ([M_1, M_2], ({META: {"z": "Z"}}, {"$set": {TIME: DT}}, {"upsert": True}), UPSERT),
    "upsert_with_id": ([M_1], ({"_id": 100}, {"$set": {TIME: DT}}, {"upsert": True}), UPSERT),
    "upsert_updates_docs": ([M_1, M_2], ({"tag.a": "A"}, {"$set": {"f": 10}}, {"upsert": True}), UPSERT),
    "upsert_matches_noop": ([M_1, M_2], ({"tag.a": "A"}, {"$set": {TIME: DT}}, {"upsert": True}), UPSERT),
    "upsert_into_matched_bucket": ([M_1, M_2], ({META: {"a": "A", "b": "B"}, "f": 111}, {"$set": {TIME: DT}},
                                                {"upsert": True}), UPSERT),
    "upsert_no_time": ([M_1], ({META: {"z": "Z"}}, {"$set": {"f": 10}}, {"upsert": True}), UPSERT),
    "upsert_time_in_query": ([M_1], ({TIME: DT_UPDATED}, {"$set": {"f": 10}}, {"upsert": True}), UPSERT),
}


@pytest.mark.parametrize("case", list(UPDATE_MULTI_CASES))
def test_update_multi_refused(db, case):
    """timeseries_update_multi.js (requires_fcv_71: arbitrary multi updates), as 7.0 answers it: a
    ``multi: true`` update is refused with 72 when it queries a non-meta field (``_id``, time, a
    measurement), changes one (time, ``_id``, a measurement, ``$rename`` out of the meta), is a pipeline,
    upserts, or runs on a collection without a metaField — each with mongod's message — and nothing
    changes (``n`` = ``nModified`` = 0)."""
    initial, statement, message = UPDATE_MULTI_CASES[case]
    q, u, *extra = statement
    coll = _prepare(db, initial, meta=message != NO_META)
    reply = _update(db, "t", [_multi(q, u, **(extra[0] if extra else {}))])
    assert _errors(reply) == [(72, message)]
    assert (reply["n"], reply["nModified"]) == (0, 0)
    assert "upserted" not in reply
    _same_members(list(coll.find()), initial)


def test_update_multi_noop_meta_update(db):
    """timeseries_update_multi.js "testNoopUpdate": setting the metaField to the value it already has
    matches both measurements and modifies none (n 2, nModified 0)."""
    coll = _prepare(db, [M_1, M_2])
    reply = _update(db, "t", [_multi({}, {"$set": {META: {"a": "A", "b": "B"}}})])
    assert "writeErrors" not in reply
    assert (reply["n"], reply["nModified"]) == (2, 0)
    _same_members(list(coll.find()), [M_1, M_2])


# ============================================================== timeseries_update_normalize_metadata.js

def test_update_normalize_metadata(db):
    """timeseries_update_normalize_metadata.js, as 7.0 answers it: a multi update setting the metaField
    to an object with differently ordered fields applies to all 100 measurements and the metaField
    still equals ``{a: 1, b: {c: 1, d: 1}}``; the same update with ``multi: false`` (72 non-multi),
    with ``upsert`` (72 upsert) and with both (72 non-multi) is refused and changes nothing."""
    coll = _create(db)
    now = dt.datetime(2024, 5, 1, 8, 0, 0)
    coll.insert_many([{TIME: now, META: {"a": 1, "b": {"c": 1, "d": 1}}, "_id": i} for i in range(100)])
    new_meta = {"b": {"d": 1, "c": 1}, "a": 1}

    reply = _update(db, "t", [_multi({}, {"$set": {META: new_meta}})])
    assert "writeErrors" not in reply and reply["n"] == 100

    for statement, message in [
        ({"q": {}, "u": {"$set": {META: new_meta}}, "multi": False}, NON_MULTI),
        ({"q": {TIME: now}, "u": {"$set": {META: new_meta}}, "multi": True, "upsert": True}, UPSERT),
        ({"q": {TIME: now}, "u": {"$set": {META: new_meta}}, "multi": False, "upsert": True}, NON_MULTI),
    ]:
        assert _errors(_update(db, "t", [statement])) == [(72, message)]
    docs = list(coll.find({}, {TIME: 0, "_id": 0}))
    assert len(docs) == 100
    assert all(d == {META: {"a": 1, "b": {"c": 1, "d": 1}}} for d in docs)


# ==================================================================== timeseries_find_and_modify_remove.js

def _find_and_remove(db, name, query, **extra):
    return db.command({"findAndModify": name, "query": query, "remove": True, **extra})


def test_find_and_modify_remove_with_sort_is_72(db):
    """timeseries_find_and_modify_remove.js "testSortOptionFails": findAndModify ``remove`` with a
    ``sort`` fails with InvalidOptions (72) and deletes nothing."""
    coll = _prepare(db, [O1, O4, O6])
    with pytest.raises(OperationFailure) as info:
        _find_and_remove(db, "t", {"f": {"$gt": 100}}, sort={"f": 1})
    assert info.value.code == 72
    assert coll.count_documents({}) == 3


# name: (initial, query, extra command fields, n, the returned document or None = any match)
FAM_REMOVE_CASES = {
    "zero_measurements": ([O1, O4, O6], {"f": 17}, {}, 0, None),
    "partial_bucket": ([O1, O2, O3], {"f": 101}, {}, 1, O2),
    "partial_bucket_with_fields": ([O1, O2, O3], {"f": 102}, {"fields": {"f": 1, META: 1, "_id": 0}}, 1,
                                   {"f": 102, META: "A"}),
    "full_bucket": ([O2], {"f": 101}, {}, 1, O2),
    "meta_matches_all_deletes_one": ([O1, O2, O3], {META: "A"}, {}, 1, None),
    "meta_and_metric": ([O1, O2, O3], {META: "A", "f": {"$gt": 101}}, {}, 1, O3),
    "multi_bucket_match_deletes_one": (OALL, {"f": {"$gt": 101}}, {}, 1, None),
    "empty_filter_deletes_one": (OALL, {}, {}, 1, None),
    "query_collation_on_meta": (OALL, {META: "a", "f": {"$gt": 101}},
                                {"collation": {"locale": "en", "strength": 2}}, 1, O3),
}


@pytest.mark.parametrize("case", list(FAM_REMOVE_CASES))
def test_find_and_modify_remove(db, case):
    """timeseries_find_and_modify_remove.js: findAndModify ``remove: true`` deletes one measurement the
    query matches (``lastErrorObject.n`` 1, ``value`` the deleted measurement, projected by ``fields``)
    or none (``n`` 0, ``value`` null); a query collation applies to the metaField; every other
    measurement stays."""
    initial, query, extra, n, returned = FAM_REMOVE_CASES[case]
    coll = _prepare(db, initial)
    reply = _find_and_remove(db, "t", query, **extra)
    assert reply["lastErrorObject"]["n"] == n
    remaining = list(coll.find())
    assert len(remaining) == len(initial) - n
    if n == 0:
        assert reply["value"] is None
        _same_members(remaining, initial)
        return
    if returned is not None:
        assert reply["value"] == returned
    gone = [d for d in initial if d not in remaining]
    assert len(gone) == 1
    if "fields" not in extra:
        assert reply["value"] == gone[0]
    if "collation" not in extra:
        assert _matches(gone[0], query)


# ==================================================================== timeseries_find_and_modify_update.js

FAM_UPDATE_CASES = {
    "sort": ({}, {"$unset": {"a": ""}}, {"sort": {"_id": 1}}),
    "unset_metric": (Q_M1_A1, {"$unset": {"a": ""}}, {}),
    "set_metric_return_new": (Q_M1_B1, {"$set": {"a": 1}}, {"new": True}),
    "metric_with_fields": (Q_M1_A1, {"$set": {"a": ["arr", "ay"]}}, {"fields": {"a": 1, "b": 1, "_id": 0}}),
    "noop": (Q_M1_A1, {"$unset": {"z": ""}}, {}),
    "meta_only": ({META: 1}, {"$set": {META: 2}}, {"new": True}),
    "remove_meta": (Q_M1_A1, {"$unset": {META: ""}}, {}),
    "pipeline": (Q_M1_A1, [{"$set": {META: 2}}, {"$set": {"newField": 42}}], {}),
    "replacement": ({}, {TIME: T_2023, META: 2, "_id": 2, "a": 2}, {}),
    "replacement_upsert": ({META: {"$eq": 2}}, {TIME: T_2023, META: 2, "_id": 2, "a": 2}, {"upsert": True}),
    "meta_upsert": ({META: 5}, {"$set": {META: 6}}, {"upsert": True, "new": True}),
}


@pytest.mark.parametrize("case", list(FAM_UPDATE_CASES))
def test_find_and_modify_update_is_refused(db, case):
    """timeseries_find_and_modify_update.js (featureFlagTimeseriesUpdatesSupport, so not 7.0), as 7.0
    answers it: findAndModify with an ``update`` — operator (metaField or measurement), pipeline or
    replacement, with ``new``, ``fields``, ``sort`` or ``upsert`` — is a single update, refused with
    InvalidOptions (72); the documents are unchanged."""
    query, update, extra = FAM_UPDATE_CASES[case]
    coll = _prepare(db, [M1_A_B, M1_C_D])
    with pytest.raises(OperationFailure) as info:
        db.command({"findAndModify": "t", "query": query, "update": update, **extra})
    assert info.value.code == 72
    _same_members(list(coll.find()), [M1_A_B, M1_C_D])

"""createIndexes on a time-series collection checks conflicts as on its buckets collection.

mongod 7.0's createIndexes on a time-series collection translates the user's specs to buckets specs
(createIndexes typedRun: timeseries::makeTimeseriesCreateIndexesCommand) and then runs the regular
createIndexes on the buckets collection (runCreateIndexesWithCoordinator): the same spec parsing,
TTL and name rules, and catalog checks (IndexCatalogImpl::_doesSpecConflictWithExisting: 86
IndexKeySpecsConflict for a name taken by another index, 85 IndexOptionsConflict for an equivalent
index — same key, collation, partial filter, unique and sparse — with other options or another
name, an identical one skipped, 67 past 64 indexes). Tidemark's time-series path had its own copy of
the conflict check, which had drifted: sparse and expireAfterSeconds were part of its signature and
hidden was not an option (a second spec differing in sparse only was 85 instead of 86, one
differing in hidden only was taken as already existing instead of 85), the command's own earlier
specs were not checked, and neither the name rules of the catalog (empty name) nor the partial
filter rules (67 for a negation or a regex in the translated filter) were applied. The
time-series path now translates the specs and runs the regular path's checks
(``commands.indexes.prepare_specs`` and ``new_indexes``).

The property: for random pairs of index specs created one after the other (or in one command), a
time-series collection answers with the codes of a regular collection given the translated buckets
specs (what mongod runs), and — for specs whose translation keeps them apart as a regular
collection does (every kind but TTL, whose buckets key differs from its time field's) — the codes of
a regular collection given the user's specs.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

from tidemark.timeseries.indexes import default_index_specs, to_bucket_index_spec

pytestmark = pytest.mark.commands("createIndexes", "create")

KEYS = [{"m.a": 1}, {"m.a": -1}, {"m.b": 1}, {"m": 1, "t": 1}, {"v": 1}, {"v": -1}, {"m.a": 1, "v": 1}]
META_ONLY = [{"m.a": 1}, {"m.a": -1}, {"m.b": 1}, {"m": 1, "t": 1}]
NAMES = ["i1", "i2", "m_1_t_1"]


@st.composite
def specs(draw):
    if draw(st.integers(0, 5)) == 0:  # TTL: on the time field, with a partial filter on the meta field
        return {"key": {"t": 1}, "name": draw(st.sampled_from(NAMES)),
                "expireAfterSeconds": draw(st.sampled_from([5, 10])),
                "partialFilterExpression": {"m.a": draw(st.sampled_from([1, 2]))}}
    key = draw(st.sampled_from(KEYS))
    spec = {"key": key, "name": draw(st.sampled_from(NAMES))}
    if key in META_ONLY and draw(st.booleans()):
        spec["sparse"] = True  # (time-series measurements take no sparse index: 72)
    if draw(st.booleans()):
        spec["hidden"] = draw(st.booleans())
    partial = draw(st.sampled_from([None, {"m.a": {"$gt": 1}}, {"m.a": 1}]))
    if partial is not None and "sparse" not in spec:
        spec["partialFilterExpression"] = partial
    elif draw(st.booleans()):  # (a partial filter and a collation are incompatible on a time series: 85)
        spec["collation"] = {"locale": draw(st.sampled_from(["fr", "simple"]))}
    return spec


def translated(spec: dict) -> dict:
    """The buckets spec mongod creates for ``spec`` (without the user's spec it keeps beside it)."""
    bucket = to_bucket_index_spec(spec, "t", "m")
    bucket.pop("originalSpec", None)
    return bucket


def codes(db, name: str, pair: list[dict], together: bool) -> list:
    """What createIndexes answers for each spec of ``pair`` (one command each, or one for both)."""
    out: list = []
    for batch in ([pair] if together else [[s] for s in pair]):
        try:
            reply = db.command("createIndexes", name, indexes=batch)
            out.append("noop" if reply["numIndexesAfter"] == reply["numIndexesBefore"] else "ok")
        except OperationFailure as err:
            out.append(err.code)
    return out


def setup(db):
    for name in ("ts", "twin", "reg"):
        db.drop_collection(name)
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    # the buckets collection's default index, on a regular collection; and its user form
    db.command("createIndexes", "twin", indexes=default_index_specs("t", "m"))
    db.command("createIndexes", "reg", indexes=[{"key": {"m": 1, "t": 1}, "name": "m_1_t_1"}])


@pytest.mark.slow
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(first=specs(), second=specs(), together=st.booleans())
def test_a_time_series_collection_answers_as_its_buckets_would(db, first, second, together):
    setup(db)
    pair = [first, second]
    ts = codes(db, "ts", pair, together)
    assert ts == codes(db, "twin", [translated(s) for s in pair], together)
    if not any("expireAfterSeconds" in s for s in pair):
        assert ts == codes(db, "reg", pair, together)


def test_the_drifted_cases(db):
    setup(db)
    db.ts.create_index([("m.a", 1)], name="i1")
    with pytest.raises(OperationFailure) as err:  # sparse is part of the index signature: another index
        db.ts.create_index([("m.a", 1)], name="i1", sparse=True)
    assert err.value.code == 86
    with pytest.raises(OperationFailure) as err:  # hidden is an option of an equivalent index
        db.ts.create_index([("m.a", 1)], name="i1", hidden=True)
    assert err.value.code == 85
    with pytest.raises(OperationFailure) as err:  # the catalog's name rule
        db.command("createIndexes", "ts", indexes=[{"key": {"m.b": 1}, "name": ""}])
    assert err.value.code == 67
    with pytest.raises(OperationFailure) as err:  # two specs of one command conflicting with each other
        db.command("createIndexes", "ts", indexes=[{"key": {"m.b": 1}, "name": "j"},
                                                   {"key": {"m.b": -1}, "name": "j"}])
    assert err.value.code == 86
    assert [i["name"] for i in db.ts.list_indexes()] == ["m_1_t_1", "i1"]


@pytest.mark.parametrize("partial", [{"m.a": {"$ne": 1}}, {"m.a": {"$regex": "x"}}, {"m.a": {"$in": [1, 2]}},
                                     {"$or": [{"m.a": 1}, {"m.b": 2}]}])
def test_a_translated_partial_filter_is_checked_as_any(db, partial):
    """The buckets spec's partial filter goes through the regular check of partial filter expressions
    (67 for a negation or a regex), on its translated form (``meta.a``), as on the buckets."""
    setup(db)
    spec = {"key": {"m.a": 1}, "name": "p", "partialFilterExpression": partial}
    ts = codes(db, "ts", [spec], False)
    assert ts == codes(db, "reg", [spec], False) == codes(db, "twin", [translated(spec)], False)

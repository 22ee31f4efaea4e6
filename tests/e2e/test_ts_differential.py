"""Differential fuzz: reads of a time-series collection answer what the same reads of a regular
collection holding the same measurements answer, as in mongod (a time-series collection is a view of
its measurements: find, count, distinct and aggregate see the documents that were inserted). Tidemark
answered alike in every run so far (about 3,500 random scenarios of up to 10 reads each while writing
this file); it guards the read paths that differ from a regular collection's.

What the other differential tests leave out, generated here with Hypothesis: the collection's bucketing
(granularities, custom ``bucketMaxSpanSeconds``/``bucketRoundingSeconds``), times far apart (before
1970, after 2038, out of order), metas of every shape (scalar, subdocument, subdocument holding arrays,
missing), measurements of mixed BSON types, inserted in several batches with some buckets settled to
storage and some still in memory, secondary indexes on meta subfields, time, measurements and compound
meta + time in both directions (made before or between the batches, and hinted), a ``collMod`` to
coarser bucketing between batches; filters on meta,
time and measurements (equality, ranges, ``$in``/``$nin``, ``$exists``, ``$type``, prefix and other
regexes with every flag, ``$elemMatch``, ``$and``/``$or``/``$nor``/``$not``, ``$expr`` comparisons);
finds with sort/skip/limit/projection, count, distinct and aggregate pipelines (``$group`` with the
common accumulators, by meta after a ``$match`` on meta: the columnar path; ``$count``,
``$sort``+``$limit``, sorts on time alone (the bounded sort), last points (``$sort`` + ``$group``
``$first``/``$last``), ``$project``, ``$bucket`` on time, ``$sortByCount``). Explain of each read must
not fail. The regular collection has no secondary index (its collection scan is the reference, so an
index bound that both kinds of collection share cannot hide a wrong answer). Answers compare as
``harness.ts_differential`` does (multisets unless the order is total).

Regexes on meta bound a buckets index by their literal prefix (``query.index_bounds``), which only the
stored buckets' index entries see (in-memory buckets are read whatever the bounds): two more tests read
regexes over one load of string metas sharing prefixes, mostly settled to storage, through every meta
index (hinted and not) — Hypothesis-generated, and the whole small family of anchors, literal starts and
flags — against the collection scan of an unindexed regular collection. Checked to fail when a
quantified character stays in the prefix (``/^ab*/`` bounded by ``["ab", "ac")``) or when ``m`` with ``^``
keeps a prefix (``/^a/m`` matches "x\\nab")."""

import datetime as dt

import pytest
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.regex import Regex
from harness import ts_differential
from harness.pipeline_grammar import Case
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("create", "insert", "createIndexes", "find", "aggregate", "count",
                                  "distinct", "explain", "delete")

T0 = dt.datetime(2024, 5, 1, 12)
MISSING = "<missing>"

# Times near T0 at several scales, and far ones on both sides of the epoch and of 2038.
_FAR = [dt.datetime(1950, 6, 1), dt.datetime(1969, 12, 31, 23, 59, 59, 999000), dt.datetime(1970, 1, 1),
        dt.datetime(2038, 1, 19, 3, 14, 8), dt.datetime(2100, 1, 1, 0, 0, 1)]
_TIME = st.one_of(
    st.integers(-3600, 3600).map(lambda s: T0 + dt.timedelta(seconds=s)),
    st.integers(-30, 30).map(lambda d: T0 + dt.timedelta(days=d)),
    st.integers(0, 999).map(lambda ms: T0 + dt.timedelta(milliseconds=ms)),
    st.sampled_from(_FAR),
)
_MS = dt.timedelta(milliseconds=1)
_BOUNDS = [T0, T0 + dt.timedelta(seconds=1), T0 - dt.timedelta(hours=1), T0 + dt.timedelta(days=2),
           dt.datetime(1960, 1, 1), dt.datetime(2038, 1, 1), *_FAR, *(t + _MS for t in _FAR), *(t - _MS for t in _FAR)]

# Metas: object metas have sorted fields (a time-series collection stores them normalized, as mongod).
_METAS = ["a", "ab", "abc", "b", "", "A", "x\nab", "é", 5, None, Int64(9),
          {"h": "a", "r": 1}, {"h": "ab", "r": 2}, {"h": "b", "r": 1}, {"h": "ab"}, {"h": "x\nab", "r": 1},
          {"h": "é", "tags": ["a", "x"]}, {"h": "a", "tags": []}, {"h": 3, "tags": ["ab", "b"]},
          {"h": "abd", "sub": {"k": "a"}}, {"h": None, "tags": [{"k": 1}, {"k": 2}]}, [1, "ab"], ["b", {"h": "a"}], [], MISSING]
_A = [1, 2.5, Int64(7), Decimal128("3.5"), -1, "ab", "b", "", None, True, T0, [1, 2], [], ["ab", 3],
      {"x": 1}, {"x": "a", "y": [1]}, MISSING]
_B = [{"x": 1, "y": "a"}, {"x": 2}, [{"x": 1}, {"x": 3}], [], {"y": None}, MISSING]
_C = [0, 1, 2.5, -3, 10.25, 1e6, MISSING]

_OPTIONS = st.one_of(
    st.sampled_from(["seconds", "minutes", "hours"]).map(lambda g: {"granularity": g}),
    st.sampled_from([1, 60, 7200, 86400]).map(lambda s: {"bucketMaxSpanSeconds": s, "bucketRoundingSeconds": s}),
)
_INDEXES = [[("m.h", 1)], [("m.h", 1), ("t", 1)], [("m.h", -1), ("t", -1)], [("m", 1), ("t", -1)],
            [("m", -1), ("t", 1)], [("t", 1)], [("t", -1)], [("m.tags", 1)], [("m.r", 1), ("t", 1)], [("c", 1)]]


@st.composite
def _measurements(draw):
    metas = draw(st.lists(st.sampled_from(_METAS), min_size=1, max_size=4))
    n = draw(st.integers(1, 40))
    # dense: every measurement has numbers in c and d (the columnar $group's dense columns)
    dense = draw(st.booleans())
    c = st.sampled_from(_C[:-1]) if dense else st.sampled_from(_C)
    docs = []
    for i in range(n):
        doc = {"_id": i, "t": draw(_TIME), "m": draw(st.sampled_from(metas)), "a": draw(st.sampled_from(_A)),
               "b": draw(st.sampled_from(_B)), "c": draw(c)}
        if dense:
            doc["d"] = draw(st.sampled_from([0.5, 1.0, -2.0, 3, 1e15, -0.0, 7.25]))
        docs.append({k: v for k, v in doc.items() if not (isinstance(v, str) and v == MISSING)})
    return docs


# --- filters -------------------------------------------------------------------------------------

_VALUES = {
    "m": [m for m in _METAS if m != MISSING],
    "m.h": ["a", "ab", "b", "", "é", 3, None, "x\nab"],
    "m.r": [1, 2, 1.5, None],
    "m.tags": ["a", "ab", "x", None],
    "t": _BOUNDS,
    "a": [v for v in _A if v != MISSING],
    "b.x": [1, 2, 3, None],
    "c": [0, 1, 2.5, -3, 1e6, None],
    "_id": [0, 3, 7, 15],
}
_PATHS = list(_VALUES)
_STRING_PATHS = ["m", "m.h", "m.tags", "a"]
_PIECES = ["a", "b", "ab", "é", "A", "a*", "b?", ".", "*", "?", "+", "\\n", "\n", "|", "(b)", "[ab]", "$", "x", "\\Qa.\\E"]
_PATTERN = st.tuples(st.sampled_from(["^", "^", "\\A", ""]), st.lists(st.sampled_from(_PIECES), max_size=3)).map(
    lambda t: t[0] + "".join(t[1]))
_FLAGS = st.sampled_from(["", "", "", "i", "m", "s", "x", "ms", "im"])
_TYPES = ["string", "int", "double", "long", "decimal", "object", "array", "null", "date", "bool", "number"]


@st.composite
def _regex(draw, patterns=_PATTERN, flags_=_FLAGS):
    pattern, flags = draw(patterns), draw(flags_)
    form = draw(st.sampled_from(["value", "$regex", "$in", "$not"]))
    if form == "value":
        return Regex(pattern, flags)
    if form == "$regex":
        return {"$regex": pattern, "$options": flags} if flags else {"$regex": pattern}
    if form == "$in":
        return {"$in": [Regex(pattern, flags), draw(st.sampled_from(["b", 5, None]))]}
    return {"$not": Regex(pattern, flags)}


@st.composite
def _leaf(draw):
    path = draw(st.sampled_from(_PATHS))
    values = _VALUES[path]
    value = st.sampled_from(values)
    kind = draw(st.sampled_from(["eq", "eq", "range", "range", "in", "nin", "exists", "type", "regex", "regex",
                                 "elem", "not", "expr"]))
    if kind == "eq":
        return {path: draw(value)}
    if kind == "range":
        ops = draw(st.lists(st.sampled_from(["$gt", "$gte", "$lt", "$lte", "$ne"]), min_size=1, max_size=2, unique=True))
        return {path: {op: draw(value) for op in ops}}
    if kind in ("in", "nin"):
        return {path: {"$" + kind: draw(st.lists(value, min_size=0, max_size=3))}}
    if kind == "exists":
        return {path: {"$exists": draw(st.booleans())}}
    if kind == "type":
        return {path: {"$type": draw(st.sampled_from(_TYPES))}}
    if kind == "regex":
        return {draw(st.sampled_from(_STRING_PATHS)): draw(_regex())}
    if kind == "elem":
        return draw(st.sampled_from([{"m.tags": {"$elemMatch": {"$eq": "ab"}}}, {"m.tags": {"$elemMatch": {"k": 2}}},
                                     {"b": {"$elemMatch": {"x": {"$gt": 1}}}}, {"a": {"$elemMatch": {"$lt": 3}}},
                                     {"m.tags": {"$elemMatch": {"$regex": "^a"}}}]))
    if kind == "not":
        op = draw(st.sampled_from(["$gt", "$lte", "$in", "$eq"]))
        operand = [draw(value)] if op == "$in" else draw(value)
        return {path: {"$not": {op: operand}}}
    op = draw(st.sampled_from(["$eq", "$eq", "$gt", "$gte", "$lt", "$lte", "$ne"]))
    return {"$expr": {op: ["$" + path, {"$literal": draw(value)}]}}


def _filter(depth=2):
    if depth == 0:
        return _leaf()
    sub = st.deferred(lambda: _filter(depth - 1))
    return st.one_of(
        _leaf(), _leaf(),
        st.lists(sub, min_size=1, max_size=3).map(lambda fs: {"$and": fs}),
        st.lists(sub, min_size=1, max_size=3).map(lambda fs: {"$or": fs}),
        st.lists(sub, min_size=1, max_size=2).map(lambda fs: {"$nor": fs}),
        st.tuples(_leaf(), _leaf()).map(lambda p: {**p[1], **p[0]}),
    )


_META_FILTER = st.one_of(
    st.sampled_from([{}, {"m.h": "ab"}, {"m.h": {"$in": ["a", "b"]}}, {"m.r": {"$gte": 1}}, {"m": {"$exists": True}}]),
    st.builds(lambda r: {"m.h": r}, _regex()),
    st.builds(lambda m: {"m": m}, st.sampled_from(_VALUES["m"])),
)

# --- reads ---------------------------------------------------------------------------------------

_PROJECTIONS = [None, {"_id": 1, "m": 1}, {"t": 1, "a": 1}, {"m.h": 1, "c": 1}, {"a": 0}, {"m": 0, "t": 0},
                {"b.x": 1}, {"_id": 0, "c": 1, "t": 1}]
_SORTS = [{"t": 1, "_id": 1}, {"t": -1, "_id": -1}, {"m.h": -1, "_id": 1}, {"c": 1, "_id": 1},
          {"m": 1, "t": -1, "_id": 1}, {"a": 1, "_id": -1}]
_GROUP_KEYS = ["$m", "$m.h", None, {"h": "$m.h", "r": "$m.r"}, "$m.tags"]
_ACCUMULATORS = {
    "n": {"$sum": 1}, "s": {"$sum": "$c"}, "av": {"$avg": "$c"}, "mn": {"$min": "$a"}, "mx": {"$max": "$t"},
    "k": {"$count": {}}, "ps": {"$push": "$_id"}, "as": {"$addToSet": "$m.h"}, "mc": {"$max": "$c"},
    "top": {"$top": {"sortBy": {"t": 1, "_id": 1}, "output": "$a"}},
    "bot": {"$bottomN": {"n": 2, "sortBy": {"c": 1, "_id": 1}, "output": "$_id"}},
}
_COLUMNAR_KEYS = ["$m", "$m.h", {"h": "$m.h", "d": {"$dateTrunc": {"date": "$t", "unit": "hour"}}},
                  {"$dateTrunc": {"date": "$t", "unit": "day"}}, {"$dateTrunc": {"date": "$t", "unit": "minute", "binSize": 5}},
                  {"m": "$m", "w": {"$dateTrunc": {"date": "$t", "unit": "week", "startOfWeek": "monday"}}},
                  {"$dateTrunc": {"date": "$t", "unit": "month"}}, {"$dateTrunc": {"date": "$t", "unit": "second"}}]
_UNORDERED = frozenset({"ps", "as", "ids"})


@st.composite
def _read(draw):
    flt = draw(_filter())
    kind = draw(st.sampled_from(["find", "find", "count", "distinct", "group", "group_meta", "columnar", "columnar",
                                 "time_sort", "lastpoint", "meta_regex", "meta_regex",
                                 "count_stage",
                                 "sort_limit", "project", "bucket", "sort_by_count", "first_last"]))
    if kind == "find":
        find: dict = {"filter": flt}
        projection = draw(st.sampled_from(_PROJECTIONS))
        if projection is not None:
            find["projection"] = projection
        ordered = draw(st.booleans())
        if ordered:
            find["sort"] = draw(st.sampled_from(_SORTS))
            if draw(st.booleans()):
                find["skip"] = draw(st.integers(0, 5))
            if draw(st.booleans()):
                find["limit"] = draw(st.integers(1, 6))
        return Case("find", find=find, ordered=ordered)
    if kind == "count":
        return Case("count", find={"filter": flt})
    if kind == "distinct":
        return Case("distinct", find={"filter": flt, "key": draw(st.sampled_from(["m", "m.h", "m.tags", "a", "c", "b.x", "t"]))})
    if kind in ("group", "group_meta"):
        match = draw(_META_FILTER) if kind == "group_meta" else flt
        names = draw(st.lists(st.sampled_from(sorted(_ACCUMULATORS)), min_size=1, max_size=4, unique=True))
        group = {"_id": draw(st.sampled_from(_GROUP_KEYS)), **{n: _ACCUMULATORS[n] for n in names}}
        return Case("aggregate", pipeline=[{"$match": match}, {"$group": group}], unordered=_UNORDERED)
    if kind == "columnar":
        match = draw(_META_FILTER)
        if draw(st.booleans()):
            match = {"$and": [match, {"t": {draw(st.sampled_from(["$gte", "$lt"])): draw(st.sampled_from(_BOUNDS))}}]}
        accumulators = draw(st.lists(st.sampled_from([("s", "$sum"), ("av", "$avg"), ("mx", "$max"), ("mn", "$min")]),
                                     min_size=1, max_size=4, unique=True))
        group = {"_id": draw(st.sampled_from(_COLUMNAR_KEYS)),
                 **{f"{name}{field}": {op: "$" + field} for name, op in accumulators for field in ("c", "d")}}
        pipeline = [{"$match": match}, {"$group": group}]
        if draw(st.booleans()):
            pipeline.append({"$sort": {"_id": draw(st.sampled_from([1, -1]))}})
            return Case("aggregate", pipeline=pipeline, ordered=True)
        return Case("aggregate", pipeline=pipeline)
    if kind == "meta_regex":
        # a regex on a meta path alone or with a time range: what a meta index's prefix bounds serve
        found = {draw(st.sampled_from(["m", "m.h", "m.h", "m.tags"])): draw(_regex())}
        if draw(st.booleans()):
            found = {"$and": [found, {"t": {draw(st.sampled_from(["$gte", "$lt"])): draw(st.sampled_from(_BOUNDS))}}]}
        return Case("find", find={"filter": found})
    if kind == "time_sort":
        # a sort on time (and meta) alone: the answer's sequence of sort keys is determined
        # (meta arrays: two metas may share a sort key, so then only the times' order is compared)
        sort = draw(st.sampled_from([{"t": 1}, {"t": -1}, {"m": 1, "t": 1}, {"m": -1, "t": -1}, {"m.h": 1, "t": -1}]))
        pipeline = [{"$match": flt}, {"$sort": sort}]
        if draw(st.booleans()):
            pipeline.append({"$limit": draw(st.integers(1, 8))})
        return Case("aggregate", pipeline=[*pipeline, {"$project": {"_id": 0, "t": 1}}], ordered=len(sort) == 1)
    if kind == "lastpoint":
        key, direction = draw(st.sampled_from(["m", "m.h"])), draw(st.sampled_from([1, -1]))
        accumulator = draw(st.sampled_from(["$first", "$last"]))
        return Case("aggregate", pipeline=[
            {"$sort": {key: direction, "t": draw(st.sampled_from([1, -1]))}},
            {"$group": {"_id": "$" + key, "t": {accumulator: "$t"}}}])
    if kind == "count_stage":
        return Case("aggregate", pipeline=[{"$match": flt}, {"$count": "n"}])
    if kind == "sort_limit":
        return Case("aggregate", pipeline=[{"$match": flt}, {"$sort": draw(st.sampled_from(_SORTS))},
                                           {"$limit": draw(st.integers(1, 5))}], ordered=True)
    if kind == "project":
        spec = draw(st.sampled_from([{"m": 1, "t": 1}, {"x": "$m.h", "y": {"$add": [1, "$c"]}}, {"t": 0, "a": 0},
                                     {"day": {"$dateTrunc": {"date": "$t", "unit": "day"}}, "b": 1}]))
        return Case("aggregate", pipeline=[{"$match": flt}, {"$project": spec}])
    if kind == "bucket":
        return Case("aggregate", pipeline=[{"$match": flt}, {"$bucket": {
            "groupBy": "$t", "boundaries": [dt.datetime(1960, 1, 1), dt.datetime(1970, 1, 1), T0, dt.datetime(2030, 1, 1)],
            "default": "other", "output": {"n": {"$sum": 1}, "ids": {"$push": "$_id"}}}}], unordered=_UNORDERED)
    if kind == "sort_by_count":
        return Case("aggregate", pipeline=[{"$match": flt}, {"$sortByCount": draw(st.sampled_from(["$m.h", "$m", "$a"]))}])
    by = draw(st.sampled_from(["$m", "$m.h"]))
    return Case("aggregate", pipeline=[{"$match": draw(_META_FILTER)}, {"$sort": {"t": 1, "_id": 1}},
                                       {"$group": {"_id": by, "f": {"$first": "$a"}, "l": {"$last": "$c"},
                                                   "n": {"$sum": 1}}}])


def _with_hint(case: Case, hint):
    return Case(case.kind, pipeline=case.pipeline, find=case.find, ordered=case.ordered,
                unordered=case.unordered, hint=hint)


def _explain(database, case: Case):
    """Explain of the read on the time-series collection: never an error the regular one does not give."""
    if case.kind == "aggregate":
        command = {"aggregate": "ts", "pipeline": case.pipeline, "cursor": {}}
    elif case.kind == "count":
        command = {"count": "ts", "query": case.find["filter"]}
    elif case.kind == "distinct":
        command = {"distinct": "ts", "key": case.find["key"], "query": case.find["filter"]}
    else:
        command = {"find": "ts", **case.find}
        if "projection" in command and command["projection"] is None:
            del command["projection"]
    if case.hint is not None and case.kind != "distinct":
        command["hint"] = case.hint
    for verbosity in ("queryPlanner", "executionStats"):
        try:
            database.command("explain", command, verbosity=verbosity)
        except OperationFailure as exc:
            regular = dict(command, **{next(iter(command)): "reg"})
            regular.pop("hint", None)
            try:
                database.command(regular)
            except OperationFailure:
                continue
            raise AssertionError(f"explain failed: {exc.code} {exc.details} for {command}") from exc


@pytest.fixture(scope="module")
def database(client):
    name = "ts_differential_fuzz"
    client.drop_database(name)
    yield client[name]
    client.drop_database(name)


def _coarser(options):
    """A collMod to coarser bucketing (mongod 7.0 accepts only increases)."""
    if "granularity" in options:
        following = {"seconds": "minutes", "minutes": "hours", "hours": "hours"}[options["granularity"]]
        return {"granularity": following}
    span = min(options["bucketMaxSpanSeconds"] * 60, 31536000)
    return {"bucketMaxSpanSeconds": span, "bucketRoundingSeconds": span}


def _load(database, options, docs, cuts, settles, indexes, index_at, coarser_at):
    database.drop_collection("ts")
    database.drop_collection("reg")
    database.create_collection("ts", timeseries={"timeField": "t", "metaField": "m", **options})
    database.create_collection("reg")
    batches = [docs[i:j] for i, j in zip([0, *cuts], [*cuts, len(docs)], strict=True)]
    for k, batch in enumerate(batches):
        if k == index_at:
            for keys in indexes:
                database.ts.create_index(keys)
        if batch:
            database.ts.insert_many([dict(d) for d in batch], ordered=False)
            database.reg.insert_many([dict(d) for d in batch], ordered=False)
        if settles[k]:
            database.ts.delete_many({"_id": "none"})  # settles every in-memory bucket: the next batch opens new ones
        if k == coarser_at:
            database.command("collMod", "ts", timeseries=_coarser(options))
    if index_at >= len(batches):
        for keys in indexes:
            database.ts.create_index(keys)


@st.composite
def _scenario(draw):
    docs = draw(_measurements())
    cuts = sorted(draw(st.lists(st.integers(0, len(docs)), max_size=2)))
    indexes = draw(st.lists(st.sampled_from(_INDEXES), min_size=draw(st.sampled_from([0, 1, 1])), max_size=2,
                            unique_by=lambda k: tuple(k)))
    index_at = draw(st.integers(0, len(cuts) + 1))
    coarser_at = draw(st.integers(-1, len(cuts)))
    settles = draw(st.lists(st.booleans(), min_size=len(cuts) + 1, max_size=len(cuts) + 1))
    return draw(_OPTIONS), docs, cuts, settles, indexes, index_at, coarser_at


SETTINGS = settings(max_examples=120, deadline=None, database=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example])


@pytest.mark.slow
@SETTINGS
@given(scenario=_scenario(), reads=st.lists(_read(), min_size=1, max_size=10), data=st.data())
def test_time_series_reads_answer_as_on_a_regular_collection(database, scenario, reads, data):
    options, docs, cuts, settles, indexes, index_at, coarser_at = scenario
    _load(database, options, docs, cuts, settles, indexes, index_at, coarser_at)
    for case in reads:
        expected = ts_differential.run(database.reg, case)
        if indexes and case.kind != "distinct" and data.draw(st.integers(0, 2)) == 0:
            case = _with_hint(case, dict(data.draw(st.sampled_from(indexes))))
        message = ts_differential.difference(case, expected, ts_differential.run(database.ts, case))
        assert message is None, (f"options {options}, indexes {indexes} (at batch {index_at}), collMod at {coarser_at}, "
                                 f"cuts {cuts}, settled {settles}\n{message}\ndocuments: {docs}")
        _explain(database, case)


# --- regexes on meta through a buckets index ------------------------------------------------------
# One load, many regexes: metas holding strings that share prefixes (and arrays of them), most buckets
# settled to storage (an index holds their keys: in-memory buckets are read whatever the bounds) and
# a few in memory; each regex is read through every meta index, hinted, and without a hint.

_STRINGS = ["", "a", "ab", "abb", "abc", "ac", "b", "A", "Ab", "x\nab", "\nab", "a\n", "é", "a.", "aa"]
_REGEX_INDEXES = [[("m.h", 1)], [("m.h", -1), ("t", 1)], [("m", 1), ("t", -1)]]


@pytest.fixture(scope="module")
def meta_strings(client):
    database = client["ts_differential_meta_strings"]
    client.drop_database(database.name)
    database.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    metas = [*_STRINGS, *({"h": s} for s in _STRINGS), *({"h": [s, "zz"]} for s in _STRINGS[:6]), 5, None]
    docs = [{"_id": i, "t": T0 + dt.timedelta(minutes=i), "m": m} for i, m in enumerate(metas)]
    docs.append({"_id": len(docs), "t": T0})
    for keys in _REGEX_INDEXES:
        database.ts.create_index(keys)
    stored, live = docs[: len(docs) - 6], docs[len(docs) - 6:]
    for part in (stored, live):
        database.ts.insert_many([dict(d) for d in part])
        database.reg.insert_many([dict(d) for d in part])
        if part is stored:
            database.ts.delete_many({"_id": "none"})  # settles every bucket so far
    yield database
    client.drop_database(database.name)


# literal pieces the metas start lines with, and every flag that changes what a prefix may bound
_LITERAL_PATTERN = st.tuples(
    st.sampled_from(["^", "\\A", ""]),
    st.lists(st.sampled_from(["a", "ab", "b", "x", "A", "é", "\\n", ".", "*", "?", "+", "{0}", "|", "$", "(b)",
                              "\\Qa.\\E"]), max_size=3)).map(lambda t: t[0] + "".join(t[1]))
_ALL_FLAGS = st.sampled_from(["", "m", "s", "i", "x", "ms", "u", "mi"])


@settings(max_examples=150, deadline=None, database=None, derandomize=True)
@given(condition=_regex(_LITERAL_PATTERN, _ALL_FLAGS), path=st.sampled_from(["m", "m.h"]))
def test_meta_regexes_read_through_an_index_answer_as_a_collection_scan(meta_strings, condition, path):
    found = {path: condition}

    def answer(collection, hint=None):
        try:
            return sorted(d["_id"] for d in collection.find(found, {"_id": 1}, hint=hint))
        except OperationFailure as exc:  # an invalid pattern: the same error
            return exc.code

    expected = answer(meta_strings.reg)
    for hint in (None, *(dict(keys) for keys in _REGEX_INDEXES)):
        assert answer(meta_strings.ts, hint) == expected, (found, hint)


@pytest.mark.slow
def test_every_anchor_literal_and_flag_reads_through_an_index_as_a_collection_scan(meta_strings):
    """The same as above over the whole small family: each anchor, literal start and flag (``m`` lets ``^``
    match after a newline, ``i`` any case: neither may bound by the prefix), as a value and in ``$in``."""
    differences = []
    for anchor in ("^", "\\A", ""):
        for body in ("a", "ab", "a*", "ab?c", "a.", "\\Qa.\\E", "a|b", "a$", "", "\\n", "x", "A", "é"):
            for flags in ("", "m", "s", "i", "x", "ms", "u", "mi"):
                regex = Regex(anchor + body, flags)
                for condition in (regex, {"$in": [regex, "b"]}):
                    for path in ("m", "m.h"):
                        found = {path: condition}
                        expected = sorted(d["_id"] for d in meta_strings.reg.find(found, {"_id": 1}))
                        for hint in (None, *(dict(keys) for keys in _REGEX_INDEXES)):
                            got = sorted(d["_id"] for d in meta_strings.ts.find(found, {"_id": 1}, hint=hint))
                            if got != expected:
                                differences.append((found, hint, sorted(set(got) ^ set(expected))))
    assert not differences, differences[:5]

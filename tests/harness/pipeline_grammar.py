"""A grammar of random queries (aggregation pipelines and finds) and of random measurements, for
differential tests: the same documents in a time-series and in a regular collection must answer every
generated query identically (``harness.ts_differential`` runs and compares them).

Pure and seeded: ``Grammar(random.Random(seed)).case()`` gives a ``Case``; ``documents(rng, n)`` the
measurements. The grammar tracks what a generated query may legitimately answer in a different order or
with a different choice between equals, and generates only queries whose answer is fully determined:

- *order*: the order of measurements read from a time-series collection is bucket order, not insertion
  order (both are unspecified in MongoDB). So order-dependent operations (``$first``/``$last``/``$push``/
  ``$firstN``/``$lastN``/``$mergeObjects`` accumulators, ``$limit``/``$skip``, document windows, ``$shift``,
  ``$documentNumber``, ``$locf``/``$linearFill``, ``$arrayElemAt`` on a pushed array...) are generated
  only while the stream order is total: after a ``$sort`` whose key includes a field known to be unique
  and never an array (``_id`` and ``t`` of the measurements, ``_id`` of ``$group``/``$bucket``/
  ``$sortByCount`` output with a scalar key; an array sorts by its least or greatest element, so unique
  arrays may tie). ``$top``/``$bottom``(``N``) only with such a ``sortBy``; ``$rank``/``$denseRank`` only
  on scalar fields (ranks compare values, which an array can tie in sort order without equalling).
  Arrays whose order is
  unspecified (``$push`` on an unordered stream, ``$addToSet``, ``$setUnion``...) are *unordered fields*:
  compared as multisets and never read by later stages.
- *ties between equal values of different types*: ``$min``/``$max``/``$addToSet``/``$group`` keep the first
  of equal values (``1`` and ``1.0``). The documents' numbers of different types never compare equal
  (ints are integers below 100, longs from 10**10, doubles end in .5, decimals in .25).
- *top-level field order*: an unpacked measurement lists the time field, the meta field, then the other
  fields in bucket order; MongoDB documents this (the view is not the inserted document). Comparisons
  ignore field order, and no expression exposes the top-level order (no ``$objectToArray`` of
  ``$$ROOT``, no sort or group on ``$$ROOT``).
- *meta normalization*: a time-series collection stores object metas with their fields sorted
  (MongoDB does the same: timeseries_insert_normalize_metadata.js), so the generated metas are objects
  with sorted fields.
  Equal values of different types that computations produce (``0`` and ``0.0``) are avoided by
  reading fields in those accumulators, never computed values.
- *null and missing*: they group together (``$group``, partitions), and which of them a group or a
  ``$densify`` partition shows is the first read: ``$densify`` partitions never on ``m``.
- *floating point*: sums, standard deviations and covariances of doubles and decimals depend on the
  order of the additions in the last digits; results are compared to 9 significant digits.
- *errors*: which document fails first (two documents failing differently, or a limit stopping before
  the failing one) depends on the read order; such a pair of answers is no difference when the regular
  collection gives the time-series answer for another input order (``ts_differential.check``). String
  operators read ``$toString`` of the mixed-type ``s`` to keep failures rare.
- ``$sample``, ``$rand``, ``$$NOW``: non-deterministic, never generated. ``$natural`` sorts and hints:
  the natural order of a time-series collection is bucket order (MongoDB answers it so too).
- ``$out``/``$merge``: writes, not part of a read differential. ``$geoNear``/``$text``/geo filters,
  ``$graphLookup``, ``$documents``, ``$collStats``/``$indexStats``/``$currentOp``: other tests cover them
  (geo and text need indexes a time-series collection restricts; the others do not read the collection's
  documents). ``$redact`` is generated to check both refuse it alike (224).
- *indexes*: hints name indexes every collection has (``{w: 1}``, ``{t: -1}``); ``{m: 1, t: 1}`` is only
  on the time-series collection with metaField ``m`` (on ``tsnm`` ``m`` holds arrays, which a
  time-series index on a measurement refuses, as mongod does).
- find projections with ``$slice``/``$elemMatch``/positional ``$``/``$meta``: not supported by finds on
  views (MongoDB manual, "Projection Operators"), which a time-series collection is.
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass, field
from typing import Any

from bson import Decimal128, Int64, ObjectId, Regex

T0 = dt.datetime(2024, 3, 1)
SPAN_S = 10 * 3600  # ~10 one-hour buckets per series
SELF = "__SELF__"  # replaced by the queried collection's name ($lookup/$unionWith of itself)
DIM = "dim"  # a small regular collection for $lookup
STRINGS = ["ok", "warn", "Fail", "", "abc12", "éa", "x.y", "ok "]
HOSTS = ["h0", "h1", "h2"]


# --------------------------------------------------------------------------------------- documents

def _number(rng: random.Random) -> Any:
    kind = rng.random()
    if kind < 0.45:
        return rng.randrange(-20, 100)  # int32
    if kind < 0.6:
        return Int64(10**10 + rng.randrange(50) * 7)  # never equal to an int/double/decimal
    if kind < 0.85:
        return rng.randrange(-200, 200) + 0.5  # exact sums in any order
    return Decimal128(f"{rng.randrange(-50, 50)}.25")


def _meta(rng: random.Random) -> Any:
    kind = rng.random()
    if kind < 0.5:
        return {"h": rng.choice(HOSTS), "r": rng.choice(["eu", "us"])}  # sorted fields (normalized)
    if kind < 0.53:
        return {"h": rng.choice(HOSTS), "r": "eu", "z": {"k": rng.randrange(2), "l": [1, rng.randrange(3)]}}
    if kind < 0.55:
        return [rng.choice(["a", "b"]), rng.randrange(2)]  # an array meta
    if kind < 0.7:
        return rng.choice(["a", "b"])
    if kind < 0.78:
        return rng.choice([1, 2])
    if kind < 0.86:
        return None
    return _MISSING


_MISSING = object()


def document(rng: random.Random, i: int, ms: int | None = None) -> dict:
    """One measurement: ``_id`` (unique int), ``t`` (date, ``ms`` after T0), meta ``m`` (object/scalar/
    null/missing) and sparse fields of mixed types."""
    ms = rng.randrange(SPAN_S * 1000) if ms is None else ms
    doc: dict[str, Any] = {"_id": i, "t": T0 + dt.timedelta(milliseconds=ms)}
    meta = _meta(rng)
    if meta is not _MISSING:
        doc["m"] = meta
    r = rng.random()
    if r < 0.8:
        doc["v"] = _number(rng)
    elif r < 0.87:
        doc["v"] = None
    elif r < 0.92:
        doc["v"] = rng.choice(STRINGS)
    if rng.random() < 0.85:
        doc["w"] = rng.randrange(10)
    # u: a dense double column (the columnar $group's fast arrays), now and then NaN or missing
    r = rng.random()
    doc["u"] = float("nan") if r < 0.01 else rng.randrange(-100, 100) / 4 if r < 0.97 else None
    if doc["u"] is None:
        del doc["u"]
    r = rng.random()
    if r < 0.7:
        doc["s"] = rng.choice(STRINGS)
    elif r < 0.8:
        doc["s"] = None
    elif r < 0.85:
        doc["s"] = rng.randrange(5)
    if rng.random() < 0.4:
        doc["d"] = T0 + dt.timedelta(hours=rng.randrange(-48, 120), milliseconds=rng.randrange(1000))
    if rng.random() < 0.6:
        doc["b"] = rng.random() < 0.5
    r = rng.random()
    if r < 0.55:
        o: dict[str, Any] = {"x": rng.randrange(-5, 20), "y": rng.choice(STRINGS)}
        if rng.random() < 0.5:
            o["z"] = {"k": rng.randrange(4)}
        if rng.random() < 0.2:
            o["x"] = [rng.randrange(5), rng.randrange(5)]
        doc["o"] = o
    elif r < 0.62:
        doc["o"] = None
    elif r < 0.67:
        doc["o"] = rng.randrange(3)
    r = rng.random()
    if r < 0.35:
        doc["a"] = [rng.randrange(8) for _ in range(rng.randrange(0, 5))]
    elif r < 0.5:
        doc["a"] = [{"x": rng.randrange(6), "y": rng.choice(STRINGS[:3])} for _ in range(rng.randrange(1, 4))]
    elif r < 0.55:
        doc["a"] = rng.randrange(8)
    elif r < 0.6:
        doc["a"] = [rng.randrange(4), rng.choice(STRINGS[:2]), None, [rng.randrange(3)]]
    if rng.random() < 0.1:
        doc["oid"] = ObjectId(f"{0x65000000 + i:08x}0000000000{i % 256:06x}"[:24])
    return doc


EXTREME_TIMES = (dt.datetime(1969, 12, 31, 23, 59, 59), dt.datetime(1900, 1, 1), dt.datetime(2107, 3, 1, 12))


def documents(rng: random.Random, n: int) -> list[dict]:
    """``n`` measurements with distinct times (``t`` is unique, like ``_id``: a sort on it is total):
    about a fifth on whole minutes (which time equalities meet), and three far from the others (before
    1970 and after 2106: bucket ids wrap)."""
    times: set[int] = set()
    while len(times) < n:
        ms = rng.randrange(SPAN_S * 1000)
        times.add(ms - ms % 60000 if rng.random() < 0.2 else ms)
    docs = [document(rng, i, ms) for i, ms in enumerate(sorted(times, key=lambda _: rng.random()))]
    for doc, when in zip(docs[-len(EXTREME_TIMES):], EXTREME_TIMES, strict=True):
        doc["t"] = when
    return docs


def dim_documents() -> list[dict]:
    """The small regular collection ``dim`` joined by ``$lookup`` (keys of the measurements' types)."""
    out = [{"_id": i, "w": i, "h": HOSTS[i % 3], "label": f"L{i}", "vals": [i, i + 1]} for i in range(10)]
    out.append({"_id": 10, "w": None, "h": "a", "label": "null"})
    out.append({"_id": 11, "h": "b", "label": "missing"})
    return out


# ---------------------------------------------------------------------------------------- the case

@dataclass
class Case:
    """One generated query. ``kind`` "aggregate" (``pipeline``) or "find" (``find``: filter,
    projection, sort, skip, limit). ``ordered``: the answer's order is determined (compared in order);
    ``unordered``: top-level fields whose array value is compared as a multiset."""

    kind: str
    pipeline: list = field(default_factory=list)
    find: dict = field(default_factory=dict)
    ordered: bool = False
    unordered: frozenset = frozenset()
    hint: Any = None
    collation: dict | None = None
    batch_size: int = 0  # small batches: cursors resumed by getMore across buckets

    def describe(self) -> str:
        body = self.pipeline if self.kind == "aggregate" else self.find
        options = {k: v for k, v in (("hint", self.hint), ("collation", self.collation),
                                       ("batchSize", self.batch_size)) if v}
        return f"{self.kind} {body!r} {options} ordered={self.ordered} unordered={sorted(self.unordered)}"


@dataclass
class State:
    """What a stage may rely on: the fields of the documents flowing in (path -> kind), whether their
    order is total, which fields are unique, which fields are arrays of unspecified order."""

    fields: dict
    ordered: bool = False
    unique: frozenset = frozenset({"_id"})
    unordered: frozenset = frozenset()

    def copy(self, **changes: Any) -> State:
        values = {"fields": dict(self.fields), "ordered": self.ordered, "unique": self.unique,
                  "unordered": self.unordered}
        values.update(changes)
        return State(**values)


MEASUREMENT_FIELDS = {"_id": "int", "t": "date", "m": "any", "m.h": "str", "v": "num", "w": "int", "u": "num", "s": "str",
                      "d": "date", "b": "bool", "o": "obj", "o.x": "num", "o.y": "str", "o.z.k": "int", "a": "arr",
                      "a.x": "num", "oid": "any"}
TYPE_NAMES = ["double", "string", "object", "array", "objectId", "bool", "date", "null", "int", "long", "decimal",
              "number", 1, 2, 16, 18, 10]
UNITS = ["minute", "hour", "day", "week", "month"]


class Grammar:
    """Random cases from ``rng``. ``max_stages`` bounds a pipeline's length."""

    def __init__(self, rng: random.Random, max_stages: int = 5):
        self.rng = rng
        self.max_stages = max_stages
        self._n = 0

    # ----------------------------------------------------------------------------- helpers
    def _name(self, prefix: str = "f") -> str:
        self._n += 1
        return f"{prefix}{self._n}"

    def _pick(self, st: State, kinds: tuple[str, ...] | None = None, top: bool = False) -> str | None:
        names = [f for f, k in st.fields.items()
                 if (k in kinds if kinds is not None else k != "root") and f.split(".")[0] not in st.unordered and (not top or "." not in f)]
        return self.rng.choice(names) if names else None

    def const(self, kind: str) -> Any:
        rng = self.rng
        if kind == "num" or kind == "int":
            return _number(rng) if kind == "num" and rng.random() < 0.5 else rng.randrange(-3, 12)
        if kind == "str":
            return rng.choice(STRINGS)
        if kind == "date":
            if rng.random() < 0.05:
                return rng.choice(EXTREME_TIMES)
            return T0 + dt.timedelta(minutes=rng.randrange(-60, SPAN_S // 60 + 60))
        if kind == "bool":
            return rng.random() < 0.5
        if kind == "obj":
            return {"x": rng.randrange(5), "y": rng.choice(STRINGS)}
        if kind == "arr":
            return [rng.randrange(6) for _ in range(rng.randrange(3))]
        return rng.choice([None, 1, "a", {"h": "h1", "r": "eu"}, 2.5, True, [1, 2]])

    def value_for(self, path: str, kind: str) -> Any:
        """A constant likely to meet the values at ``path``."""
        rng = self.rng
        if path == "m":
            return rng.choice([None, "a", "b", 1, {"h": "h1", "r": "eu"}, {"h": "h0", "r": "us"}, {"r": "eu", "h": "h1"}])
        if path == "m.h":
            return rng.choice(HOSTS + [None])
        if rng.random() < 0.1:
            return None
        return self.const(kind)

    # ----------------------------------------------------------------------------- expressions
    def ref(self, st: State, kinds: tuple[str, ...]) -> Any:
        path = self._pick(st, kinds)
        return f"${path}" if path else self.const(kinds[0])

    def num(self, st: State, depth: int = 0) -> Any:
        """A numeric (or null) expression; type errors are avoided with ``$isNumber`` guards."""
        rng = self.rng
        if depth >= 3 or rng.random() < 0.3:
            r = rng.random()
            if r < 0.3:
                return self.const("num")
            path = self._pick(st, ("num", "int"))
            if path is None:
                return self.const("num")
            if path in ("w", "_id", "o.z.k"):  # ints or missing: never a type error
                return f"${path}"
            return {"$cond": [{"$isNumber": f"${path}"}, f"${path}", rng.choice([0, None, 1.5])]}
        op = rng.choice(["$add", "$subtract", "$multiply", "$divide", "$mod", "$abs", "$floor", "$ceil", "$round",
                         "$trunc", "$cond", "$ifNull", "$switch", "$let", "$size", "$strLenCP", "$reduce",
                         "$dateDiff", "$year", "$hour", "$dayOfWeek", "$toDouble", "$toLong", "$arrayElemAt",
                         "$indexOfArray", "$pow", "$sqrt", "$bitAnd", "$convert", "$getField", "$cmp", "$toInt",
                         "$sum", "$avg", "$maxexpr", "$stdDevPop"])
        n = lambda: self.num(st, depth + 1)  # noqa: E731
        if op in ("$add", "$multiply"):
            return {op: [n() for _ in range(rng.randrange(1, 4))]}
        if op in ("$sum", "$avg", "$stdDevPop"):  # one operand: an array's elements; several: values
            return {op: rng.choice(["$a", "$a.x", "$o.x", [n() for _ in range(rng.randrange(1, 4))]])}
        if op == "$maxexpr":
            return {rng.choice(["$max", "$min"]): rng.choice([[n(), n()], {"$filter": {
                "input": {"$cond": [{"$isArray": "$a"}, "$a", []]}, "cond": {"$isNumber": "$$this"}}}])}
        if op == "$subtract":
            return {op: [n(), n()]}
        if op in ("$divide", "$mod"):
            return {op: [n(), rng.choice([2, 3, -4, 0.5, Decimal128("2.5"), Int64(7)])]}
        if op in ("$abs", "$floor", "$ceil"):
            return {op: n()}
        if op in ("$round", "$trunc"):
            return {op: [n(), rng.choice([0, 1, -1])]}
        if op == "$cond":
            return {op: {"if": self.boolean(st, depth + 1), "then": n(), "else": n()}}
        if op == "$ifNull":
            return {op: [self.ref(st, ("num",)), n()]}
        if op == "$switch":
            return {op: {"branches": [{"case": self.boolean(st, depth + 1), "then": n()}
                                      for _ in range(rng.randrange(1, 3))], "default": n()}}
        if op == "$let":
            return {op: {"vars": {"x": n()}, "in": {"$multiply": ["$$x", n()]}}}
        if op == "$size":
            return {op: {"$cond": [{"$isArray": "$a"}, "$a", []]}}
        if op == "$strLenCP":
            return {op: {"$toString": {"$ifNull": ["$s", ""]}}}
        if op == "$reduce":
            return {op: {"input": {"$cond": [{"$isArray": "$a"}, "$a", [1, 2]]}, "initialValue": 0,
                         "in": {"$add": ["$$value", {"$cond": [{"$isNumber": "$$this"}, "$$this", 1]}]}}}
        if op == "$dateDiff":
            return {op: {"startDate": T0, "endDate": "$t", "unit": rng.choice(UNITS)}}
        if op in ("$year", "$hour", "$dayOfWeek"):
            return {op: rng.choice(["$t", {"$ifNull": ["$d", "$t"]}])}
        if op in ("$toDouble", "$toLong", "$toInt"):
            return {op: n()} if op != "$toInt" else {op: {"$trunc": [{"$mod": [n(), 1000]}, 0]}}
        if op == "$arrayElemAt":
            return {op: [{"$cond": [{"$isArray": "$a"}, "$a", [5]]}, rng.choice([0, -1, 1, 5])]}
        if op == "$indexOfArray":
            return {op: [{"$cond": [{"$isArray": "$a"}, "$a", []]}, rng.randrange(5)]}
        if op == "$pow":
            return {op: [n(), rng.choice([0, 1, 2])]}
        if op == "$sqrt":
            return {op: {"$abs": n()}}
        if op == "$bitAnd":
            return {op: [{"$ifNull": ["$w", 3]}, rng.choice([1, 6, Int64(5)])]}
        if op == "$convert":
            return {op: {"input": self.anything(st, depth + 1), "to": rng.choice(["double", "int", "long", "decimal"]),
                         "onError": -1, "onNull": -2}}
        if op == "$getField":
            return {op: {"field": "x", "input": {"$cond": [{"$eq": [{"$type": "$o"}, "object"]}, "$o", {}]}}}
        return {op: [self.anything(st, depth + 1), self.anything(st, depth + 1)]}  # $cmp

    def string(self, st: State, depth: int = 0) -> Any:
        rng = self.rng
        if depth >= 3 or rng.random() < 0.35:
            # (s is sometimes an int: string operators would fail on it, and which document fails
            # first depends on the read order)
            return rng.choice([{"$toString": {"$ifNull": ["$s", "none"]}}, rng.choice(STRINGS), {"$toString": "$w"}, "$m.h",
                               {"$ifNull": ["$o.y", ""]}])
        op = rng.choice(["$concat", "$toUpper", "$toLower", "$substrCP", "$trim", "$toString", "$dateToString",
                         "$cond", "$replaceAll", "$split0", "$type", "$switch"])
        s = lambda: self.string(st, depth + 1)  # noqa: E731
        if op == "$concat":
            return {op: [s() for _ in range(rng.randrange(1, 4))]}
        if op in ("$toUpper", "$toLower"):
            return {op: s()}
        if op == "$substrCP":
            return {op: [s(), rng.randrange(3), rng.randrange(4)]}
        if op == "$trim":
            return {op: {"input": s()}}
        if op == "$toString":
            return {op: rng.choice(["$w", "$t", "$_id", {"$ifNull": ["$oid", "none"]}, self.num(st, depth + 1)])}
        if op == "$dateToString":
            return {op: {"date": "$t", "format": rng.choice(["%Y-%m-%d", "%H:%M:%S.%L", "%j %U %u"])}}
        if op == "$cond":
            return {op: [self.boolean(st, depth + 1), s(), s()]}
        if op == "$replaceAll":
            return {op: {"input": s(), "find": "a", "replacement": "Z"}}
        if op == "$split0":
            return {"$arrayElemAt": [{"$split": [s(), "a"]}, 0]}
        if op == "$type":
            return {op: self.anything(st, depth + 1)}
        return {"$switch": {"branches": [{"case": self.boolean(st, depth + 1), "then": s()}], "default": "d"}}

    def date(self, st: State, depth: int = 0) -> Any:
        rng = self.rng
        if depth >= 3 or rng.random() < 0.4:
            return rng.choice(["$t", {"$ifNull": ["$d", "$t"]}])
        op = rng.choice(["$dateTrunc", "$dateAdd", "$dateSubtract", "$toDate"])
        if op == "$dateTrunc":
            body: dict[str, Any] = {"date": self.date(st, depth + 1), "unit": rng.choice(UNITS)}
            if rng.random() < 0.4:
                body["binSize"] = rng.choice([2, 5, 15])
            if rng.random() < 0.3:
                body["timezone"] = rng.choice(["Europe/Paris", "+05:30", "America/New_York"])
            if body["unit"] == "week" and rng.random() < 0.5:
                body["startOfWeek"] = rng.choice(["monday", "sunday"])
            return {op: body}
        if op in ("$dateAdd", "$dateSubtract"):
            return {op: {"startDate": self.date(st, depth + 1), "unit": rng.choice(UNITS), "amount": rng.randrange(-3, 4)}}
        return {op: {"$add": [{"$toLong": "$t"}, rng.randrange(-10**6, 10**6)]}}

    def boolean(self, st: State, depth: int = 0) -> Any:
        rng = self.rng
        op = rng.choice(["$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$and", "$or", "$not", "$in", "$isArray",
                         "$isNumber", "$regexMatch", "$anyElementTrue", "$setIsSubset"] if depth < 3 else
                        ["$eq", "$gt", "$lt", "$isNumber"])
        if op in ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte"):
            kind = rng.choice(["num", "num", "str", "date", "any"])
            return {op: [self.typed(kind, st, depth + 1), self.typed(kind, st, depth + 1)
                         if rng.random() < 0.4 else self.const(kind if kind != "any" else "num")]}
        if op in ("$and", "$or"):
            return {op: [self.boolean(st, depth + 1) for _ in range(rng.randrange(1, 3))]}
        if op == "$not":
            return {op: [self.boolean(st, depth + 1)]}
        if op == "$in":
            return {op: [self.anything(st, depth + 1), [self.const(k) for k in ("num", "str", "int")]]}
        if op in ("$isArray", "$isNumber"):
            return {op: self.anything(st, depth + 1)}
        if op == "$regexMatch":
            return {op: {"input": {"$toString": {"$ifNull": ["$s", ""]}}, "regex": rng.choice(["^o", "a.c", "K$", "^$"]),
                         "options": rng.choice(["", "i"])}}
        if op == "$anyElementTrue":
            return {op: [{"$cond": [{"$isArray": "$a"}, "$a", []]}]}
        return {op: [{"$cond": [{"$isArray": "$a"}, "$a", []]}, [0, 1, 2, 3, {"x": 1, "y": "ok"}]]}

    def array(self, st: State, depth: int = 0) -> Any:
        rng = self.rng
        arr = {"$cond": [{"$isArray": "$a"}, "$a", [0]]}
        op = rng.choice(["$map", "$filter", "$concatArrays", "$slice", "$reverseArray", "$range", "$sortArray",
                         "$firstN", "$objectToArray", "$zip", "$setUnion"])
        if op == "$map":
            return {op: {"input": arr, "as": "e", "in": {"$cond": [{"$isNumber": "$$e"}, {"$add": ["$$e", 1]}, "$$e"]}}}
        if op == "$filter":
            body = {"input": arr, "cond": {"$gt": ["$$this", rng.randrange(4)]}}
            if rng.random() < 0.4:
                body["limit"] = rng.randrange(1, 3)
            return {op: body}
        if op == "$concatArrays":
            return {op: [arr, [self.const("num")], {"$ifNull": [{"$cond": [{"$isArray": "$o.x"}, "$o.x", None]}, []]}]}
        if op == "$slice":
            return {op: [arr, rng.choice([1, -2, 3])]}
        if op == "$reverseArray":
            return {op: arr}
        if op == "$range":
            return {op: [0, {"$ifNull": ["$w", 2]}, rng.choice([1, 2, 3])]}
        if op == "$sortArray":
            return {op: {"input": arr, "sortBy": rng.choice([1, -1])}}
        if op == "$firstN":
            return {op: {"input": arr, "n": rng.randrange(1, 3)}}
        if op == "$objectToArray":
            return {op: {"$cond": [{"$eq": [{"$type": "$o"}, "object"]}, "$o", {"none": 1}]}}
        if op == "$zip":
            return {op: {"inputs": [arr, ["p", "q"]], "useLongestLength": rng.random() < 0.5, "defaults": [0, "z"]}
                    if rng.random() < 0.5 else {"inputs": [arr, ["p", "q"]]}}
        return {"$sortArray": {"input": {"$setUnion": [arr, [1, 2]]}, "sortBy": 1}}

    def obj(self, st: State, depth: int = 0) -> Any:
        rng = self.rng
        op = rng.choice(["$mergeObjects", "$setField", "$unsetField", "$literal", "doc", "$arrayToObject", "$let"])
        base = {"$cond": [{"$eq": [{"$type": "$o"}, "object"]}, "$o", {}]}
        if op == "$mergeObjects":
            return {op: [base, {"k": self.typed("num", st, depth + 1)}]}
        if op == "$setField":
            return {op: {"field": rng.choice(["x", "new", "a.b", "$dollar"]), "input": base, "value": self.anything(st, depth + 1)}}
        if op == "$unsetField":
            return {op: {"field": "x", "input": base}}
        if op == "$literal":
            return {op: {"$not_an_op": 1, "k": [1]}}
        if op == "$arrayToObject":
            return {op: [[["k1", self.typed("num", st, depth + 1)], ["k2", "$w"]]]}
        if op == "$let":
            return {op: {"vars": {"CURRENT": base}, "in": {"x2": "$x", "y2": "$y"}}}
        return {"p": self.typed("num", st, depth + 1), "q": self.typed("str", st, depth + 1)}

    def typed(self, kind: str, st: State, depth: int = 0) -> Any:
        if kind == "num" or kind == "int":
            return self.num(st, depth)
        if kind == "str":
            return self.string(st, depth)
        if kind == "date":
            return self.date(st, depth)
        if kind == "bool":
            return self.boolean(st, depth)
        if kind == "arr":
            return self.array(st, depth)
        if kind == "obj":
            return self.obj(st, depth)
        return self.anything(st, depth)

    def anything(self, st: State, depth: int = 0) -> Any:
        rng = self.rng
        r = rng.random()
        if depth >= 3 or r < 0.35:
            path = self._pick(st)
            return f"${path}" if path else self.const("any")
        if r < 0.45:
            return rng.choice(["$$ROOT.v", "$$CURRENT.s", {"$getField": rng.choice(["w", "s", "o"])},
                               {"$getField": {"field": "v", "input": "$$ROOT"}}])
        if r < 0.55:
            return self.more(st, depth)
        return self.typed(rng.choice(["num", "str", "date", "bool", "arr", "obj"]), st, depth)

    def more(self, st: State, depth: int) -> Any:
        """The other expression operators (pure functions of their operands; ``$rand`` and ``$meta``
        are not deterministic or need a text/geo read)."""
        rng = self.rng
        n = lambda: self.num(st, depth + 1)  # noqa: E731
        s = lambda: self.string(st, depth + 1)  # noqa: E731
        d = lambda: self.date(st, depth + 1)  # noqa: E731
        arr = {"$cond": [{"$isArray": "$a"}, "$a", [1, 2]]}
        w = {"$ifNull": ["$w", 3]}
        unit = rng.choice(["$dayOfMonth", "$dayOfYear", "$isoDayOfWeek", "$isoWeek", "$isoWeekYear", "$millisecond",
                           "$minute", "$month", "$second", "$week"])
        choices = [
            lambda: {"$allElementsTrue": [arr]},
            lambda: {rng.choice(["$bitOr", "$bitXor"]): [w, rng.choice([1, 6, Int64(9)])]},
            lambda: {"$bitNot": w},
            lambda: {"$const": rng.choice([1, "a", [1, 2]])},
            lambda: {"$dateFromParts": {"year": 2024, "month": {"$add": [w, 1]}, "day": rng.randrange(1, 29),
                                        "hour": rng.randrange(24)}},
            lambda: {"$dateFromString": {"dateString": rng.choice(["2024-03-01T10:00:00Z", "2024-03-01", "nope"]),
                                         "onError": None}},
            lambda: {"$dateToParts": {"date": d(), "iso8601": rng.random() < 0.5}},
            lambda: {unit: d()},
            lambda: {rng.choice(["$exp", "$ln", "$log10"]): {"$add": [{"$abs": {"$mod": [n(), 5]}}, 1]}},
            lambda: {"$log": [{"$add": [{"$abs": {"$mod": [n(), 50]}}, 1]}, 2]},
            lambda: {rng.choice(["$indexOfBytes", "$indexOfCP"]): [s(), "a"]},
            lambda: {rng.choice(["$ltrim", "$rtrim"]): {"input": s(), "chars": "o "}},
            lambda: {rng.choice(["$regexFind", "$regexFindAll"]): {"input": s(), "regex": rng.choice(["a(.)", "[0-9]+", "^o"])}},
            lambda: {"$replaceOne": {"input": s(), "find": "a", "replacement": "-"}},
            lambda: {rng.choice(["$setDifference", "$setIntersection", "$setEquals"]): [arr, [1, 2, 3]]},
            lambda: {rng.choice(["$strLenBytes", "$strcasecmp"]): s() if rng.random() < 0.5 else [s(), s()]},
            lambda: {rng.choice(["$substr", "$substrBytes"]): [s(), rng.randrange(3), rng.randrange(4)]},
            lambda: {rng.choice(["$toBool", "$toDecimal"]): rng.choice(["$w", "$v", "$b", n()])},
            lambda: {"$toObjectId": rng.choice(["65000007000000000000000a", "$oid", "bad"])},
            lambda: {"$toHashedIndexKey": self.anything(st, depth + 1)},
            lambda: {rng.choice(["$tsSecond", "$tsIncrement"]): "$nope"},
        ]
        return rng.choice(choices)()

    # ----------------------------------------------------------------------------- filters
    def filter(self, st: State, depth: int = 0) -> dict:
        rng = self.rng
        n = rng.choice([1, 1, 1, 2, 3])
        out: dict = {}
        for _ in range(n):
            out.update(self.clause(st, depth))
        return out

    def clause(self, st: State, depth: int = 0) -> dict:
        rng = self.rng
        r = rng.random()
        if depth < 2 and r < 0.12:
            op = rng.choice(["$or", "$and", "$nor"])
            return {op: [self.filter(st, depth + 1) for _ in range(rng.randrange(1, 4))]}
        if r < 0.2:
            return {"$expr": self.boolean(st)}
        if r < 0.23:
            return rng.choice([
                {"$jsonSchema": {"required": [rng.choice(["v", "w", "o"])],
                                 "properties": {"w": {"bsonType": "int", "minimum": rng.randrange(5)},
                                                "o": {"bsonType": ["object", "null"]}}}},
                {"$comment": "generated"},
                {"w": {rng.choice(["$bitsAllSet", "$bitsAllClear", "$bitsAnyClear"]): rng.choice([1, 6, [0, 2]])}},
            ])
        path = self._pick(st)
        if path is None:
            return {}
        kind = st.fields[path]
        ops = ["$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$exists", "$type", "$not", "value"]
        if kind == "str" or path in ("s", "o.y", "m", "m.h", "v"):
            ops += ["$regex", "regexobj"]
        if kind == "arr" or path == "a" or path == "o.x":
            ops += ["$elemMatch", "$size", "$all"]
        if kind in ("int", "num"):
            ops += ["$mod", "$bitsAnySet"]
        op = rng.choice(ops)
        value = lambda: self.value_for(path, kind if kind != "arr" else "int")  # noqa: E731
        if op == "value":
            return {path: value()}
        if op in ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte"):
            return {path: {op: value()}}
        if op in ("$in", "$nin"):
            vals = [value() for _ in range(rng.randrange(0, 4))]
            if rng.random() < 0.2:
                vals.append(Regex(rng.choice(["^o", "A", "^$"]), rng.choice(["", "i"])))
            return {path: {op: vals}}
        if op == "$exists":
            return {path: {op: rng.random() < 0.5}}
        if op == "$type":
            return {path: {op: rng.choice(TYPE_NAMES) if rng.random() < 0.8 else rng.sample(TYPE_NAMES, 2)}}
        if op == "$not":
            inner = rng.choice([{"$gt": value()}, {"$in": [value(), value()]}, {"$exists": True}, {"$type": "string"},
                                Regex("^o", "i")])
            return {path: {op: inner}}
        if op == "$regex":
            return {path: {"$regex": rng.choice(["^o", "a.?c", "K$", "^$", "\\.", "é"]), "$options": rng.choice(["", "i"])}}
        if op == "regexobj":
            return {path: Regex(rng.choice(["^w", "[0-9]", "^F"]), rng.choice(["", "i"]))}
        if op == "$elemMatch":
            if rng.random() < 0.5:
                return {path: {op: {rng.choice(["$gt", "$lt", "$gte"]): rng.randrange(6)}}}
            return {path: {op: {"x": {"$gte": rng.randrange(5)}, "y": rng.choice(STRINGS[:3])}}}
        if op == "$size":
            return {path: {op: rng.randrange(4)}}
        if op == "$all":
            return {path: {op: [rng.randrange(5) for _ in range(rng.randrange(1, 3))]}}
        if op == "$mod":
            return {path: {op: [rng.choice([2, 3, 5]), rng.randrange(2)]}}
        return {path: {op: rng.choice([1, 2, 6])}}  # $bitsAnySet

    # ----------------------------------------------------------------------------- stages
    def sort_spec(self, st: State, total: bool) -> dict:
        rng = self.rng
        keys = [p for p, k in st.fields.items() if p.split(".")[0] not in st.unordered and k != "root"]
        spec = {}
        for p in rng.sample(keys, min(len(keys), rng.randrange(0, 3))):
            spec[p] = rng.choice([1, -1])
        uniq = sorted(u for u in st.unique if u in st.fields)  # (set order varies by process)
        if (total or not spec) and uniq:
            spec[rng.choice(uniq)] = rng.choice([1, -1])
        if not spec:
            spec[rng.choice(keys) if keys else "_id"] = 1
        return spec

    def is_total(self, st: State, spec: dict) -> bool:
        return any(k in st.unique for k in spec)

    def stage(self, st: State, depth: int) -> tuple[dict, State]:
        """One stage valid for ``st`` and the state after it."""
        rng = self.rng
        choices = ["$match", "$match", "$project", "$addFields", "$set", "$unset", "$group", "$group", "$sort",
                   "$count", "$bucket", "$unwind", "$setWindowFields", "$setWindowFields", "$sortByCount",
                   "$replaceRoot", "$lookup", "$bucketAuto", "$densify", "$fill", "$unionWith"]
        if self.rng.random() < 0.1:
            choices.append("$redact")
        if depth == 0:
            choices.append("$facet")
        if st.ordered:
            choices += ["$limit", "$skip", "$limit"]
        name = rng.choice(choices)
        return getattr(self, "stage_" + name[1:])(st, depth)

    def stage_match(self, st, depth):
        return {"$match": self.filter(st)}, st

    def stage_redact(self, st, depth):
        # $redact is refused by Tidemark (224) on both kinds of collection: checks the error path
        return {"$redact": "$$KEEP"}, st

    def stage_sort(self, st, depth):
        spec = self.sort_spec(st, self.rng.random() < 0.7)
        return {"$sort": spec}, st.copy(ordered=self.is_total(st, spec))

    def stage_limit(self, st, depth):
        return {"$limit": self.rng.randrange(1, 40)}, st

    def stage_skip(self, st, depth):
        return {"$skip": self.rng.randrange(0, 40)}, st

    def stage_count(self, st, depth):
        return {"$count": "n"}, State({"n": "int"}, ordered=True, unique=frozenset({"n"}))

    def _projected(self, st: State, names: dict) -> State:
        unordered = st.unordered & set(names)
        return st.copy(fields=names, unordered=frozenset(unordered),
                       unique=frozenset(u for u in st.unique if u in names and names[u] == st.fields.get(u)))

    def stage_project(self, st, depth):
        rng = self.rng
        tops = sorted({p.split(".")[0] for p in st.fields})
        if rng.random() < 0.3:  # exclusion
            drop = rng.sample(tops, min(len(tops), rng.randrange(1, 3)))
            keep = {p: k for p, k in st.fields.items() if p.split(".")[0] not in drop}
            return {"$project": {d: 0 for d in drop}}, self._projected(st, keep)
        spec: dict = {}
        fields: dict = {}
        for p in rng.sample(tops, min(len(tops), rng.randrange(1, 4))):
            spec[p] = 1
            fields.update({q: k for q, k in st.fields.items() if q.split(".")[0] == p})
        for _ in range(rng.randrange(0, 3)):
            kind = rng.choice(["num", "str", "date", "bool", "arr", "obj", "any"])
            name = self._name()
            spec[name] = self.typed(kind, st)
            fields[name] = kind if kind != "any" else "any"
        if rng.random() < 0.2 and "o.x" in st.fields and "o" not in spec:
            spec["o.x"] = 1
            fields["o.x"] = "num"
        if "_id" in st.fields and "_id" not in spec:
            if rng.random() < 0.3:
                spec["_id"] = 0
            else:
                fields["_id"] = st.fields["_id"]
        if not spec:
            spec["_id"] = 1
        return {"$project": spec}, self._projected(st, fields)

    def stage_addFields(self, st, depth, name="$addFields"):
        rng = self.rng
        spec: dict = {}
        fields = dict(st.fields)
        unordered_roots: set = set()
        for _ in range(rng.randrange(1, 3)):
            kind = rng.choice(["num", "str", "date", "bool", "arr", "obj", "any", "root"])
            target = self._name() if rng.random() < 0.8 else rng.choice(["v", "s", "o.n", "w"])
            # "root": the whole document, whose top-level field order is the collection's own: it is
            # output, never sorted, grouped or compared on (kind "root" is never picked)
            spec[target] = self.typed(kind, st) if kind != "root" else "$$ROOT"
            if kind == "root" and st.unordered:
                unordered_roots.add(target.split(".")[0])
            top = target.split(".")[0]
            for q in [q for q in fields if q.split(".")[0] == top]:
                del fields[q]
            fields[target] = kind
        unique = frozenset(u for u in st.unique if u not in spec)
        return {name: spec}, st.copy(fields=fields, unique=unique, unordered=st.unordered | unordered_roots)

    def stage_set(self, st, depth):
        return self.stage_addFields(st, depth, "$set")

    def stage_unset(self, st, depth):
        tops = sorted({p.split(".")[0] for p in st.fields if p != "_id"} | {"nope"})
        drop = self.rng.sample(tops, min(len(tops), self.rng.randrange(1, 3)))
        keep = {p: k for p, k in st.fields.items() if p.split(".")[0] not in drop}
        return {"$unset": drop if len(drop) > 1 else drop[0]}, self._projected(st, keep)

    def group_key(self, st: State) -> tuple[Any, bool]:
        """(key, scalar): ``scalar`` when the key is never an array. A sort on a unique field holding
        arrays is not total (an array sorts by its least or greatest element)."""
        rng = self.rng
        r = rng.random()
        if r < 0.15:
            return None, True
        if r < 0.5:
            path = self._pick(st, ("int", "str", "bool", "any", "date"))
            if path is None:
                return None, True
            return f"${path}", st.fields[path] in ("int", "str", "bool", "date")
        if r < 0.65:
            return {"$dateTrunc": {"date": "$t" if "t" in st.fields else self.const("date"), "unit": rng.choice(UNITS)}}, True
        if r < 0.8:
            # a bare number or boolean there is an inclusion flag, which $group refuses (17390): a
            # constant key part is written as a $literal
            parts = {"k": self.ref(st, ("str", "int")), "j": self.ref(st, ("bool", "any"))}
            return {k: {"$literal": v} if isinstance(v, (bool, int, float)) else v for k, v in parts.items()}, True
        return self.typed(rng.choice(["str", "bool"]), st), True

    def accumulator(self, st: State) -> tuple[dict, str, bool]:
        """(spec, kind, unordered output)."""
        rng = self.rng
        ops = ["$sum", "$avg", "$min", "$max", "$count", "$stdDevPop", "$stdDevSamp", "$addToSet", "$push", "$top",
               "$bottom", "$topN", "$bottomN", "$maxN", "$minN", "$median", "$percentile", "$sum1"]
        if st.ordered:
            ops += ["$first", "$last", "$firstN", "$lastN", "$mergeObjects"]
        op = rng.choice(ops)
        num = lambda: self.typed("num", st) if rng.random() < 0.5 else self.ref(st, ("num", "int"))  # noqa: E731
        if op == "$sum1":
            return {"$sum": 1}, "int", False
        if op == "$count":
            return {op: {}}, "int", False
        if op in ("$sum", "$avg", "$stdDevPop", "$stdDevSamp"):
            return {op: num()}, "num", False
        # $min/$max/$minN/$maxN/$addToSet keep the first of equal values: computed numbers could
        # tie across types (0 and 0.0), so they read fields, whose types never tie
        raw = lambda: self.ref(st, ("num", "int", "str", "date", "bool"))  # noqa: E731
        if op in ("$min", "$max"):
            return {op: raw()}, "any", False
        if op == "$push" and st.ordered and rng.random() < 0.2:
            return {op: "$$ROOT"}, "root", bool(st.unordered)
        if op == "$addToSet":
            return {op: raw() if rng.random() < 0.7 else self.typed("str", st)}, "arr", True
        if op == "$push":
            return {op: self.typed(rng.choice(["num", "str", "any"]), st)}, "arr", not st.ordered
        if op in ("$top", "$bottom", "$topN", "$bottomN"):
            spec = self.sort_spec(st, True)
            if not self.is_total(st, spec):  # which of the tied documents comes first is unspecified
                return {"$count": {}}, "int", False
            body = {"sortBy": spec, "output": [self.anything(st), "$_id"] if rng.random() < 0.5 else self.anything(st)}
            if op.endswith("N"):
                body["n"] = rng.randrange(1, 4)
            return {op: body}, "any", False
        if op in ("$maxN", "$minN", "$firstN", "$lastN"):
            return {op: {"input": self.anything(st) if op in ("$firstN", "$lastN") else raw(), "n": rng.randrange(1, 4)}}, "arr", False
        if op in ("$median", "$percentile"):
            body = {"input": num(), "method": "approximate"}
            if op == "$percentile":
                body["p"] = [rng.choice([0.1, 0.5, 0.9, 1.0])]
            return {op: body}, "num", False
        if op == "$mergeObjects":
            return {op: self.typed("obj", st)}, "obj", False
        return {op: self.anything(st)}, "any", False  # $first/$last

    def stage_group(self, st, depth):
        rng = self.rng
        key, scalar = self.group_key(st)
        spec: dict = {"_id": key}
        fields = {"_id": "any"}
        unordered = set()
        for _ in range(rng.randrange(1, 4)):
            name = self._name("g")
            acc, kind, unord = self.accumulator(st)
            spec[name] = acc
            fields[name] = kind
            if unord:
                unordered.add(name)
        return {"$group": spec}, State(fields, ordered=False, unique=frozenset({"_id"} if scalar else ()),
                                       unordered=frozenset(unordered))

    def stage_sortByCount(self, st, depth):
        key, scalar = self.group_key(st)
        if key is None or isinstance(key, dict) and not any(k.startswith("$") for k in key):
            key, scalar = {"$toString": "$w"}, True  # a string, never an array
        return {"$sortByCount": key}, State({"_id": "any", "count": "int"}, unique=frozenset({"_id"} if scalar else ()))

    def stage_bucket(self, st, depth):
        rng = self.rng
        if rng.random() < 0.5:
            group_by, bounds = self.typed("num", st), sorted(rng.sample([-100, -10, 0, 5, 10, 50, 200, 10**11], 3))
        else:
            group_by, bounds = "$t" if "t" in st.fields else self.date(st), [T0 + dt.timedelta(days=d) for d in (0, 1, 2)]
        spec: dict = {"groupBy": group_by, "boundaries": bounds, "default": "other"}
        fields = {"_id": "any", "count": "int"}
        unordered = set()
        if rng.random() < 0.6:
            acc, kind, unord = self.accumulator(st)
            spec["output"] = {"x": acc}
            fields = {"_id": "any", "x": kind}
            if unord:
                unordered.add("x")
        return {"$bucket": spec}, State(fields, unique=frozenset({"_id"}), unordered=frozenset(unordered))

    def stage_bucketAuto(self, st, depth):
        # groupBy on a unique or numeric field with ties of one value: the boundaries depend only on sorted values
        spec = {"groupBy": self.rng.choice(["$_id", "$w", "$t"]), "buckets": self.rng.randrange(1, 6)}
        # the field still holds what its name says (not an overwritten $$ROOT, whose order is the
        # collection's, nor an array: found by bench.differential, seed 7, case 14407)
        if st.fields.get(spec["groupBy"][1:]) not in ("int", "date"):
            return self.stage_match(st, depth)
        return {"$bucketAuto": spec}, State({"_id": "obj", "_id.min": "any", "_id.max": "any", "count": "int"},
                                            unique=frozenset({"_id"}))

    def stage_unwind(self, st, depth):
        rng = self.rng
        arrays = [p for p, k in st.fields.items() if k == "arr" and "." not in p and p not in st.unordered]
        path = rng.choice(arrays) if arrays else "a"
        fields = dict(st.fields)
        fields[path] = "any"
        spec: Any = f"${path}"
        if rng.random() < 0.5:
            spec = {"path": f"${path}", "preserveNullAndEmptyArrays": rng.random() < 0.5}
            if rng.random() < 0.4:
                spec["includeArrayIndex"] = "idx"
                fields["idx"] = "int"
        return {"$unwind": spec}, st.copy(fields=fields, unique=frozenset())

    def stage_replaceRoot(self, st, depth):
        rng = self.rng
        if rng.random() < 0.5:
            spec = {"newRoot": {"$mergeObjects": [{"_id": "$_id" if "_id" in st.fields else 0},
                                                   {"$cond": [{"$eq": [{"$type": "$o"}, "object"]}, "$o", {"e": 1}]}]}}
            fields = {"_id": st.fields.get("_id", "int"), "x": "num", "y": "str", "z.k": "int", "e": "int"}
            unique = frozenset({"_id"}) if "_id" in st.unique else frozenset()
        else:
            spec = {"newRoot": {"k": self.anything(st), "n": self.typed("num", st)}}
            fields, unique = {"k": "any", "n": "num"}, frozenset()
        name = rng.choice(["$replaceRoot", "$replaceWith"])
        return {name: spec if name == "$replaceRoot" else spec["newRoot"]}, State(fields, ordered=st.ordered, unique=unique)

    def stage_lookup(self, st, depth):
        rng = self.rng
        name = self._name("j")
        r = rng.random()
        fields = dict(st.fields)
        unordered = set(st.unordered)
        if r < 0.4:
            spec = {"from": DIM, "localField": rng.choice(["w", "m.h", "a", "o.x", "s"]), "foreignField": rng.choice(["w", "h", "vals"]), "as": name}
            fields[name] = "arr"
        elif r < 0.7:
            spec = {"from": DIM, "let": {"x": self.ref(st, ("int", "num"))},
                    "pipeline": [{"$match": {"$expr": {"$lte": ["$w", "$$x"]}}}, {"$project": {"label": 1, "_id": 0}}],
                    "as": name}
            unordered.add(name)
        else:
            # the collection itself (the time-series one when reading it): the joined documents sorted by _id
            spec = {"from": SELF, "localField": rng.choice(["w", "s", "m"]), "foreignField": rng.choice(["w", "s", "m"]),
                    "pipeline": [{"$sort": {"_id": 1}}, {"$limit": 3}, {"$project": {"_id": 1, "v": 1}}], "as": name}
        return {"$lookup": spec}, st.copy(fields=fields, unordered=frozenset(unordered))

    def stage_unionWith(self, st, depth):
        rng = self.rng
        if rng.random() < 0.5:
            spec: Any = {"coll": DIM, "pipeline": [{"$project": {"_id": 1, "w": 1}}]}
        else:
            spec = {"coll": SELF, "pipeline": [{"$match": self.filter(State(dict(MEASUREMENT_FIELDS)))},
                                               {"$project": {"_id": 1, "w": 1, "t": 1}}]}
        fields = {p: k for p, k in st.fields.items()}
        fields.update({"_id": "any", "w": "int"})
        return {"$unionWith": spec}, State(fields, ordered=False, unique=frozenset(), unordered=st.unordered)

    def stage_facet(self, st, depth):
        rng = self.rng
        spec = {}
        unordered = set()
        for _ in range(rng.randrange(1, 3)):
            name = self._name("facet")
            sub, sub_st = self.stages(st, depth + 1, rng.randrange(1, 3))
            spec[name] = sub
            if not sub_st.ordered or sub_st.unordered:
                unordered.add(name)  # (nested unordered arrays make the comparison multiset too)
        # "root": the facets may hold whole measurements, whose top-level field order is the
        # collection's own (never compared, unwound or sorted on: bench.differential seed 8 case 2874)
        return {"$facet": spec}, State({k: "root" for k in spec}, ordered=True, unique=frozenset(),
                                       unordered=frozenset(unordered))

    def window_output(self, st: State, total: bool, sort_spec: dict) -> tuple[dict, str, bool]:
        rng = self.rng
        ops = ["$sum", "$avg", "$min", "$max", "$count", "$stdDevPop", "$addToSet", "$covariancePop",
               "$covarianceSamp", "$denseRank", "$rank"]
        one_num_sort = len(sort_spec) == 1 and st.fields.get(next(iter(sort_spec))) in ("int", "date")
        if total:
            ops += ["$push", "$first", "$last", "$shift", "$documentNumber", "$expMovingAvg", "$locf", "$integral",
                    "$derivative", "$topN", "$linearFill"]
        op = rng.choice(ops)
        num = lambda: self.ref(st, ("num", "int")) if rng.random() < 0.6 else self.typed("num", st)  # noqa: E731
        window: dict | None = None
        if rng.random() < 0.6:
            if one_num_sort and rng.random() < 0.5:
                key = next(iter(sort_spec))
                if st.fields[key] == "date":
                    window = {"range": [rng.choice([-2, -1, "unbounded"]), rng.choice([0, 1, "current"])],
                              "unit": rng.choice(["hour", "day"])}
                else:
                    window = {"range": [rng.choice([-3, "unbounded", -1]), rng.choice([0, 2, "current"])]}
            elif total:
                window = {"documents": [rng.choice([-2, -1, "unbounded", "current"]), rng.choice([0, 1, "unbounded"])]}
                if window["documents"][0] == "current" and window["documents"][1] == 0:
                    window["documents"][1] = 1
        if op in ("$denseRank", "$rank", "$documentNumber"):
            # ranks compare sortBy values, ordered by sort keys: an array (or a path through one)
            # ties with values it does not equal, and the ranks then depend on the input order
            key = next(iter(sort_spec))
            scalar = key in ("_id", "t", "w", "s", "b", "d", "o.z.k") and st.fields.get(key) not in ("arr", "any")
            if len(sort_spec) != 1 or not scalar or (op == "$documentNumber" and not total):
                return {"$sum": num()}, "num", False
            return {op: {}}, "int", False
        if op == "$shift":
            return {op: {"output": self.anything(st), "by": rng.choice([-1, 1, 2]), "default": "none"}}, "any", False
        if op == "$expMovingAvg":
            return {op: {"input": num(), rng.choice(["N", "alpha"]): rng.choice([2, 3]) if rng.random() < 0.5 else 0.5}
                    if False else {"input": num(), "N": rng.choice([2, 3])}}, "num", False
        if op == "$locf":
            return {op: self.ref(st, ("num", "str"))}, "any", False
        if op == "$linearFill":
            if not one_num_sort:
                return {"$sum": num()}, "num", False
            return {op: num()}, "num", False
        if op in ("$integral", "$derivative"):
            if not one_num_sort:
                return {"$avg": num()}, "num", False
            key = next(iter(sort_spec))
            body: dict = {"input": num()}
            if st.fields[key] == "date":
                body["unit"] = rng.choice(["hour", "minute"])
            return {op: body, "window": window or {"documents": [-1, 0]}}, "num", False
        if op in ("$covariancePop", "$covarianceSamp"):
            out = {op: [num(), num()]}
        elif op == "$topN":
            top_sort = self.sort_spec(st, True)
            if not self.is_total(st, top_sort):
                top_sort = sort_spec  # total here
            out = {op: {"n": 2, "sortBy": top_sort, "output": "$_id" if "_id" in st.fields else 1}}
        elif op == "$count":
            out = {op: {}}
        else:
            raw = self.ref(st, ("num", "int", "str", "date", "bool"))  # ties across types: see accumulator()
            out = {op: raw if op in ("$min", "$max", "$addToSet") else self.anything(st) if op in ("$push", "$first", "$last")
                   else num()}
        if window is not None:
            out["window"] = window
        unordered = op == "$addToSet"
        return out, "arr" if op in ("$push", "$addToSet", "$topN") else "num", unordered

    def stage_setWindowFields(self, st, depth):
        rng = self.rng
        spec: dict = {}
        if rng.random() < 0.6:
            keys = [f"${f}" for f in ("m", "w", "s", "b") if st.fields.get(f) not in (None, "root")]
            spec["partitionBy"] = rng.choice(keys + [{"$dateTrunc": {"date": "$t", "unit": "day"}}])
        sort_spec = self.sort_spec(st, rng.random() < 0.6)
        if rng.random() < 0.35 and "t" in st.fields:
            sort_spec = {"t": rng.choice([1, -1])}
        total = self.is_total(st, sort_spec)
        spec["sortBy"] = sort_spec
        output: dict = {}
        fields = dict(st.fields)
        unordered = set(st.unordered)
        for _ in range(rng.randrange(1, 3)):
            name = self._name("w")
            out, kind, unord = self.window_output(st, total, sort_spec)
            output[name] = out
            fields[name] = kind
            if unord:
                unordered.add(name)
        spec["output"] = output
        return {"$setWindowFields": spec}, st.copy(fields=fields, ordered=total, unordered=frozenset(unordered))

    def stage_densify(self, st, depth):
        rng = self.rng
        if "t" not in st.fields:
            return self.stage_match(st, depth)
        spec = {"field": "t", "range": {"step": rng.choice([6, 12]), "unit": "hour",
                                        "bounds": [T0, T0 + dt.timedelta(days=1)]}}  # (not "full": 1900..2107)
        if rng.random() < 0.5:
            # not "m": its null and missing values share a partition, and the value a generated
            # document copies is the first one read (order-dependent)
            spec["partitionByFields"] = [rng.choice(["b", "w"])]
        return {"$densify": spec}, st.copy(ordered=False, unique=frozenset())

    def stage_fill(self, st, depth):
        rng = self.rng
        if rng.random() < 0.5:
            return {"$fill": {"output": {"v": {"value": 0}, "s": {"value": "filled"}}}}, st
        if "_id" not in st.unique:
            return self.stage_match(st, depth)
        spec = {"sortBy": {"_id": 1}, "output": {"w": {"method": rng.choice(["locf", "linear"])}}}
        if rng.random() < 0.5:
            spec["partitionByFields"] = ["b"]
        return {"$fill": spec}, st.copy(ordered=True)

    def stages(self, st: State, depth: int, count: int) -> tuple[list, State]:
        out = []
        for _ in range(count):
            stage, st = self.stage(st, depth)
            out.append(stage)
        return out, st

    # ----------------------------------------------------------------------------- cases
    def pipeline_case(self) -> Case:
        st = State(dict(MEASUREMENT_FIELDS), unique=frozenset({"_id", "t"}))
        if self.rng.random() < 0.3:
            stages, st = self.read_shape(st)
            more, st = self.stages(st, 0, self.rng.randrange(0, 3))
            stages += more
        else:
            stages, st = self.stages(st, 0, self.rng.randrange(1, self.max_stages + 1))
        return Case("aggregate", pipeline=stages, ordered=st.ordered, unordered=st.unordered)

    # ----------------------------------------------------------------------------- time-series read shapes
    def time_meta_filter(self) -> dict:
        """What time-series reads push down: time ranges, meta predicates, measurement bounds."""
        rng = self.rng
        out: dict = {}
        if rng.random() < 0.7:
            lo = T0 + dt.timedelta(minutes=rng.randrange(-30, SPAN_S // 60))
            out["t"] = rng.choice([{"$gte": lo, "$lt": lo + dt.timedelta(minutes=rng.choice([1, 30, 90, 300]))},
                                   {rng.choice(["$gt", "$gte", "$lt", "$lte"]): lo}, {"$ne": lo}])
        if rng.random() < 0.5:
            r = rng.random()
            if r < 0.4:
                out["m.h"] = rng.choice([rng.choice(HOSTS), {"$in": rng.sample(HOSTS, 2)}, {"$ne": "h1"}])
            elif r < 0.7:
                out["m"] = self.value_for("m", "any")
            else:
                out["m"] = {rng.choice(["$gte", "$lt", "$exists", "$type"]): rng.choice(["a", 1, True, "object"])}
                if "$type" in out["m"]:
                    out["m"] = {"$type": rng.choice(["object", "string", "null", "int"])}
                elif "$exists" in out["m"]:
                    out["m"] = {"$exists": rng.random() < 0.5}
        if rng.random() < 0.4:
            field = rng.choice(["v", "w", "s", "o.x", "b", "d"])
            kind = MEASUREMENT_FIELDS[field]
            out[field] = {rng.choice(["$gt", "$gte", "$lt", "$lte", "$eq", "$ne"]): self.value_for(field, kind)}
        return out

    def read_shape(self, st: State) -> tuple[list, State]:
        """The shapes a time-series read plans specially (view.read_source): a leading $match pushed
        down to buckets, a columnar $group (by $dateTrunc of the time and/or the meta, accumulators of
        fields), its newest-first top-k ($sort {_id: -1} + $limit), lastpoint, projections."""
        rng = self.rng
        stages: list = []
        if rng.random() < 0.6:
            stages.append({"$match": self.time_meta_filter()})
        shape = rng.choice(["group", "group", "topk", "lastpoint", "project", "sortlimit", "count"])
        if shape in ("group", "topk"):
            trunc = {"$dateTrunc": {"date": "$t", "unit": rng.choice(["minute", "hour", "day"])}}
            if rng.random() < 0.3:
                trunc["$dateTrunc"]["binSize"] = rng.choice([5, 15, 2])
            key = rng.choice([trunc, trunc, "$m.h", "$m", {"h": "$m.h", "d": trunc}, None])
            spec: dict = {"_id": key}
            fields = {"_id": "any"}
            for _ in range(rng.randrange(1, 5)):
                name = self._name("c")
                spec[name] = rng.choice([{"$max": "$v"}, {"$min": "$w"}, {"$avg": "$v"}, {"$sum": "$w"}, {"$sum": 1},
                                         {"$max": "$u"}, {"$min": "$u"}, {"$avg": "$u"}, {"$sum": "$u"},
                                         {"$count": {}}, {"$max": "$t"}, {"$min": "$t"}, {"$avg": "$w"}, {"$max": "$s"},
                                         {"$sum": "$v"}, {"$min": "$o"}, {"$max": "$b"}, {"$min": "$d"}])
                fields[name] = "any"
            stages.append({"$group": spec})
            st = State(fields, unique=frozenset({"_id"} if key != "$m" else ()))  # (array metas)
            if (shape == "topk" or rng.random() < 0.3) and key != "$m":
                stages += [{"$sort": {"_id": rng.choice([-1, 1])}}, {"$limit": rng.randrange(1, 8)}]
                st = st.copy(ordered=True)
            return stages, st
        if shape == "lastpoint":
            key = rng.choice(["m.h", "m"])
            stages.append({"$sort": {key: 1, "t": -1}})
            spec = {"_id": f"${key}"}
            fields = {"_id": "any"}
            for name in rng.sample(["t", "v", "w", "s", "o", "_id"], rng.randrange(1, 4)):
                spec["l" + name] = {"$first": f"${name}"}
                fields["l" + name] = "any"
            stages.append({"$group": spec})
            return stages, State(fields, unique=frozenset({"_id"} if key != "m" else ()))
        if shape == "project":
            proj = {p: 1 for p in rng.sample(["t", "m", "v", "w", "o.x", "a", "_id"], rng.randrange(1, 4))}
            stages.append({"$project": proj})
            fields = {p: k for p, k in st.fields.items() if any(p == q or p.startswith(q + ".") for q in proj)}
            fields["_id"] = "int"
            return stages, self._projected(st, fields)
        if shape == "sortlimit":
            stages += [{"$sort": {"t": rng.choice([1, -1])}}, {"$limit": rng.randrange(1, 20)}]
            return stages, st.copy(ordered=True)
        stages.append({"$count": "n"})
        return stages, State({"n": "int"}, ordered=True, unique=frozenset({"n"}))

    def find_case(self) -> Case:
        rng = self.rng
        st = State(dict(MEASUREMENT_FIELDS), unique=frozenset({"_id", "t"}))
        find: dict = {"filter": (self.filter(st) if rng.random() < 0.6 else self.time_meta_filter())
                      if rng.random() < 0.85 else {}}
        r = rng.random()
        if r < 0.25:
            find["projection"] = {p: 0 for p in rng.sample(["v", "s", "o", "a", "m", "_id", "o.x"], rng.randrange(1, 3))}
        elif r < 0.5:
            proj: dict = {p: 1 for p in rng.sample(["v", "s", "o.y", "a", "m", "t", "w"], rng.randrange(1, 4))}
            if rng.random() < 0.5:
                proj["_id"] = 0
            find["projection"] = proj
        elif r < 0.65:
            find["projection"] = {"x": self.typed(rng.choice(["num", "str", "obj"]), st), "w": 1}
        # No find-only projection operators ($slice, $elemMatch, positional $, $meta): "find()
        # operations on views do not support" them (MongoDB manual, Projection Operators), and a
        # time-series collection is a view in MongoDB 7.0.
        ordered = False
        if rng.random() < 0.6:
            total = rng.random() < 0.7
            find["sort"] = self.sort_spec(st, total)
            ordered = self.is_total(st, find["sort"])
            if ordered and rng.random() < 0.6:
                find["limit"] = rng.randrange(1, 30)
            if ordered and rng.random() < 0.3:
                find["skip"] = rng.randrange(0, 50)
        return Case("find", find=find, ordered=ordered)

    def count_case(self) -> Case:
        rng = self.rng
        st = State(dict(MEASUREMENT_FIELDS))
        find: dict = {"filter": self.filter(st) if rng.random() < 0.5 else self.time_meta_filter()}
        if rng.random() < 0.3:
            find["skip"] = rng.randrange(0, 20)
        if rng.random() < 0.3:
            find["limit"] = rng.randrange(1, 50)
        return Case("count", find=find)

    def distinct_case(self) -> Case:
        rng = self.rng
        st = State(dict(MEASUREMENT_FIELDS))
        # distinct keeps the first of equal values: keys whose values never tie across types
        key = rng.choice(["m", "m.h", "v", "w", "s", "o.x", "o.y", "a", "a.x", "b", "d", "t", "o.z.k", "nope"])
        find = {"key": key, "filter": self.filter(st) if rng.random() < 0.5 else self.time_meta_filter()}
        return Case("distinct", find=find)

    def case(self) -> Case:
        rng = self.rng
        r = rng.random()
        case = (self.find_case() if r < 0.25 else self.count_case() if r < 0.29 else self.distinct_case()
                if r < 0.33 else self.pipeline_case())
        if rng.random() < 0.1 and case.kind != "distinct":  # indexes every collection has (ts_differential.INDEXES)
            case.hint = rng.choice(["t_-1", "w_1", {"w": 1}, {"t": -1}, {"$natural": 1}])
        if rng.random() < 0.08:
            # under a non-simple collation strings compare by ICU keys (no string in the documents
            # ties with another under it); the time-series fast paths are then off
            case.collation = rng.choice([{"locale": "en", "strength": 2}, {"locale": "fr"},
                                         {"locale": "en", "numericOrdering": True}])
        if rng.random() < 0.1 and case.kind in ("find", "aggregate"):
            case.batch_size = rng.randrange(1, 6)
        return case

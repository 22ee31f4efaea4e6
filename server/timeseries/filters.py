"""User filter -> bucket-level filter (spec §5.2; pure): the one derivation, used by reads on the view,
explain, the choice of a buckets index and updates/deletes of measurements.

``derive`` turns the parsed user filter into a ``BucketFilter``: an MQL filter over the buckets
collection (``mql``: what explain shows and what update/delete and the index choice use), the bucket
predicate compiled from *that same structure* (``predicate``, run by reads on bucketview objects: what
it derives from a stored bucket is remembered with its decoded parts), and the clustered ``_id``
range of bucket starts (``lo_s``/``hi_s``). Contract: the bucket filter may be *loose* (keep a bucket
holding no matching measurement) but never strict; the per-measurement filter always runs after
unpacking — unless ``exact`` (the filter only names the meta field: the bucket filter decides).
The same derivation also writes ``shown``: the bucket filter as mongod 7.0 writes it for explain
(``bucket_unpacker.cpp`` ``createComparisonPredicate``, a collection without mixed-schema buckets):
``$_internalExpr*`` comparisons on control min/max (no type bracketing: they compare in BSON order,
so no mixed-type or NaN guard), a time comparison with its ``D ± bucketMaxSpanSeconds`` bounds and
``_id`` bounds, ``$exists`` on both control min and max. It is only shown; ``mql`` is what runs.

- predicates only on the meta field (``m``, ``m.x``) are renamed onto ``meta`` and evaluated exactly
  (missing meta <-> bucket without ``meta``);
- comparisons of the time field with a date bound ``control.min/max.<time>`` and the ``_id`` range
  (a measurement at ``t`` lies in a bucket starting in ``[t - span, t]``); each bounds both control
  fields (a bucket spans less than ``span``), as mongod's do, so an index scan on either is two-sided;
- comparisons of a top-level measurement field with a scalar bound ``control.min/max.<field>``, kept
  also when the bucket's min and max there are of two BSON types (they then bound no single type):
  ``{$or: [<bound>, {$expr: {$ne: [{$type: '$control.min.f'}, {$type: '$control.max.f'}]}}]}``;
- ``$exists`` / ``$elemMatch`` of a top-level field: ``control.min.<f>`` exists;
- anything else (``$not``, ``$nor``, ``$expr``, regexes, dotted measurement paths...) keeps every bucket.

A partial index's filter takes the same derivation under mongod's createIndex policy
(``refuse_ineligible``, ``assume_no_mixed_schema``): a predicate on the time or a measurement field that
has no bucket-level form mongod would give raises ``Ineligible`` (createIndex answers 5916301), and no
``$expr`` guard for buckets of mixed types (mongod checks none is left when the index is built).

Under a non-simple collation (``collation``: the operation's effective ``collation.Collation``), or
on a collection whose default collation is not simple (its buckets' control min/max order strings by
it, ``control_collation``), no string operand bounds control min/max, while meta predicates stay
exact: the bucket's ``meta`` is the measurements' meta, compared under the same collation. Whoever compiles
``mql`` (updates, deletes, the index choice) compiles it with ``BucketFilter.collation``.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import functools
import math
import re
import sys
from collections.abc import Callable
from typing import Any, TypeGuard, cast

from bson.datetime_ms import DatetimeMS
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.objectid import ObjectId
from bson.regex import Regex as BsonRegex

from tidemark.query.index_bounds import expr_comparisons
from tidemark.query.match import compile_filter, compile_node
from tidemark.query.match_ast import (
    All,
    AlwaysFalse,
    AlwaysTrue,
    And,
    Bits,
    Cmp,
    ElemMatch,
    Exists,
    Expr,
    Geo,
    In,
    JsonSchema,
    Mod,
    Node,
    Nor,
    Not,
    Or,
    Regex,
    Size,
    Type,
)
from tidemark.query.values import bson_type_name, compare
from tidemark.timeseries.bucketdoc import MetaPoint, date_ms, ms_to_date, value_points
from tidemark.timeseries.minmax import BOUNDED_CLASSES, type_class

BucketPredicate = Callable[[Any], bool]  # a bucketview object -> keep it?
# (the geo operators bound a 2d / 2dsphere index on a meta path; on control paths only _CONTROL_BOUNDS)
_INDEX_OPERATORS = frozenset({"$eq", "$in", "$gt", "$gte", "$lt", "$lte", "$regex", "$options", "$geoWithin",
                              "$geoIntersects"})
_CONTROL_BOUNDS = frozenset({"$gt", "$gte", "$lt", "$lte"})
_MISSING = object()
_STRUCTURAL = (And, Or, Nor, Not)


@dataclasses.dataclass
class BucketFilter:
    """See the module. ``mql`` {} and ``predicate`` None: every bucket. ``collation``: the one ``mql``
    compares strings with (None = simple)."""

    mql: dict[str, Any] = dataclasses.field(default_factory=dict)
    predicate: BucketPredicate | None = None
    lo_s: int | None = None
    hi_s: int | None = None
    exact: bool = False
    collation: Any = None
    # mongod 7.0's form (see the module), made on first use: only explain reads it
    shown_of: Callable[[], dict[str, Any]] = dict

    @property
    def shown(self) -> dict[str, Any]:
        return self.shown_of()

    @property
    def prunes(self) -> bool:
        return self.predicate is not None or self.lo_s is not None or self.hi_s is not None

    def index_filter(self) -> dict[str, Any] | None:
        """The top-level conjuncts of ``mql`` a buckets index can bound (comparisons, ``$in`` and geo operators of
        meta paths, an ``$or`` of equalities of one meta path as its ``$in``, time bounds on control), for
        the index choice."""
        mql = self.mql
        if not mql:
            return None
        # (few calls — loops and ``in`` tests, not issuperset / get / isinstance calls —: every indexed
        # read asks it)
        parts = mql["$and"] if "$and" in mql else (mql,)
        out: dict[str, Any] = {}
        for part in parts:
            if len(part) != 1:
                continue
            for path in part:
                cond = part[path]
            if path == "$or":
                as_in = _or_as_in(cond)
                if as_in is None:
                    continue
                path, cond = as_in
            if path[:8] == "control.":
                if type(cond) is not dict:
                    continue
                other = False  # a key that is no bound
                for k in cond:
                    if k not in _CONTROL_BOUNDS:
                        other = True
                        break
                if other:
                    continue
                if path in out:  # (a control path's first condition passed here too: a bounds document)
                    out[path] = {**out[path], **cond}
                else:
                    out[path] = cond
                continue
            if path[:4] != "meta":
                continue
            if isinstance(cond, dict):
                other = False  # an operator no index bounds
                for k in cond:
                    if k[:1] == "$" and k not in _INDEX_OPERATORS:
                        other = True
                        break
                if other:
                    continue
            if path not in out:
                out[path] = cond
            else:
                known = out[path]
                if isinstance(known, dict) and isinstance(cond, dict):
                    out[path] = {**known, **cond}
        return out or None


def _or_as_in(branches: Any) -> tuple[str, dict[str, Any]] | None:
    """An ``$or`` whose every branch is an equality or a ``$in`` of one same meta path, as that path's
    ``$in`` of all their values (mongod's optimizer rewrites such an ``$or`` into the ``$in``): the index
    choice bounds the path by those points. None for any other ``$or`` (a regex value included: a
    ``$in`` reads it as a pattern, an equality as a value)."""
    if not isinstance(branches, list) or not branches:
        return None
    path: str | None = None
    values: list[Any] = []
    for branch in branches:
        if not isinstance(branch, dict) or len(branch) != 1:
            return None
        (p, cond), = branch.items()
        if not p.startswith("meta") or path not in (None, p):
            return None
        path = p
        if isinstance(cond, dict) and any(k.startswith("$") for k in cond):
            if len(cond) != 1:
                return None
            (op, arg), = cond.items()
            if op == "$eq":
                found = [arg]
            elif op == "$in" and isinstance(arg, list):
                found = arg
            else:
                return None
        else:
            found = [cond]
        if any(isinstance(v, BsonRegex | re.Pattern) for v in found):
            return None
        values.extend(found)
    return cast(str, path), {"$in": values}


def with_expr_implications(node: Node, time_field: str, meta_field: str | None,
                           variables: dict[str, Any] | None) -> Node:
    """``node`` and the predicates its ``$expr`` conjuncts imply on the time and meta fields, for the
    bucket filter and the index choice (the ``$expr`` itself still decides each measurement). mongod 7.0
    rewrites ``$expr`` comparisons of a field and a constant into ``$_internalExpr*`` predicates, which a
    time-series read turns into bucket-level ones (BucketSpec::createPredicatesOnBucketLevelField): a
    ``$lookup`` into a time-series collection joined by ``let`` variables on the meta field and a time
    window reads only the buckets of that series and window. Implied, so safe to add: a comparison of
    the time field (a date in every measurement) with a date is the type-bracketed one; an equality of
    a meta path with a scalar holds no array on the path, so the matcher's equality holds."""
    conjuncts = node.children if type(node) is And else (node,)
    implied: list[Node] = []
    for conjunct in conjuncts:
        if type(conjunct) is Expr:
            for path, op, value in expr_comparisons(conjunct.expr, variables or {}):
                if path == time_field and isinstance(value, _dt.datetime | DatetimeMS) or op == "$eq" and (
                        meta_field is not None and (path == meta_field or path.startswith(meta_field + "."))):
                    implied.append(Cmp(path, op, value))
    return And((*conjuncts, *implied)) if implied else node


# A read's filter is planned once per shape and bound to each query's values. ``FilterShape``: what
# a shape fixes (``shape_of``); ``Binder``: a node of the shape -> its bucket-filter part (mql,
# predicate, lo_s, hi_s, exact, shown_of) or None (no bound: keep every bucket). A binder reads every
# value from the node it is given, never from the node its shape was first seen with (it holds none:
# ``_Deriver.template``).
Binder = Callable[[Any], "tuple[Any, ...] | None"]
_SHAPES_MAX = 256
_BINDERS_MAX = 16  # derivation parameter sets per shape (collations, policies); cleared when full


class FilterShape:
    """What a filter's shape (``shape_key``) fixes on a collection's time and meta fields, made once
    per shape (``shape_of``) and shared by every read of it (any thread): the bucket-filter binder per
    set of derivation parameters (``binders``), the column filter's template (``rowfilter``,
    ``columns``), the columnar ``$group``'s condition template (``columnar``, ``conditions``) and the
    top-level fields the filter reads (``view``, ``fields``: (whether the shape fixes them,
    ``fields_fixed``; the fields when it does)). Each part is made the first time a read asks for it and
    stored whole; none changes after. ``exprs``: the filter has ``$expr`` conjuncts (made with the
    shape): only then can ``with_expr_implications`` add to it."""

    __slots__ = ("binders", "columns", "conditions", "fields", "exprs")

    def __init__(self, node: Node | None = None) -> None:
        self.exprs = node is not None and any(type(c) is Expr for c in (node.children if type(node) is And
                                                                         else (node,)))
        self.binders: dict[tuple[Any, ...], Binder] = {}
        self.columns: Any = None
        self.conditions: Any = None
        self.fields: tuple[bool, frozenset[str] | None] | None = None


# ``FilterShape``s by (``shape_key``, time field, meta field); cleared when full
_SHAPES: dict[tuple[Any, ...], FilterShape] = {}


def shape_of(node: Node, time_field: str, meta_field: str | None) -> FilterShape:
    """The ``FilterShape`` of ``node`` on these fields (made when first seen)."""
    key = (shape_key(node), time_field, meta_field)
    shape = _SHAPES.get(key)
    if shape is None:
        if len(_SHAPES) >= _SHAPES_MAX:
            _SHAPES.clear()
        shape = _SHAPES[key] = FilterShape(node)
    return shape


def shape_key(node: Node) -> tuple[Any, ...]:
    """What the plans of ``node`` decide from its structure alone: node kinds, paths, operators and
    the structure under an ``$elemMatch`` (which paths are the meta's, whether a part has an MQL form,
    ``render``, read it), never a value (``$in`` members, operands, regexes, regions are read by the
    binders)."""
    # (matched by type, read through an Any: no typing.cast call, whose run-time cost is a Python call,
    # on a walk every time-series read makes)
    kind = type(node)
    any_node: Any = node
    if kind is And or kind is Or or kind is Nor:
        # (a comparison or ``$in`` child keyed here, as below, without a call: every read's filter is a
        # conjunction of such leaves)
        key: tuple[Any, ...] = (kind,)
        for child in any_node.children:
            child_kind = type(child)
            if child_kind is Cmp:
                key += ((child_kind, child.path, child.op),)
            elif child_kind is In:
                key += ((child_kind, child.path, None),)
            else:
                key += (shape_key(child),)
        return key
    if kind is Not:
        return (kind, shape_key(any_node.child))
    if kind is Cmp:
        return (kind, any_node.path, any_node.op)
    if kind is In:  # (the generic form's, without its two getattr calls: every TSBS read has one)
        return (kind, any_node.path, None)
    if kind is ElemMatch:
        return (kind, any_node.path, any_node.value_form, shape_key(any_node.child))
    return (kind, getattr(node, "path", None), getattr(node, "op", None))


def fields_fixed(node: Node) -> bool:
    """The fields ``node`` reads (``match.filter_fields``: each leaf's path, ``$elemMatch``'s own) are
    fixed by its shape (``shape_key``: the kinds and paths): no ``$expr`` or ``$jsonSchema``, whose
    fields are in their values, in its ``$and``/``$or``/``$nor``/``$not`` tree."""
    kind = type(node)
    any_node: Any = node
    if kind is And or kind is Or or kind is Nor:
        return all(fields_fixed(child) for child in any_node.children)
    if kind is Not:
        return fields_fixed(any_node.child)
    return kind is not Expr and kind is not JsonSchema


def _none(node: Node) -> None:
    """The binder of a node that bounds no bucket."""
    return None


class Ineligible(Exception):
    """A predicate on the time or a measurement field with no bucket-level form (``derive`` with
    ``refuse_ineligible``): ``reason`` is mongod's wording, ``predicate`` the predicate as mongod
    serializes it (createIndex reports both, code 5916301)."""

    def __init__(self, reason: str, node: Node):
        super().__init__(reason)
        self.reason = reason
        self.predicate = serialize(node)


def derive(node: Node | None, time_field: str, meta_field: str | None, span_s: int, *,
           collation: Any = None, control_collation: Any = None, refuse_ineligible: bool = False,
           assume_no_mixed_schema: bool = False, shape: FilterShape | None = None) -> BucketFilter:
    """The bucket filter of a parsed user filter (see the module); ``collation``: the operation's
    effective collation (``collation.Collation``, None = simple); ``control_collation``: the
    collection's default, which orders the strings of control min/max. ``refuse_ineligible``: raise
    ``Ineligible`` where mongod's IneligiblePredicatePolicy::kError does, instead of keeping every
    bucket; ``assume_no_mixed_schema``: no guard for buckets whose min and max are of two types.
    ``shape``: ``shape_of(node, time_field, meta_field)`` when the caller has it. The derivation is the
    shape's binder (made the first time) bound to ``node``."""
    if node is None or type(node) is AlwaysTrue:  # (no subclass: no isinstance call)
        return BucketFilter(collation=collation)
    if shape is None:
        shape = shape_of(node, time_field, meta_field)
    params = (span_s, collation, control_collation, refuse_ineligible, assume_no_mixed_schema)
    binder = shape.binders.get(params)
    if binder is None:
        binder = _Deriver(time_field, meta_field, span_s, collation, control_collation, refuse_ineligible,
                          assume_no_mixed_schema).template(node)
        if len(shape.binders) >= _BINDERS_MAX:
            shape.binders.clear()
        shape.binders[params] = binder
    part = binder(node)
    if part is None:
        return BucketFilter(collation=collation)
    mql, predicate, lo, hi, exact, shown_of = part
    return BucketFilter(mql, predicate, lo, hi, exact, collation, shown_of)


def meta_only(node: Node, meta_field: str) -> bool:
    """``node`` names the meta field (``m``, ``m.x``) and nothing else."""
    return _meta_paths(node, meta_field, meta_field + ".") > 0


def _meta_paths(node: Node, meta_field: str, prefix: str) -> int:
    """How many paths ``node`` names, all of them the meta field or under it; -1 as soon as one is
    elsewhere or a node has no path ($expr, $jsonSchema...)."""
    if isinstance(node, _STRUCTURAL):
        n = 0
        for child in node.children if hasattr(node, "children") else (node.child,):
            k = _meta_paths(child, meta_field, prefix)
            if k < 0:
                return -1
            n += k
        return n
    path = getattr(node, "path", None)
    return 1 if path is not None and (path == meta_field or path.startswith(prefix)) else -1


def decided_per_bucket(node: Node, meta_field: str | None) -> bool:
    """True when the bucket filter of a filter holding the conjunct ``node`` decides it exactly for
    every bucket (``derive`` makes it an exact part: a meta-only predicate with an MQL form): the
    measurements of a bucket that passes the bucket filter all match it."""
    if meta_field is None or not meta_only(node, meta_field):
        return False
    try:
        # (whether ``render`` finds an MQL form depends on the node kinds and on which paths are
        # equal, not on their names: the node itself answers as its renaming onto ``meta`` would)
        render(node)
    except NoMqlForm:
        return False
    return True


class _Deriver:
    """Builds a shape's ``Binder`` (``template``); a binder's part is (mql, predicate, lo_s, hi_s, exact,
    shown_of) or None (no bound: keep every bucket); ``shown_of()`` makes explain's form of the part
    (most reads never ask)."""

    def __init__(self, tf: str, mf: str | None, span_s: int, collation: Any, control_collation: Any = None,
                 refuse: bool = False, unmixed: bool = False):
        self.tf, self.mf, self.span_s, self.collation = tf, mf, span_s, collation
        # string operands bound control min/max only when both compare binary-wise
        self.simple = collation is None and control_collation is None
        self.refuse, self.unmixed = refuse, unmixed
        self.meta_prefix = None if mf is None else mf + "."
        self.low, self.high = "control.min." + tf, "control.max." + tf
        self.time_key = time_bounds_key(tf)
        self.time_alone: Binder | None = None  # (``bind_time``)

    def ineligible(self, node: Node, reason: str) -> None:
        """No bucket-level form for ``node``: None (keep every bucket), or refused (``refuse``)."""
        if self.refuse:
            raise Ineligible(reason, node)

    def on_meta(self, path: str) -> bool:
        mf = self.mf
        return mf is not None and (path == mf or path.startswith(cast(str, self.meta_prefix)))

    def template(self, node: Node) -> Binder:
        """The binder of ``node``'s shape (see ``Binder``): every decision that reads only the
        structure (node kinds, paths, operators) taken here, once per shape; what reads a value is
        left to the binder, which reads it from the node it is given."""
        mf = self.mf
        fallback = self.structural(node)
        if mf is not None and _meta_paths(node, mf, cast(str, self.meta_prefix)) > 0:  # meta_only
            collation = self.collation

            def bind_meta(n: Node) -> tuple[Any, ...] | None:
                renamed = _rename(n, mf)
                try:
                    mql = render(renamed)
                    head = _OfHead(compile_node(renamed, collation=collation), renamed if collation is None else None)
                    return (mql, head, None, None, True, lambda: mql)
                except NoMqlForm:
                    # ($near) a conjunction keeps its other parts; the per-measurement filter decides
                    return fallback(n)
            return bind_meta
        return fallback

    def structural(self, node: Node) -> Binder:
        """``template`` of a node not taken as a meta-only predicate (or without an MQL form)."""
        if isinstance(node, And):
            binders = [self.template(child) for child in node.children]
            # the comparisons of the time field give their checks: one ``_TimeBounds`` of them all
            return self.conjunction([_none if _is_time(b) else b for b in binders], [_is_time(b) for b in binders])
        if isinstance(node, Or):
            return self.disjunction([self.template(child) for child in node.children])
        path = getattr(node, "path", None)
        if path is not None and self.on_meta(path):
            return _none  # a meta predicate with no MQL form ($near): the per-measurement filter decides
        if isinstance(node, Cmp):
            if path == self.tf:
                return self.bind_time
            if self.measurement(cast(str, path)):
                simple, unmixed = self.simple, self.unmixed

                def bind_measurement(n: Any) -> tuple[Any, ...] | None:
                    self.check_operand(n, n.value, "")
                    if not simple and type(n.value) is str:
                        return None
                    return _measurement_bounds(n.path, n.op, n.value, unmixed)
                return bind_measurement

            def bind_other(n: Any) -> None:
                self.check_operand(n, n.value, "")
            return bind_other
        if isinstance(node, In):
            return self.bind_in if self.measurement(cast(str, path)) else self.check_in
        if isinstance(node, (Exists, ElemMatch)):
            elem = isinstance(node, ElemMatch)
            if not self.measurement(cast(str, path)):
                return self.refused if elem else _none

            def bind_exists(n: Any) -> tuple[Any, ...]:
                if elem:
                    self.ineligible(n, "can't handle this predicate")
                min_path = "control.min." + n.path
                shown = [{min_path: {"$exists": True}}, {"control.max." + n.path: {"$exists": True}}]
                return ({min_path: {"$exists": True}},
                        lambda b: _control(b.summary(), "min", n.path) is not _MISSING,
                        None, None, False, lambda: _and(shown))
            return bind_exists
        if not isinstance(node, (AlwaysTrue, Exists, Expr, Geo)):
            # mongod keeps every bucket for $expr and bounds $geoWithin / $geoIntersects with a bucket
            # predicate of its own: neither is refused
            return self.refused
        return _none

    def refused(self, n: Node) -> None:
        self.ineligible(n, "can't handle this predicate")

    def check_in(self, n: Any) -> None:
        """An ``$in`` on a path control min/max do not describe: only mongod's refusals."""
        if n.regexes:
            self.ineligible(n, "can't handle $regex predicate (inside $in predicate)")
        if any(v is None for v in n.values):
            self.ineligible(n, "can't handle {$eq: null} predicate (inside $in predicate)")
        for value in n.values:
            self.check_operand(Cmp(n.path, "$eq", value), value, " (inside $in predicate)")

    def bind_in(self, n: Any) -> tuple[Any, ...] | None:
        """An ``$in`` on a top-level measurement field: the alternatives' bounds."""
        self.check_in(n)
        if not n.regexes and n.values and not (not self.simple and any(type(v) is str for v in n.values)):
            values = list(n.values)
            parts: list[tuple[Any, ...] | None] = []
            if len(values) > _ENVELOPE_FROM:
                # per type, one range from the least to the greatest value instead of a bound per value
                # (100,000 values compiled 100,000 bounds: 5 s; every bucket then tested them all)
                ordered: dict[int, list[Any]] = {}
                rest = []
                for v in values:
                    if type(v) in _RANGED_TYPES and not (type(v) is float and math.isnan(v)):
                        ordered.setdefault(type_class(v), []).append(v)
                    else:
                        rest.append(v)
                for group in ordered.values():
                    parts.append(_envelope(n.path, min(group, key=_BSON_ORDER), max(group, key=_BSON_ORDER),
                                           self.unmixed))
                values = rest
            parts += [_measurement_bounds(n.path, "$eq", v, self.unmixed) for v in values]
            if not _all_bounded(parts):
                return None
            predicates = [p[1] for p in parts]
            return ({"$or": [p[0] for p in parts]}, lambda b: any(p(b) for p in predicates), None, None,
                    False, lambda: {"$or": [p[5]() for p in parts]})
        return None

    def conjunction(self, binders: list[Binder], times: list[bool]) -> Binder:
        """The binder of a conjunction (``times``: which children are comparisons of the time field: the
        binder binds them itself, see below); given a comparison of the time field itself (``bind_time``),
        the binder of that one comparison."""
        tf, key, span_s, low, high = self.tf, self.time_key, self.span_s, self.low, self.high
        span_ms = span_s * 1000
        check_operand = self.check_operand
        pairs = list(zip(binders, times, strict=True))

        def bind_and(n: Any) -> tuple[Any, ...] | None:
            # one pass over the children's parts (every read's filter is a conjunction)
            flat: list[dict[str, Any]] = []  # the parts' mql, flattened (``_and`` of them)
            kept = []  # their shown_of
            predicates = []
            checks: list[Any] = []  # of every time bound, in order: one predicate, the first
            lo = hi = None
            exact = True
            for (binder, timed), child in zip(pairs, n.children if type(n) is And else (n,), strict=True):
                if timed:
                    # A comparison of the time field, bound here (no call: every read has one or two).
                    # A bucket spans less than ``span``: one starting before d - span ends before d, one
                    # starting after d ends before d + span. Each comparison therefore bounds both control
                    # fields, so an index scan is bounded on both sides whichever of them the index leads
                    # with ({t: -1} leads with control.max: a window's upper bound must reach it, or every
                    # later bucket of a series is read). Never exact; its check joins the ``_TimeBounds``.
                    value = child.value
                    d_ms = date_ms(value)
                    exact = False
                    if d_ms is None:
                        check_operand(child, value, "")  # (a date passes all of them: only a non-date is checked)
                        continue  # a non-date never equals a date: the per-measurement filter answers
                    op = child.op
                    d_floor_s = d_ms // 1000
                    earliest_ms, latest_ms = d_ms - span_ms, d_ms + span_ms
                    if op == "$eq":
                        flat += ({low: {"$lte": value}}, {high: {"$gte": value}},
                                 {low: {"$gte": ms_to_date(earliest_ms)}}, {high: {"$lte": ms_to_date(latest_ms)}})
                        lo_s: int | None = d_floor_s - span_s
                        hi_s: int | None = d_floor_s
                    elif op == "$gt" or op == "$gte":
                        flat += ({high: {op: value}}, {low: {op: ms_to_date(earliest_ms)}})
                        lo_s, hi_s = d_floor_s - span_s, None
                    else:
                        flat += ({low: {op: value}}, {high: {op: ms_to_date(latest_ms)}})
                        lo_s, hi_s = None, d_floor_s
                    checks.append((op, d_ms, earliest_ms, latest_ms))
                    kept.append(functools.partial(_shown_time_bounds, low, high, op, value, d_ms, span_s))
                else:
                    p = binder(child)
                    if p is None:
                        exact = False
                        continue
                    mql = p[0]
                    if "$and" in mql and len(mql) == 1:  # (``_and``: the key first, most parts hold none)
                        flat += mql["$and"]
                    else:
                        flat.append(mql)
                    kept.append(p[5])
                    if not p[4]:
                        exact = False
                    if type(p[1]) is _TimeBounds:
                        checks.extend(p[1].checks)
                    elif p[1] is not None:
                        predicates.append(p[1])
                    lo_s, hi_s = p[2], p[3]
                if lo_s is not None and (lo is None or lo_s > lo):
                    lo = lo_s
                if hi_s is not None and (hi is None or hi_s < hi):
                    hi = hi_s
            if not kept:
                return None
            if checks:  # first: it narrows a chunk for the others with one comparison per check
                predicates.insert(0, _TimeBounds(tf, tuple(checks), key))
            predicate = None if not predicates else predicates[0] if len(predicates) == 1 else \
                _AllOf(tuple(predicates))
            return (flat[0] if len(flat) == 1 else {"$and": flat}, predicate, lo, hi, exact,
                    lambda: _and([shown() for shown in kept]))
        return bind_and

    @staticmethod
    def disjunction(binders: list[Binder]) -> Binder:
        def bind_or(n: Any) -> tuple[Any, ...] | None:
            parts = [binder(child) for binder, child in zip(binders, n.children, strict=True)]
            if not _all_bounded(parts):
                return None
            lo = None if any(p[2] is None for p in parts) else min(p[2] for p in parts)
            hi = None if any(p[3] is None for p in parts) else max(p[3] for p in parts)
            predicates = [p[1] for p in parts]
            return ({"$or": [p[0] for p in parts]}, lambda b: any(p(b) for p in predicates), lo, hi,
                    all(p[4] for p in parts), lambda: {"$or": [p[5]() for p in parts]})
        return bind_or

    def check_operand(self, node: Cmp, value: Any, where: str) -> None:
        """mongod's refusals of a comparison's operand (in its order), whatever the field."""
        if isinstance(value, (dict, list)):
            self.ineligible(node, "operand can't be an object or array")
        elif value is None:
            self.ineligible(node, "can't handle {$eq: null}" if not where else "can't handle {$eq: null} predicate"
                            + where)
        elif node.path == self.tf and date_ms(value) is None:
            self.ineligible(node, "This predicate will never be true, because the time field always contains a Date")

    def measurement(self, path: str) -> bool:
        """A top-level measurement field (dotted paths may cross arrays control min/max do not describe)."""
        return path != self.tf and not self.on_meta(path) and "." not in path

    def bind_time(self, n: Any) -> tuple[Any, ...] | None:
        """The binder of a comparison of the time field: a conjunction binds its time comparisons itself
        (``conjunction``, one ``_TimeBounds`` of all their checks); one alone is bound as a conjunction
        of itself (made on first use: a filter of one time comparison)."""
        alone = self.time_alone
        if alone is None:
            alone = self.time_alone = self.conjunction([_none], [True])
        return alone(n)


def time_bounds_key(tf: str) -> str:
    """``_TimeBounds.key`` for the time field ``tf``."""
    return sys.intern("time bounds " + tf)


class _TimeBounds:
    """The bucket predicate of time comparisons: a bucket's control min/max of the time field read once
    (a conjunction of several is one ``_TimeBounds``, see ``_Deriver.conjunction``). Every check bounds the two ends
    on their own (integers: a strict bound is the next inclusive one), so the conjunction is one
    inclusive range per end; ``select`` decides a chunk of buckets with one comparison each."""

    __slots__ = ("tf", "checks", "key", "lo_min", "lo_max", "hi_min", "hi_max")

    def __init__(self, tf: str, checks: tuple[Any, ...], key: str | None = None):
        self.tf, self.checks = tf, checks
        # a string: hashed once, not at every lookup like a tuple; interned: one object for every query,
        # so the bounds a cache entry keeps (``time_bounds``) are told its own by identity (``key``:
        # ``time_bounds_key(tf)``, when the caller has it)
        self.key = key if key is not None else time_bounds_key(tf)
        lo_min: float = -math.inf
        lo_max: float = math.inf
        hi_min, hi_max = lo_min, lo_max
        # (each end narrowed by a comparison, not a min/max call: every read with a time window makes one)
        for op, d_ms, earliest_ms, latest_ms in checks:
            if op == "$gt" or op == "$lt":  # (integers: a strict bound is the next inclusive one)
                d_ms, earliest_ms, latest_ms = (d_ms + 1, earliest_ms + 1, latest_ms) if op == "$gt" else \
                    (d_ms - 1, earliest_ms, latest_ms - 1)
            if op != "$lt" and op != "$lte":  # $eq, $gt, $gte: max >= d, min >= d - span
                if d_ms > hi_min:
                    hi_min = d_ms
                if earliest_ms > lo_min:
                    lo_min = earliest_ms
            if op != "$gt" and op != "$gte":  # $eq, $lt, $lte: min <= d, max <= d + span
                if d_ms < lo_max:
                    lo_max = d_ms
                if latest_ms < hi_max:
                    hi_max = latest_ms
        self.lo_min, self.lo_max, self.hi_min, self.hi_max = lo_min, lo_max, hi_min, hi_max

    def bounds(self, bucket: Any) -> tuple[float, float]:
        """(control.min, control.max) of the time field in ms (NaN when not a date: no bound holds),
        remembered with the bucket's decoded parts (and on its cache entry, for ``select``)."""
        memo = bucket.derived()
        found: tuple[float, float] | None = memo.get(self.key)
        if found is None:
            lo_v, hi_v = bucket.time_range(self.tf)
            found = memo[self.key] = (math.nan if lo_v is None else lo_v, math.nan if hi_v is None else hi_v)
        entry = getattr(bucket, "cached", None)
        if entry is not None:
            entry.time_bounds = (self.key, *found)
        return found

    def __call__(self, bucket: Any) -> bool:
        lo_v, hi_v = self.bounds(bucket)
        return self.lo_min <= lo_v <= self.lo_max and self.hi_min <= hi_v <= self.hi_max

    def select(self, views: list[Any]) -> list[Any]:
        """The ``views`` this predicate keeps (in order): what ``__call__`` decides for each, in one pass
        reading the remembered bounds straight from each view's cache entry (``cached.time_bounds``:
        one object per bucket, not the memo's dict, its table and its tuple — a chunk's entries are
        read cold, each object followed a cache miss)."""
        key, bounds = self.key, self.bounds
        lo_min, lo_max, hi_min, hi_max = self.lo_min, self.lo_max, self.hi_min, self.hi_max
        out: list[Any] = []
        append = out.append
        for view in views:
            entry = view.cached
            found = None if entry is None else entry.time_bounds
            if found is not None and found[0] is key:
                _, lo_v, hi_v = found
            else:
                lo_v, hi_v = bounds(view)
            if lo_min <= lo_v <= lo_max and hi_min <= hi_v <= hi_max:
                append(view)
        return out


class _AllOf:
    """The conjunction of bucket predicates."""

    __slots__ = ("predicates",)

    def __init__(self, predicates: tuple[Any, ...]):
        self.predicates = predicates

    def __call__(self, bucket: Any) -> bool:
        for p in self.predicates:
            if not p(bucket):
                return False
        return True

    def select(self, views: list[Any]) -> list[Any]:
        # (``kept`` of each part inlined, and no part asked once none is left: a chunk passes a few parts)
        for p in self.predicates:
            if not views:
                break
            views = p.select(views) if type(p) in SELECTING else [view for view in views if p(view)]
        return views


def kept(predicate: Any, views: list[Any]) -> list[Any]:
    """The ``views`` (a chunk of buckets) ``predicate`` keeps, in order (None keeps all): one call per
    chunk for predicates that decide many buckets at once (``select``), else one per bucket."""
    if predicate is None or not views:
        return views
    if type(predicate) in SELECTING:
        chosen: list[Any] = predicate.select(views)
        return chosen
    return [view for view in views if predicate(view)]


def _is_time(binder: Binder) -> bool:
    """``binder`` is a time comparison's (``_Deriver.bind_time``)."""
    return getattr(binder, "__func__", None) is _Deriver.bind_time


class _OfHead:
    """A predicate on the meta field alone (renamed onto ``meta``) as a predicate on buckets (bucketview
    objects): it reads their ``head()``, not their ``summary()`` — an in-memory bucket's control, every
    column's min and max of its rows, took ~40 µs to work out, and a read of one series among 100,000
    in-memory ones tested every one (4.4 s)."""

    __slots__ = ("test", "node", "_points")

    def __init__(self, test: Any, node: Node | None = None):
        """``node``: the renamed filter when its meta points tell (the simple collation), else None."""
        self.test, self.node = test, node
        self._points: list[tuple[MetaPoint, ...]] | None = None

    def __call__(self, bucket: Any) -> bool:
        return bool(self.test(bucket.head()))

    def select(self, views: list[Any]) -> list[Any]:
        """The ``views`` this keeps (in order): ``__call__`` for each, in one pass."""
        test = self.test
        return [view for view in views if test(view.head())]

    def points(self) -> list[tuple[MetaPoint, ...]]:
        """Alternatives of meta points (``_point_alternatives``): a bucket this passes holds a point of
        each. Worked out on first use: only a read of a collection with buckets in memory asks."""
        found = self._points
        if found is None:
            found = self._points = [] if self.node is None else _point_alternatives(self.node)
        return found


# the bucket predicates that decide a chunk of buckets at once (``select``): matched by type, no getattr
# call (every read's chunk asks); any other predicate is a plain callable asked bucket by bucket
SELECTING = frozenset((_TimeBounds, _AllOf, _OfHead))


def _point_alternatives(node: Node) -> list[tuple[MetaPoint, ...]]:
    """For a meta-only filter renamed onto ``meta``, under the simple collation: alternatives, each a
    tuple of meta points one of which every bucket whose meta passes the filter holds (the catalog then
    looks its in-memory buckets up by point instead of testing every one). From the equalities and
    ``$in`` lists the filter's top-level conjunction holds whose every value has a point; a value that
    is an object gives each of its points as an alternative when it is the only value."""
    kind = type(node)  # (the node classes have no subclasses: matched by type, no isinstance call)
    any_node: Any = node
    if kind is And:
        return [points for child in any_node.children for points in _point_alternatives(child)]
    if kind is Cmp and any_node.op == "$eq":
        values: tuple[Any, ...] = (any_node.value,)
    elif kind is In and not any_node.regexes:
        values = any_node.values
    else:
        return []
    path = tuple(any_node.path.split(".")[1:])
    if len(values) == 1:
        return [(point,) for point in value_points(path, values[0])]
    firsts = []
    for value in values:
        points = value_points(path, value)
        if not points:
            return []
        firsts.append(points[0])
    return [tuple(firsts)]


def point_alternatives(predicate: Any) -> list[tuple[MetaPoint, ...]]:
    """The point alternatives of a bucket predicate (its meta-only parts': a conjunction's every part
    must pass), for ``catalog.live_buckets``; empty when it has none."""
    if type(predicate) is _OfHead:
        return predicate.points()
    if type(predicate) is _AllOf:
        return [points for p in predicate.predicates if type(p) is _OfHead for points in p.points()]
    return []


def for_in_memory(predicate: Any) -> Any:
    """``predicate`` with its meta-only parts first, for in-memory buckets: for them the meta test is the
    cheap one (``head()``) and the time check reads the rows' times, where a stored bucket's time bounds
    are remembered on its cache entry (so a conjunction checks time first: ``_Deriver.conjunction``)."""
    if type(predicate) is not _AllOf:
        return predicate
    parts = predicate.predicates
    heads = [p for p in parts if type(p) is _OfHead]
    if not heads:
        return predicate
    return _AllOf((*heads, *[p for p in parts if type(p) is not _OfHead]))


def _is_nan(value: Any) -> bool:
    """A float or Decimal128 NaN: the least number in MongoDB's order, equal only to NaN."""
    if isinstance(value, float):
        return value != value
    return isinstance(value, Decimal128) and value.to_decimal().is_nan()


def _measurement_bounds(path: str, op: str, value: Any, unmixed: bool = False) -> tuple[Any, ...] | None:
    """Bounds of a scalar comparison on ``control.min/max.<path>`` with the mixed-bucket guard (none
    when ``unmixed``: no bucket's min and max there are of two types)."""
    if value is None or isinstance(value, (dict, list, BsonRegex)) or type_class(value) not in BOUNDED_CLASSES:
        return None
    low, high = "control.min." + path, "control.max." + path
    if op == "$eq":
        bound = _and([{low: {"$lte": value}}, {high: {"$gte": value}}])
    elif op in ("$gt", "$gte"):
        bound = {high: {op: value}}
    else:
        bound = {low: {op: value}}
    mixed = [] if unmixed else [{"$expr": {"$ne": [{"$type": "$" + low}, {"$type": "$" + high}]}}]
    nan = []
    if (op != "$gt" and op != "$gte") or (op == "$gte" and _is_nan(value)):
        # NaN is the least number, so a bucket holding one has it as its minimum: a bound on the
        # minimum says nothing of its other values (mongod compares control values in sort order),
        # and {$gte: NaN} matches exactly the NaN measurements, which a bucket's maximum does not show
        nan.append({low: float("nan")})
    mql = {"$or": [bound, *mixed, *nan]} if mixed or nan else bound
    # exactly that filter: the bound with the generic matcher's semantics (type bracketing, NaN), or
    # control min and max of two BSON types (a bucket whose min/max then bound no single type), or a
    # NaN minimum
    within = compile_filter({"$or": [bound, *nan]})
    # what explain shows: mongod 7.0's form of the same bound
    def shown() -> dict[str, Any]:
        if op == "$eq":
            return _and([{low: {"$_internalExprLte": value}}, {high: {"$_internalExprGte": value}}])
        return {high if op in ("$gt", "$gte") else low: {_INTERNAL_EXPR[op]: value}}

    if unmixed:
        return mql, lambda view: within(view.summary()), None, None, False, shown

    def predicate(view: Any) -> bool:
        bucket = view.summary()
        return within(bucket) or _type_of(bucket, "min", path) != _type_of(bucket, "max", path)

    return mql, predicate, None, None, False, shown


_INTERNAL_EXPR = {"$eq": "$_internalExprEq", "$gt": "$_internalExprGt", "$gte": "$_internalExprGte",
                  "$lt": "$_internalExprLt", "$lte": "$_internalExprLte"}
_OID_MAX_S = 2**32 - 1


def _shown_time_bounds(low: str, high: str, op: str, value: Any, d_ms: int, span_s: int) -> dict[str, Any]:
    """mongod 7.0's bucket predicate of a time comparison with date ``value`` (``d_ms``): the comparison
    on control min/max, the bound ``value ∓ span`` on the other side, and the bucket ``_id`` bound
    (``constructObjectIdValue``; left out when the date has no ObjectId second)."""
    before, after = ms_to_date(d_ms - span_s * 1000), ms_to_date(d_ms + span_s * 1000)
    x = _INTERNAL_EXPR
    if op == "$eq":
        parts = [{low: {x["$lte"]: value}}, {low: {x["$gte"]: before}}, {high: {x["$gte"]: value}},
                 {high: {x["$lte"]: after}}]
        ids = [{"_id": {"$lte": _bound_oid(d_ms, high=True, round_up=True)}},
               {"_id": {"$gte": _adjusted_oid(d_ms, span_s, high=False)}}]
    elif op in ("$gt", "$gte"):
        parts = [{high: {x[op]: value}}, {low: {x[op]: before}}]
        ids = [{"_id": {op: _adjusted_oid(d_ms, span_s, high=op == "$gt")}}]
    else:
        parts = [{low: {x[op]: value}}, {high: {x[op]: after}}]
        ids = [{"_id": {op: _bound_oid(d_ms, high=op == "$lte", round_up=True)}}]
    if 0 <= d_ms <= _OID_MAX_S * 1000:
        parts += ids
    return _and(parts)


def _bound_oid(ms: int, *, high: bool, round_up: bool = False) -> ObjectId:
    """``OID::init(date, max)``: the date's second (rounded up past a fraction when asked), then all
    0x00 or all 0xFF bytes."""
    seconds = ms // 1000 + (1 if round_up and ms % 1000 else 0)
    return ObjectId((seconds % 2**32).to_bytes(4, "big") + (b"\xff" if high else b"\x00") * 8)


def _adjusted_oid(ms: int, span_s: int, *, high: bool) -> ObjectId:
    """``makeMaxAdjustedDateOID``: the ObjectId of ``date - span``, or the lowest one when that is
    before the epoch."""
    if ms >= span_s * 1000:
        return _bound_oid(ms - span_s * 1000, high=high)
    return _bound_oid(0, high=False)


def _type_of(bucket: dict[str, Any], which: str, path: str) -> str:
    value = _control(bucket, which, path)
    return "missing" if value is _MISSING else bson_type_name(value)


# an $in of more values is bounded per type by its least and greatest value (a weaker bucket filter
# than one bound per value, as exact once the rows are filtered)
_ENVELOPE_FROM = 16
_RANGED_TYPES = frozenset((int, Int64, float, str, _dt.datetime, DatetimeMS, ObjectId))
_BSON_ORDER = functools.cmp_to_key(compare)


def _envelope(path: str, low: Any, high: Any, unmixed: bool) -> tuple[Any, ...] | None:
    """The buckets holding a value of ``path`` in ``[low, high]`` (of one type): control.max >= low
    and control.min <= high."""
    above, below = (_measurement_bounds(path, "$gte", low, unmixed), _measurement_bounds(path, "$lte", high, unmixed))
    if above is None or below is None:
        return None
    above_predicate, below_predicate = above[1], below[1]
    return ({"$and": [above[0], below[0]]}, lambda b: above_predicate(b) and below_predicate(b), None, None, False,
            lambda: {"$and": [above[5](), below[5]()]})


def _all_bounded(parts: list[tuple[Any, ...] | None]) -> TypeGuard[list[tuple[Any, ...]]]:
    """True when every part bounds the buckets (an alternative without a bound keeps every bucket)."""
    return all(p is not None for p in parts)


def _control(bucket: dict[str, Any], which: str, path: str) -> Any:
    current = (bucket.get("control") or {}).get(which, _MISSING)
    if not isinstance(current, dict):
        return _MISSING
    return current.get(path, _MISSING)


def _and(parts: list[dict[str, Any]]) -> dict[str, Any]:
    flat: list[dict[str, Any]] = []
    for part in parts:
        if "$and" in part and len(part) == 1:  # (the key first: most parts hold none, no len call)
            flat += part["$and"]
        else:
            flat.append(part)
    return flat[0] if len(flat) == 1 else {"$and": flat}


def _rename(node: Node, meta_field: str) -> Node:
    kind = type(node)  # (the node classes have no subclasses: matched by type, no isinstance call)
    any_node: Any = node
    if kind is And or kind is Or or kind is Nor:
        return cast(Node, dataclasses.replace(any_node, children=tuple(_rename(c, meta_field) for c in any_node.children)))
    if kind is Not:
        return Not(_rename(any_node.child, meta_field))
    # a node with a path (``meta_only`` checked): the same fields, the path renamed (a frozen dataclass
    # copied field by field: ``dataclasses.replace`` runs the whole constructor, ~4 times as long)
    renamed = object.__new__(type(node))
    fields = renamed.__dict__
    fields.update(node.__dict__)
    fields["path"] = "meta" + fields["path"][len(meta_field):]
    return renamed


# ------------------------------------------------------------------ MQL of a filter AST


class NoMqlForm(Exception):
    """A filter node without an MQL form (``$near``/``$nearSphere``: their order is the read plan's,
    not a predicate's). ``_Deriver.part`` then leaves the subtree to the per-measurement filter."""


def render(node: Node) -> dict[str, Any]:
    """The MQL filter document of a parsed filter (what explain shows; updates and deletes parse it
    back): it selects what ``node`` selects. Raises ``NoMqlForm`` for a node without one."""
    # (the node classes have no subclasses: matched by type, no isinstance call — every read renders
    # its meta filter)
    kind = type(node)
    any_node: Any = node
    if kind is In:  # (its document as below writes it, without the one-path walk: every TSBS read renders one)
        return {any_node.path: {"$in": _in_members(any_node)}}
    if kind is And:
        return _and([render(c) for c in any_node.children])
    if kind is Or:
        return {"$or": [render(c) for c in any_node.children]}
    if kind is Nor:
        return {"$nor": [render(c) for c in any_node.children]}
    if kind is AlwaysTrue:
        return {}
    if kind is AlwaysFalse:
        return {"$alwaysFalse": 1}
    if kind is Expr:
        return {"$expr": any_node.expr}
    if kind is JsonSchema:
        return {"$jsonSchema": any_node.schema}
    path = _one_path(node)
    if path is None:
        if kind is Not:
            return {"$nor": [render(any_node.child)]}
        raise NoMqlForm(kind.__name__)
    try:
        conditions = _conditions(node)
    except NoMqlForm:
        if kind is not And:
            raise
        return _and([render(c) for c in any_node.children])  # two conditions wanting one key: one document each
    if [*conditions] == ["$eq"]:
        value = conditions["$eq"]
        if not isinstance(value, BsonRegex) and not (isinstance(value, dict) and any(str(k).startswith("$")
                                                                                    for k in value)):
            return {path: value}  # the bare equality explain shows (a regex or an operator document means more)
    return {path: conditions}


def serialize(node: Node) -> dict[str, Any]:
    """``node`` as mongod's MatchExpression::serialize writes it in error messages: comparisons with
    their operator (``{a: {$eq: 5}}``), a negation of one path's condition as ``$not``."""
    if isinstance(node, Cmp):
        return {node.path: {node.op: node.value}}
    if isinstance(node, Not) and _one_path(node.child) is not None:
        inner = serialize(node.child)
        (path, condition), = inner.items()
        return {path: {"$not": condition}}
    if isinstance(node, (And, Or, Nor)):
        return {"$" + type(node).__name__.lower(): [serialize(c) for c in node.children]}
    try:
        return render(node)
    except NoMqlForm:
        return {}


def _one_path(node: Node) -> str | None:
    """The path every condition of ``node`` applies to, when it is a conjunction (or negation) of
    conditions on one path — the shape ``{path: {<ops>}}`` writes; else None."""
    kind = type(node)
    any_node: Any = node
    if kind is And:
        paths = {_one_path(c) for c in any_node.children}
        return paths.pop() if len(paths) == 1 and None not in paths else None
    if kind is Not:
        return _one_path(any_node.child)
    if kind is Or or kind is Nor:
        return None
    path: str | None = getattr(node, "path", None)
    return path


def _conditions(node: Node) -> dict[str, Any]:
    """The operator document of conditions on one path (``{$gt: 5, $lt: 9}``; see ``_one_path``).
    Two conditions wanting the same operator key have no single document: ``NoMqlForm``."""
    kind = type(node)
    any_node: Any = node
    if kind is Cmp:  # (the leaves every read renders first, matched by type: no isinstance call)
        return {any_node.op: any_node.value}
    if kind is In:
        return {"$in": _in_members(any_node)}
    if isinstance(node, And):
        merged: dict[str, Any] = {}
        for child in node.children:
            for op, arg in _conditions(child).items():
                if op in merged and op == "$geoWithin" and "$within" not in merged:
                    op = "$within"  # mongod's alias of $geoWithin: two regions on one path keep one document
                if op in merged:
                    raise NoMqlForm(f"two {op} conditions on one path")
                merged[op] = arg
        return merged
    if isinstance(node, Not):
        child = node.child
        if isinstance(child, Cmp) and child.op == "$eq":
            return {"$ne": child.value}
        if isinstance(child, In):
            return {"$nin": _in_members(child)}
        if isinstance(child, Exists):
            return {"$exists": False}
        if isinstance(child, Regex):
            return {"$not": _bson_regex(child)}
        return {"$not": _conditions(child)}
    if isinstance(node, Cmp):
        return {node.op: node.value}
    if isinstance(node, In):
        return {"$in": _in_members(node)}
    if isinstance(node, Exists):
        return {"$exists": True}
    if isinstance(node, Type):
        return {"$type": sorted(node.types, key=str)}
    if isinstance(node, Regex):
        return {"$regex": node.pattern, "$options": node.options} if node.options else {"$regex": node.pattern}
    if isinstance(node, Size):
        return {"$size": node.size}
    if isinstance(node, All):
        return {"$all": [_bson_regex(v) if isinstance(v, Regex) else v for v in node.values]}
    if isinstance(node, Mod):
        return {"$mod": [node.divisor, node.remainder]}
    if isinstance(node, Bits):
        return {node.op: node.spec}
    if isinstance(node, Geo):
        return {node.op: node.region.spec}
    if isinstance(node, ElemMatch):
        return {"$elemMatch": _conditions(node.child) if node.value_form else render(node.child)}
    raise NoMqlForm(type(node).__name__)


def _in_members(node: In) -> list[Any]:
    return [*node.values, *[_bson_regex(r) for r in node.regexes]] if node.regexes else [*node.values]


def _bson_regex(node: Regex) -> BsonRegex[str]:
    return BsonRegex(node.pattern, node.options)

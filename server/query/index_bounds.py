"""Index bounds (pure): what the top-level conjunction of a filter says about each path
(``FieldBounds``: points from equality / ``$in``, a range from ``$gt``/``$gte``/``$lt``/``$lte``) and the
key ``Interval``s of an index scan that cover it.

Bounds may be loose (a superset): callers re-apply what they do not decide exactly (``tight_condition``,
``Plan.residual``: ``fetch_filter``). A one-sided range stays
in its type bracket (``$gt: 5`` only sees numbers; numbers below a bound start at -Infinity, not at
NaN). On a multikey index a range keeps one side only. A regex (``/^abc/``, ``$regex``, regexes in
``$in``) bounds its path by explicit value ranges, as mongod's IndexBoundsBuilder: the strings its
literal prefix starts (all strings when it has none) and the regex value itself (``FieldBounds.ranges``,
each range from one predicate, so a multikey index keeps both sides). Strings bound an index only
under the query's own collation, as collation keys (``bounds_for_index``); a hashed index is bounded by
string points only under the simple collation.
A path with a numeric component (``a.0``) is not bounded by a predicate that matches null: the index keys
the positional element only, the matcher also sees the missing field of each document element.
``$exists`` and ``$type`` bound a path nothing else bounds, as mongod's builder does (``type_bounds``):
every key, the null key, or the type brackets; only a btree index takes them (``special_index_bounds``).
"""

from __future__ import annotations

import datetime
import math
import re
import uuid
from collections.abc import Iterator, Mapping
from typing import Any

from bson.binary import Binary
from bson.datetime_ms import DatetimeMS
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.max_key import MaxKey
from bson.min_key import MinKey
from bson.objectid import ObjectId
from bson.regex import Regex
from bson.timestamp import Timestamp

from tidemark.query.access_path import Interval
from tidemark.query.collation import same as same_collation
from tidemark.query.index_keys import MULTIKEY_FLAG, collated_key_value, index_collation, key_fields
from tidemark.query.match_leaf import has_strings
from tidemark.query.match_parse import true_value
from tidemark.query.match_regex import is_regex, pattern_and_options
from tidemark.query.value_repr import bson_repr
from tidemark.query.values import compare
from tidemark.storage.keys import UNDEFINED, encode_key

MAX_INTERVALS = 1000  # beyond this many combinations of several components' points, each collapses to its hull

_MISSING = object()  # no bound on that side


# the types of the values that are plain (``_is_plain_value``) whatever they hold: asked first
_SCALAR_TYPES = frozenset({str, int, float, bool, type(None), datetime.datetime, DatetimeMS, Int64, Decimal128,
                           ObjectId, Timestamp})


class FieldBounds:
    """What the conjunction says about one path: a set of points, explicit value ranges (a regex's:
    ``ranges``, ascending and disjoint, each met by one value) or a (possibly open) range."""

    __slots__ = ("points", "lo", "lo_incl", "hi", "hi_incl", "ranges", "expr_range", "exact", "_present", "weak")

    def __init__(self, points: list[Any] | None = None, lo: Any = _MISSING, lo_incl: bool = True, hi: Any = _MISSING,
                 hi_incl: bool = True, ranges: list[tuple[Any, Any, bool, bool]] | None = None,
                 expr_range: bool = False, exact: Any = None, present: bool | None = False, weak: bool = False):
        self.points = points
        self.lo, self.lo_incl, self.hi, self.hi_incl = lo, lo_incl, hi, hi_incl
        self.ranges = ranges
        # ``ranges`` is a ``$expr`` comparison's: across types (BSON order, missing lowest), true of an
        # array as a whole, so only an index holding no array on the path may serve it (``usable_bounds``)
        self.expr_range = expr_range
        # the path's only conjunct, or None: the bounds decide it exactly (mongod's BoundsTightness EXACT)
        # when ``tight_condition`` accepts it, and ``build_intervals`` asks only for the bounds it uses
        self.exact = exact
        # ``present`` (below); None: not worked out yet, that of ``exact`` (``extract_bounds``: only a
        # sparse index or a collated string bound asks, so a read of other indexes never works it out)
        self._present = present
        # the bounds come from ``$exists`` or ``$type`` alone (``type_bounds``): a btree index's, which only
        # regular indexes take (``special_index_bounds`` leaves them out for wildcard, hashed, geo and text)
        self.weak = weak

    def __repr__(self) -> str:
        return (f"FieldBounds(points={self.points!r}, lo={self.lo!r}, lo_incl={self.lo_incl}, hi={self.hi!r}, "
                f"hi_incl={self.hi_incl}, ranges={self.ranges!r}, expr_range={self.expr_range}, "
                f"present={self.present}, weak={self.weak})")

    @property
    def present(self) -> bool:
        """Some conjunct on the path is false of a document lacking it (``excludes_missing``): every
        document the filter matches holds the path, so a sparse index, which leaves such documents out,
        may serve it."""
        found = self._present
        if found is None:
            found = self._present = excludes_missing(self.exact)
        return found

    @property
    def is_point(self) -> bool:
        return self.points is not None

    @property
    def is_range(self) -> bool:
        return self.points is None and (self.ranges is not None or self.lo is not _MISSING or self.hi is not _MISSING)

    def values(self) -> list[Any]:
        """The values the bounds hold (the points, or the ranges' ends)."""
        if self.points is not None:
            return self.points
        if self.ranges is not None:
            return [x for r in self.ranges for x in r[:2] if not _is_placeholder(x)]
        return [x for x in (self.lo, self.hi) if x is not _MISSING]


def _is_plain_value(v: Any) -> bool:
    """A value usable as an index point: not a regex, not an array, not an operator document."""
    if type(v) in _SCALAR_TYPES:
        return True
    if isinstance(v, (Regex, re.Pattern, list)):
        return False
    if isinstance(v, dict):
        for k in v:
            if type(k) is str and k.startswith("$"):
                return False
    return True


def _all_plain(values: list) -> bool:
    """Whether every one of ``values`` is ``_is_plain_value`` (a ``$in``'s: one call, not one per value)."""
    for v in values:
        if type(v) not in _SCALAR_TYPES and not _is_plain_value(v):
            return False
    return True


def _operator_document(cond: Any) -> bool:
    """A non-empty document of ``$``-operators (``{$gt: 5, $lt: 9}``)."""
    if not isinstance(cond, dict) or not cond:
        return False
    for k in cond:
        if not (type(k) is str and k[:1] == "$"):
            return False
    return True


def extract_bounds(filter: dict | None, variables: Mapping[str, Any] | None = None, *,
                   with_expr: bool = True) -> dict[str, FieldBounds]:
    """Per-path bounds implied by the top-level conjunction of ``filter`` (loose; ignores the rest).
    ``variables``: the values of the ``$$names`` a ``$expr`` may compare a field with (a command's
    ``let``, a ``$lookup``'s per input document). ``with_expr`` False: ``$expr`` equalities bound
    nothing (a text index's prefix needs an equality outside ``$expr``, as mongod's)."""
    out: dict[str, FieldBounds] = {}
    if not filter:
        return out
    for k in filter:
        if k[:1] == "$":  # ($and, $expr...: collected; a filter of paths alone is its own conjuncts)
            conjuncts: list[tuple[str, Any]] = []
            _collect_conjuncts(filter, conjuncts, variables or {} if with_expr else None)
            break
    else:
        conjuncts = list(filter.items())
    weak: dict[str, FieldBounds] = {}  # a path's $type / $exists bounds, for a path nothing else bounds
    for path, cond in conjuncts:
        b = out.get(path)
        if b is None:
            # (the path's only conjunct, so far: whether it excludes missing is worked out when asked)
            b = out[path] = FieldBounds(exact=cond, present=None)
        else:
            if b._present is None:
                b._present = excludes_missing(b.exact)
            if not b._present:
                b._present = excludes_missing(cond)
            b.exact = None
        # (``_operator_document`` inline: every conjunct of every indexed read)
        operators = False
        if type(cond) is dict or isinstance(cond, dict):
            for op in cond:
                if not (type(op) is str and op[:1] == "$"):
                    operators = False
                    break
                operators = True
        if operators:
            for op, arg in cond.items():
                if op == "$eq" and (type(arg) in _SCALAR_TYPES or _is_plain_value(arg)):
                    _add_points(b, [arg])
                elif op == "$in" and (type(arg) is list or isinstance(arg, list)) and _all_plain(arg):
                    _add_points(b, list(arg))
                elif op == "$in" and isinstance(arg, list) and all(_is_plain_value(a) or is_regex(a) for a in arg):
                    _add_ranges(b, _union([r for a in arg for r in (
                        regex_ranges(*pattern_and_options(a), a) if is_regex(a) else [(a, a, True, True)])]))
                elif op == "$regex":
                    found = _regex_operator(arg, cond.get("$options"))
                    if found is not None:
                        _add_ranges(b, found)
                elif (op == "$gte" or op == "$lte") and (type(arg) is float or type(arg) is Decimal128) \
                        and _is_nan(arg):
                    _add_points(b, [arg])  # (only NaN is >= NaN or <= NaN: mongod's point [nan.0, nan.0])
                elif (op == "$gt" or op == "$gte") and arg is not None and (
                        type(arg) in _SCALAR_TYPES or _is_plain_value(arg)):
                    if b.points is None and b.lo is _MISSING:
                        b.lo, b.lo_incl = arg, op == "$gte"
                elif (op == "$lt" or op == "$lte") and arg is not None and (
                        type(arg) in _SCALAR_TYPES or _is_plain_value(arg)):
                    if b.points is None and b.hi is _MISSING:
                        b.hi, b.hi_incl = arg, op == "$lte"
                elif op == "$type" or op == "$exists" and path not in weak:
                    typed = type_bounds(op, arg)
                    if typed is not None:
                        weak[path] = typed
        elif type(cond) in _SCALAR_TYPES:  # (an equality of a plain value: no regex, no operator document)
            _add_points(b, [cond])
        elif type(cond) is _ExprRange:
            _add_expr_range(b, cond)
        elif is_regex(cond):
            _add_ranges(b, regex_ranges(*pattern_and_options(cond), cond))
        elif _is_plain_value(cond):
            _add_points(b, [cond])
    for path, typed in weak.items() if weak else ():
        b = out[path]
        if not (b.is_point or b.is_range):  # (any other bound is within these: the tighter one is kept)
            b.points, b.ranges, b.weak = typed.points, typed.ranges, True
    dropped = None  # (a loop, not a comprehension of ``is_point``/``is_range``: every indexed read plans)
    for path, b in out.items():
        numeric = _NUMERIC_COMPONENT.get(path)  # (``_has_numeric_component``'s memo, asked inline first)
        if not (b.points is not None or b.ranges is not None or b.lo is not _MISSING or b.hi is not _MISSING) \
                or (numeric or numeric is None and _has_numeric_component(path)) and _positional_null(path, b):
            dropped = [path] if dropped is None else [*dropped, path]
    for path in dropped or ():
        del out[path]
    return out


def type_bounds(op: str, arg: Any) -> FieldBounds | None:
    """The bounds of ``{$exists: arg}`` or ``{$type: arg}`` (parsed and checked before planning), as
    mongod's IndexBoundsBuilder makes them: ``$exists: true`` every key ``[MinKey, MaxKey]``, ``$exists:
    false`` the null key (a missing field's); ``$type`` each type's bracket (``appendMinForType`` /
    ``appendMaxForType``: numbers ``[nan.0, inf.0]``, strings ``["", {})``, a variable-width type's end the
    next type's first value, excluded), ``"array"`` every key (an array is keyed by its elements). None
    when a type has no bracket here (regex, dbPointer, javascript: ``_TYPE_RANGES``)."""
    if op == "$exists":
        return FieldBounds(ranges=[(_BOTTOM, _TOP, True, True)]) if true_value(arg) else FieldBounds(points=[None])
    ranges = []
    for entry in arg if isinstance(arg, list) else [arg]:
        code: Any = entry if type(entry) is str else _type_code(entry)
        if code == "array" or code == 4:
            return FieldBounds(ranges=[(_BOTTOM, _TOP, True, True)])
        found = _TYPE_RANGES.get(code)
        if found is None:
            return None
        ranges.append(found)
    if not ranges:
        return None
    return FieldBounds(ranges=_union(ranges))


def _type_code(entry: Any) -> int | None:
    """A ``$type`` number as an int (``2.0``, ``Int64(2)``), None for anything else."""
    if isinstance(entry, bool) or not isinstance(entry, int | float | Decimal128):
        return None
    number = entry.to_decimal() if isinstance(entry, Decimal128) else entry
    try:
        return int(number) if number == int(number) else None
    except (ValueError, OverflowError, ArithmeticError):
        return None


_ORDER_OPS = frozenset({"$gt", "$gte", "$lt", "$lte"})


def excludes_missing(cond: Any, operators: bool | None = None) -> bool:
    """Whether the conjunct ``{path: cond}`` is false of every document lacking the path, by mongod's
    rule for a sparse index (QueryPlannerIXSelect::nodeIsSupportedBySparseIndex): an equality or
    ``$in`` without null, an order comparison, a regex, ``{$ne: null}``, ``$exists: true``,
    ``$elemMatch``, ``$type``, ``$size``, ``$mod``; never a negation (``$ne``/``$nin``/``$not`` other than
    ``{$ne: null}``, ``$exists: false``), anything of null, nor a ``$expr`` range (missing sorts lowest
    there). An order comparison with MinKey or MaxKey (it crosses the type brackets, towards null) is
    refused too, where mongod takes it. ``operators``: whether ``cond`` is an operator document, when the
    caller knows (``_operator_document``)."""
    if type(cond) is _ExprRange:
        return False
    if not (_operator_document(cond) if operators is None else operators):
        return cond is not None
    for op, arg in cond.items():
        if op == "$eq" and arg is not None:
            return True
        if op == "$in" and type(arg) is list and None not in arg:
            return True
        if op in _ORDER_OPS and arg is not None and not isinstance(arg, (MinKey, MaxKey)):
            return True
        if op == "$ne" and arg is None or op in ("$regex", "$elemMatch", "$type", "$size", "$mod"):
            return True
        if op == "$exists" and (arg is True or type(arg) in (int, float) and arg != 0):
            return True
    return False


# mongod's BoundsTightness (index_bounds_builder.cpp), for the shapes Tidemark bounds: a key inside the
# bounds of an equality, ``$in`` or range on one of these values is a document the condition matches
# (a key is a value the document holds on the path, an array's element included, so this also holds
# for a document that makes the index multikey after the plan was chosen). Numbers of every type are
# keyed by their exact value (storage.keys, KEY_FORMAT 2), Decimal128 and the infinities too, and the
# matcher compares them so: NaN equals NaN (a point, EXACT, and so are ``$gte``/``$lte: NaN``, NaN alone),
# but ``$gt``/``$lt: NaN`` (nothing, to mongod: no interval) is no empty scan here, so it stays INEXACT. ``$type: "number"`` alone is EXACT
# (its bracket, NaN to +inf, is every number key), ``$exists: true`` on a sparse index of one field
# (the documents it holds are those having the field). Everything else is INEXACT and stays in the FETCH
# filter: null (missing shares its key), regexes (a prefix range and the regex value), arrays and
# documents as values, MinKey/MaxKey, timestamps, binary data, other ``$type``s (a bracket shares
# types: int with double, null with missing), ``$exists`` elsewhere, ``$ne``/``$nin``/``$not``,
# ``$elemMatch``, ``$expr``. Strings are EXACT only where the index holds them as they are (no collation:
# ``bounds_for_index`` makes new, inexact bounds of collated strings).
_LOWER_OPS = frozenset({"$gt", "$gte"})
_UPPER_OPS = frozenset({"$lt", "$lte"})


def _exact_bracket(v: Any, point: bool = False) -> str | None:
    """The type bracket of a value an index key holds exactly (``tight_condition``), else None. NaN
    only as a ``point`` (an equality or a ``$in`` value)."""
    t = type(v)
    bracket = _EXACT_BRACKETS.get(t)
    if point or bracket is None:
        return bracket
    if t is float:
        return bracket if v == v else None
    if t is Decimal128:
        return None if v.to_decimal().is_nan() else bracket
    return bracket


_EXACT_BRACKETS: dict[type, str] = {int: "number", Int64: "number", float: "number", Decimal128: "number",
                                    str: "string", bool: "bool", ObjectId: "objectId", datetime.datetime: "date"}


# the types whose values ``values.compare`` orders as Python does when both sides have the type (each an
# ``_EXACT_BRACKETS`` type without NaN): a two-sided range of them is tight or empty without either call
_NATIVE_ORDER = frozenset({int, str, Int64, datetime.datetime})


def tight_condition(path: str, cond: Any, sparse_single: bool = False) -> bool:
    """Whether the bounds ``extract_bounds`` makes of ``{path: cond}`` alone decide it exactly: an
    equality (``v``, ``{$eq: v}``), a non-empty ``$in`` or a range (one lower and/or one upper bound of
    one type bracket) of values ``_exact_bracket`` accepts, ``{$type: "number"}``, or ``{$exists: true}``
    when the index is sparse with this one field (``sparse_single``), on a path without a numeric
    component (the matcher also reads ``a.0`` as the field "0" of each document element, the index does
    not)."""
    numeric = _NUMERIC_COMPONENT.get(path)  # (``_has_numeric_component``'s memo, asked inline first)
    if numeric or numeric is None and _has_numeric_component(path):
        return False
    if not (type(cond) is dict or isinstance(cond, dict)) or not cond:  # (``_operator_document`` inline)
        return _exact_bracket(cond, point=True) is not None
    for op in cond:
        if not (type(op) is str and op[:1] == "$"):
            return _exact_bracket(cond, point=True) is not None
    if len(cond) == 1:
        for op in cond:
            arg = cond[op]
        if op == "$eq":
            return _exact_bracket(arg, point=True) is not None
        if op == "$in":
            if type(arg) is not list or not arg:
                return False
            for v in arg:  # (a loop, types first: a $in of many values)
                if type(v) not in _EXACT_BRACKETS and _exact_bracket(v, point=True) is None:
                    return False
            return True
        if op == "$type":
            return arg == "number" or arg == ["number"]
        if op == "$exists":
            return sparse_single and true_value(arg)
        if op in ("$gte", "$lte") and _is_nan(arg):
            return True  # (the point NaN: ``extract_bounds``)
    lower = upper = None  # the one lower and the one upper bound operator
    for op in cond:
        if op in _LOWER_OPS and lower is None:
            lower = op
        elif op in _UPPER_OPS and upper is None:
            upper = op
        else:
            return False
    if lower is None or upper is None:
        return _exact_bracket(cond[lower or upper]) is not None
    lo, hi = cond[lower], cond[upper]
    t = type(lo)
    if t is type(hi) and t in _NATIVE_ORDER:
        order = (lo > hi) - (lo < hi)  # (one bracket, no NaN, and ``compare``'s own order: a time range's)
    else:
        bracket = _exact_bracket(lo)
        if bracket is None or bracket != _exact_bracket(hi):
            return False
        order = compare(lo, hi)
    # an empty range is no interval the scan honours as such (``(5, 5)``, ``(7, 3)``: storage's bounds
    # are key prefixes), so the filter keeps it
    return order < 0 or order == 0 and lower == "$gte" and upper == "$lte"


# path -> whether a component of it is a number ("a.0.b"): asked of every bounded path of every read
# (twice), of the few paths a workload filters on. Cleared when full (paths are client input).
_NUMERIC_COMPONENT: dict[str, bool] = {}
_NUMERIC_COMPONENT_MAX = 1024


def _has_numeric_component(path: str) -> bool:
    found = _NUMERIC_COMPONENT.get(path)
    if found is None:
        found = any(part.isdigit() for part in path.split("."))
        if len(_NUMERIC_COMPONENT) >= _NUMERIC_COMPONENT_MAX:
            _NUMERIC_COMPONENT.clear()
        _NUMERIC_COMPONENT[path] = found
    return found


def _positional_null(path: str, b: FieldBounds) -> bool:
    """Whether ``b`` holds null on a path with a numeric component: such bounds cannot narrow a scan.
    The matcher reads ``a.0`` of ``{a: [{x: 1}, {x: 2}]}`` as the element at position 0 *and* the
    (missing) field "0" of each document element, so ``{"a.0": null}`` matches, while the index keys
    ``a.0`` as the positional element alone (mongod's BtreeKeyGenerator ``positionallyIndexedElt``):
    no null key to find it by."""
    if not _has_numeric_component(path):
        return False
    if b.points is not None:
        return any(p is None for p in b.points)
    if b.ranges is not None:
        return any(lo is None for lo, _hi, _lo_incl, _hi_incl in b.ranges)  # ($in points: (v, v))
    # a one-sided range stays in its value's type bracket: only MinKey below or MaxKey above reach null
    return isinstance(b.lo, MinKey) or (b.lo is _MISSING and isinstance(b.hi, MaxKey))


class _ExprRange:
    """A conjunct of ``_expr_comparisons``: ``path op value`` in the expression language's order."""

    __slots__ = ("op", "value")

    def __init__(self, op: str, value: Any):
        self.op, self.value = op, value


# the absolute ends of the key order (MinKey / MaxKey as values, not the open side of a type bracket)
_BOTTOM = MinKey()
_TOP = MaxKey()


def _add_expr_range(b: FieldBounds, cond: _ExprRange) -> None:
    """A ``$expr`` comparison's range, intersected with the path's other ones (each met by the one
    value the path holds where the range may be used)."""
    if b.points is not None or b.ranges is not None and not b.expr_range:
        return
    v = cond.value
    lo, lo_incl, hi, hi_incl = ((v, cond.op == "$gte", _TOP, True) if cond.op in ("$gt", "$gte")
                                else (_BOTTOM, True, v, cond.op == "$lte"))
    if b.ranges is not None:
        (olo, ohi, olo_incl, ohi_incl), = b.ranges
        lo_key, olo_key = encode_key((lo,), (1,)), encode_key((olo,), (1,))
        if olo_key > lo_key or olo_key == lo_key and not olo_incl:
            lo, lo_incl = olo, olo_incl
        hi_key, ohi_key = encode_key((hi,), (1,)), encode_key((ohi,), (1,))
        if ohi_key < hi_key or ohi_key == hi_key and not ohi_incl:
            hi, hi_incl = ohi, ohi_incl
    b.ranges, b.expr_range = [(lo, hi, lo_incl, hi_incl)], True
    b.lo = b.hi = _MISSING


def _collect_conjuncts(f: dict, conjuncts: list[tuple[str, Any]], variables: Mapping[str, Any] | None) -> None:
    """The (path, condition) pairs of ``f``'s top-level conjunction, ``$and`` flattened. A module
    function, not a recursive closure: a closure that calls itself is a reference cycle (function <->
    cell) that only the garbage collector frees — one per query plan, and a series explosion plans a
    query per new series (reopen.py): freeing ~33,000 such objects per young collection made each a
    pause of the event loop (bench.neighbours' series explosion: young collections 2.1 s of CPU in
    all, up to 115 ms each; without the cycles 0.5 s)."""
    for k, v in f.items():
        if k == "$and" and isinstance(v, list):
            for sub in v:
                if isinstance(sub, dict):
                    _collect_conjuncts(sub, conjuncts, variables)
        elif k == "$expr":
            if variables is not None:
                _expr_comparisons(v, variables, conjuncts)
        elif k[:1] != "$":
            conjuncts.append((k, v))


# the values an expression's equality may bound an index with (no array: an index holds its elements,
# no null: an expression tells missing from null, no regex: a regex in a filter is a pattern)
_EXPR_BOUND_TYPES = (str, int, float, Decimal128, datetime.datetime, DatetimeMS, ObjectId, Timestamp, bytes)


_FLIPPED = {"$eq": "$eq", "$gt": "$lt", "$gte": "$lte", "$lt": "$gt", "$lte": "$gte"}


def _expr_comparisons(expr: Any, variables: Mapping[str, Any], conjuncts: list[tuple[str, Any]]) -> None:
    """The conjuncts a ``$expr`` implies (``expr_comparisons``), as mongod's RewriteExpr makes
    ``$_internalExpr*`` predicates of them for the planner. An expression equal to a scalar holds no
    array on its path, so the matcher's equality holds too: ``{path: {$eq: value}}``, whose index points
    are a superset. An order comparison crosses types (``"$a" > 5`` holds for any string) and holds for
    an array as a whole: an ``_ExprRange`` (``(5, MaxKey]``), for an index without arrays on the path.
    The ``$expr`` is still applied to every document found."""
    for path, op, value in expr_comparisons(expr, variables):
        if op == "$eq":
            conjuncts.append((path, {"$eq": value}))
        elif not (isinstance(value, float) and math.isnan(value)
                  or isinstance(value, Decimal128) and value.to_decimal().is_nan()):
            conjuncts.append((path, _ExprRange(op, value)))  # (NaN: below every number, not where keys put it)


def expr_comparisons(expr: Any, variables: Mapping[str, Any]) -> Iterator[tuple[str, str, Any]]:
    """The ``(path, op, value)`` comparisons of a field and a constant a ``$expr`` requires: an ``$eq``,
    ``$gt``, ``$gte``, ``$lt`` or ``$lte`` (below ``$and``s) of a field path and a constant (a literal,
    ``$literal``, or a user variable: a ``$lookup``'s ``let`` compared with a foreign field), the field
    first (``{$lt: [5, "$a"]}`` is ``("a", "$gt", 5)``)."""
    if not isinstance(expr, dict) or len(expr) != 1:
        return
    (op, args), = expr.items()
    if op == "$and" and isinstance(args, list):
        for arg in args:
            yield from expr_comparisons(arg, variables)
        return
    if op not in _FLIPPED or not isinstance(args, list) or len(args) != 2:
        return
    path, other = _expr_field_path(args[0]), args[1]
    if path is None:
        path, other, op = _expr_field_path(args[1]), args[0], _FLIPPED[op]
    if path is None:
        return
    value = _expr_constant(other, variables)
    if value is not _MISSING:
        yield path, op, value


def _expr_field_path(arg: Any) -> str | None:
    """``"$a.b"`` -> ``a.b``; None for anything else (a variable, a numeric component: an expression's
    ``$a.0`` is field "0", a filter's ``a.0`` also array element 0)."""
    if type(arg) is not str or not arg.startswith("$") or arg.startswith("$$"):
        return None
    path = arg[1:]
    for part in path.split("."):
        if not part or part.isdigit() or part.startswith("$"):
            return None
    return path


def _expr_constant(arg: Any, variables: Mapping[str, Any]) -> Any:
    """The constant an expression operand is (a literal, ``{$literal: v}``, a user variable's value),
    when an index may be bounded by it; ``_MISSING`` otherwise."""
    if type(arg) is str and arg.startswith("$"):
        name = arg[2:] if arg.startswith("$$") else ""
        if not name or "." in name or name[0].isupper():
            return _MISSING  # a field path, a system variable ($$NOW, $$ROOT...) or a path into a variable
        value = variables.get(name, _MISSING)
    elif isinstance(arg, dict):
        if len(arg) != 1 or "$literal" not in arg:
            return _MISSING  # an expression (an object literal's fields are expressions too)
        value = arg["$literal"]
    else:
        value = arg
    if type(value) is dict:
        return value if _is_plain_value(value) else _MISSING
    return value if isinstance(value, _EXPR_BOUND_TYPES) else _MISSING


def _add_points(b: FieldBounds, values: list) -> None:
    if b.points is None:
        b.points = values
        b.lo = b.hi = _MISSING
        b.ranges = None
        b.expr_range = False
    else:  # a second equality on the same path: keep the smaller set (both are re-checked anyway)
        if len(values) < len(b.points):
            b.points = values


def _add_ranges(b: FieldBounds, ranges: list[tuple[Any, Any, bool, bool]]) -> None:
    """A regex's ranges bound the path unless points do already (both are re-checked anyway); they
    replace a ``$gt``/``$lt`` range, whose sides may come from different array elements."""
    if b.points is None and b.ranges is None:
        b.ranges = ranges
        b.lo = b.hi = _MISSING


def _regex_operator(arg: Any, options: Any) -> list[tuple[Any, Any, bool, bool]] | None:
    """The ranges of ``{$regex: arg, $options: options}`` (parsed and checked before planning), None
    for a shape the matcher refuses."""
    if is_regex(arg):
        pattern, flags = pattern_and_options(arg)
        if isinstance(options, str) and options:
            flags = options
    elif type(arg) is str:
        pattern, flags = arg, options if isinstance(options, str) else ""
    else:
        return None
    return regex_ranges(pattern, flags, Regex(pattern, flags))


def simple_regex_prefix(pattern: str, flags: str) -> str:
    """The literal prefix every string a regex matches starts with ("" when none can be read), as
    mongod's IndexBoundsBuilder::simpleRegex reads it: the regex is anchored at the start (``^``, or
    ``\\A`` which ``m`` leaves alone), has no unescaped ``|``, flags only ``m`` (with ``\\A``), ``s``, ``x``
    and ``u`` (mongod refuses it here, though it changes no match: pymongo sends it with
    every compiled Python pattern);
    the prefix is its self-matching characters (``\\Q…\\E`` quoted, ``\\`` before a non-alphanumeric) up to
    the first metacharacter. ``*``, ``?`` and ``{`` (a count that may be zero) make the character before
    them optional, so it is dropped (mongod keeps it before ``{``: ``/^ab{0}c/`` matches "ac")."""
    if pattern.startswith("\\A"):
        multiline_ok, i = True, 2
    elif pattern.startswith("^"):
        multiline_ok, i = False, 1
    else:
        return ""
    if _may_have_unescaped_pipe(pattern[i:]):
        return ""
    extended = False
    for flag in flags:
        if flag == "m" and multiline_ok or flag in "su":
            continue
        if flag == "x":
            extended = True
            continue
        return ""
    prefix: list[str] = []
    n = len(pattern)
    while i < n:
        c = pattern[i]
        i += 1
        if c in "*?{":
            return "".join(prefix[:-1])
        if c == "\\":
            c = pattern[i] if i < n else ""
            i += 1
            if c == "Q":
                end = pattern.find("\\E", i)
                quoted = pattern[i:] if end < 0 else pattern[i:end]
                prefix.extend(quoted)
                i = n if end < 0 else end + 2
            elif c == "" or c.isascii() and c.isalnum():
                break  # a class or an assertion (\d, \b, \1 ...): the prefix ends before it
            else:
                prefix.append(c)
        elif c in "^$.[()+":
            break
        elif extended and c == "#":
            break
        elif extended and c in " \t\n\r\f\v":
            continue
        else:
            prefix.append(c)
    return "".join(prefix)


def _may_have_unescaped_pipe(text: str) -> bool:
    """mongod's stringMayHaveUnescapedPipe: a ``|`` not after a single backslash (false positives
    allowed: one inside a class or ``\\Q…\\E`` counts)."""
    for i, ch in enumerate(text):
        if ch == "|" and (i == 0 or text[i - 1] != "\\" or i >= 2 and text[i - 2] == "\\"):
            return True
    return False


def _prefix_end(prefix: str) -> str | None:
    """The least string above every string starting with ``prefix`` (its last character + 1, past
    the surrogates), None when there is none below the end of the strings."""
    while prefix:
        last = ord(prefix[-1]) + 1
        if last == 0xD800:
            last = 0xE000
        if last <= 0x10FFFF:
            return prefix[:-1] + chr(last)
        prefix = prefix[:-1]
    return None


def regex_ranges(pattern: str, flags: str, value: Any) -> list[tuple[Any, Any, bool, bool]]:
    """Index value ranges of a regex predicate, ascending: the strings starting with its prefix (all
    strings without one: ``["", {})``) and the regex ``value`` itself (a stored regex equal to the
    query's matches it)."""
    prefix = simple_regex_prefix(pattern, flags)
    end = _prefix_end(prefix) if prefix else None
    strings = (prefix, end if end is not None else {}, True, False)
    return [strings, (value, value, True, True)]


def _union(ranges: list[tuple[Any, Any, bool, bool]]) -> list[tuple[Any, Any, bool, bool]]:
    """Value ranges sorted and merged where they overlap or touch (``$in`` of regexes and values), so
    the scan's intervals are disjoint and in index order."""
    keyed = sorted(((encode_key((r[0],), (1,)), not r[2], encode_key((r[1],), (1,)), r) for r in ranges),
                   key=lambda t: (t[0], t[1]))
    out: list[list[Any]] = []  # [lo_key, hi_key, range]
    for lo_key, lo_excl, hi_key, r in keyed:
        if out:
            last = out[-1]
            last_hi_incl = last[2][3]
            if lo_key < last[1] or lo_key == last[1] and (last_hi_incl or not lo_excl):
                if hi_key > last[1] or hi_key == last[1] and r[3] and not last_hi_incl:
                    last[1], last[2] = hi_key, (last[2][0], r[1], last[2][2], r[3])
                continue
        out.append([lo_key, hi_key, r])
    return [entry[2] for entry in out]


def _fmt(v: Any) -> str:
    if v is MinKey or isinstance(v, MinKey):
        return "MinKey"
    if v is MaxKey or isinstance(v, MaxKey):
        return "MaxKey"
    if type(v) is str:
        return f'"{v}"'
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and math.isinf(v):
        return "inf.0" if v > 0 else "-inf.0"
    if isinstance(v, float) and math.isnan(v):
        return "nan.0"
    if v is UNDEFINED:
        return "undefined"
    if isinstance(v, bytes):  # (Binary too) as mongod's BSONElement::toString: subtype, hex digits
        subtype = v.subtype if isinstance(v, Binary) else 0
        if subtype == 4 and len(v) == 16:
            return f'UUID("{uuid.UUID(bytes=bytes(v))}")'
        return f"BinData({subtype}, {bytes(v).hex().upper()})"
    if isinstance(v, uuid.UUID):
        return f'UUID("{v}")'
    if isinstance(v, Decimal128):  # (BSONElement::toString: the decimal's own string, NaN unsigned)
        return "NaN" if v.to_decimal().is_nan() else str(v)
    if type(v) is DatetimeMS:  # (a date past datetime's range: the ends of the date bracket)
        return f"new Date({int(v)})"
    if isinstance(v, datetime.datetime | ObjectId | Timestamp):
        return bson_repr(v)
    if is_regex(v):
        pattern, flags = pattern_and_options(v)
        return f"/{pattern}/{flags}"
    return str(v)


def _interval_desc(lo, hi, lo_incl, hi_incl) -> str:
    """One interval as mongod's Interval::toString shows it. A range open on one side (the MinKey or
    MaxKey placeholder) is shown with the end of its other side's type bracket, as mongod's
    IndexBoundsBuilder builds it (``appendMinForType`` / ``appendMaxForType``, numbers -inf / inf):
    ``$gt: 5`` is ``(5, inf.0]``, ``$lt: "m"`` is ``["", "m")``; the end is inclusive when it has
    the value's type (the scan itself stays inside that bracket: ``_piece``)."""
    lo_text, hi_text = _fmt(lo), _fmt(hi)
    if _is_placeholder(lo) != _is_placeholder(hi):
        placeholder, real = (lo, hi) if _is_placeholder(lo) else (hi, lo)
        end = _bracket_end(real, maximum=isinstance(placeholder, MaxKey))
        if end is not None:
            if placeholder is lo:
                lo_text, lo_incl = end
            else:
                hi_text, hi_incl = end
    return f"{'[' if lo_incl else '('}{lo_text}, {hi_text}{']' if hi_incl else ')'}"


def _bracket_end(value: Any, *, maximum: bool) -> tuple[str, bool] | None:
    """(shown, inclusive) of ``bracket_end``; None for the types left as MinKey / MaxKey here."""
    end = bracket_end(value, maximum=maximum)
    return None if end is None else (_fmt(end[0]), end[1])


_DATE_MIN, _DATE_MAX = DatetimeMS(-(2 ** 63)), DatetimeMS(2 ** 63 - 1)
_OID_MIN, _OID_MAX = ObjectId("0" * 24), ObjectId("f" * 24)
_TS_MIN, _TS_MAX = Timestamp(0, 0), Timestamp(4294967295, 4294967295)

# One type's bracket of keys, by ``$type`` alias or number, as mongod 7.0 bounds it (appendMinForType to
# appendMaxForType; a variable-width type's end is the next type's first value, excluded): explain shows
# these. Symbols are strings to the codec; regex, dbPointer and javascript (with scope) are not bounded.
_NUMBER_RANGE = (math.nan, math.inf, True, True)
_STRING_RANGE: tuple = ("", {}, True, False)
_TYPE_RANGES: dict[Any, tuple] = {
    "number": _NUMBER_RANGE, "double": _NUMBER_RANGE, 1: _NUMBER_RANGE, "int": _NUMBER_RANGE, 16: _NUMBER_RANGE,
    "long": _NUMBER_RANGE, 18: _NUMBER_RANGE, "decimal": _NUMBER_RANGE, 19: _NUMBER_RANGE,
    "string": _STRING_RANGE, 2: _STRING_RANGE, "symbol": _STRING_RANGE, 14: _STRING_RANGE,
    "object": ({}, [], True, False), 3: ({}, [], True, False),
    "binData": (b"", _OID_MIN, True, False), 5: (b"", _OID_MIN, True, False),
    "undefined": (UNDEFINED, UNDEFINED, True, True), 6: (UNDEFINED, UNDEFINED, True, True),
    "objectId": (_OID_MIN, _OID_MAX, True, True), 7: (_OID_MIN, _OID_MAX, True, True),
    "bool": (False, True, True, True), 8: (False, True, True, True),
    "date": (_DATE_MIN, _DATE_MAX, True, True), 9: (_DATE_MIN, _DATE_MAX, True, True),
    "null": (None, None, True, True), 10: (None, None, True, True),
    "timestamp": (_TS_MIN, _TS_MAX, True, True), 17: (_TS_MIN, _TS_MAX, True, True),
    "minKey": (_BOTTOM, _BOTTOM, True, True), -1: (_BOTTOM, _BOTTOM, True, True),
    "maxKey": (_TOP, _TOP, True, True), 127: (_TOP, _TOP, True, True),
}


def bracket_end(value: Any, *, maximum: bool) -> tuple[Any, bool] | None:
    """(value, inclusive) of the first or last bound of ``value``'s type bracket, as mongod's
    IndexBoundsBuilder ends a range open on that side (appendMinForType / appendMaxForType, a number's
    being -inf / inf; a string's last, exclusive, the empty document that follows the strings): what
    explain's indexBounds and a COUNT_SCAN's start / end keys show. None for the types left as MinKey /
    MaxKey here."""
    if isinstance(value, bool):
        return (True, True) if maximum else (False, True)
    if isinstance(value, int | float | Decimal128):
        return (math.inf, True) if maximum else (-math.inf, True)
    if type(value) is str:
        return ({}, False) if maximum else ("", True)
    if isinstance(value, dict):
        return ([], False) if maximum else ({}, True)
    if isinstance(value, datetime.datetime | DatetimeMS):
        return (_DATE_MAX, True) if maximum else (_DATE_MIN, True)
    if isinstance(value, ObjectId):
        return (_OID_MAX, True) if maximum else (_OID_MIN, True)
    if isinstance(value, Timestamp):
        return (_TS_MAX, True) if maximum else (_TS_MIN, True)
    return None


# an unbounded component's one range (a placeholder on each side: not ``_BOTTOM`` / ``_TOP``), shared by
# every scan: no caller changes a component's ranges (``FieldBounds.ranges`` are handed out so too)
_WHOLE: list[tuple[Any, Any, bool, bool]] = [(MinKey(), MaxKey(), True, True)]


def _component_ranges(b: FieldBounds | None, direction: int, multikey: bool = True,
                      encoded: dict[int, bytes] | None = None) -> list[tuple[Any, Any, bool, bool]]:
    """Value ranges (lo, hi, lo_incl, hi_incl) for one key component, in ascending value order.

    On a multikey index a range keeps one side only: {a: {$gt: 5, $lt: 8}} matches a: [1, 10] (each
    bound met by a different element) although no single key lies in (5, 8). ``encoded``: gets the
    ascending encoding of each point kept from several (by the point's ``id``: what deduplicated them)."""
    if b is None:
        return _WHOLE
    if b.ranges is not None and b.points is None:
        return b.ranges
    points = b.points
    if points is not None:
        if len(points) == 1:  # one point: nothing to dedupe or order
            p = points[0]
            return [(p, p, True, True)]
        uniq: dict[bytes, Any] = {}
        for p in points:
            uniq.setdefault(encode_key((p,), (1,)), p)
        # (the encoding is BSON order, and bytes compare in C: no sort key made per point)
        pts = [uniq[enc] for enc in sorted(uniq)]
        if encoded is not None:
            for enc, p in uniq.items():
                encoded[id(p)] = enc
        return [(p, p, True, True) for p in pts]
    lo = MinKey() if b.lo is _MISSING else b.lo
    hi = MaxKey() if b.hi is _MISSING or (multikey and b.lo is not _MISSING) else b.hi
    hi_incl = b.hi_incl if b.hi is not _MISSING and not isinstance(hi, MaxKey) else True
    return [(lo, hi, b.lo_incl if b.lo is not _MISSING else True, hi_incl)]


def build_intervals(spec: dict, bounds: dict[str, FieldBounds], multikey_default: bool = True,
                    scalar_paths: frozenset[str] = frozenset(),
                    exact: dict[str, Any] | None = None) -> tuple[list[Interval], BoundsDescription]:
    """Intervals over the full compound key: equality prefix, then one range, then MinKey..MaxKey.
    A range keeps both sides unless the index is (or may be) multikey and its path is not one of
    ``scalar_paths`` (paths that never hold an array). ``exact``: gets path -> condition for the
    filter conditions the intervals decide exactly (``FieldBounds.exact``, a component scanned by its
    own bounds, not by a hull; on a path that may hold an array, not a range of two sides): mongod's
    planner drops them from the FETCH filter (planner_access.cpp)."""
    fields, directions = key_fields(spec["key"])
    multikey = multikey_index(spec, multikey_default)
    sparse_single = bool(spec.get("sparse")) and len(fields) == 1  # (mongod's EXACT $exists: true)
    per_component: list[list[tuple]] = []
    shown_ranges: dict[str, tuple[list[tuple], int]] = {}  # explain's, in key order once rendered
    bounded = True
    encoded: dict[int, bytes] = {}  # ascending encodings of the points deduplicated, by their id
    bounded_heads: set[str] = set()  # first components of the (multikey) paths bounded so far
    for f, d in zip(fields, directions, strict=False):
        b = bounds.get(f) if bounded else None
        if b is not None and b.expr_range and multikey and f not in scalar_paths:
            b = None  # an array's keys are its elements, a $expr compares it whole
        if b is not None and multikey and f not in scalar_paths:
            # Two paths under one array (``a.b``, ``a.c``) take their keys from one element at a time
            # (index_keys), while ``{"a.b": 1, "a.c": 1}`` may meet each in another element: only the
            # first may bound the scan (mongod without $elemMatch, SERVER-958)
            head = f.partition(".")[0]
            if head in bounded_heads:
                b = None
            bounded_heads.add(head)
        arrays = multikey and f not in scalar_paths
        ranges = _WHOLE if b is None else _component_ranges(b, d, arrays, encoded if d == 1 else None)
        if exact is not None and b is not None and b.exact is not None and \
                tight_condition(f, b.exact, sparse_single) and \
                not (arrays and b.lo is not _MISSING and b.hi is not _MISSING):
            # (on a path that may hold an array a range keeps one side: {$gt: 5, $lt: 8} matches [1, 10]
            # with no key in (5, 8), so the scan reads (5, inf] and the filter decides the rest; a point,
            # a $in or a one-sided range is EXACT there too: an element's key is a value the document
            # holds on the path, which the matcher reads element by element)
            exact[f] = b.exact
        if b is None or b.points is None:
            bounded = False  # components after a range or an unbounded field are scanned fully
        per_component.append(ranges)
        shown_ranges[f] = (ranges, d)
    total = longest = 1
    for ranges in per_component:
        n = len(ranges)
        total *= n
        if n > longest:
            longest = n
    if total > MAX_INTERVALS and total > longest:
        # Too many point combinations ($in on several fields): scan each component's hull instead. One
        # component's own points are scanned one by one however many (as mongod's): as many intervals
        # as the query holds values, and its bounds stay exact.
        per_component = [[(r[0][0], r[-1][1], True, True)] if len(r) > 1 else r for r in per_component]
        if exact:
            for f in fields:
                if len(shown_ranges[f][0]) > 1:  # (a hull is a superset)
                    exact.pop(f, None)
    intervals = _intervals(per_component, directions, encoded)
    if len(intervals) > 1:
        intervals.sort(key=lambda iv: iv.lo or b"")
    return intervals, BoundsDescription(shown_ranges)


class BoundsDescription(Mapping[str, list[str]]):
    """explain's ``indexBounds`` of an index scan (field -> interval strings), rendered on first use:
    every query builds a plan, a series explosion one per new series (reopen.py), and only explain
    reads the strings."""

    __slots__ = ("_ranges", "_rendered")

    def __init__(self, ranges: dict[str, tuple[list[tuple], int]]):
        self._ranges = ranges  # field -> (its value ranges in ascending order, its key direction)
        self._rendered: dict[str, list[str]] | None = None

    def _render(self) -> dict[str, list[str]]:
        if self._rendered is None:
            self._rendered = {f: [_interval_desc(*r) for r in _in_key_order(ranges, d)]
                              for f, (ranges, d) in self._ranges.items()}
        return self._rendered

    def __getitem__(self, key: str) -> list[str]:
        return self._render()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._render())

    def __len__(self) -> int:
        return len(self._ranges)

    def single_interval(self) -> tuple[dict[str, Any], bool, dict[str, Any], bool] | None:
        """(start key, inclusive, end key, inclusive) when these bounds are one interval of the index,
        as mongod's IndexBoundsBuilder::isSingleInterval reads them (a COUNT_SCAN's keys): points on a
        prefix of the key, then at most one range (the first field with all its values is one), then
        fields with all their values, shown as MinKey / MaxKey as the range's ends include them. A
        range open on one side ends at its type bracket's end (``bracket_end``). None otherwise."""
        start: dict[str, Any] = {}
        end: dict[str, Any] = {}
        start_incl = end_incl = True
        ranged = False
        for f, (ranges, d) in self._ranges.items():
            if len(ranges) != 1:
                return None
            lo, hi, lo_incl, hi_incl = _in_key_order(ranges, d)[0]
            whole = _is_placeholder(lo) and _is_placeholder(hi)
            if ranged:
                if not whole:
                    return None
                start[f] = MinKey() if start_incl else MaxKey()
                end[f] = MaxKey() if end_incl else MinKey()
                continue
            if lo is hi and not _is_placeholder(lo):  # a point (``_component_ranges``)
                start[f] = end[f] = lo
                continue
            ranged = True
            if not whole:
                if _is_placeholder(lo):
                    found = bracket_end(hi, maximum=isinstance(lo, MaxKey))
                    if found is None:
                        return None
                    lo, lo_incl = found
                elif _is_placeholder(hi):
                    found = bracket_end(lo, maximum=isinstance(hi, MaxKey))
                    if found is None:
                        return None
                    hi, hi_incl = found
            start[f], start_incl, end[f], end_incl = lo, lo_incl, hi, hi_incl
        return start, start_incl, end, end_incl


def _in_key_order(ranges: list[tuple], direction: int) -> list[tuple]:
    """A key component's value ranges in the index's order (a descending one: reversed, each flipped)."""
    if direction == 1:
        return ranges
    return [(h, lo, hi_i, lo_i) for (lo, h, lo_i, hi_i) in reversed(ranges)]


def _is_placeholder(v: Any) -> bool:
    """The open side of a range (kept in the other side's type bracket); not the absolute ends."""
    return type(v) in _ENDS and v is not _TOP and v is not _BOTTOM


_ENDS = frozenset({MinKey, MaxKey})


_new = tuple.__new__  # (an ``Interval``'s own constructor is a Python call more: one per interval of every scan)


def _intervals(per_component: list[list[tuple]], directions: tuple[int, ...],
               encoded: dict[int, bytes] | None = None) -> list[Interval]:
    """Encoded bounds for every combination of per-component value ranges (one interval each, in the
    order of ``itertools.product``).

    Bounds stop after the first non-point component and rely on storage's *prefix* semantics
    (storage/indexes.py): ``lo = hi = enc(5)`` inclusive spans every key starting with 5 (any trailing
    fields, any record id), an exclusive ``lo = enc(5)`` skips them all. A key is the concatenation of its
    components' encodings, so each value range of a component is encoded once (``_piece``), whatever the
    number of combinations it is part of (``$in`` of 8 values before a time range: 10 encodings, not 24),
    and a point of an ascending component that deduplication encoded already is not encoded again
    (``encoded``, by the point's id: ``_component_ranges``)."""
    intervals = []
    going = [b""]  # the equality prefixes of the combinations not ended yet
    for ranges, d in zip(per_component, directions, strict=False):
        pieces: list[Any] = ([_piece(ranges[0], d, encoded)] if len(ranges) == 1
                             else [_piece(r, d, encoded) for r in ranges])
        longer = []
        for prefix in going:
            for piece in pieces:
                if type(piece) is bytes:  # (a point: ``encode_key``'s bytes)
                    longer.append(prefix + piece)
                elif piece is None:
                    intervals.append(_new(Interval, (prefix or None, prefix or None, True, True)))
                else:
                    lo, lo_incl, hi, hi_incl = piece
                    intervals.append(_new(Interval, (prefix + lo, prefix + hi, lo_incl, hi_incl)))
        going = longer
        if not going:
            return intervals
    intervals.extend(Interval(prefix or None, prefix or None, True, True) for prefix in going)
    return intervals


def _piece(value_range: tuple, d: int,
           encoded: dict[int, bytes] | None = None) -> bytes | tuple[bytes, bool, bytes, bool] | None:
    """One component's part of an interval: a point's encoding (the key prefix goes on), a range's
    (lo, lo_incl, hi, hi_incl) suffixes (the bound ends there), or None for a range open on both sides
    (left out: the bound is the equality prefix alone, None without one). A range open on one side
    stays inside the type bracket of its other side (``$gt: 5`` only matches numbers, as in MongoDB):
    the open side becomes the bracket's first byte (inclusive) or the byte after it (exclusive)."""
    vlo, vhi, vlo_incl, vhi_incl = value_range
    # (``_is_placeholder`` inline: two values per range of every scan)
    lo_open = type(vlo) in _ENDS and vlo is not _TOP and vlo is not _BOTTOM
    if vlo is vhi and not lo_open:  # a point (from _component_ranges)
        known = encoded.get(id(vlo)) if encoded and d == 1 else None
        return known if known is not None else encode_key((vlo,), (d,))
    hi_open = type(vhi) in _ENDS and vhi is not _TOP and vhi is not _BOTTOM
    if lo_open and _is_ordered_number(vhi):
        # numbers below a bound start at -Infinity (mongod's IndexBoundsBuilder): NaN, first of the
        # number bracket, is no match for a range, and a COUNT_SCAN counts its interval's entries
        vlo, vlo_incl, lo_open = -math.inf, True, False
    real = vlo if not lo_open else (vhi if not hi_open else None)
    if real is None:
        return None
    # key order: ascending fields keep value order, descending ones reverse it
    klo, klo_incl, khi, khi_incl = (vlo, vlo_incl, vhi, vhi_incl) if d == 1 else (vhi, vhi_incl, vlo, vlo_incl)
    klo_open, khi_open = (lo_open, hi_open) if d == 1 else (hi_open, lo_open)
    lo = None if klo_open else encode_key((klo,), (d,))
    hi = None if khi_open else encode_key((khi,), (d,))
    # the type bracket of the real side (the low one when both are): its key's first byte is the
    # value's type tag (inverted on a descending field), so it is read there, not encoded again
    first = (lo if d == 1 else hi) if real is vlo else (hi if d == 1 else lo)
    tag = first[0] if d == 1 else 255 - first[0]  # type: ignore[index]
    if lo is None:
        lo, lo_incl = (bytes([tag]) if d == 1 else bytes([255 - tag])), True
    else:
        lo_incl = klo_incl
    if hi is None:
        hi, hi_incl = (bytes([tag + 1]) if d == 1 else bytes([256 - tag])), False
    else:
        hi_incl = khi_incl
    return lo, lo_incl, hi, hi_incl


def without_expr_ranges(bounds: dict[str, FieldBounds]) -> dict[str, FieldBounds]:
    """``bounds`` less the ``$expr`` order comparisons' ranges, for an index whose keys may hold an
    array's elements."""
    if not any(b.expr_range for b in bounds.values()):
        return bounds
    return {p: b for p, b in bounds.items() if not b.expr_range}


def special_index_bounds(bounds: dict[str, FieldBounds]) -> dict[str, FieldBounds]:
    """``bounds`` for the indexes that are no btree of the values (wildcard, hashed, geo, text): less the
    ``$expr`` order comparisons' ranges (their keys may hold an array's elements) and the ``$exists`` /
    ``$type`` brackets (``FieldBounds.weak``: those indexes read them their own way, or not at all)."""
    if not any(b.expr_range or b.weak for b in bounds.values()):
        return bounds
    return {p: b for p, b in bounds.items() if not (b.expr_range or b.weak)}


def multikey_index(spec: dict, multikey_default: bool) -> bool:
    """Whether the index may hold an array's elements as keys (``_id_`` never does)."""
    return bool(spec.get(MULTIKEY_FLAG, multikey_default)) and spec["name"] != "_id_"


def _is_nan(value: Any) -> bool:
    """A double or Decimal128 NaN."""
    t = type(value)
    return t is float and value != value or t is Decimal128 and value.to_decimal().is_nan()


def _is_ordered_number(value: Any) -> bool:
    """A number other than NaN (bool is no number)."""
    if isinstance(value, Decimal128):
        return not value.to_decimal().is_nan()
    return isinstance(value, int | float) and not isinstance(value, bool) and value == value


def bounds_for_hashed(indexes: list[dict], bounds: dict[str, FieldBounds],
                            collation: Any) -> dict[str, FieldBounds]:
    """Bounds for hashed equality: string points only under the simple collation (hashes of
    strings are not collation-aware)."""
    if collation is None:
        return bounds
    return {p: b for p, b in bounds.items()
            if not any(has_strings(v) for v in ((b.points or []) if b.is_point else []))}


def bounds_for_index(spec: dict, bounds: dict[str, FieldBounds],
                      collation: Any) -> tuple[dict[str, FieldBounds], bool]:
    """The bounds an index can use under the query's collation, and whether the collations match.

    Same collation: string bounds become the index's collation keys. Different: string (and
    string-holding) bounds are dropped: the index orders strings differently (the full filter is
    re-applied to whatever the scan returns)."""
    if collation is None and not spec.get("collation"):
        return bounds, True  # (both simple: what most reads meet, without parsing either)
    icoll = index_collation(spec)
    same = same_collation(icoll, collation)
    if same and icoll is None:
        return bounds, True
    out: dict[str, FieldBounds] = {}
    for path, b in bounds.items():
        if b.ranges is not None and b.points is None and icoll is not None and (
                not b.weak or any(has_strings(v) for v in b.values())):
            continue  # a regex's prefix (a string bracket) is in code point order, not the index's collation order
        if not any(has_strings(v) for v in b.values()):
            out[path] = b
        elif same:
            out[path] = FieldBounds(
                points=[collated_key_value(p, icoll) for p in b.points] if b.points is not None else None,
                lo=b.lo if b.lo is _MISSING else collated_key_value(b.lo, icoll), lo_incl=b.lo_incl,
                hi=b.hi if b.hi is _MISSING else collated_key_value(b.hi, icoll), hi_incl=b.hi_incl,
                present=b.present)
    return out, same


def value_ranges(b: FieldBounds, direction: int, multikey: bool = True) -> list[tuple[Any, Any, bool, bool]]:
    """One key component's value ranges for ``b`` (``_component_ranges``), for key layouts built
    elsewhere (a wildcard index's ``(path, value)`` pairs: ``wildcard_plan``)."""
    return _component_ranges(b, direction, multikey)


def ranges_intervals(per_component: list[list[tuple]], directions: tuple[int, ...]) -> list[Interval]:
    """The encoded intervals of per-component value ranges (``_intervals``), sorted by their low end."""
    intervals = _intervals(per_component, directions)
    if len(intervals) > 1:
        intervals.sort(key=lambda iv: iv.lo or b"")
    return intervals


def describe_range(value_range: tuple) -> str:
    """explain's rendering of one value range (``[1, 5)``)."""
    return _interval_desc(*value_range)

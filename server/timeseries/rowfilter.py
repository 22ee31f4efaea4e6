"""The column filter of a read on a time-series view (pure): the part of the event filter (the leading
``$match``) that is decided on a bucket's whole columns, giving the positions of the rows worth
materializing; only those become measurements. ``accepted(view, ...)`` is the one unpack of a bucket's
rows for a filter (the generic read, view.py; the columnar ``$group``'s buckets that are not dense,
groupbatch.py): with no column filter, or one that cannot judge the bucket, every row; ``count(view, ...)``
the number of rows it gives, without documents where the filter allows (reads that only count: rowcount.py).

``plan(node, time_field, meta_field)`` keeps the conjuncts of the filter's top-level ``$and`` that are
comparisons of a top-level measurement field (or the time field) with a number or a date — ``$eq``,
``$gt``, ``$gte``, ``$lt``, ``$lte``, ``$in`` of numbers and dates, and their negations ``$ne`` /
``$nin`` / ``$not`` — as ``Term``s. ``ColumnFilter.rows(view)`` evaluates each term on the column's
typed values (``view.dense``) and answers ``Rows``: the ascending positions of the rows every
evaluated term accepts (None: every row) and whether that answer is the whole filter.

A term is evaluated only where its answer is MongoDB's exactly, row by row; anywhere else it is left
out (the positions are then a superset, and the exact event filter still runs on the rows kept):

- the column must be *typed* — every row holds one fixed-width BSON type (double, int32, int64, date,
  bool, ObjectId): no missing row, no null, no array (an array element could match), no Decimal128,
  no NaN operand. A field absent from the whole bucket is missing in every row: a comparison accepts
  none of them, its negation all;
- type bracketing: a number compares with numbers only and a date with dates only; a typed column of
  another bracket accepts no row (its negation every row);
- numbers compare numerically across int32/int64/double, exactly: an integer column meets a double
  operand through the integer on the right side of it (``v > 2.5`` is ``v > 2``), a double column an
  integer operand only when the operand converts to a double exactly (|x| <= 2**53); a NaN row matches
  no bound (NumPy's comparisons are False for NaN, as MongoDB's are for a non-NaN operand);
- collation orders strings only: numbers and dates are unaffected, so the column filter holds under
  any collation.

The answer is the whole filter (``Rows.exact``: the event filter need not run) only when every
conjunct of the filter was evaluated on this bucket or is a meta conjunct the bucket filter decides
exactly (``filters.decided_per_bucket``: every row of a bucket that passed the bucket filter matches
it). A meta conjunct is never a term.
"""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

import numpy as np
from bson.datetime_ms import DatetimeMS
from bson.int64 import Int64

from tidemark.protocol.codec import EncodedRun
from tidemark.query.match_ast import VALUE_PATH, And, Cmp, In, Node, Not
from tidemark.timeseries.bucketdoc import date_ms
from tidemark.timeseries.columns import BOOL, DATE, DOUBLE, INT32, INT64, OID
from tidemark.timeseries.filters import FilterShape, decided_per_bucket, shape_of

_NUMERIC = frozenset({DOUBLE, INT32, INT64})
_TYPED = frozenset({DOUBLE, INT32, INT64, DATE, BOOL, OID})  # fixed-width: never an array, never missing
_OPS = {"$eq": np.equal, "$gt": np.greater, "$gte": np.greater_equal, "$lt": np.less, "$lte": np.less_equal}
_EXACT_DOUBLE = 2**53  # every integer up to this magnitude is a double exactly
_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1
JOINED_ROWS = 101  # the documents of a joined run (``joined``): mongod's first batch


class Operand(NamedTuple):
    """A comparison operand: a number (``date`` False; int or float, never NaN) or a date in ms."""

    date: bool
    value: int | float


class Term(NamedTuple):
    """``path op operand`` (``$in``: any of ``operands`` equal), negated when ``negated`` (a tuple: made
    for each read, ~4 times faster than a frozen dataclass)."""

    path: str
    op: str  # $eq, $gt, $gte, $lt, $lte, $in
    operands: tuple[Operand, ...]
    negated: bool = False


class Rows(NamedTuple):
    """What the column filter says of one bucket."""

    positions: np.ndarray | None  # ascending row positions to materialize (None: every row)
    exact: bool  # the positions are exactly the rows the whole event filter accepts
    rows: int  # rows in the bucket (0 when the filter could not be evaluated at all)


EVERY_ROW = Rows(None, False, 0)


class ColumnFilter:
    """The terms of a filter and whether they are all of it."""

    def __init__(self, terms: list[Term], complete: bool, time_field: str, dates: tuple[int | None, ...] = ()):
        self.terms = terms
        self.complete = complete  # every conjunct of the filter is a term
        self.time_field = time_field
        # each comparison of the time field (not negated, not ``$in``), in the filter's order: its operand
        # in ms when a ``datetime`` (None otherwise), converted once here for ``columnar.plan`` too
        self.dates = dates

    def explain(self) -> list[str]:
        return [_render(term) for term in self.terms]

    def rows(self, view: Any) -> Rows:
        """The rows of ``view`` (a ``read_interface.BucketView``) the terms accept."""
        times = view.dense(self.time_field)
        if times is None:  # rows not numbered by a dense time column: read them all
            return EVERY_ROW
        n = len(times[1])
        names: set[str] | None = None
        mask: np.ndarray | None = None
        exact = self.complete
        for term in self.terms:
            column = times if term.path == self.time_field else view.dense(term.path)
            if column is None:
                if names is None:
                    names = set(view.column_names())
                if term.path in names:  # present, not typed (missing rows, nulls, arrays, mixed types)
                    exact = False
                    continue
                hit = _constant(n, term.negated)  # missing in every row
            elif len(column[1]) != n or column[0] not in _TYPED:
                exact = False  # a stored column filling only its first rows, or an untyped kind
                continue
            else:
                found = _evaluate(term, column[0], column[1])
                if found is None:
                    exact = False
                    continue
                hit = found
            mask = hit if mask is None else mask & hit
        if mask is None:
            return Rows(None, exact, n)
        if mask.all():
            return Rows(None, exact, n)
        return Rows(np.flatnonzero(mask), exact, n)


def accepted(view: Any, fields: Iterable[str] | None, event_filter: Any, column_filter: ColumnFilter | None,
             info: dict[str, Any], time_field: str, meta_field: str | None, raw: bool = False,
             within: np.ndarray | None = None) -> Iterator[Any]:
    """The one unpack of a bucket's rows for a filter (every read that makes documents of a bucket's
    measurements: the generic read, the columnar ``$group``'s buckets that are not dense): the rows the
    column filter keeps are materialized (every row without one, or where it cannot judge the bucket),
    and the event filter (None: the bucket filter decided whole buckets) runs on them unless the column
    filter decided the whole filter for this bucket. ``raw``: the rows accepted come as their BSON
    documents, made from the columns, as ONE item: an ``EncodedRun`` of the bucket's accepted rows (what a
    cursor takes into its batches a stretch at a time, ``cursors._fill_batch``; none when no row is
    accepted) — dicts are made only of the rows the event filter must look at. Explain's counters: ``measurementsUnpacked``
    the rows materialized, ``measurementsSkipped`` those the columns rejected, ``measurementsReturned``
    those accepted. ``within``: the only rows (ascending positions) the caller can use — a bounded time
    sort's rows that may still place (``time_sort``) — the others are not read."""
    check = event_filter
    positions = None
    if column_filter is not None:
        rows = column_filter.rows(view)
        positions = rows.positions
        if rows.exact:
            check = None
        if positions is not None:
            info["measurementsSkipped"] += rows.rows - len(positions)
            if not len(positions):
                return
    if within is not None:
        positions = within if positions is None else np.intersect1d(positions, within, assume_unique=True)
        if not len(positions):
            return
    unpacked = view.unpack(fields, positions, time_field=time_field, meta_field=meta_field)
    if raw:
        if check is None:
            run = unpacked.documents()
            info["measurementsUnpacked"] += len(run)
        else:
            kept = []
            seen = 0
            for measurement in unpacked.dicts():
                if check(measurement):
                    kept.append(seen)
                seen += 1
            info["measurementsUnpacked"] += seen
            run = unpacked.documents(kept)
        info["measurementsReturned"] += len(run)
        if len(run):
            yield run
        return
    count = 0
    returned = 0
    for measurement in unpacked.dicts():
        count += 1
        if check is None or check(measurement):
            returned += 1
            yield measurement
    info["measurementsUnpacked"] += count
    info["measurementsReturned"] += returned


def count(view: Any, fields: Iterable[str] | None, event_filter: Any, column_filter: ColumnFilter | None,
          info: dict[str, Any], time_field: str, meta_field: str | None) -> int:
    """How many rows ``accepted`` gives of ``view`` (the same rule), building a document only where the
    filter needs one: with no event filter (no filter, or one the bucket filter decides for whole
    buckets: the meta) every row of the bucket counts, read off its time column; where the column filter
    decides the whole filter for the bucket, the rows it keeps; otherwise the rows the event filter
    accepts among those, made of ``fields`` only (what the filter reads). Explain's counters as
    ``accepted`` counts them (rows counted without a document are not ``measurementsUnpacked``)."""
    if event_filter is None:
        n = _row_count(view, time_field, meta_field)
        info["measurementsReturned"] += n
        return n
    if column_filter is not None:
        rows = column_filter.rows(view)
        if rows.exact:  # (an exact answer read the dense time column: ``rows.rows`` is the bucket's rows)
            n = rows.rows if rows.positions is None else len(rows.positions)
            info["measurementsSkipped"] += rows.rows - n
            info["measurementsReturned"] += n
            return n
    return sum(1 for _ in accepted(view, fields, event_filter, column_filter, info, time_field, meta_field))


def _row_count(view: Any, time_field: str, meta_field: str | None) -> int:
    """The rows of a bucket: the length of its time column (every measurement has a time) when it is
    typed, else the rows an unpack of no field numbers."""
    times = view.dense(time_field)
    if times is not None:
        return len(times[1])
    return sum(1 for _ in view.unpack((), None, time_field=time_field, meta_field=meta_field).dicts())


def joined(runs: Iterable[EncodedRun], least: int = JOINED_ROWS) -> Iterator[EncodedRun]:
    """The documents of consecutive ``runs`` (``accepted``'s raw items, one per bucket) in runs of at
    least ``least`` documents (the last one less): the cursor takes each run into its batches at a cost
    per run, and a bucket's accepted rows are often a few dozen. A run is read ahead of the cursor by
    at most ``least`` documents beyond what its batch takes."""
    docs: list[bytes] = []
    sizes: list[np.ndarray] = []
    for run in runs:
        docs += run.docs
        sizes.append(run.sizes if run.sizes is not None else np.fromiter(map(len, run.docs), np.int64, len(run.docs)))
        if len(docs) >= least:
            yield EncodedRun(docs, sizes[0] if len(sizes) == 1 else np.concatenate(sizes))
            docs, sizes = [], []
    if docs:
        yield EncodedRun(docs, sizes[0] if len(sizes) == 1 else np.concatenate(sizes))


def plan(node: Node | None, time_field: str, meta_field: str | None,
         shape: FilterShape | None = None) -> ColumnFilter | None:
    """The column filter of ``node`` (None when no conjunct is a term): its shape's ``_Template`` (made
    once per shape: ``filters.FilterShape.columns``; ``shape``: ``filters.shape_of(node, time_field,
    meta_field)`` when the caller has it) bound to ``node``'s operands."""
    if node is None:
        return None
    if shape is None:
        shape = shape_of(node, time_field, meta_field)
    template = shape.columns
    if template is None:
        template = shape.columns = _Template(node, time_field, meta_field)
    terms = []
    complete = True
    dates: tuple[int | None, ...] = ()
    # (the terms bound inline — a loop, tuples made by ``tuple.__new__`` —: every read with a filter
    # binds them; what the shape fixes is the template's)
    for part, binder, decided in zip(node.children if template.flat else (node,) if template.alone  # type: ignore[attr-defined]
                                     else _conjuncts(node),
                                     template.binders, template.decided, strict=True):
        if binder is not None:
            path, op, negated, unwrap, is_in, dated = binder
            if negated:
                part = part.child
                if unwrap:  # {$not: {$gt: 5}}
                    part = part.children[0]
            if not is_in:
                values: Any = (part.value,)
            elif part.regexes or not part.values:
                values = ()
            else:
                values = part.values
            operands: tuple[Operand, ...] = ()
            ms = None
            for value in values:
                kind = type(value)
                if kind is int or kind is Int64:
                    operands += (_new(Operand, (False, int(value))),)
                elif kind is float and value == value:  # (NaN: the event filter)
                    operands += (_new(Operand, (False, value)),)
                elif (kind is _dt.datetime or kind is DatetimeMS) and (ms := date_ms(value)) is not None:
                    operands += (_new(Operand, (True, ms)),)
                else:  # Decimal128, strings, null, MinKey/MaxKey, objects, arrays, regexes...: the event filter
                    operands = ()
                    break
            if dated:  # (a comparison: ``value`` its one operand)
                dates += (ms if kind is _dt.datetime else None,)
            if operands:
                terms.append(_new(Term, (path, op, operands, negated)))
                continue
        complete = complete and decided
    if not terms:
        return None
    return ColumnFilter(terms, complete, time_field, dates)


_new = tuple.__new__  # (a NamedTuple's own constructor is a Python call more)


class _Template:
    """What a filter's shape fixes of its column filter: its conjuncts (the top-level ``$and``
    flattened), how each may be a term (``binders``: for a comparison or ``$in`` of a top-level field,
    negated or not, its (path, operator, negated, whether its negation wraps a one-conjunct ``$and``,
    whether an ``$in``, whether a comparison of the time field: ``ColumnFilter.dates``); None for any other — whether it is one depends on its operands, read at each
    bind), and which the bucket filter decides exactly when it is none (``decided``:
    ``filters.decided_per_bucket``, which reads node kinds and paths only). A term is never a meta
    conjunct: the first other conjunct the bucket filter does not decide makes the terms less than the
    whole filter."""

    __slots__ = ("flat", "alone", "binders", "decided")

    def __init__(self, node: Node, time_field: str, meta_field: str | None):
        # a conjunction of no conjunction (every read's filter): its children are the conjuncts
        self.flat = isinstance(node, And) and not any(isinstance(c, And) for c in node.children)
        self.alone = not isinstance(node, And)  # one conjunct: the node itself (a filter of one comparison)
        parts = _conjuncts(node)
        self.binders = tuple(_binder(part, time_field, meta_field) for part in parts)
        self.decided = tuple(decided_per_bucket(part, meta_field) for part in parts)


def _binder(node: Node, time_field: str, meta_field: str | None) -> tuple[str, str, bool, bool, bool, bool] | None:
    """How ``node`` may be a term, by its kind, path and operator alone (``_Template.binders``)."""
    negated = unwrap = False
    if isinstance(node, Not):
        negated, node = True, node.child
        if isinstance(node, And) and len(node.children) == 1:
            unwrap, node = True, node.children[0]
    if isinstance(node, Cmp):
        path, op = node.path, node.op
    elif isinstance(node, In):
        path, op = node.path, "$in"
    else:
        return None
    if path in ("", VALUE_PATH) or "." in path or path == meta_field or (op not in _OPS and op != "$in"):
        return None
    return path, op, negated, unwrap, op == "$in", path == time_field and not negated and op != "$in"


def _conjuncts(node: Node) -> list[Node]:
    if isinstance(node, And):
        return [c for child in node.children for c in _conjuncts(child)]
    return [node]


def _constant(n: int, value: bool) -> np.ndarray:
    return np.ones(n, bool) if value else np.zeros(n, bool)


def _evaluate(term: Term, kind: int, values: np.ndarray) -> np.ndarray | None:
    """The exact mask of ``term`` over a typed column, or None when it has no exact vectorized form."""
    if term.op == "$in":
        mask = _in_mask(kind, values, term.operands)
    else:
        mask = _compare(kind, values, term.op, term.operands[0])
    if mask is None:
        return None
    return ~mask if term.negated else mask


def _in_mask(kind: int, values: np.ndarray, operands: tuple[Operand, ...]) -> np.ndarray | None:
    """A typed column's membership in an ``$in``'s operands, exactly as ``$eq`` against each (type
    bracketing; an integer column equals only whole numbers), in one pass over the column whatever
    the number of operands (each operand's own pass took 3 s for 1,000 rows and 100,000 values)."""
    n = len(values)
    if kind == DATE:
        dates = [o.value for o in operands if o.date]
        return np.isin(values, np.asarray(dates, np.int64)) if dates else _constant(n, False)
    if kind not in _NUMERIC:
        return _constant(n, False)
    numbers = [o.value for o in operands if not o.date]
    if kind == DOUBLE:
        if any(type(x) is int and abs(x) > _EXACT_DOUBLE for x in numbers):
            return None
        return np.isin(values, np.asarray(numbers, np.float64)) if numbers else _constant(n, False)
    whole = [int(x) for x in numbers if type(x) is int or (math.isfinite(x) and x == math.floor(x))]
    whole = [k for k in whole if _I64_MIN <= k <= _I64_MAX]
    if not whole:
        return _constant(n, False)
    return np.isin(values.astype(np.int64, copy=False), np.asarray(whole, np.int64))


def _compare(kind: int, values: np.ndarray, op: str, operand: Operand) -> np.ndarray | None:
    n = len(values)
    if operand.date:
        if kind != DATE:
            return _constant(n, False)  # type bracketing: only dates compare with a date
        return np.asarray(_OPS[op](values, np.int64(operand.value)))
    if kind not in _NUMERIC:
        return _constant(n, False)  # only numbers compare with a number
    x = operand.value
    if kind == DOUBLE:
        if type(x) is int and abs(x) > _EXACT_DOUBLE:
            return None
        return np.asarray(_OPS[op](values, float(x)))
    return _compare_integers(values, op, x)


def _compare_integers(values: np.ndarray, op: str, x: int | float) -> np.ndarray | None:
    """An integer column against a number, exactly: a double operand becomes the integer bound that
    accepts the same integers; a bound past the int64 range accepts all or none."""
    n = len(values)
    if type(x) is float:
        if math.isinf(x):  # every integer is below +inf and above -inf, none equal
            return _constant(n, op in (("$lt", "$lte") if x > 0 else ("$gt", "$gte")))
        if op == "$eq":
            if x != math.floor(x):
                return _constant(n, False)
            k = int(x)
        elif op in ("$gt", "$lte"):
            k = math.floor(x)  # v > 2.5 <=> v > 2; v <= 2.5 <=> v <= 2
        else:
            k = math.ceil(x)  # v >= 2.5 <=> v >= 3; v < 2.5 <=> v < 3
    else:
        k = int(x)
    if k > _I64_MAX:
        return _constant(n, op in ("$lt", "$lte"))
    if k < _I64_MIN:
        return _constant(n, op in ("$gt", "$gte"))
    return np.asarray(_OPS[op](values.astype(np.int64, copy=False), np.int64(k)))


def _render(term: Term) -> str:
    """A term as explain shows it."""
    shown = [f"Date({o.value})" if o.date else repr(o.value) for o in term.operands]
    operand = "[" + ", ".join(shown) + "]" if term.op == "$in" else shown[0]
    text = f"{term.path} {term.op} {operand}"
    return f"not({text})" if term.negated else text

"""$setWindowFields: partition, sort, and compute window functions over each document's window.

Spec: ``{partitionBy: expr, sortBy: {f: ±1, ...}, output: {path: {$op: arg, window: {...}}}}``.

- Documents are buffered per partition (blocking), partitions ordered by their key in BSON order,
  each sorted stably by ``sortBy``; output follows that order (as mongod's inserted $sort does).
- Windows: ``{documents: [lo, hi]}`` (positions relative to the current one, "unbounded",
  "current"), ``{range: [lo, hi], unit?}`` (values relative to the current sortBy value; with
  ``unit`` the sortBy field must hold dates and bounds are calendar offsets via ``dates.date_add``).
  No window = the whole partition. Bounds are inclusive.
- Both window kinds move monotonically, so accumulators slide: entering documents are processed,
  leaving ones removed when the accumulator supports ``remove`` ($sum $avg $count $stdDev*),
  otherwise the window is re-accumulated (O(window) per document).
- Functions: every accumulator in ``accumulators``, plus $count, $rank, $denseRank,
  $documentNumber, $shift, $derivative, $integral, $expMovingAvg, $locf, $linearFill,
  $covariancePop, $covarianceSamp.
"""

from __future__ import annotations

import bisect
from typing import Any, cast

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query import dates
from tidemark.query.accumulator_state import Covariance
from tidemark.query.accumulators import ACCUMULATORS, AccumulatorSpec, parse_accumulator
from tidemark.query.collation import sort_key_for
from tidemark.query.expr_base import as_float, int_arg, num_kind, traverse, type_name
from tidemark.query.expressions import compile_expression, is_constant
from tidemark.query.interrupt import tick
from tidemark.query.memory import approx_size
from tidemark.query.pipeline import PipelineContext, Stage
from tidemark.query.sort import make_sort_key, parse_sort
from tidemark.query.stage_group import group_key_for
from tidemark.query.stages import set_field
from tidemark.query.value_repr import bson_repr
from tidemark.query.values import MISSING, compare, sort_key
from tidemark.query.window_rates import derivative, integral, integral_point, linear_fill

_NO_WINDOW_OPS = ("$rank", "$denseRank", "$documentNumber", "$shift", "$expMovingAvg", "$locf", "$linearFill")
_RATE_UNITS = ("week", "day", "hour", "minute", "second", "millisecond")
# Every window function $setWindowFields accepts: MongoDB 7.0's window operators ($mergeObjects and
# $accumulator, accumulators of $group, are not).
WINDOW_FUNCTIONS = (frozenset(ACCUMULATORS - {"$mergeObjects", "$accumulator"}) | set(_NO_WINDOW_OPS)
                    | {"$derivative", "$integral", "$covariancePop", "$covarianceSamp"})


class _Window:
    """Parsed window bounds: kind "documents" | "range" | None (whole partition)."""

    def __init__(self, kind, lo, hi, unit):
        self.kind, self.lo, self.hi, self.unit = kind, lo, hi, unit


def _bound_str(v) -> str:
    """A bound as mongod's Value::toString renders it inside error messages."""
    return repr(v) if type(v) is float else str(v)


def _parse_bound(v, kind, unit):
    """One bound: "unbounded", "current", or a constant number (an expression folding to one)."""
    if isinstance(v, str):
        if v in ("unbounded", "current"):
            return v
        raise MongoError(ErrorCode.FailedToParse, "Window bounds must be 'unbounded', 'current', or a number.")
    if not is_constant(v):
        raise MongoError(ErrorCode.FailedToParse, "Window bounds expression must be a constant.")
    v = compile_expression(v)({}, {})
    if kind == "documents":
        n = int_arg(v)
        if n is None or abs(n) > 2**31 - 1:
            raise MongoError(ErrorCode.FailedToParse, "Numeric document-based bounds must be an integer")
        return n
    if unit is not None:
        if int_arg(v) is None:
            raise MongoError(ErrorCode.FailedToParse, "With 'unit', range-based bounds must be an integer")
        return v
    if num_kind(v) is None:
        raise MongoError(ErrorCode.FailedToParse, "Range-based bounds expression must be a number")
    return v


def _check_forward(lo, hi):
    """mongod's checkBoundsForward: "current" counts as 0, numeric bounds must not be inverted."""
    a = 0 if lo == "current" else lo
    b = 0 if hi == "current" else hi
    if not isinstance(a, str) and not isinstance(b, str) and compare(a, b) > 0:
        raise MongoError(5339900, f"Lower bound must not exceed upper bound: [{_bound_str(a)}, {_bound_str(b)}]")


def _parse_window(spec, sort_fields):
    """WindowBounds::parse: the checks and messages in mongod's order."""
    if not isinstance(spec, dict):
        raise MongoError(ErrorCode.FailedToParse, "'window' field must be an object")
    documents, rng, unit = spec.get("documents", MISSING), spec.get("range", MISSING), spec.get("unit", MISSING)
    if documents is not MISSING and rng is not MISSING:
        raise MongoError(ErrorCode.FailedToParse, "Window bounds can specify either 'documents' or 'unit', not both.")
    if rng is MISSING and unit is not MISSING:
        raise MongoError(ErrorCode.FailedToParse, "Window bounds can only specify 'unit' with range-based bounds.")
    if rng is MISSING and documents is MISSING:
        if spec:
            raise MongoError(ErrorCode.FailedToParse, "'window' field can only contain 'documents' as the only "
                                                      "argument or 'range' with an optional 'unit' field")
        return _Window(None, "unbounded", "unbounded", None)

    def unpack(bounds):
        if not isinstance(bounds, list) or len(bounds) != 2:
            raise MongoError(ErrorCode.FailedToParse, f"Window bounds must be a 2-element array: {bson_repr(bounds)}")
        return bounds

    if documents is not MISSING:
        if len(spec) != 1:
            raise MongoError(ErrorCode.FailedToParse, "'window' field that specifies documents cannot have other fields")
        lo, hi = (_parse_bound(b, "documents", None) for b in unpack(documents))
        _check_forward(lo, hi)
        if (lo != "unbounded" or hi != "unbounded") and not sort_fields:
            raise MongoError(5339901, "Document-based bounds require a sortBy")
        return _Window("documents", lo, hi, None)
    if unit is not MISSING:
        if len(spec) != 2:
            raise MongoError(ErrorCode.FailedToParse,
                             "'window' field that specifies unit cannot have other fields besides 'range'")
        if not isinstance(unit, str):
            raise MongoError(ErrorCode.FailedToParse, "'unit' must be a string")
    elif len(spec) != 1:
        raise MongoError(ErrorCode.FailedToParse,
                         "'window' field that specifies range cannot have other fields besides 'unit'")
    unit = None if unit is MISSING else unit
    lo, hi = (_parse_bound(b, "range", unit) for b in unpack(rng))
    _check_forward(lo, hi)
    if unit is not None and unit not in dates.TIME_UNITS:
        raise MongoError(ErrorCode.FailedToParse, f"unknown time unit value: {unit}")
    if len(sort_fields) != 1:
        raise MongoError(5339902, "Range-based bounds require sortBy a single field")
    return _Window("range", lo, hi, unit)


class _Output:
    # set by _parse_output for the window functions that take them
    by: int  # $shift
    fn: Any  # the compiled input expression ($shift, $expMovingAvg, $locf, $linearFill, rates)
    default: Any  # $shift
    alpha: float  # $expMovingAvg
    unit: Any  # $derivative, $integral
    acc: AccumulatorSpec  # accumulators over a window

    def __init__(self, path, op, arg, window, sort_fields):
        self.parts = path.split(".")
        self.op, self.arg, self.window = op, arg, window
        self.sort_fields = sort_fields


def _parse_output(path, spec, sort_fields) -> _Output:
    if not isinstance(spec, dict):
        raise MongoError(ErrorCode.FailedToParse, f"The field '{path}' must be an object")
    ops = [k for k in spec if k != "window"]
    if len(ops) != 1:
        raise MongoError(ErrorCode.FailedToParse, f"Expected exactly one window function for field '{path}'")
    op = ops[0]
    arg = spec[op]
    if op in _NO_WINDOW_OPS and "window" in spec:
        raise MongoError(ErrorCode.FailedToParse, f"{op} does not accept a 'window' field")
    if op in ("$derivative", "$integral"):  # mongod validates their sortBy before the window
        if not sort_fields:
            raise MongoError(ErrorCode.FailedToParse, f"{op} requires a sortBy")
        if len(sort_fields) != 1:
            raise MongoError(ErrorCode.FailedToParse, f"{op} requires a non-compound sortBy")
    window = _parse_window(spec["window"], sort_fields) if "window" in spec else \
        _Window(None, "unbounded", "unbounded", None)
    out = _Output(path, op, arg, window, sort_fields)
    if op in ("$rank", "$denseRank", "$documentNumber"):
        if arg != {}:
            raise MongoError(5371601, f"{op} takes no arguments")
        if len(sort_fields) != 1 and op != "$documentNumber":
            raise MongoError(5371602, f"{op} must be specified with a top level sortBy expression with exactly one element")
        if not sort_fields:
            raise MongoError(5371602, f"{op} must be specified with a top level sortBy expression with exactly one element")
    elif op == "$shift":
        if not isinstance(arg, dict) or "output" not in arg or "by" not in arg:
            raise MongoError(ErrorCode.FailedToParse, "$shift requires 'output' and 'by'")
        by = int_arg(arg["by"])
        if by is None or num_kind(arg["by"]) is None:
            raise MongoError(ErrorCode.FailedToParse, "'$shift:by' field must be an integer, but found " + repr(arg["by"]))
        if not sort_fields:
            raise MongoError(5372802, "$shift requires a sortBy")
        out.by = by
        out.fn = compile_expression(arg["output"])
        out.default = compile_expression(arg.get("default", None))({}, {})
    elif op in ("$derivative", "$integral"):
        _parse_rate(op, arg, out, "window" in spec)
    elif op == "$expMovingAvg":
        if not isinstance(arg, dict) or "input" not in arg or ("N" in arg) == ("alpha" in arg):
            raise MongoError(ErrorCode.FailedToParse, "$expMovingAvg requires an 'input' and exactly one of 'N' and 'alpha'")
        if "N" in arg:
            n = int_arg(arg["N"])
            if n is None or n <= 0:
                raise MongoError(ErrorCode.FailedToParse, "'N' field must be an integer, but found type " + type_name(arg["N"]))
            out.alpha = 2.0 / (n + 1)
        else:
            if num_kind(arg["alpha"]) is None or not 0 < as_float(arg["alpha"]) < 1:
                raise MongoError(ErrorCode.FailedToParse, "'alpha' must be between 0 and 1 (exclusive)")
            out.alpha = as_float(arg["alpha"])
        if not sort_fields:
            raise MongoError(ErrorCode.FailedToParse, "$expMovingAvg requires an explicit 'sortBy'")
        out.fn = compile_expression(arg["input"])
    elif op in ("$locf", "$linearFill"):
        if op == "$linearFill" and len(sort_fields) != 1:
            raise MongoError(605001, "$linearFill must be specified with a top level sortBy expression with "
                                     "exactly one element")
        out.fn = compile_expression(arg)
    elif op in ("$covariancePop", "$covarianceSamp"):
        sample = op == "$covarianceSamp"
        out.acc = AccumulatorSpec(op, compile_expression(arg), lambda: Covariance(sample), arg)
    elif op in WINDOW_FUNCTIONS:
        out.acc = parse_accumulator(op, arg)
    else:
        raise MongoError(ErrorCode.FailedToParse, f"Unrecognized window function, {op}")
    return out


def _parse_rate(op, arg, out, has_window):
    """$derivative / $integral arguments: ``{input, unit?}``; $derivative needs explicit bounds."""
    if not isinstance(arg, dict):
        raise MongoError(ErrorCode.FailedToParse,
                         f"{op} expects an object, but got a {type_name(arg)}: {op}: {bson_repr(arg)}")
    unit = None
    for k, v in arg.items():
        if k == "input":
            continue
        if k != "unit":
            raise MongoError(ErrorCode.FailedToParse, f"{op} got unexpected argument: {k}")
        if not isinstance(v, str):
            raise MongoError(ErrorCode.FailedToParse, f"unit' must be a string, but got {type_name(v)}")
        if v not in dates.TIME_UNITS:
            raise MongoError(ErrorCode.FailedToParse, f"unknown time unit value: {v}")
        if v not in _RATE_UNITS:  # months and years have no fixed length in milliseconds
            raise MongoError(5490710, "unit must be 'week' or smaller")
        unit = v
    if "input" not in arg:
        raise MongoError(ErrorCode.FailedToParse, f"{op} requires an 'input' expression")
    if op == "$derivative" and not has_window:
        raise MongoError(ErrorCode.FailedToParse, "$derivative requires explicit window bounds")
    out.unit = unit
    out.fn = compile_expression(arg["input"])


def parse_set_window_fields(spec: Any, ctx: PipelineContext) -> Stage:
    if not isinstance(spec, dict):
        raise MongoError(ErrorCode.FailedToParse, "the $setWindowFields stage specification must be an object")
    for k in spec:
        if k not in ("partitionBy", "sortBy", "output"):
            raise MongoError(ErrorCode.IDLUnknownField, f"BSON field '$setWindowFields.{k}' is an unknown field.")
    if "output" not in spec or not isinstance(spec["output"], dict):
        raise MongoError(ErrorCode.IDLFailedToParse, "BSON field '$setWindowFields.output' is missing but a required field")
    sort_by = spec.get("sortBy") or {}
    if not isinstance(sort_by, dict):
        raise MongoError(ErrorCode.TypeMismatch, "BSON field '$setWindowFields.sortBy' is the wrong type, expected object")
    sort_fields = parse_sort(sort_by) if sort_by else []
    sort_key_fn = make_sort_key(sort_by, ctx.collation) if sort_by else None
    partition_fn = compile_expression(spec["partitionBy"], collation=ctx.collation) if "partitionBy" in spec else None
    group_key = group_key_for(ctx.collation)
    sort_key = sort_key_for(ctx.collation)
    outputs = [_parse_output(path, o, sort_fields) for path, o in spec["output"].items()]
    variables = ctx.variables

    def apply(docs):
        partitions: dict = {}
        used, limit = 0, ctx.memory_limit
        for d in docs:
            tick()
            used += approx_size(d, limit)
            if used > limit:  # mongod's code: $setWindowFields does not spill (here nor there)
                raise MongoError(5414201, f"Exceeded memory limit in DocumentSourceSetWindowFields, used {used} "
                                          f"bytes but max allowed is {limit}")
            pv = partition_fn(d, variables) if partition_fn else None
            if type(pv) is list:
                raise MongoError(ErrorCode.TypeMismatch, "An expression used to partition cannot evaluate to value of type array")
            key = group_key(pv)
            entry = partitions.get(key)
            if entry is None:
                entry = partitions[key] = (pv, [])
            entry[1].append(d)
        ordered = sorted(partitions.values(), key=lambda e: sort_key(None if e[0] is MISSING else e[0])) \
            if partition_fn else list(partitions.values())
        for _, rows in ordered:
            if sort_key_fn is not None:
                rows.sort(key=sort_key_fn)
            columns = [_compute(o, rows, variables) for o in outputs]
            for i, d in enumerate(rows):
                out = d
                for o, col in zip(outputs, columns, strict=True):
                    out = set_field(out, o.parts, col[i])
                if out is d:
                    out = dict(d)
                yield out
    return Stage("$setWindowFields", spec, apply, blocking=True)


def _sort_value(doc, sort_fields):
    return traverse(doc, sort_fields[0][0].split("."))


def _compute(o: _Output, rows: list, variables: dict) -> list:
    op = o.op
    out: list[Any]
    prev: Any
    n = len(rows)
    if op == "$documentNumber":
        return list(range(1, n + 1))
    if op in ("$rank", "$denseRank"):
        out, rank, dense, prev = [], 0, 0, object()
        for i, d in enumerate(rows):
            k = sort_key(_none(_sort_value(d, o.sort_fields)))
            if k != prev:
                rank, dense, prev = i + 1, dense + 1, k
            out.append(rank if op == "$rank" else dense)
        return out
    if op == "$shift":
        vals = [o.fn(d, variables) for d in rows]
        return [_none(vals[i + o.by]) if 0 <= i + o.by < n else o.default for i in range(n)]
    if op == "$expMovingAvg":
        out, prev = [], None
        for d in rows:
            v = o.fn(d, variables)
            if num_kind(v) is None:
                out.append(None)
                continue
            x = as_float(v)
            prev = x if prev is None else o.alpha * x + (1 - o.alpha) * prev
            out.append(prev)
        return out
    if op == "$locf":
        out, last = [], None
        for d in rows:
            v = o.fn(d, variables)
            if v is not None and v is not MISSING:
                last = v
            out.append(last)
        return out
    if op == "$linearFill":
        return linear_fill([o.fn(d, variables) for d in rows], [_sort_value(d, o.sort_fields) for d in rows])
    positions = None
    if o.window.kind == "range":
        positions = [_position(_sort_value(d, o.sort_fields), o.window.unit) for d in rows]
    bounds = _bounds(o.window, n, positions)
    if op == "$derivative":
        ys = [o.fn(d, variables) for d in rows]
        xs = [_sort_value(d, o.sort_fields) for d in rows]
        return [derivative(xs[a], ys[a], xs[b - 1], ys[b - 1], o.unit) if b > a else None for a, b in bounds]
    if op == "$integral":
        points = [integral_point(_sort_value(d, o.sort_fields), o.fn(d, variables), o.unit) for d in rows]
        return [integral(points[a:b], o.unit) for a, b in bounds]
    return _accumulate(o.acc, rows, bounds, variables)


def _none(v):
    return None if v is MISSING else v


def _is_date(v) -> bool:
    return type(v).__name__ in ("datetime", "DatetimeMS")


def _position(v, unit):
    """The current document's sortBy value on a range window's axis (millis for dates with a unit),
    checked as mongod's PartitionIterator checks the current document's value."""
    if unit is not None:
        if not _is_date(v):
            raise MongoError(5429513, f"Invalid range: Expected the sortBy field to be a Date, but it was {type_name(v)}")
        return dates.to_millis(v)
    if _is_date(v):
        raise MongoError(5429413, "Invalid range: For windows that involve date or time ranges, a unit must be provided.")
    if num_kind(v) is None:
        raise MongoError(5429414, f"Invalid range: Expected the sortBy field to be a number, but it was {type_name(v)}")
    return v if type(v) in (int, float) else as_float(v)


def _bounds(w: _Window, n: int, positions) -> list[tuple[int, int]]:
    """[start, end) index pairs of each document's window."""
    if w.kind is None:
        return [(0, n)] * n
    out = []
    if w.kind == "documents":
        for i in range(n):
            a = 0 if w.lo == "unbounded" else max(0, i + (0 if w.lo == "current" else w.lo))
            b = n if w.hi == "unbounded" else min(n, i + 1 + (0 if w.hi == "current" else w.hi))
            out.append((a, max(a, b)))
        return out
    # Range windows select the documents whose sortBy value lies in [cur + lo, cur + hi]; "current"
    # is the current document itself (ties on the sortBy value stay out), unlike 0. Rows are sorted
    # by that value, ascending or descending; search on an ascending copy either way.
    descending = n > 1 and positions[0] > positions[-1]
    axis = [-p for p in positions] if descending else positions
    for i in range(n):
        cur = positions[i]
        lo = None if w.lo in ("unbounded", "current") else _offset(cur, w.lo, w.unit)
        hi = None if w.hi in ("unbounded", "current") else _offset(cur, w.hi, w.unit)
        if descending:
            lo, hi = (None if hi is None else -hi), (None if lo is None else -lo)
            a = 0 if lo is None else bisect.bisect_left(axis, lo)
            b = n if hi is None else bisect.bisect_right(axis, hi)
            if w.hi == "current":   # the upper bound is the earlier end of a descending axis
                a = max(a, i)
            if w.lo == "current":
                b = min(b, i + 1)
        else:
            a = 0 if lo is None else bisect.bisect_left(axis, lo)
            b = n if hi is None else bisect.bisect_right(axis, hi)
            if w.lo == "current":
                a = i
            if w.hi == "current":
                b = i + 1
        out.append((a, max(a, b)))
    return out


def _offset(cur, delta, unit):
    if unit is None:
        return cur + (delta if type(delta) in (int, float) else as_float(delta))
    return dates.date_add(cur, unit, cast(int, int_arg(delta)))  # with a unit, a bound is an integer (_parse_bound)


def _accumulate(spec, rows, bounds, variables) -> list:
    values = [spec.evaluate(d, variables) for d in rows]
    out = []
    acc = None
    cur_a = cur_b = 0
    for a, b in bounds:
        if acc is None or a < cur_a or b < cur_b or (a > cur_a and not acc.removable):
            acc = spec.new()
            for v in values[a:b]:
                acc.process(v)
        else:
            for v in values[cur_a:a]:
                acc.remove(v)
            for v in values[cur_b:b]:
                acc.process(v)
        cur_a, cur_b = a, b
        out.append(acc.result())
    return out


STAGES = {"$setWindowFields": parse_set_window_fields}

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
  otherwise the window is re-accumulated (O(window) per document). A window whose lower bound is
  'unbounded' only grows and uses the $group accumulator; one whose lower bound moves computes $sum
  and $avg as mongod's removable window functions do (``WindowSum``/``WindowAvg``: their infinities
  and NaN leave with their documents, their result narrows to the types the window holds; ``WindowMax``,
  ``WindowMaxN``: of equal largest values the latest), as mongod's WindowFunctionExec::create chooses
  between the two: the accumulator spec's ``sliding`` state.
- Functions: every accumulator in ``accumulators``, plus $count, $rank, $denseRank,
  $documentNumber, $shift, $derivative, $integral, $expMovingAvg, $locf, $linearFill,
  $covariancePop, $covarianceSamp.
- Memory (mongod's inserted $sort, then a SpillableCache per partition): see ``apply`` and
  ``_one_partition``; the in-memory case pays one size estimate per document and nothing else.
- Parsing follows mongod's order, so that a spec with several faults gets mongod's error: the
  stage's fields (IDL), partitionBy, sortBy, then each output: its path against the earlier ones
  (6307900), its function's name (the first $-prefixed field), then its fields in their order.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Iterator
from decimal import Decimal
from itertools import chain, groupby
from typing import Any, cast

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query import dates
from tidemark.query.accumulator_state import Covariance
from tidemark.query.accumulators import ACCUMULATORS, AccumulatorSpec, fold_constant, parse_accumulator
from tidemark.query.collation import sort_key_for
from tidemark.query.expr_base import as_float, check_compound_keys, int_arg, num_kind, traverse, type_name
from tidemark.query.expressions import compile_expression, is_constant
from tidemark.query.interrupt import tick
from tidemark.query.memory import approx_size, stage_limit_error
from tidemark.query.pipeline import PipelineContext, Stage, StageStats, collecting
from tidemark.query.sort import make_sort_key, parse_sort
from tidemark.query.spill import Spool, sort_rows
from tidemark.query.stage_group import group_key_for
from tidemark.query.stages import set_field
from tidemark.query.value_repr import bson_repr
from tidemark.query.values import MISSING, compare, sort_key
from tidemark.query.window_rates import (
    derivative,
    exp_moving_avg,
    integral,
    integral_point,
    linear_fill,
    parse_exp_moving_avg,
    parse_rate,
)

_NO_WINDOW_OPS = ("$rank", "$denseRank", "$documentNumber", "$shift", "$expMovingAvg", "$locf", "$linearFill")
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
    if type(v) is str:
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
    if type(a) is not str and type(b) is not str and compare(a, b) > 0:
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
        if type(unit) is not str:
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
    alpha: Decimal  # $expMovingAvg
    unit: Any  # $derivative, $integral
    acc: AccumulatorSpec  # accumulators over a window

    def __init__(self, path, op, arg, window, sort_fields):
        self.parts = path.split(".")
        self.op, self.arg, self.window = op, arg, window
        self.sort_fields = sort_fields


_WHOLE_PARTITION = _Window(None, "unbounded", "unbounded", None)
_RANK_OPS = ("$rank", "$denseRank", "$documentNumber")
# The window functions whose parser names itself in "<op> got unexpected argument: <field>" (mongod's
# ExpressionFirstLast, ExpressionN, ExpressionQuantile, ExpressionWithUnit); the others say "Window
# function found an unknown argument" or, for a second function, "Cannot specify ... functions".
_SELF_NAMING = ("$first", "$last", "$minN", "$maxN", "$firstN", "$lastN", "$topN", "$bottomN", "$top",
                "$bottom", "$percentile", "$median", "$derivative", "$integral")


def _fail(message: str) -> MongoError:
    return MongoError(ErrorCode.FailedToParse, message)


def _parse_output(path, spec, sort_fields, ctx: PipelineContext) -> _Output:
    """One output field (WindowFunctionStatement::parse, then window_function::Expression::parse):
    the first $-prefixed field names the function, checked before anything else; then the
    function's own parser reads every field in order (its argument, 'window'), each check at its
    place, so that the first error is mongod's."""
    if not isinstance(spec, dict):
        raise _fail(f"The field '{path}' must be an object")
    op = next((k for k in spec if k[:1] == "$"), None)
    if op is None:
        first = next(iter(spec), "")
        raise _fail("Expected a $-prefixed window function" + (f", {first}" if first else ""))
    if op not in WINDOW_FUNCTIONS:
        raise _fail(f"Unrecognized window function, {op}")
    arg = spec[op]
    out = _Output(path, op, arg, _WHOLE_PARTITION, sort_fields)
    if op in _RANK_OPS:
        if len(spec) != 1:
            raise MongoError(5371601, "Rank style window functions take no other arguments")
        if type(arg) is not dict or arg:
            raise MongoError(5371603, f"{op} must be specified with '{{}}' as the value")
        if len(sort_fields) != 1:
            raise MongoError(5371602, f"{op} must be specified with a top level sortBy expression with exactly "
                                      "one element")
        return out
    if op == "$expMovingAvg":
        out.fn, out.alpha = parse_exp_moving_avg(spec, arg, sort_fields, ctx.collation)
        return out
    if op in ("$derivative", "$integral"):  # mongod validates their sortBy before anything else
        if not sort_fields:
            raise _fail(f"{op} requires a sortBy")
        if len(sort_fields) != 1:
            raise _fail(f"{op} requires a non-compound sortBy")
    has_window = False
    for k, v in spec.items():
        if k == "window":
            if op == "$shift":
                raise _fail("$shift does not accept a 'window' field")
            has_window = True
            if op not in ("$locf", "$linearFill"):  # they refuse it after reading every field
                out.window = _parse_window(v, sort_fields)
        elif k == op:
            if op not in ("$derivative", "$integral"):  # their argument is read after the window
                _parse_argument(out, op, arg, ctx)
        elif op in _SELF_NAMING:
            raise _fail(f"{op} got unexpected argument: {k}")
        elif k in WINDOW_FUNCTIONS:
            many = "multiple" if op in ("$shift", "$count") else "two"
            raise _fail(f"Cannot specify {many} functions in window function spec")
        else:
            raise _fail(f"Window function found an unknown argument: {k}")
    if op == "$shift" and not sort_fields:
        raise _fail("'$shift' requires a sortBy")
    elif op in ("$locf", "$linearFill"):
        if has_window:
            raise _fail(f"'window' field is not allowed in {op}")
        if op == "$linearFill" and len(sort_fields) != 1:
            raise MongoError(605001, "$linearFill must be specified with a top level sortBy expression with "
                                     "exactly one element")
    elif op in ("$derivative", "$integral"):
        out.fn, out.unit = parse_rate(op, arg, has_window, ctx.collation)
    if out.window.kind is not None and out.window.lo != "unbounded" and getattr(out, "acc", None) is not None \
            and out.acc.sliding is not None:
        out.acc.new = out.acc.sliding  # (mongod's WindowFunctionExec::create: a removable window)
    return out


def _parse_argument(out: _Output, op: str, arg: Any, ctx: PipelineContext) -> None:
    """The function's own argument (the value of its $-prefixed field)."""
    coll = ctx.collation
    if op == "$shift":
        _parse_shift(out, arg, ctx)
    elif op in ("$locf", "$linearFill"):
        out.fn = compile_expression(arg, collation=coll)
    elif op in ("$covariancePop", "$covarianceSamp"):
        sample = op == "$covarianceSamp"
        out.acc = AccumulatorSpec(op, compile_expression(arg, collation=coll), lambda: Covariance(sample), arg)
    elif op == "$count":
        if type(arg) is not dict or arg:
            raise _fail("$count only accepts an empty object as input")
        out.acc = parse_accumulator(op, arg)
    elif op in _SELF_NAMING:  # $first/$last and the accumulators taking an object
        out.acc = parse_accumulator(op, [arg] if op in ("$first", "$last") and type(arg) is list else arg,
                                    coll, ctx.variables)
    else:
        # The argument is an expression, an array one too ($group's accumulators refuse arrays of
        # several expressions and unwrap a one-element array; a list in a list keeps it whole).
        out.acc = parse_accumulator(op, [arg] if type(arg) is list else arg, coll, ctx.variables)


def _parse_shift(out: _Output, arg: Any, ctx: PipelineContext) -> None:
    """``{output, by, default?}`` (mongod's ExpressionShift::parseShiftArgs): 'by' an integer that
    fits an int, 'default' folding to a constant (null when absent)."""
    if not isinstance(arg, dict):
        raise _fail("Argument to $shift must be an object")
    out.default = None
    by = fn = None
    for k, v in arg.items():
        if k == "output":
            fn = compile_expression(v, collation=ctx.collation)
        elif k == "default":
            compile_expression(v)
            ok, value = fold_constant(v, ctx.variables)
            if not ok:
                raise _fail("'$shift:default' expression must yield a constant value.")
            out.default = None if value is MISSING else value
        elif k == "by":
            by = int_arg(v)
            if by is None or not -2**31 <= by < 2**31:
                raise _fail(f"'$shift:by' field must be an integer, but found  by: {bson_repr(v)}")
        else:
            raise _fail("Unknown argument in $shift")
    if fn is None:
        raise _fail("$shift requires an 'output' expression.")
    if by is None:
        raise _fail("$shift requires 'by' as an integer value.")
    out.fn, out.by = fn, by


def _check_output_path(seen: list[list[str]], path: str) -> None:
    """An output path must not overlap one before it (mongod's FieldRefSet): 'a' and 'a.b' conflict."""
    parts = path.split(".")
    for other in seen:
        n = min(len(parts), len(other))
        if parts[:n] == other[:n]:
            raise MongoError(6307900, "$setWindowFields 'output' specification contains two conflicting paths")
    seen.append(parts)


def parse_set_window_fields(spec: Any, ctx: PipelineContext) -> Stage:
    """mongod's order: the stage's fields as its IDL spec reads them (in order: a sortBy or output
    that is not an object 14, an unknown field 40415; then a missing output 40414 — null counts as
    absent), partitionBy, sortBy, then each output (paths checked for conflicts first)."""
    if not isinstance(spec, dict):
        raise _fail(f"the $setWindowFields stage specification must be an object, found {type_name(spec)}")
    for k, v in spec.items():
        if k in ("sortBy", "output"):
            if v is not None and not isinstance(v, dict):
                raise MongoError(ErrorCode.TypeMismatch, f"BSON field '$setWindowFields.{k}' is the wrong type "
                                                         f"'{type_name(v)}', expected type 'object'")
        elif k != "partitionBy":
            raise MongoError(ErrorCode.IDLUnknownField, f"BSON field '$setWindowFields.{k}' is an unknown field.")
    if spec.get("output") is None:
        raise MongoError(ErrorCode.IDLFailedToParse, "BSON field '$setWindowFields.output' is missing but a required field")
    partition_fn = compile_expression(spec["partitionBy"], collation=ctx.collation) if "partitionBy" in spec else None
    sort_by = spec.get("sortBy") or {}
    sort_fields = parse_sort(sort_by) if sort_by else []
    # mongod runs the stage behind a $sort on the partition key, then sortBy: that pattern's Ordering
    check_compound_keys([("", 1)] * ("partitionBy" in spec) + sort_fields)
    sort_key_fn = make_sort_key(sort_by, ctx.collation) if sort_by else None
    group_key = group_key_for(ctx.collation)
    sort_key = sort_key_for(ctx.collation)
    outputs = []
    seen: list[list[str]] = []
    for path, o in spec["output"].items():
        _check_output_path(seen, path)
        outputs.append(_parse_output(path, o, sort_fields, ctx))
    if partition_fn is not None and is_constant(spec["partitionBy"]) and type(partition_fn({}, {})) is list:
        raise MongoError(ErrorCode.TypeMismatch, "An expression used to partition cannot evaluate to value of type array")
    variables = ctx.variables
    stats = StageStats()  # the stage's (explain): its partitions' spills, and the bytes it buffered at most
    # mongod's inserted $sort (explain shows it apart, with its own statistics: what it sorted, its spills)
    sort_part = Stage("$sort", sort_by, lambda docs: docs)
    sort_stats = sort_part.stats

    def partitions_of(docs):
        """Each partition's documents in order, with the budget its window functions' kept values are
        checked against (None: unchecked). The common case buffers each partition in memory, charging
        each document's size once to one running total against the sort's limit (mongod's inserted
        $sort). Only near a limit does more happen: past the sort's limit the input is sorted on disk
        (``_sorted_partitions``); a partition past the window limit goes to a ``spill.Spool``
        (``_one_partition``)."""
        partitions: dict = {}
        used, limit, window_limit = 0, ctx.memory_limit, ctx.window_memory_limit
        docs = iter(docs)
        for d in docs:
            tick()
            used += approx_size(d, limit)
            if used > limit:
                stats.data_bytes = max(stats.data_bytes, limit)
                sort_stats.data_bytes = used
                if sort_key_fn is None and partition_fn is None:  # mongod inserts no $sort: one partition
                    yield from _one_partition(_chained(partitions, d, docs), ctx, stats)
                    return
                if not ctx.allow_disk_use:  # the inserted $sort's answer
                    raise stage_limit_error("$sort", limit, False)
                for rows in _sorted_partitions(partitions, d, docs, partition_fn, sort_key_fn, ctx, sort_stats):
                    yield from _one_partition(rows, ctx, stats)
                return
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
        stats.data_bytes = max(stats.data_bytes, used)
        sort_stats.data_bytes = used
        near = used > window_limit // 2  # else no partition can come near the window limit
        for _, rows in ordered:
            if sort_key_fn is not None:
                rows.sort(key=sort_key_fn)
            if near:
                yield from _one_partition(rows, ctx, stats)
            else:
                yield rows, None

    def apply(docs):
        # while an explain runs: each function's bytes at the end of each partition, the largest kept
        # (maxFunctionMemoryUsageBytes; read once per partition, nothing per document)
        peaks = stats.accumulator_bytes if collecting() else None
        started = time.perf_counter()
        for rows, budget in partitions_of(docs):  # rows: a list, or a ``spill.Spool`` read back in order
            if peaks is not None:  # the sort's: every document, sorted once the first partition is out
                sort_stats.returned += len(rows)
                if not sort_stats.seconds:
                    sort_stats.seconds = time.perf_counter() - started
            columns = [_compute(o, rows, variables, budget, peaks) for o in outputs]
            for i, d in enumerate(rows):
                out = d
                for o, col in zip(outputs, columns, strict=True):
                    out = set_field(out, o.parts, col[i])
                if out is d:
                    out = dict(d)
                yield out
    stage = Stage("$setWindowFields", spec, apply, blocking=True, stats=stats)
    stats.parts = [sort_part, stage]  # (what explain shows when it puts a $sort in front: partitionBy or sortBy)
    return stage


def _state_error(used: int, limit: int) -> MongoError:
    return MongoError(5414201, f"Exceeded memory limit in DocumentSourceSetWindowFields, used {used} bytes but "
                               f"max allowed is {limit}")


def _one_partition(rows, ctx: PipelineContext, stats: StageStats | None = None):
    """One partition (its documents in order: a list, or an iterator) near or past the window memory limit
    (``internalDocumentSourceSetWindowFieldsMaxMemoryBytes``), as mongod's SpillableCache and memory
    tracker: documents past the limit without allowDiskUse are 5643011; with it the partition goes to a
    ``spill.Spool`` on disk, read back in order. Yields it once, with the budget of what its window
    functions keep (``Accumulator.memory()``: $push, $addToSet, $min...), which cannot spill: past what
    the limit leaves them, 5414201. The spool is dropped when the caller asks for the next partition."""
    limit = ctx.window_memory_limit
    buffered: list = []
    size = 0
    source, rows = rows, iter(rows)
    for d in rows:
        size += approx_size(d, limit)
        buffered.append(d)
        if size > limit:
            break
        tick()
    else:
        yield buffered, (0 if ctx.allow_disk_use else size, limit)
        return
    if not ctx.allow_disk_use:
        raise MongoError(5643011, "Exceeded max memory. Set 'allowDiskUse: true' to spill to disk")
    spool = Spool(buffered, stats)
    try:
        buffered = []
        spool.extend(rows)
        if type(source) is list:
            source.clear()  # (the buffered partition: its documents are on disk now)
        yield spool, (0, limit)
    finally:
        spool.close()


def _chained(partitions: dict, pending: dict, rest) -> Iterator[dict]:
    """The documents buffered so far (one partition: no partitionBy), then ``pending``, then the rest."""
    for _, rows in partitions.values():
        yield from rows
    partitions.clear()
    yield pending
    yield from rest


def _sorted_partitions(partitions: dict, pending: dict, rest, partition_fn, sort_key_fn, ctx: PipelineContext,
                       stats: StageStats | None = None):
    """Past the sort's memory limit with allowDiskUse: every document (the ones buffered by partition,
    ``pending``, the rest) sorted on disk as mongod's inserted $sort spills (``spill.sort_rows``) by
    (partition value, partition first seen, sortBy): the in-memory order exactly. Yields each partition's
    documents as an iterator, in order."""
    variables, group_key, skey = ctx.variables, group_key_for(ctx.collation), sort_key_for(ctx.collation)
    index: dict = {}
    pkeys: list = []  # each partition's sort key, by first-seen index

    def number(key, pv) -> int:
        i = index.get(key)
        if i is None:
            i = index[key] = len(pkeys)
            pkeys.append(skey(None if pv is MISSING else pv))
        return i

    def key_of(i, d):
        return (pkeys[i], i) if sort_key_fn is None else (pkeys[i], i, sort_key_fn(d))

    def rows():
        entries = list(partitions.items())
        partitions.clear()
        for n, (key, (pv, docs)) in enumerate(entries):
            entries[n] = None  # type: ignore[call-overload]  # (each partition's list is freed once sorted)
            i = number(key, pv)
            for d in docs:
                yield key_of(i, d), i, d
        for d in chain((pending,), rest):
            tick()
            if stats is not None and d is not pending:  # (what it sorts: ``pending`` and before are counted)
                stats.data_bytes += approx_size(d)
            pv = partition_fn(d, variables) if partition_fn else None
            if type(pv) is list:
                raise MongoError(ErrorCode.TypeMismatch, "An expression used to partition cannot evaluate to value of type array")
            i = number(group_key(pv), pv)
            yield key_of(i, d), i, d

    ordered = sort_rows(rows(), key_of, ctx.memory_limit, True, lambda: stage_limit_error("$sort", ctx.memory_limit, False),
                        stats)
    for _, group in groupby(ordered, key=_row_partition):
        yield (d for _, _, d in group)


def _row_partition(row) -> int:
    return row[1]


def _sort_value(doc, sort_fields):
    return traverse(doc, sort_fields[0][0].split("."))


def _compute(o: _Output, rows, variables: dict, budget: tuple[int, int] | None = None,
             peaks: dict[str, int] | None = None) -> list:
    """One output's column over the partition's ``rows`` (read in order, as many times as needed);
    ``budget``: (bytes the partition holds in memory, the limit) an accumulator's kept values are checked
    against (None: unchecked); ``peaks``: the stage's per-function bytes, updated (explain)."""
    op = o.op
    if peaks is not None:
        name = ".".join(o.parts)
        peaks[name] = max(peaks.get(name, 0), _FUNCTION_STATE_BYTES)
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
        return exp_moving_avg([o.fn(d, variables) for d in rows], o.alpha)
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
    return _accumulate(o.acc, rows, bounds, variables, budget, peaks, ".".join(o.parts) if peaks is not None else "")


_FUNCTION_STATE_BYTES = 64  # what a window function's own state is charged beside the values it keeps


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


def _accumulate(spec, rows, bounds, variables, budget=None, peaks=None, name="") -> list:
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
        if budget is not None and acc.sized and budget[0] + acc.memory() > budget[1]:
            raise _state_error(budget[0] + acc.memory(), budget[1])
        out.append(acc.result())
    if peaks is not None and acc is not None and acc.sized:  # (its last window: the largest, unbounded)
        peaks[name] = max(peaks[name], _FUNCTION_STATE_BYTES + acc.memory())
    return out


STAGES = {"$setWindowFields": parse_set_window_fields}

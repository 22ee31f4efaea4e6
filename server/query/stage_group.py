"""Grouping stages: $group, $bucket, $bucketAuto.

$group keys groups by a hashable canonical form of the evaluated ``_id`` (``group_key``): numbers of
equal value share a group whatever their BSON type (1, 1.0, Int64(1), Decimal128("1")), null and
missing share one, and the first ``_id`` value seen is the one reported. Groups are emitted in
first-seen order. The buffered state is estimated and capped at the context's ``group_memory_limit``
(internalDocumentSourceGroupMaxMemoryBytes, 100 MB): past it, 292 QueryExceededMemoryLimitNoDiskUseAllowed
without allowDiskUse; with it the groups *spill*, as mongod's DocumentSourceGroup::spill does: every
group's partial state (its ``_id`` and accumulators) goes to an anonymous file in ``spill.SPILL_DIR``,
partitioned by the hash of its group key, and grouping goes on in memory from nothing. At the end the
partitions are read back one at a time (every generation's part of a partition, then the rest in
memory as the last one): a group met in several generations has its states merged in input order
(``Accumulator.merge``), so results are those of one pass; only their order differs (partition by
partition: mongod's spilled $group too emits in its own order, its sorted keys'). A partition holds
about 1/``_PARTITIONS`` of the spilled state, which is what reading it back keeps in memory. As
mongod's DocumentSourceGroup,
the state counted is each group's key and what each accumulator keeps (``Accumulator.memory()``, the
one rule: every value a $push keeps, the one a $first/$last/$min/$max keeps, the at most n an N
accumulator keeps...), taken after each chunk a group's accumulator is fed; an accumulator of fixed
size ($sum...) is not asked, so it costs nothing per document. A spill happens when the state crosses the
limit, as mongod's check after each document (``_Groups.add_all``): at the new group that crosses it, or
after a chunk cut to the documents the last chunk's growth says fit.

$bucket is mongod's $group on the bucket then $sort on _id (the default bucket sorts among the
others). $bucketAuto's ``granularity`` rounds bucket boundaries as mongod's GranularityRounder does
(preferred-number series R5..R80, 1-2-5, E6..E192; POWERSOF2), in double arithmetic for doubles and
integers (denormals included), in decimal for decimals.
"""

from __future__ import annotations

import datetime as _dt
import functools
import itertools
import math
import pickle
import threading
import types
import weakref
from collections.abc import Callable, Iterable, Iterator
from decimal import Decimal, localcontext
from typing import IO, Any, cast

from bson.decimal128 import Decimal128, create_decimal128_context
from bson.errors import InvalidDocument

from tidemark.protocol.codec import encode
from tidemark.protocol.errors import MongoError
from tidemark.query import spill
from tidemark.query.accumulators import SPEC_ONLY, parse_accumulator
from tidemark.query.collation import compare_for, sort_key_for
from tidemark.query.expr_base import as_float, int32_arg, num_kind, type_name
from tidemark.query.expressions import compile_expression, compiled_once, free_variables
from tidemark.query.interrupt import tick
from tidemark.query.javascript import JsFunction
from tidemark.query.memory import approx_size as _approx_size
from tidemark.query.memory import stage_limit_error
from tidemark.query.pipeline import PipelineContext, Stage, StageStats, collecting
from tidemark.query.sort import make_sort_key, sort_limit_error
from tidemark.query.value_repr import bson_repr
from tidemark.query.values import MISSING, canonical_type_order, compare, sort_key

_NAN_KEY = ("NaN",)
_GROUP_OVERHEAD = 200  # bytes charged per group for its key and accumulator objects
_PARTITIONS = 64  # a spilled $group reads its groups back a partition (of the key hashes) at a time
# What partial states hold that is code, not data (compiled expressions, collation methods, JavaScript
# functions): a spilled state names each by a key into ``_SHARED_OBJECTS``, which holds it while a $group
# that wrote it may read it back (``_release``, when that $group is gone).
_SHARED = (types.FunctionType, types.BuiltinFunctionType, types.MethodType, functools.partial, JsFunction)
_SHARED_OBJECTS: dict[int, list[Any]] = {}  # id(object) -> [object, how many $groups hold it]
_SHARED_LOCK = threading.Lock()  # (spills run on the worker threads)


def group_key(v: Any) -> Any:
    """A hashable key equal for values mongod puts in the same group."""
    t = type(v)
    if t is str or t is _dt.datetime:
        return v
    if t is int:
        return v
    if t is float:
        return _NAN_KEY if v != v else v
    if v is None or v is MISSING:
        return None
    if t is Decimal128:
        d = v.to_decimal()
        return _NAN_KEY if d.is_nan() else d
    if t is bool:
        return ("bool", v)
    if t is dict:  # field order matters, values compare as BSON values
        return ("obj", tuple([(k, group_key(x)) for k, x in v.items()]))
    if t is list:
        return ("arr", tuple([group_key(x) for x in v]))
    if num_kind(v) is not None:  # Int64 and other int subclasses
        return int(v)
    return sort_key(v)


def group_key_for(collation: Any) -> Any:
    """``group_key``, or the same rule with strings compared under ``collation``."""
    if collation is None:
        return group_key
    skey = collation.string_key

    def collated_group_key(v: Any) -> Any:
        t = type(v)
        if t is str:
            return ("str", skey(v))
        if t is dict:
            return ("obj", tuple([(k, collated_group_key(x)) for k, x in v.items()]))
        if t is list:
            return ("arr", tuple([collated_group_key(x) for x in v]))
        return group_key(v)

    return collated_group_key


def parse_accumulated_fields(spec: dict, stage: str, skip: tuple = ("_id",), collation: Any = None,
                             variables: dict | None = None, group_key_n: bool = False):
    """[(field, AccumulatorSpec)] for the output fields of $group/$bucket/$bucketAuto (``variables``: the
    command's, which an 'n' or a $percentile 'p' may read; ``group_key_n``: an 'n' may read the group
    key, ``spec.new_for``). Checks in mongod's order (parseAccumulationStatement): an object whose
    first field starts with '$' (40234), no '.' (40235), not '$'-prefixed (40236), one field (40238),
    an argument that is not an array (40237), then the accumulator's own parse (15952 if unknown)."""
    out = []
    for name, acc in spec.items():
        if name in skip:
            continue
        op = ""  # (the first key, without the calls of next(iter(...)))
        if type(acc) is dict or isinstance(acc, dict):
            for key in acc:
                op = key
                break
        if op[:1] != "$":
            raise MongoError(40234, f"The field '{name}' must be an accumulator object")
        if "." in name:
            raise MongoError(40235, f"The field name '{name}' cannot contain '.'")
        if name[:1] == "$":
            raise MongoError(40236, f"The field name '{name}' cannot be an operator name")
        if len(acc) != 1:
            raise MongoError(40238, f"The field '{name}' must specify one accumulator")
        arg = acc[op]
        if type(arg) is list:  # any array, one element too (windows unwrap those; $group does not)
            raise MongoError(40237, f"The {op} accumulator is a unary operator")
        out.append((name, parse_accumulator(op, arg, collation, variables=variables, group_key_n=group_key_n)))
    return out


def _shared_object(key: int) -> Any:
    return _SHARED_OBJECTS[key][0]


def _release(keys: set[int]) -> None:
    with _SHARED_LOCK:
        for key in keys:
            entry = _SHARED_OBJECTS[key]
            entry[1] -= 1
            if not entry[1]:
                del _SHARED_OBJECTS[key]


class _StatePickler(pickle.Pickler):
    """Writes partial states; what ``_SHARED`` matches as ``_shared_object(key)`` (``held``: the keys the
    $group holds). ``reducer_override`` is not asked of plain data (ints, strings, lists, dicts...)."""

    def __init__(self, file: IO[bytes], held: set[int]):
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.held = held

    def reducer_override(self, obj: Any) -> Any:
        if obj is _shared_object or not isinstance(obj, _SHARED):
            return NotImplemented
        key = id(obj)
        if key not in self.held:
            with _SHARED_LOCK:
                _SHARED_OBJECTS.setdefault(key, [obj, 0])[1] += 1
            self.held.add(key)
        return _shared_object, (key,)


class _Groups:
    """Accumulates documents into groups; ``results()`` yields the output documents. Past the memory
    limit with allowDiskUse the groups spill (see the module); ``on_spill`` is told when they have
    (a caller holding accumulators of ``groups`` drops them)."""

    def __init__(self, id_fn, fields, ctx: PipelineContext, on_spill: Callable[[], None] | None = None,
                 stats: StageStats | None = None):
        self.id_fn, self.fields, self.ctx = id_fn, fields, ctx
        # the $group stage's statistics: told each spill; with ``collecting()`` (an explain that runs)
        # also each accumulated field's peak bytes and the bytes of the output
        self.stats = stats if stats is not None and collecting() else None
        self._spill_stats = stats
        self.groups: dict[Any, tuple[Any, list[Any]]] = {}  # group key -> (_id, accumulators)
        self.used = 0
        self.collated_key = None if ctx.collation is None else group_key_for(ctx.collation)
        self.on_spill = on_spill
        # per spilled generation: its file and where each partition starts in it
        self.spilled: list[tuple[IO[bytes], list[int]]] = []
        self._held: set[int] = set()  # keys of ``_SHARED_OBJECTS`` its spilled states name
        self._chunk_size = 1  # the next chunk's documents (``add_all``; kept across calls: a bucket a call)

    _CHUNK = 1024

    def add_all(self, docs: Iterable[dict[str, Any]]) -> None:
        """Feed every document. Works a chunk at a time: documents of a chunk are bucketed by
        group first, then each accumulator takes its group's values as one list (whole-list
        builtins instead of a call per document), in input order, so results are unchanged.

        A chunk is at most ``_CHUNK`` documents, fewer where the last one's growth per document says
        more would take the state past the limit (so that the accumulators' growth, checked after a
        chunk, crosses it by about one document's, as mongod's per-document check does); it starts
        at one document and at most doubles (across calls: the time-series read feeds a bucket a call)."""
        it = iter(docs)
        size = self._chunk_size
        limit = self.ctx.group_memory_limit
        while True:
            chunk = list(itertools.islice(it, size))
            if not chunk:
                if self.stats is not None:
                    self._note_accumulator_bytes()
                return
            grown = self._add_chunk(chunk)
            size = min(2 * size, self._CHUNK)
            if grown > 0:
                size = max(1, min(size, (limit - self.used) * len(chunk) // grown))
            self._chunk_size = size

    # what mongod's memory tracker charges an accumulator of fixed size ($sum, $avg...) per group
    _FIXED_STATE_BYTES = 64

    def _note_accumulator_bytes(self) -> None:
        """Each accumulated field's bytes over the groups in memory now, kept when a peak (explain's
        maxAccumulatorMemoryUsageBytes; only while an explain runs: a pass over the groups)."""
        peaks = cast(StageStats, self.stats).accumulator_bytes
        totals = [0] * len(self.fields)
        for _, accs in self.groups.values():
            for i, acc in enumerate(accs):
                totals[i] += self._FIXED_STATE_BYTES + (acc.memory() if acc.sized else 0)
        for (name, _), total in zip(self.fields, totals, strict=True):
            if total > peaks.get(name, 0):
                peaks[name] = total

    def _add_chunk(self, chunk: list) -> int:
        """Feed one chunk; the bytes its documents added to the state. A new group that takes the
        state past the limit is spilled at once with the groups before it (292 without allowDiskUse),
        the chunk's documents so far fed first (a spill writes every group out, so none may wait)."""
        variables = self.ctx.variables
        groups = self.groups
        id_fn = self.id_fn
        limit = self.ctx.group_memory_limit
        spills = self.ctx.allow_disk_use
        members: dict = {}
        tick(len(chunk))
        collated_key = self.collated_key
        grown = 0
        for doc in chunk:
            idv = id_fn(doc, variables)
            t = type(idv)
            if collated_key is not None:
                key = collated_key(idv)
            else:
                key = idv if (t is str or t is _dt.datetime or t is int) else group_key(idv)
            m = members.get(key)
            if m is None:
                entry = groups.get(key)
                if entry is None:
                    entry = groups[key] = (idv, [spec.new() if spec.new_for is None else spec.new_for(idv)
                                                 for _, spec in self.fields])
                    added = _GROUP_OVERHEAD + _approx_size(idv)
                    self.used += added
                    grown += added
                    if self.used > limit:
                        if not spills:
                            raise _memory_error(limit)
                        members[key] = (entry[1], [doc])
                        grown += self._feed(members)
                        members = {}
                        self.spill()
                        groups = self.groups
                        continue
                m = members[key] = (entry[1], [])
            m[1].append(doc)
        grown += self._feed(members)
        if self.used > limit:
            self.spill()
        return grown

    def _feed(self, members: dict) -> int:
        """Each group's accumulators take its documents' values (``members``: group -> (accumulators,
        documents)); the bytes they grew by (292 past the limit without allowDiskUse)."""
        variables = self.ctx.variables
        limit = self.ctx.group_memory_limit
        spills = self.ctx.allow_disk_use
        used = start = self.used
        for accs, docs in members.values():
            for (_, spec), acc in zip(self.fields, accs, strict=True):
                field = spec.field
                if field is not None:
                    values = [d.get(field, MISSING) for d in docs]
                else:
                    evaluate = spec.evaluate
                    values = [evaluate(d, variables) for d in docs]
                if acc.sized:  # the bytes of what it keeps, before and after this chunk
                    before = acc.memory()
                    acc.process_many(values)
                    used += acc.memory() - before
                else:
                    acc.process_many(values)
            if used > limit and not spills:
                self.used = used
                raise _memory_error(limit)
        self.used = used
        return used - start

    def spill(self) -> None:
        """Write every group's partial state to a new generation file, partitioned by key hash, and
        start again from no group (a group's key hash is its group key's: equal keys, equal hashes)."""
        parts: list[list[tuple[Any, tuple[Any, list[Any]]]]] = [[] for _ in range(_PARTITIONS)]
        for key, entry in self.groups.items():
            parts[hash(key) % _PARTITIONS].append((key, entry))
        if not self.spilled:  # (released when these groups are gone, read back or not)
            weakref.finalize(self, _release, self._held)
        if self.stats is not None:
            self._note_accumulator_bytes()
        file = spill.new_file()
        offsets = []
        try:
            pickler = _StatePickler(file, self._held)
            for part in parts:
                tick(len(part))
                offsets.append(file.tell())
                pickler.clear_memo()  # (each partition is read back on its own)
                pickler.dump(part)
        except (pickle.PicklingError, TypeError, AttributeError):
            file.close()  # a state that cannot be written (none known): the stage's limit stands
            raise _memory_error(self.ctx.group_memory_limit, True) from None
        except BaseException:  # an interruption (killOp, maxTimeMS) too
            file.close()
            raise
        self.spilled.append((file, offsets))
        if self._spill_stats is not None:
            self._spill_stats.note_spill(len(self.groups), self.used, file.tell())
        self.groups, self.used = {}, 0
        if self.on_spill is not None:
            self.on_spill()

    def results(self) -> Iterator[dict[str, Any]]:
        names = [name for name, _ in self.fields]
        stats = self.stats
        for idv, accs in self._merged() if self.spilled else self.groups.values():
            out = {"_id": None if idv is MISSING else idv}
            for name, acc in zip(names, accs, strict=True):
                out[name] = acc.result()
            if stats is not None:
                stats.output_bytes += _approx_size(out)
            yield out

    def _merged(self) -> Iterator[tuple[Any, list[Any]]]:
        """The groups of every spilled generation and of memory, a partition at a time, each group's
        states merged in generation (input) order; the first ``_id`` met is the group's."""
        if self.groups:
            self.spill()  # the rest: the last generation
        try:
            for p in range(_PARTITIONS):
                merged: dict[Any, tuple[Any, list[Any]]] = {}
                for file, offsets in self.spilled:
                    file.seek(offsets[p])
                    part = pickle.load(file)
                    tick(len(part))
                    for key, entry in part:
                        earlier = merged.get(key)
                        if earlier is None:
                            merged[key] = entry
                        else:
                            for acc, later in zip(earlier[1], entry[1], strict=True):
                                acc.merge(later)
                yield from merged.values()
        finally:
            for file, _ in self.spilled:
                file.close()


def _memory_error(limit: int, allow_disk_use: bool = False) -> MongoError:
    return stage_limit_error("$group", limit, allow_disk_use)


class GroupStage(Stage):
    """$group; ``fuse_sort`` lets a preceding $sort be absorbed when every accumulator is $first/$last."""

    __slots__ = ("id_fn", "fields", "ctx")

    def __init__(self, spec: dict, id_fn, fields, ctx: PipelineContext):
        self.id_fn, self.fields, self.ctx = id_fn, fields, ctx
        super().__init__("$group", spec, self._run, blocking=True)

    def _run(self, docs):
        # hook: a source that can compute this exact $group itself (time-series columnar reads)
        # answers it; it returns None when it cannot, and the documents are grouped here. Its answer
        # is handed on as it is (not wrapped), so a following $sort can ask it for its own order
        # (``sort_result``, SortStage)
        pregrouped = getattr(docs, "group_result", None) if self.ctx.collation is None else None
        result = pregrouped(self.spec, self.ctx) if pregrouped is not None else None
        if result is not None:
            return result
        return self._grouped(docs)

    def _grouped(self, docs):
        groups = _Groups(self.id_fn, self.fields, self.ctx, stats=self.stats)
        groups.add_all(docs)
        yield from groups.results()

    def can_fuse_sort(self) -> bool:
        return all(spec.name in ("$first", "$last") for _, spec in self.fields)

    def fuse_sort(self, sort_spec: dict) -> Stage:
        """The equivalent of ``$sort`` then this ``$group`` without sorting (the lastpoint shape).

        In the sorted stream a group's $first comes from its document with the smallest
        (sort key, arrival) and $last from the largest, and groups appear in the order of their
        smallest one; so one pass keeping those two documents per group gives the same result.
        """
        key_fn = make_sort_key(sort_spec, self.ctx.collation)
        id_fn, fields, variables = self.id_fn, self.fields, self.ctx.variables
        group_key = group_key_for(self.ctx.collation)

        def run(docs):
            best: dict = {}
            for seq, doc in enumerate(docs):
                idv = id_fn(doc, variables)
                gk = group_key(idv)
                k = (key_fn(doc), seq)
                entry = best.get(gk)
                if entry is None:
                    best[gk] = [idv, k, doc, k, doc]
                else:
                    if k < entry[1]:
                        entry[0], entry[1], entry[2] = idv, k, doc
                    if k > entry[3]:
                        entry[3], entry[4] = k, doc
            for idv, _first_key, first_doc, _, last_doc in sorted(best.values(), key=lambda e: e[1]):
                out = {"_id": None if idv is MISSING else idv}
                for name, spec in fields:
                    v = spec.evaluate(first_doc if spec.name == "$first" else last_doc, variables)
                    out[name] = None if v is MISSING else v
                yield out
        return Stage("$group", self.spec, run, blocking=True)


def compile_group_id(id_spec: Any, collation: Any = None):
    """The ``_id`` of a $group as mongod's DocumentSourceGroup parses it. An object of fields (its
    first field not an operator) is a list of key expressions: with several fields a missing value
    is left out of the key (``{b: 1}`` and ``{a: null, b: 1}`` are two groups), but a lone field's
    missing value becomes null, as any single key expression's does (``{a: "$a"}`` over
    ``{a: null}`` and ``{}`` is the one group ``{a: null}``). A number or boolean among those fields
    reads as a projection's inclusion flag, which a group key cannot be: 17390, as mongod's
    DocumentSourceGroup::parseIdExpression (a constant key part is written ``{$literal: 1}``)."""
    first = None  # (an object's first key, without the calls of next(iter(...)))
    if type(id_spec) is dict:
        for key in id_spec:
            first = key
            break
    if first is not None and first[:1] != "$":
        for value in id_spec.values():
            if isinstance(value, (bool, int, float, Decimal128)):  # (bool and Int64 are ints too)
                raise MongoError(17390, "$group does not support inclusion-style expressions")
    fn = compile_expression(id_spec, collation=collation)  # (also checks the field names)
    if first is None or first[:1] == "$" or len(id_spec) != 1:
        return fn
    ((name, expr),) = id_spec.items()
    field_fn = compile_expression(expr, collation=collation)

    def lone_field(doc: Any, variables: dict) -> dict:
        value = field_fn(doc, variables)
        return {name: None if value is MISSING else value}

    return lone_field


# The parses of $group specs (under the simple collation) that hold only what every request of the same
# BSON may share: ``_id`` and accumulator arguments each ``compiled_once`` and reading no user variable,
# accumulators of ``SPEC_ONLY`` (their parse reads no variable, no group key). By the spec's BSON
# (types and field order exact), a hit confirmed by ``==`` against the spec it was made from (so two
# values of one BSON but different Python values, a datetime's microseconds, are not confused): the
# key function and the accumulators (never changed once made), as a tuple. Errors are not remembered.
# Cleared when full.
_PARSED: dict[bytes, tuple[dict, Any, tuple]] = {}
_PARSED_MAX = 256


def _shareable(spec: dict, fields: list) -> bool:
    """Whether the parse of ``spec`` (its ``fields``) may go into ``_PARSED``."""
    parts = [spec["_id"]]
    for _, acc in fields:
        if acc.name not in SPEC_ONLY:
            return False
        parts.append(acc.spec)
    return all(compiled_once(p) and not free_variables(p) for p in parts)


def parse_group(spec: Any, ctx: PipelineContext) -> Stage:
    """$group: fields are parsed in their order, ``_id`` where it stands, and a missing ``_id`` is
    reported after them all (DocumentSourceGroup::createFromBson), so the first bad field wins."""
    if type(spec) is not dict and not isinstance(spec, dict):  # (the usual dict: no isinstance call)
        raise MongoError(15947, "a group's fields must be specified in an object")
    collation, variables = ctx.collation, ctx.variables
    key = None
    if collation is None:
        try:
            key = encode(spec)
        except (InvalidDocument, OverflowError):
            pass
        else:
            hit = _PARSED.get(key)
            if hit is not None and hit[0] == spec:
                return GroupStage(spec, hit[1], hit[2], ctx)
    for first in spec:  # the first key: _id most often, and the fields after it parse in one pass
        if first == "_id":
            id_fn = compile_group_id(spec["_id"], collation)
            fields = parse_accumulated_fields(spec, "$group", collation=collation, variables=variables,
                                              group_key_n=True)
            if key is not None and _shareable(spec, fields):
                if len(_PARSED) >= _PARSED_MAX:
                    _PARSED.clear()
                _PARSED[key] = (spec, id_fn, tuple(fields))
            return GroupStage(spec, id_fn, fields, ctx)
        break
    names = list(spec)
    at = names.index("_id") if "_id" in spec else len(names)

    def accumulated(part: list) -> list:
        return parse_accumulated_fields({k: spec[k] for k in part}, "$group", collation=collation,
                                        variables=variables, group_key_n=True)

    fields = accumulated(names[:at])
    if at == len(names):
        raise MongoError(15955, "a group specification must include an _id")
    id_fn = compile_group_id(spec["_id"], collation)
    fields += accumulated(names[at + 1:])
    return GroupStage(spec, id_fn, fields, ctx)


def parse_bucket(spec: Any, ctx: PipelineContext) -> Stage:
    if not isinstance(spec, dict):
        raise MongoError(40201, f"Argument to $bucket stage must be an object, but found type: {type_name(spec)}.")
    for k in spec:
        if k not in ("groupBy", "boundaries", "default", "output"):
            raise MongoError(40197, f"Unrecognized option to $bucket: {k}.")
    if "groupBy" not in spec or "boundaries" not in spec:
        raise MongoError(40198, "$bucket requires 'groupBy' and 'boundaries' to be specified.")
    group_by = spec["groupBy"]
    if not ((type(group_by) is str and group_by.startswith("$")) or isinstance(group_by, dict)):
        raise MongoError(40202, f"The $bucket 'groupBy' field must be defined as a $-prefixed path or an expression, but found: {group_by}.")
    bounds = spec["boundaries"]
    compare = compare_for(ctx.collation)
    sort_key = sort_key_for(ctx.collation)
    if not isinstance(bounds, list):
        raise MongoError(40200, f"The $bucket 'boundaries' field must be an array, but found type: {type_name(bounds)}.")
    if len(bounds) < 2:
        raise MongoError(40192, f"The $bucket 'boundaries' field must have at least 2 values, but found {len(bounds)} value(s).")
    for a, b in zip(bounds, bounds[1:], strict=False):
        if canonical_type_order(a) != canonical_type_order(b):
            raise MongoError(40193, f"All values in the the 'boundaries' option to $bucket must have the same type. Found conflicting types {type_name(a)} and {type_name(b)}.")
        if compare(a, b) >= 0:
            raise MongoError(40194, f"The 'boundaries' option to $bucket must be sorted in ascending order, but elements {a} and {b} are not in ascending order.")
    has_default = "default" in spec
    default = spec.get("default")
    if has_default and canonical_type_order(default) == canonical_type_order(bounds[0]) and \
            compare(bounds[0], default) <= 0 < compare(bounds[-1], default):
        raise MongoError(40199, "The $bucket 'default' field must be less than the lowest boundary or greater than or equal to the highest boundary.")
    output = spec.get("output", {"count": {"$sum": 1}})
    if not isinstance(output, dict):
        raise MongoError(40196, f"The $bucket 'output' field must be an object, but found type: {type_name(output)}.")
    # (mongod runs $bucket as a $group keyed by the bucket: an 'n' reads that key like $group's)
    fields = parse_accumulated_fields(output, "$bucket", skip=(), collation=ctx.collation, variables=ctx.variables,
                                      group_key_n=True)
    group_fn = compile_expression(group_by, collation=ctx.collation)
    import bisect
    keys = [sort_key(b) for b in bounds]

    def bucket_of(doc, vars):
        v = group_fn(doc, vars)
        k = sort_key(None if v is MISSING else v)
        if canonical_type_order(v) == canonical_type_order(bounds[0]) and keys[0] <= k < keys[-1]:
            return bounds[bisect.bisect_right(keys, k) - 1]
        if has_default:
            return default
        raise MongoError(40066, "$switch could not find a matching branch for an input, and no default was specified.")

    def apply(docs):
        groups = _Groups(bucket_of, fields, ctx)
        groups.add_all(docs)
        # mongod runs $bucket as a $group and a $sort on _id (under the collation): the default bucket
        # takes its place among the others by its value
        results = list(groups.results())
        results.sort(key=lambda d: sort_key(d["_id"]))
        yield from results
    return Stage("$bucket", spec, apply, blocking=True)


def parse_bucket_auto(spec: Any, ctx: PipelineContext) -> Stage:
    """$bucketAuto, its arguments checked in their order as mongod's createFromBson checks them
    (then a missing groupBy/buckets, 40246, and buckets > 0, 40243)."""
    if not isinstance(spec, dict):
        raise MongoError(40240, f"The argument to $bucketAuto must be an object, but found type: {type_name(spec)}")
    group_fn = None
    n: int | None = None
    fields: list = []
    rounder: _Rounder | None = None
    for k, v in spec.items():
        if k == "groupBy":
            if not ((type(v) is str and v[:1] == "$") or type(v) is dict):
                raise MongoError(40239, "The $bucketAuto 'groupBy' field must be defined as a $-prefixed path or an "
                                        f"expression object, but found: {bson_repr(v)}")
            group_fn = compile_expression(v, collation=ctx.collation)
        elif k == "buckets":
            if num_kind(v) is None:
                raise MongoError(40241, "The $bucketAuto 'buckets' field must be a numeric value, but found type: "
                                        f"{type_name(v)}")
            n = int32_arg(v)
            if n is None:
                raise MongoError(40242, "The $bucketAuto 'buckets' field must be representable as a 32-bit integer, "
                                        f"but found {format(as_float(v), 'g')}")  # (a C++ stream's double)
        elif k == "output":
            if type(v) is not dict:
                raise MongoError(40244, f"The $bucketAuto 'output' field must be an object, but found type: {type_name(v)}")
            for name, acc in v.items():  # one at a time: 4544714 comes before a later field's errors
                parsed = parse_accumulated_fields({name: acc}, "$bucketAuto", skip=(), collation=ctx.collation,
                                                  variables=ctx.variables, group_key_n=True)
                if parsed[0][1].new_for is not None:  # buckets have no key an 'n' could read
                    raise MongoError(4544714, "Can't refer to the group key in $bucketAuto")
                fields += parsed
        elif k == "granularity":
            if type(v) is not str:
                raise MongoError(40261, "The $bucketAuto 'granularity' field must be a string, but found type: "
                                        f"{type_name(v)}")
            if v not in _SERIES and v != "POWERSOF2":
                raise MongoError(40257, f"Unknown rounding granularity '{v}'")
            rounder = _Rounder(v)
        else:
            raise MongoError(40245, f"Unrecognized option to $bucketAuto: {k}")
    if group_fn is None or n is None:
        raise MongoError(40246, "$bucketAuto requires 'groupBy' and 'buckets' to be specified")
    if n <= 0:
        raise MongoError(40243, f"The $bucketAuto 'buckets' field must be greater than 0, but found: {n}")
    if not fields:  # (no output, or an empty one: mongod counts)
        fields = parse_accumulated_fields({"count": {"$sum": 1}}, "$bucketAuto", skip=())
    sort_key = sort_key_for(ctx.collation)

    def apply(docs):
        total, rows = _sorted_by_group(docs, group_fn, rounder, sort_key, ctx)
        if total:
            yield from _auto_buckets(rows, total, n, rounder, fields, ctx.variables)
    return Stage("$bucketAuto", spec, apply, blocking=True)


# ---------------------------------------------------------------------------------------------
# $bucketAuto granularity: mongod's GranularityRounder (preferred-number series, POWERSOF2)
# ---------------------------------------------------------------------------------------------

# The base series of GranularityRounderPreferredNumbers (Renard, 1-2-5, E series): a number rounds to
# a member times a power of ten.
_SERIES: dict[str, tuple[int, ...]] = {
    "R5": (10, 16, 25, 40, 63),
    "R10": (100, 125, 160, 200, 250, 315, 400, 500, 630, 800),
    "R20": (100, 112, 125, 140, 160, 180, 200, 224, 250, 280, 315, 355, 400, 450, 500, 560, 630, 710, 800, 900),
    "R40": (100, 106, 112, 118, 125, 132, 140, 150, 160, 170, 180, 190, 200, 212, 224, 236, 250, 265, 280, 300,
            315, 355, 375, 400, 425, 450, 475, 500, 530, 560, 600, 630, 670, 710, 750, 800, 850, 900, 950),
    "R80": (103, 109, 115, 122, 128, 136, 145, 155, 165, 175, 185, 195, 206, 218, 230, 243, 258, 272, 290, 307,
            325, 345, 365, 387, 412, 437, 462, 487, 515, 545, 575, 615, 650, 690, 730, 775, 825, 875, 925, 975),
    "1-2-5": (10, 20, 50),
    "E6": (10, 15, 22, 33, 47, 68),
    "E12": (10, 12, 15, 18, 22, 27, 33, 39, 47, 56, 68, 82),
    "E24": (10, 11, 12, 13, 15, 16, 18, 20, 22, 24, 27, 30, 33, 36, 39, 43, 47, 51, 56, 62, 68, 75, 82, 91),
    "E48": (100, 105, 110, 115, 121, 127, 133, 140, 147, 154, 162, 169, 178, 187, 196, 205, 215, 226, 237, 249,
            261, 274, 287, 301, 316, 332, 348, 365, 383, 402, 422, 442, 464, 487, 511, 536, 562, 590, 619, 649,
            681, 715, 750, 787, 825, 866, 909, 953),
    "E96": (100, 102, 105, 107, 110, 113, 115, 118, 121, 124, 127, 130, 133, 137, 140, 143, 147, 150, 154, 158,
            162, 165, 169, 174, 178, 182, 187, 191, 196, 200, 205, 210, 215, 221, 226, 232, 237, 243, 249, 255,
            261, 267, 274, 280, 287, 294, 301, 309, 316, 324, 332, 340, 348, 357, 365, 374, 383, 392, 402, 412,
            422, 432, 442, 453, 464, 475, 487, 499, 511, 523, 536, 549, 562, 576, 590, 604, 619, 634, 649, 665,
            681, 698, 715, 732, 750, 768, 787, 806, 825, 845, 866, 887, 909, 931, 953, 976),
}
_SERIES["E192"] = (
    100, 101, 102, 104, 105, 106, 107, 109, 110, 111, 113, 114, 115, 117, 118, 120, 121, 123, 124, 126, 127, 129,
    130, 132, 133, 135, 137, 138, 140, 142, 143, 145, 147, 149, 150, 152, 154, 156, 158, 160, 162, 164, 165, 167,
    169, 172, 174, 176, 178, 180, 182, 184, 187, 189, 191, 193, 196, 198, 200, 203, 205, 208, 210, 213, 215, 218,
    221, 223, 226, 229, 232, 234, 237, 240, 243, 246, 249, 252, 255, 258, 261, 264, 267, 271, 274, 277, 280, 284,
    287, 291, 294, 298, 301, 305, 309, 312, 316, 320, 324, 328, 332, 336, 340, 344, 348, 352, 357, 361, 365, 370,
    374, 379, 383, 388, 392, 397, 402, 407, 412, 417, 422, 427, 432, 437, 442, 448, 453, 459, 464, 470, 475, 481,
    487, 493, 499, 505, 511, 517, 523, 530, 536, 542, 549, 556, 562, 569, 576, 583, 590, 597, 604, 612, 619, 626,
    634, 642, 649, 657, 665, 673, 681, 690, 698, 706, 715, 723, 732, 741, 750, 759, 768, 777, 787, 796, 806, 816,
    825, 835, 845, 856, 866, 876, 887, 898, 909, 920, 931, 942, 953, 965, 976, 988)
_DECIMAL_CONTEXT = create_decimal128_context()
_POW2 = compile_expression({"$pow": [2, "$e"]})  # mongod's POWERSOF2 rounder evaluates $pow too


def _check_roundable(v: Any) -> None:
    """mongod's $bucketAuto key check under a granularity (before any bucket is made)."""
    if num_kind(v) is None:
        raise MongoError(40258, "$bucketAuto can specify a 'granularity' with numeric boundaries only, but found a "
                                f"value with type: {type_name(v)}")
    x = as_float(v)
    if x != x:
        raise MongoError(40259, "$bucketAuto can specify a 'granularity' with numeric boundaries only, but found a NaN")
    if x < 0:
        raise MongoError(40260, "$bucketAuto can specify a 'granularity' with non-negative numbers only, but found a "
                                "negative number")


class _Rounder:
    """One granularity's roundUp (the least boundary strictly above a value) and roundDown (the
    greatest strictly below), as mongod computes them: doubles (and integers, as doubles) with double
    arithmetic — so denormals round as mongod's do —, decimals in decimal. Zero and, unlike mongod
    (which loops there), infinities round to themselves; a double whose scale underflows to zero
    rounds down to 0.0."""

    def __init__(self, name: str):
        self.name = name
        self.series = _SERIES.get(name)
        if self.series is not None:  # mongod's Decimal128(double): 15 significant digits
            self.dseries = tuple(Decimal(v).quantize(Decimal(10) ** (len(str(v)) - 15)) for v in self.series)

    def up(self, v: Any) -> Any:
        return self._round(v, True)

    def down(self, v: Any) -> Any:
        return self._round(v, False)

    def _round(self, v: Any, up: bool) -> Any:
        x = as_float(v)
        if x == 0.0 or math.isinf(x):
            return v
        if self.series is None:
            return _POW2({"e": _pow2_exponent(v, x, up)}, {})
        if type(v) is Decimal128:
            with localcontext(_DECIMAL_CONTEXT):
                d = v.to_decimal()
                return Decimal128(_preferred_up(d, self.dseries, Decimal(1), Decimal(10)) if up
                                  else _preferred_down(d, self.dseries, Decimal(1), Decimal(10)))
        return _preferred_up(x, self.series, 1.0, 10.0) if up else _preferred_down(x, self.series, 1.0, 10.0)


def _preferred_up(x: Any, s: tuple, m: Any, ten: Any) -> Any:
    while x >= s[-1] * m:
        m *= ten
    while x < s[0] * m:
        previous = s[0] * m
        m /= ten
        if x >= s[-1] * m:  # between a scale's largest and the next scale's smallest
            return previous
    return next(v * m for v in s if x < v * m)


def _preferred_down(x: Any, s: tuple, m: Any, ten: Any) -> Any:
    while x <= s[0] * m:
        m /= ten
    if not m:  # the scale underflowed (a denormal): no series number lies below x
        return 0.0
    while x > s[-1] * m:
        previous = s[-1] * m
        m *= ten
        if x <= s[0] * m:
            return previous
    return [v * m for v in s if v * m < x][-1]


def _pow2_exponent(v: Any, x: float, up: bool) -> Any:
    """POWERSOF2: the exponent of the power of two above (below) ``v``: from log2 for a double or a
    decimal (a decimal exponent), from the bit length for an integer."""
    if type(v) is float:
        return int(math.floor(math.log2(x)) + 1.0) if up else int(math.ceil(math.log2(x)) - 1.0)
    if type(v) is Decimal128:
        with localcontext(_DECIMAL_CONTEXT):
            log2 = float(v.to_decimal().ln() / Decimal(2).ln())
        return Decimal128(Decimal(int(math.floor(log2) + 1.0) if up else int(math.ceil(log2) - 1.0)))
    n = int(v)
    if up:
        return n.bit_length()
    return n.bit_length() - 2 if n & (n - 1) == 0 else n.bit_length() - 1


def _sorted_by_group(docs: Iterable[dict], group_fn: Any, rounder: _Rounder | None, sort_key: Any,
                     ctx: PipelineContext) -> tuple[int, Iterator[tuple[Any, Any, dict]]]:
    """How many documents there are, and ``(key, value, document)`` for each in its groupBy value's order
    (ties in input order), as mongod's $bucketAuto sorter gives them (``spill.sort_rows``): past the
    stage's memory limit (internalDocumentSourceBucketAutoMaxMemoryBytes) 292 without allowDiskUse (the
    sorter's message), with it sorted runs on disk."""
    variables = ctx.variables
    total = 0

    def rows() -> Iterator[tuple[Any, Any, dict]]:
        nonlocal total
        for d in docs:
            tick()
            v = group_fn(d, variables)
            if rounder is not None:
                _check_roundable(v)
            if v is MISSING:  # (missing groups with null, as in $group)
                v = None
            total += 1
            yield sort_key(v), v, d

    limit = ctx.bucket_auto_memory_limit
    ordered = spill.sort_rows(rows(), lambda v, _: sort_key(v), limit, ctx.allow_disk_use,
                              lambda: sort_limit_error(limit))
    return total, ordered


def _auto_buckets(rows: Iterator[tuple[Any, Any, dict]], total: int, n: int, rounder: _Rounder | None,
                  fields: list, variables: Any) -> Iterator[dict]:
    """mongod's bucket filling (populateNextBucket, adjustBoundariesAndGetMinForNextBucket) over the
    sorted rows, one look-ahead row at a time (so that a spilled input is never all in memory): a bucket
    takes ``round(total / n)`` documents (the last one all the rest), then those equal to its largest
    value. Without a granularity its max is the next bucket's first value (the last bucket's own largest
    value). With one, its max is its largest value rounded up, and it absorbs the values below that;
    the next bucket starts at that max, the first at its smallest value rounded down; a zero max with
    values left becomes the next value rounded down."""
    size = max(1, int(math.floor(total / n + 0.5)))
    row = next(rows, None)
    previous_max: Any = MISSING
    for number in range(1, n + 1):
        if row is None:
            return
        accs = [spec.new() for _, spec in fields]
        low_value = row[1]
        taken = 0
        while row is not None and (taken < size or number == n):
            last = row
            _add_to_bucket(accs, fields, row[2], variables)
            taken += 1
            row = next(rows, None)
        if rounder is not None:
            low = rounder.down(low_value) if previous_max is MISSING else previous_max
            high = rounder.up(last[1])
            while row is not None and (compare(high, row[1]) > 0 or row[0] == last[0]):
                last = row
                _add_to_bucket(accs, fields, row[2], variables)
                row = next(rows, None)
            if as_float(high) == 0.0 and row is not None:
                high = rounder.down(row[1])
        else:
            low = low_value
            while row is not None and row[0] == last[0]:
                _add_to_bucket(accs, fields, row[2], variables)
                row = next(rows, None)
            high = row[1] if row is not None else last[1]
        out = {"_id": {"min": low, "max": high}}
        for (name, _), acc in zip(fields, accs, strict=True):
            out[name] = acc.result()
        yield out
        previous_max = high


def _add_to_bucket(accs: list, fields: list, doc: dict, variables: Any) -> None:
    for acc, (_, spec) in zip(accs, fields, strict=True):
        acc.process(spec.evaluate(doc, variables))


STAGES = {
    "$group": parse_group,
    "$bucket": parse_bucket,
    "$bucketAuto": parse_bucket_auto,
}

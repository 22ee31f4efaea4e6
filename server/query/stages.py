"""Document-at-a-time stages and the simple blocking ones: $match $project $addFields $set $unset
$replaceRoot $replaceWith $redact $limit $skip $count $unwind $sort $sortByCount $sample $documents
$collStats $indexStats.

Every parser validates its argument with mongod's codes and messages and compiles expressions once;
the returned Stage's ``apply`` is a generator over the incoming iterator. Field names and paths are
checked as mongod's FieldPath checks them (``field_path``); $project/$addFields/$set/$unset report
their specification errors under mongod's "Invalid <stage> :: caused by :: " context; runtime errors
print values as mongod's Document printing does (``value_str``).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from bson.int64 import Int64

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query import desugar, docmeta
from tidemark.query.expr_base import (
    MAX_COMPOUND_KEYS,
    as_float,
    check_compound_keys,
    check_field_name,
    int_arg,
    num_kind,
    traverse,
    type_name,
)
from tidemark.query.expressions import compile_expression
from tidemark.query.match import compile_filter
from tidemark.query.pipeline import PipelineContext, Stage
from tidemark.query.project import EXPRESSION_NAMES, compile_projection, is_expression_object
from tidemark.query.sort import parse_sort as parse_sort_spec
from tidemark.query.sort import sort_documents
from tidemark.query.stage_group import parse_group
from tidemark.query.value_repr import bson_repr
from tidemark.query.values import MISSING


def parse_match(spec: Any, ctx: PipelineContext) -> Stage:
    if not isinstance(spec, dict):
        raise MongoError(15959, "the match filter must be an expression in an object")
    pred = compile_filter(spec, variables=ctx.variables, collation=ctx.collation, no_where=True)

    def apply(docs):
        return (d for d in docs if pred(d))
    return Stage("$match", spec, apply)


def parse_project(spec: Any, ctx: PipelineContext) -> Stage:
    if not isinstance(spec, dict):
        raise MongoError(15969, "$project specification must be an object")
    # every parse error, an unknown operator's 31325 "Unknown expression" included, carries mongod's
    # "Invalid $project :: caused by :: " (DocumentSourceProject::createFromBson)
    with _invalid_context("$project"):
        if not spec:
            raise MongoError(51272, "projection specification must have at least one field")
        _refuse_positional(spec)
        for expr in _projection_expressions(spec):  # mongod's parseSubObjectAsExpression, aggregation policy
            op = next(iter(expr))
            if op == "$elemMatch":
                raise MongoError(ErrorCode.InvalidPipelineOperator, "Cannot use $elemMatch in this context")
            if len(expr) == 1 and op not in EXPRESSION_NAMES:
                raise MongoError(31325, f"Unknown expression {op}")
            compile_expression(expr)  # find's {$slice: n} fails here as the $slice expression
        # aggregation policies: no find-only operators, and a $meta field alone makes an inclusion
        project = compile_projection(spec, variables=ctx.variables, collation=ctx.collation, aggregation=True)

    def apply(docs):
        return (project(d) for d in docs)
    return Stage("$project", spec, apply)


def _refuse_positional(spec: dict) -> None:
    """mongod's parseElement checks a positional path ("a.$", "a.$.b", "$") before the field path
    itself (31324, not 16410): a find on a view or a time-series collection runs its projection here."""
    for key, value in spec.items():
        if key == "$" or key.endswith(".$") or ".$." in key:
            raise MongoError(31324, "Cannot use positional projection in aggregation projection")
        if isinstance(value, dict) and value and not is_expression_object(value):
            _refuse_positional(value)


@contextmanager
def _invalid_context(stage: str) -> Iterator[None]:
    """mongod parses a $project / $addFields / $set / $unset specification (paths and expressions)
    under the context "Invalid <stage>": its errors read "Invalid $project :: caused by :: ..."."""
    try:
        yield
    except MongoError as e:
        raise MongoError(e.code, f"Invalid {stage} :: caused by :: {e.message}", extra=e.extra) from None


def _projection_expressions(spec: dict, out: list | None = None) -> list:
    """Check a $project's field names (FieldPath) and return its expressions (operator objects) for
    compiling: $project accepts expressions only, so find-only forms ($slice: n, $elemMatch) fail there."""
    out = [] if out is None else out
    for name, value in spec.items():
        field_path(name)
        if isinstance(value, dict) and value:
            if is_expression_object(value):
                out.append(value)
            else:
                _projection_expressions(value, out)
    return out


def _flatten_fields(spec: dict, prefix: str = "") -> list[tuple[str, Any]]:
    """{a: {b: expr}} -> [("a.b", expr)]: nested objects without operators are nested fields."""
    out = []
    for name, value in spec.items():
        if prefix and not name:
            raise MongoError(15998, "FieldPath field names may not be empty strings.")
        field_path(name)
        path = f"{prefix}{name}"
        if isinstance(value, dict) and value and not next(iter(value)).startswith("$"):
            out.extend(_flatten_fields(value, path + "."))
        else:
            out.append((path, value))
    return out


def field_path(path: str) -> list[str]:
    """The components of ``path`` checked as mongod's FieldPath checks them (parse time only):
    40352 for "", 15998 for an empty component, 16410 for a '$'-prefixed one, 16411 for a NUL."""
    if not path:
        raise MongoError(40352, "FieldPath cannot be constructed with empty string")
    parts = path.split(".")
    for part in parts:
        check_field_name(part)
    return parts


def set_field(doc: dict, parts: list[str], value: Any) -> dict:
    """A copy of ``doc`` with ``parts`` set (arrays along the path get the field in every element,
    scalars in them become ``{field: value}``, as in mongod). A missing value removes the field, and
    the documents on its way are made all the same (mongod replaces a non-document on the path by a
    new document of the computed values: ``{"a.b": "$nope"}`` on ``{a: 5}`` gives ``{a: {}}``)."""
    out = dict(doc)
    head = parts[0]
    if len(parts) == 1:
        if value is MISSING:
            out.pop(head, None)
        else:
            out[head] = value
        return out
    sub = out.get(head, MISSING)
    if type(sub) is dict:
        out[head] = set_field(sub, parts[1:], value)
    elif type(sub) is list:
        out[head] = _set_in_array(sub, parts[1:], value)
    else:
        out[head] = set_field({}, parts[1:], value)
    return out


def set_nested_field(doc: dict, parts: list[str], value: Any) -> dict:
    """A copy of ``doc`` with ``parts`` set as mongod's MutableDocument::setNestedField does (where a
    stage names an output path: $lookup's and $graphLookup's 'as', 'depthField', $unwind's
    'includeArrayIndex'): any non-document on the way, an array included, is replaced by a new
    document, unlike ``set_field`` (the projection's setting, which goes into array elements)."""
    out = dict(doc)
    head = parts[0]
    if len(parts) == 1:
        out[head] = value
        return out
    sub = out.get(head)
    out[head] = set_nested_field(sub if type(sub) is dict else {}, parts[1:], value)
    return out


def _set_in_array(arr: list, parts: list[str], value: Any) -> list:
    # mongod sets the field in every element: documents get it, nested arrays recurse, and any
    # other element is replaced by a document holding just the new field.
    out: list[Any] = []
    for e in arr:
        t = type(e)
        if t is dict:
            out.append(set_field(e, parts, value))
        elif t is list:
            out.append(_set_in_array(e, parts, value))
        else:
            out.append(set_field({}, parts, value))
    return out


def parse_add_fields(spec: Any, ctx: PipelineContext, name: str = "$addFields") -> Stage:
    if not isinstance(spec, dict):
        raise MongoError(40272, f"{name} specification stage must be an object, got {type_name(spec)}")
    with _invalid_context(name):
        fields = [(path.split("."), compile_expression(expr, collation=ctx.collation))
                  for path, expr in _flatten_fields(spec)]
    variables = ctx.variables
    if len(fields) == 1 and len(fields[0][0]) == 1:
        (key,), fn = fields[0]

        def apply_one(docs):
            for d in docs:
                v = fn(d, variables)
                out = dict(d)
                if v is MISSING:
                    out.pop(key, None)
                else:
                    out[key] = v
                yield out
        return Stage(name, spec, apply_one)

    def apply(docs):
        for d in docs:
            values = [(parts, fn(d, variables)) for parts, fn in fields]
            out = d
            for parts, v in values:
                out = set_field(out, parts, v)
            if out is d:
                out = dict(d)
            yield out
    return Stage(name, spec, apply)


def parse_unset(spec: Any, ctx: PipelineContext) -> Stage:
    if type(spec) is not str and not isinstance(spec, list):
        raise MongoError(31002, "$unset specification must be a string or an array")
    paths = [spec] if type(spec) is str else spec
    if not paths:
        raise MongoError(31119, "$unset specification must be a string or an array with at least one field")
    if not all(type(p) is str for p in paths):
        raise MongoError(31120, "$unset specification must be a string or an array containing only string values")
    with _invalid_context("$unset"):
        for p in paths:
            field_path(p)
        project = compile_projection({p: 0 for p in paths})
    return Stage("$unset", spec, lambda docs: (project(d) for d in docs))


def _replace_root(expr: Any, ctx: PipelineContext, name: str, shown: Any) -> Stage:
    fn = compile_expression(expr, collation=ctx.collation)
    variables = ctx.variables
    # mongod's template puts a space after the context, so the message has two ("expression  must").
    context = "'newRoot' expression " if name == "$replaceRoot" else "'replacement document' "

    def apply(docs):
        for d in docs:
            v = fn(d, variables)
            if type(v) is not dict:
                raise MongoError(40228, f"{context} must evaluate to an object, but resulting value was: "
                                        f"{value_str(v)}. Type of resulting value: '{type_name(v)}'. Input document: "
                                        f"{value_str(d)}")
            yield v
    return Stage(name, shown, apply)


def value_str(v: Any) -> str:
    """A value as mongod's Document/Value printing shows it in runtime errors: ``{a: [1, 2], b: "x"}``
    (no padding inside braces and brackets, unlike a BSONObj's ``{ a: [ 1, 2 ] }``)."""
    if type(v) is dict:
        return "{" + ", ".join(f"{k}: {value_str(x)}" for k, x in v.items()) + "}"
    if type(v) is list:
        return "[" + ", ".join(value_str(x) for x in v) + "]"
    return bson_repr(v)


def parse_replace_root(spec: Any, ctx: PipelineContext) -> Stage:
    if not isinstance(spec, dict):
        raise MongoError(40229, f"expected an object as specification for $replaceRoot stage, got {type_name(spec)}")
    for k in spec:  # mongod's IDL: the first unknown field in document order
        if k != "newRoot":
            raise MongoError(ErrorCode.IDLUnknownField, f"BSON field '$replaceRoot.{k}' is an unknown field.")
    if "newRoot" not in spec:
        raise MongoError(ErrorCode.IDLFailedToParse, "BSON field '$replaceRoot.newRoot' is missing but a required field")
    return _replace_root(spec["newRoot"], ctx, "$replaceRoot", spec)


def parse_replace_with(spec: Any, ctx: PipelineContext) -> Stage:
    return _replace_root(spec, ctx, "$replaceWith", spec)


# $redact's three outcomes: mongod binds $$KEEP, $$PRUNE and $$DESCEND to these strings for the
# stage's expression only, and compares the expression's result with them (binary, no collation).
_REDACT_VALUES = {"$$KEEP": "keep", "$$PRUNE": "prune", "$$DESCEND": "descend"}


def _bind_redact_variables(expr: Any) -> Any:
    """``expr`` with $$KEEP/$$PRUNE/$$DESCEND replaced by their (constant) values, so that the
    ordinary expression compiler, which knows no such variables, compiles the stage's expression.
    A path below one of them ("$$KEEP.a") reads into a string: missing. Literals are left alone."""
    if type(expr) is str:
        if expr.startswith("$$"):
            name = expr.split(".", 1)[0]
            if name in _REDACT_VALUES:
                return {"$literal": _REDACT_VALUES[name]} if name == expr else "$$REMOVE"
        return expr
    if isinstance(expr, list):
        return [_bind_redact_variables(e) for e in expr]
    if isinstance(expr, dict):
        if len(expr) == 1 and next(iter(expr)) in ("$literal", "$const"):
            return expr
        return {k: _bind_redact_variables(v) for k, v in expr.items()}
    return expr


def parse_redact(spec: Any, ctx: PipelineContext) -> Stage:
    """$redact: the expression runs on the document, then (for $$DESCEND) on every sub-document,
    also inside arrays, with $$CURRENT bound to it and $$ROOT to the whole document; $$KEEP keeps
    that (sub-)document whole, $$PRUNE drops it, anything else fails (17053)."""
    fn = compile_expression(_bind_redact_variables(spec), collation=ctx.collation)
    base_variables = ctx.variables

    def redact_object(current: dict, variables: dict) -> dict | None:
        result = fn(current, variables)
        if type(result) is str:
            if result == "keep":
                return current
            if result == "prune":
                return None
            if result == "descend":
                out = {}
                for k, v in current.items():
                    v = redact_value(v, variables)
                    if v is not MISSING:
                        out[k] = v
                return out
        raise MongoError(17053, "$redact's expression should not return anything aside from the variables $$KEEP, "
                                f"$$DESCEND, and $$PRUNE, but returned {value_str(result)}")

    def redact_value(v: Any, variables: dict) -> Any:
        t = type(v)
        if t is dict:
            out = redact_object(v, variables)
            return MISSING if out is None else out
        if t is list:
            kept = []
            for e in v:
                if type(e) is dict or type(e) is list:
                    e = redact_value(e, variables)
                    if e is MISSING:
                        continue
                kept.append(e)
            return kept
        return v

    def apply(docs):
        for d in docs:
            out = redact_object(d, {**base_variables, "ROOT": d})
            if out is not None:
                yield out
    return Stage("$redact", spec, apply)


def _positive_int(spec: Any, name: str, *, allow_zero: bool) -> int:
    if num_kind(spec) is None:
        if name == "$limit":
            raise MongoError(15957, "the limit must be specified as a number")
        raise MongoError(15972, "Argument to $skip must be a number")
    n = int_arg(spec)
    if n is None or not -(2**63) <= n < 2**63:  # a double such as 2.0**63 is integral but not a long
        code, what = (2107201, "limit") if name == "$limit" else (5107200, "skip")
        raise MongoError(code, f"invalid argument to {name} stage: Cannot represent as a 64-bit integer: {name}: {spec}")
    if n < 0 or (n == 0 and not allow_zero):
        if name == "$limit":
            raise MongoError(15958, "the limit must be positive")
        raise MongoError(15956, "Argument to $skip cannot be negative")
    return n


def parse_limit(spec: Any, ctx: PipelineContext) -> Stage:
    n = _positive_int(spec, "$limit", allow_zero=False)

    def apply(docs):
        if n <= 0:
            return
        for i, d in enumerate(docs, 1):
            yield d
            if i >= n:
                return
    return Stage("$limit", Int64(n), apply)


def parse_skip(spec: Any, ctx: PipelineContext) -> Stage:
    n = _positive_int(spec, "$skip", allow_zero=True)

    def apply(docs):
        for i, d in enumerate(docs):
            if i >= n:
                yield d
    return Stage("$skip", Int64(n), apply)


def parse_count(spec: Any, ctx: PipelineContext) -> Stage:
    if type(spec) is not str:
        raise MongoError(40156, "the count field must be a non-empty string")
    if not spec:
        raise MongoError(40157, "the count field must be a non-empty string")
    if spec.startswith("$"):
        raise MongoError(40158, "the count field cannot be a $-prefixed path")
    if "\0" in spec:
        raise MongoError(40159, "the count field cannot contain a null byte")
    if "." in spec:
        raise MongoError(40160, "the count field cannot contain '.'")

    def apply(docs):
        # hook: a source that counts its documents without making them (a time-series read,
        # tidemark.timeseries.rowcount) answers the $group mongod parses $count into (desugar.count),
        # as it answers a $group stage (that group compares no string: any collation)
        counted = getattr(docs, "group_result", None)
        grouped = counted(desugar.count(spec)[0]["$group"], ctx) if counted is not None else None
        if grouped is not None:
            for doc in grouped:
                yield {spec: doc[spec]}
            return
        n = sum(1 for _ in docs)
        if n:
            yield {spec: n if n <= 2147483647 else Int64(n)}
    return Stage("$count", spec, apply)


def parse_unwind(spec: Any, ctx: PipelineContext) -> Stage:
    index_field = None
    preserve = False
    if type(spec) is str:
        path = spec
    elif isinstance(spec, dict):
        for k in spec:
            if k not in ("path", "includeArrayIndex", "preserveNullAndEmptyArrays"):
                raise MongoError(28811, f"unrecognized option to $unwind stage: {k}")
        if "path" not in spec:
            raise MongoError(28812, "no path specified to $unwind stage")
        path = spec["path"]
        if type(path) is not str:
            raise MongoError(28808, "expected a string as the path for $unwind stage, got " + type_name(path))
        preserve = spec.get("preserveNullAndEmptyArrays", False)
        if not isinstance(preserve, bool):
            raise MongoError(28809, "expected a boolean for the preserveNullAndEmptyArrays option to $unwind stage")
        index_field = spec.get("includeArrayIndex")
        if index_field is not None:
            if type(index_field) is not str or not index_field:
                raise MongoError(28810, "expected a non-empty string for the includeArrayIndex option to $unwind stage")
            if index_field.startswith("$"):
                raise MongoError(28822, f"includeArrayIndex option to $unwind stage should not be prefixed with a '$': {index_field}")
    else:
        raise MongoError(15981, f"expected either a string or an object as specification for $unwind stage, got {type_name(spec)}")
    if not path:
        raise MongoError(28812, "no path specified to $unwind stage")
    if not path.startswith("$"):
        raise MongoError(28818, f"path option to $unwind stage should be prefixed with a '$': {path}")
    parts = field_path(path[1:])
    index_parts = field_path(index_field) if index_field else None
    single = parts[0] if len(parts) == 1 else None

    def apply(docs):
        for d in docs:
            v = d.get(single, MISSING) if single is not None else _plain_get(d, parts, traverse)
            if type(v) is list:
                if not v:
                    if preserve:
                        out = set_field(d, parts, MISSING)
                        yield set_nested_field(out, index_parts, None) if index_parts else out
                    continue
                for i, el in enumerate(v):
                    out = set_field(d, parts, el)
                    yield set_nested_field(out, index_parts, Int64(i)) if index_parts else out
            elif v is None or v is MISSING:
                if preserve:
                    yield set_nested_field(d, index_parts, None) if index_parts else d
            else:
                yield set_nested_field(d, index_parts, None) if index_parts else d
    return Stage("$unwind", _unwind_explain(path, index_field, preserve, spec), apply)


def _plain_get(doc, parts, traverse):
    cur = doc
    for p in parts:
        if type(cur) is not dict:
            return MISSING
        cur = cur.get(p, MISSING)
    return cur


def _unwind_explain(path, index_field, preserve, spec):
    out = {"path": path}
    if index_field:
        out["includeArrayIndex"] = index_field
    if isinstance(spec, dict) and "preserveNullAndEmptyArrays" in spec:
        out["preserveNullAndEmptyArrays"] = preserve
    return out


class SortStage(Stage):
    """$sort, optionally a top-k when followed by $limit (mongod shows ``$sort: {sortKey, limit}``)."""

    __slots__ = ("sort_spec", "limit", "ctx")

    def __init__(self, sort_spec: dict, ctx: PipelineContext, limit: int | None = None):
        self.sort_spec, self.limit, self.ctx = sort_spec, limit, ctx
        shown = {"sortKey": sort_spec} if limit is None else {"sortKey": sort_spec, "limit": Int64(limit)}
        super().__init__("$sort", shown, self._run, blocking=True)

    def with_limit(self, limit: int) -> SortStage:
        n = int(limit) if self.limit is None else min(self.limit, int(limit))
        return SortStage(self.sort_spec, self.ctx, n)

    def _run(self, docs):
        # hook: an input that can put its own documents in this order (a time-series columnar $group,
        # from its group keys before any document exists) answers it: the first ``limit`` documents of
        # the stable sort, or None when it cannot say exactly (then they are sorted here)
        presorted = getattr(docs, "sort_result", None) if self.ctx.collation is None else None
        result = presorted(self.sort_spec, self.limit, self.ctx) if presorted is not None else None
        if result is not None:
            yield from result
            return
        yield from sort_documents(docs, self.sort_spec, limit=self.limit, allow_disk_use=self.ctx.allow_disk_use,
                                  memory_limit=self.ctx.memory_limit, collation=self.ctx.collation,
                                  meta=docmeta.table(self.ctx.variables), stats=self.stats)


def parse_sort(spec: Any, ctx: PipelineContext) -> Stage:
    if type(spec) is not dict and not isinstance(spec, dict):  # (the usual dict: no isinstance call)
        raise MongoError(15973, "the $sort key specification must be an object")
    if not spec:
        raise MongoError(15976, "$sort stage must have at least one sort key")
    # the one sort-spec validation, as mongod's SortPattern (find and $sort share it): $meta textScore
    # and randVal sort, other $meta values fail 31138/31218/31219, other objects 17312
    fields = parse_sort_spec(spec, allow_meta=True)
    if len(fields) > MAX_COMPOUND_KEYS:  # (fewer keys are never too many: no call for the usual sort)
        check_compound_keys(fields)
    # the parse's pairs as the stage's spec (directions 1 or -1 as ints); a $meta sort keeps its object
    # where the parse gave its name. A loop here, not a comprehension: no call per $sort
    sort_spec = dict(fields)
    for k, d in fields:
        if type(d) is str:
            sort_spec[k] = spec[k]
    return SortStage(sort_spec, ctx)


_SORT_BY_COUNT_SHAPE = "the sortByCount field must be defined as a $-prefixed path or an expression inside an object"


def parse_sort_by_count(spec: Any, ctx: PipelineContext) -> Stage:
    # mongod's three checks: an object must hold an expression (40147), a string be a path (40148),
    # anything else is the wrong type (40149).
    if isinstance(spec, dict):
        if not (spec and next(iter(spec)).startswith("$")):
            raise MongoError(40147, _SORT_BY_COUNT_SHAPE)
    elif type(spec) is str:
        if not spec.startswith("$"):
            raise MongoError(40148, _SORT_BY_COUNT_SHAPE)
    else:
        raise MongoError(40149, "the sortByCount field must be specified as a string or as an object")
    group = parse_group({"_id": spec, "count": {"$sum": 1}}, ctx)
    sort = parse_sort({"count": -1}, ctx)
    stage = Stage("$sortByCount", spec, lambda docs: sort.apply(group.apply(docs)), blocking=True)
    stage.stats.parts = [group, sort]  # (explain shows them, each with what it did)
    return stage


def parse_sample(spec: Any, ctx: PipelineContext) -> Stage:
    if not isinstance(spec, dict):
        raise MongoError(28745, "the $sample stage specification must be an object")
    for k in spec:
        if k != "size":
            raise MongoError(28748, f"unrecognized option to $sample: {k}")
    if "size" not in spec:
        raise MongoError(28749, "$sample stage must specify a size")
    if num_kind(spec["size"]) is None:
        raise MongoError(28746, "size argument to $sample must be a number")
    size = int(as_float(spec["size"]))
    if size < 0:
        raise MongoError(28747, "size argument to $sample must not be negative")

    def apply(docs):
        reservoir: list = []
        for i, d in enumerate(docs):
            if i < size:
                reservoir.append(d)
            else:
                j = random.randint(0, i)
                if j < size:
                    reservoir[j] = d
        random.shuffle(reservoir)
        yield from reservoir
    return Stage("$sample", {"size": Int64(size)}, apply, blocking=True)


def parse_documents(spec: Any, ctx: PipelineContext) -> Stage:
    """``$documents``: its expression is compiled here and evaluated when the stage runs, as mongod's
    desugared ``$queue`` does: in a ``$lookup`` sub-pipeline it may read the ``let`` variables, which
    hold placeholders while the sub-pipeline is only validated."""
    expr = compile_expression(spec)

    def apply(docs):
        value = expr({}, ctx.variables)
        # mongod desugars $documents into [$queue [{}], $project {<uuid>: spec}, strict $unwind,
        # $replaceRoot]: a non-array fails the strict $unwind (5858203), a non-object element the
        # $replaceRoot (40228, which names the random temporary field: "documents" stands in here).
        if type(value) is not list:
            raise MongoError(5858203, "an array is expected")
        for _ in docs:  # the input is ignored (a collectionless aggregate feeds nothing)
            pass
        for d in value:
            if type(d) is not dict:
                raise MongoError(40228, f"'newRoot' expression  must evaluate to an object, but resulting value was: "
                                        f"{value_str(d)}. Type of resulting value: '{type_name(d)}'. Input document: "
                                        f"{value_str({'documents': d})}")
            yield dict(d)
    return Stage("$documents", spec, apply)


def _need(ctx_fn, name):
    if ctx_fn is None:
        raise MongoError(ErrorCode.QueryFeatureNotAllowed, f"{name} is not supported in this context")
    return ctx_fn


def parse_coll_stats(spec: Any, ctx: PipelineContext) -> Stage:
    if not isinstance(spec, dict):
        raise MongoError(5447000, f"$collStats must take a nested object but found: $collStats: {bson_repr(spec)}")
    for k, v in spec.items():  # mongod's IDL (DocumentSourceCollStatsSpec), field by field
        if k not in ("latencyStats", "storageStats", "count", "queryExecStats"):
            raise MongoError(ErrorCode.IDLUnknownField, f"BSON field '$collStats.{k}' is an unknown field.")
        if type(v) is not dict:
            raise MongoError(ErrorCode.TypeMismatch, f"BSON field '$collStats.{k}' is the wrong type "
                                                     f"'{type_name(v)}', expected type 'object'")
        if k in ("count", "queryExecStats") and v:  # their validateObjectIsEmpty
            raise MongoError(31170, f"expected an empty object, but got {bson_repr(v)}")
    stats = ctx.coll_stats

    def apply(docs):
        result = _need(stats, "$collStats")(spec)
        yield from ([result] if isinstance(result, dict) else result)
    return Stage("$collStats", spec, apply)


def parse_index_stats(spec: Any, ctx: PipelineContext) -> Stage:
    if spec != {}:
        raise MongoError(28803, "The $indexStats stage specification must be an empty object")
    stats = ctx.index_stats
    def apply(docs):
        yield from _need(stats, "$indexStats")()
    return Stage("$indexStats", spec, apply)


def parse_list_catalog(spec: Any, ctx: PipelineContext) -> Stage:
    """``$listCatalog`` (DocumentSourceListCatalog::createFromBson): an empty object; run with
    ``{aggregate: 1}`` only on admin (73). Its entries come from ``ctx.list_catalog``: every
    collection and view of every database, or the one collection the aggregate names."""
    if not isinstance(spec, dict) or spec:
        raise MongoError(6200600, "The $listCatalog stage specification must be an empty object")
    if ctx.coll == "$cmd.aggregate" and ctx.db != "admin":
        raise MongoError(ErrorCode.InvalidNamespace,
                         "Collectionless $listCatalog must be run against the 'admin' database with {aggregate: 1}")
    entries = ctx.list_catalog

    def apply(docs):
        yield from _need(entries, "$listCatalog")()
    return Stage("$listCatalog", spec, apply)


def parse_plan_cache_stats(spec: Any, ctx: PipelineContext) -> Stage:
    """``$planCacheStats`` (DocumentSourcePlanCacheStats::createFromBson): an object holding at most
    ``allHosts`` (true only through a mongos: 4503200); its entries come from ``ctx.plan_cache_stats``."""
    name = "$planCacheStats"
    if not isinstance(spec, dict):
        raise MongoError(ErrorCode.FailedToParse, f"{name} value must be an object. Found: {type_name(spec)}")
    if spec:
        key, value = next(iter(spec.items()))
        if key != "allHosts":
            raise MongoError(ErrorCode.FailedToParse,
                             f"{name} parameters object may contain only 'allHosts' field. Found: {key}")
        if len(spec) > 1:
            raise MongoError(ErrorCode.FailedToParse, f"{name} parameters object may contain at most one field.")
        if value is True:
            raise MongoError(4503200, f"{name} stage supports allHosts parameter only for sharded clusters")
    entries = ctx.plan_cache_stats

    def apply(docs):
        yield from _need(entries, name)()
    return Stage(name, spec, apply)


def parse_inhibit_optimization(spec: Any, ctx: PipelineContext) -> Stage:
    """``$_internalInhibitOptimization``: passes documents through unchanged; the stages before it are
    not combined with those after it (mongod's tests compare an optimized pipeline with one holding
    it; clients may send it: mongod registers it without a test-commands condition)."""
    name = "$_internalInhibitOptimization"
    if not isinstance(spec, dict):
        raise MongoError(ErrorCode.TypeMismatch, f"{name} must take a nested object but found: {name}: {bson_repr(spec)}")
    if spec:
        raise MongoError(ErrorCode.FailedToParse, f"{name} must take an empty object but found: {bson_repr(spec)}")
    return Stage(name, spec, lambda docs: docs)


STAGES = {
    "$match": parse_match,
    "$_internalInhibitOptimization": parse_inhibit_optimization,
    "$project": parse_project,
    "$addFields": parse_add_fields,
    "$set": lambda spec, ctx: parse_add_fields(spec, ctx, "$set"),
    "$unset": parse_unset,
    "$replaceRoot": parse_replace_root,
    "$replaceWith": parse_replace_with,
    "$redact": parse_redact,
    "$limit": parse_limit,
    "$skip": parse_skip,
    "$count": parse_count,
    "$unwind": parse_unwind,
    "$sort": parse_sort,
    "$sortByCount": parse_sort_by_count,
    "$sample": parse_sample,
    "$documents": parse_documents,
    "$collStats": parse_coll_stats,
    "$indexStats": parse_index_stats,
    "$listCatalog": parse_list_catalog,
    "$planCacheStats": parse_plan_cache_stats,
}

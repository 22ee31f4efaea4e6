"""Gap-filling stages for time series: $densify and $fill.

$densify ``{field, partitionByFields, range: {step, unit, bounds}}`` inserts documents so that, per
partition, ``field`` takes every value of the grid ``lo + k*step`` below the upper bound (``unit``
steps dates by calendar units through ``dates.date_add``, each from the previous date as mongod does). ``bounds``: "full" (the global min/max of
the field: every partition is filled up to the global maximum), "partition" (each partition's own),
or ``[lo, hi]`` (upper bound exclusive; documents outside it pass through). Generated documents hold only the field and the partition fields. Output
is ordered by partition, then by field; documents without the field come first, unchanged.

$fill ``{partitionBy | partitionByFields, sortBy, output: {f: {method: "locf"|"linear"} | {value: e}}}``
replaces null/missing values: a ``value`` expression, the last non-null value (locf, in sortBy order
or, without sortBy, in input order), or linear interpolation on the single sortBy field between the
surrounding non-null values (leading and trailing gaps stay null). Methods output the documents by
partition then sortBy; ``value`` alone keeps the input order (mongod sorts only for methods).
"""

from __future__ import annotations

from typing import Any, cast

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query import dates
from tidemark.query.expr_base import KIND_INT, KIND_LONG, as_float, int_arg, num_kind, type_name
from tidemark.query.expressions import compile_expression
from tidemark.query.interrupt import tick
from tidemark.query.pipeline import PipelineContext, Stage
from tidemark.query.stage_group import group_key
from tidemark.query.stages import field_path, set_field
from tidemark.query.values import MISSING, bson_type_number, compare, sort_key
from tidemark.query.windows import parse_set_window_fields

# mongod's internalQueryMaxAllowedDensifyDocs: a $densify never generates more documents than this.
MAX_GENERATED_DOCUMENTS = 500_000

def _get(doc, parts):
    cur = doc
    for p in parts:
        if type(cur) is not dict:
            return MISSING
        cur = cur.get(p, MISSING)
    return cur


def _too_many(made: int) -> MongoError:
    return MongoError(5897900, f"Generated {made} documents in $densify, which is over the limit of "
                               f"{MAX_GENERATED_DOCUMENTS}. Increase the 'internalQueryMaxAllowedDensifyDocs' "
                               "parameter to allow more generated documents")


def _number(v):
    """A BSON number as a Python int or float (decimals approximated) for grid arithmetic."""
    return v if type(v) in (int, float) else int(v) if num_kind(v) in (KIND_INT, KIND_LONG) else as_float(v)


def _position(v):
    """A number's place on the number line (decimals approximated), the key documents and generated
    values are matched and merged by."""
    return v if type(v) in (int, float) else as_float(v)


def _is_date(v) -> bool:
    return type(v).__name__ in ("datetime", "DatetimeMS")


def _idl_type(where: str, v: Any, expected: str) -> MongoError:
    return MongoError(ErrorCode.TypeMismatch, f"BSON field '{where}' is the wrong type '{type_name(v)}', expected {expected}")


def _densify_spec(spec: Any) -> tuple[str, list[str], dict]:
    """$densify's IDL pass (DensifySpec, RangeSpec): field by field in document order, then the
    required fields; returns (field, partitionByFields, range)."""
    if not isinstance(spec, dict):
        raise MongoError(ErrorCode.FailedToParse,
                         f"The $densify stage specification must be an object, found {type_name(spec)}")
    for k, v in spec.items():
        if k == "field":
            if type(v) is not str:
                raise _idl_type("$densify.field", v, "type 'string'")
        elif k == "partitionByFields":
            if not isinstance(v, list):
                raise _idl_type("$densify.partitionByFields", v, "type 'array'")
            for i, p in enumerate(v):
                if type(p) is not str:
                    raise _idl_type(f"$densify.partitionByFields.{i}", p, "type 'string'")
        elif k == "range":
            if not isinstance(v, dict):
                raise _idl_type("$densify.range", v, "type 'object'")
            for rk, rv in v.items():
                if rk == "step":
                    if num_kind(rv) is None:
                        raise _idl_type("$densify.range.step", rv, "types '[int, decimal, double, long]'")
                elif rk == "unit":
                    if type(rv) is not str:
                        raise _idl_type("$densify.range.unit", rv, "type 'string'")
                elif rk != "bounds":
                    raise MongoError(ErrorCode.IDLUnknownField, f"BSON field '$densify.range.{rk}' is an unknown field.")
            for rk in ("step", "bounds"):
                if rk not in v:
                    raise MongoError(ErrorCode.IDLFailedToParse,
                                     f"BSON field '$densify.range.{rk}' is missing but a required field")
        else:
            raise MongoError(ErrorCode.IDLUnknownField, f"BSON field '$densify.{k}' is an unknown field.")
    for k in ("field", "range"):
        if k not in spec:
            raise MongoError(ErrorCode.IDLFailedToParse, f"BSON field '$densify.{k}' is missing but a required field")
    return spec["field"], spec.get("partitionByFields", []), spec["range"]


def _check_range(step: Any, unit: Any, bounds: Any) -> None:
    """mongod's RangeStatement::parse, check for check."""
    if as_float(step) <= 0:
        raise MongoError(5733401, "The step parameter in a range statement must be a strictly positive numeric value")
    if unit is not None:
        if int_arg(step) is None or not -(2**63) <= cast(int, int_arg(step)) < 2**63:
            raise MongoError(6586400, "The step parameter in a range statement must be a whole number when "
                                      "densifying a date range")
        if unit not in dates.TIME_UNITS:
            raise MongoError(ErrorCode.FailedToParse, f"unknown time unit value: {unit}")
    if isinstance(bounds, list):
        if len(bounds) != 2:
            raise MongoError(5733403, "A bounding array in a range statement must have exactly two elements")
        lo, hi = bounds
        if compare(lo, hi) > 0:
            raise MongoError(5733402, "A bounding array must be an ascending array of either two dates or two numbers")
        if num_kind(lo) is not None:
            if unit is not None:
                raise MongoError(5733409, "Numeric bounds may not have unit parameter")
            if num_kind(hi) is None:
                raise MongoError(5733406, "A bounding array must contain either both dates or both numeric types")
            # mongod: "If these values are types of different sizes, output type may not be intuitive"
            if not bson_type_number(lo) == bson_type_number(hi) == bson_type_number(step):
                raise MongoError(5876900, "Upper bound, lower bound, and step must all have the same type")
        elif _is_date(lo):
            if not _is_date(hi):
                raise MongoError(5733405, "A bounding array must contain either both dates or both numeric types")
            if unit is None:
                raise MongoError(5733410, "A bounding array of dates must specify a unit")
        else:
            raise MongoError(5946800, "Explicit bounds must be numeric or dates")
    elif type(bounds) is str:
        if bounds not in ("full", "partition"):
            raise MongoError(5946802, "Bounds string must either be 'full' or 'partition'")
    else:
        raise MongoError(5733404, "The bounds in a range statement must be the string 'full', 'partition', or an "
                                  "ascending array of two numbers or two dates")


def parse_densify(spec: Any, ctx: PipelineContext) -> Stage:
    field, parts_fields, rng = _densify_spec(spec)
    step, unit, bounds = rng["step"], rng.get("unit"), rng["bounds"]
    _check_range(step, unit, bounds)
    pfield_parts = [field_path(p) for p in parts_fields]
    field_path(field)
    if bounds == "partition" and not parts_fields:
        raise MongoError(5733408, "One cannot specify the bounds as 'partition' without specifying a non-empty array "
                                  "of partitionByFields. You may have meant to specify 'full' bounds.")
    if field in parts_fields:
        raise MongoError(8993000, "The densify field cannot be a partition field")
    fparts = field.split(".")
    pparts = pfield_parts
    step_n = _number(step)

    def to_num(v):
        """The value's position on the number line (millis for dates), validating the type with
        mongod's codes (DensifyValue::getFromValue, then the stage's check of the step's kind)."""
        is_date = _is_date(v)
        if not is_date and num_kind(v) is None:
            raise MongoError(5733201, "Densify field type must be numeric or a date")
        if unit is not None:
            if not is_date:
                raise MongoError(6053600, "Encountered numeric densify value in collection when step has a date unit.")
            return dates.to_millis(v)
        if is_date:
            raise MongoError(6053600, "Encountered date densify value in collection when step does not have a date "
                                      "unit.")
        return _position(v)

    add_step = compile_expression({"$add": ["$v", {"$literal": step}]})  # mongod's DensifyValue::increment

    def grid(lo, hi, inclusive, at):
        """The values to generate from lo (inclusive) up to hi (inclusive for "full" and "partition"
        bounds: a partition is filled up to the global maximum even where it has no document there),
        as (BSON value, position) pairs, leaving out the positions of ``at`` (position -> value of the
        partition's documents). Numbers follow mongod's DocGenerator: each value is the previous one
        plus the step with $add's types, restarting from a document met on the grid, so generated
        values take the type of the last value seen (decimals stay decimals, doubles accumulate)."""
        if unit is not None:
            # Each date is the previous one plus the step ($dateAdd, as DensifyValue::increment): month
            # ends clamp and stay clamped (Jan 31, Feb 28, Mar 28, ...).
            g, hi_ms = cast(int, dates.to_millis(lo)), cast(int, dates.to_millis(hi))  # dates (checked)
            while g < hi_ms or (g == hi_ms and inclusive):
                if g not in at:
                    yield dates.from_millis(g), g
                g = dates.date_add(g, unit, int(step_n))
            return
        hi_n, cur = _position(hi), lo
        pos = _position(cur)
        while pos < hi_n or (pos == hi_n and inclusive):
            if pos in at:
                cur = at[pos]  # continue from the document's value (and type)
            else:
                yield cur, pos
            cur = add_step({"v": cur}, {})
            nxt = _position(cur)
            if not nxt > pos:  # the step vanished in a double's precision: nothing further is reachable
                return
            pos = nxt

    def apply(docs):
        passthrough = []
        partitions: dict[tuple, tuple[tuple, list[tuple[Any, Any, dict]]]] = {}
        for d in docs:
            v = _get(d, fparts)
            if v is None or v is MISSING:
                passthrough.append(d)
                continue
            pvals = tuple(_get(d, p) for p in pparts)
            key = tuple(group_key(x) for x in pvals)
            entry = partitions.get(key)
            if entry is None:
                entry = partitions[key] = (pvals, [])
            try:
                pos = to_num(v)
            except MongoError:
                _raise_first_invalid(v, pvals, docs, to_num, fparts, pparts)
                raise
            entry[1].append((pos, v, d))
        yield from passthrough
        if not partitions:
            if isinstance(bounds, list) and not pparts:  # an explicit range is generated even from nothing
                generated: list[tuple[Any, Any]] = []  # (position, value)
                for val, pos in grid(bounds[0], bounds[1], False, {}):
                    if len(generated) >= MAX_GENERATED_DOCUMENTS:
                        raise _too_many(len(generated) + 1)
                    tick()
                    generated.append((pos, val))
                yield from _merge([], generated, fparts, [], ())
            return
        all_rows = [r for _, rows in partitions.values() for r in rows]
        gmin = min(all_rows, key=lambda r: r[0])[1]
        gmax = max(all_rows, key=lambda r: r[0])[1]
        ordered = sorted(partitions.values(), key=lambda e: tuple(sort_key(None if x is MISSING else x) for x in e[0]))
        made = 0
        for pvals, rows in ordered:
            rows.sort(key=lambda r: r[0])
            if bounds == "full":
                lo, hi = gmin, gmax
            elif bounds == "partition":
                lo, hi = rows[0][1], rows[-1][1]
            else:
                lo, hi = bounds
            existing = {r[0]: r[1] for r in rows}
            generated = []
            for val, pos in grid(lo, hi, not isinstance(bounds, list), existing):
                made += 1
                if made > MAX_GENERATED_DOCUMENTS:
                    raise _too_many(made)
                tick()
                generated.append((pos, val))
            yield from _merge(rows, generated, fparts, pparts, pvals)

    return Stage("$densify", spec, apply, blocking=True)


def _raise_first_invalid(value, pvals, rest, to_num, fparts, pparts) -> None:
    """Raise the type error mongod meets first: it sorts by (partition fields, densify field) before
    densifying, so of all the values of the wrong kind the smallest in that order fails (a string,
    5733201, before a date of a numeric densify, 6053600). Runs only once a value has failed."""
    def order(pv, v):
        return tuple(sort_key(None if x is MISSING else x) for x in pv), sort_key(v)

    worst = (order(pvals, value), value)
    for d in rest:  # the documents not read yet
        v = _get(d, fparts)
        if v is None or v is MISSING:
            continue
        try:
            to_num(v)
        except MongoError:
            candidate = (order(tuple(_get(d, p) for p in pparts), v), v)
            if candidate[0] < worst[0]:
                worst = candidate
    to_num(worst[1])  # raises that value's error


def _merge(rows, generated, fparts, pparts, pvals):
    """Interleave existing documents and generated values in field order."""
    i = j = 0
    while i < len(rows) or j < len(generated):
        if j >= len(generated) or (i < len(rows) and rows[i][0] <= generated[j][0]):
            yield rows[i][2]
            i += 1
        else:
            doc: dict = {}
            for parts, pv in zip(pparts, pvals, strict=True):
                if pv is not MISSING:
                    doc = set_field(doc, parts, pv)
            yield set_field(doc, fparts, generated[j][1])
            j += 1


def parse_fill(spec: Any, ctx: PipelineContext) -> Stage:
    """mongod's document_source_fill: methods become one $setWindowFields (sortBy optional: $locf
    follows the input order, $linearFill needs it: 605001), values an ``$ifNull`` per field."""
    if not isinstance(spec, dict):
        raise MongoError(ErrorCode.FailedToParse,
                         f"The $fill stage specification must be an object, found {type_name(spec)}")
    for k in spec:
        if k not in ("partitionBy", "partitionByFields", "sortBy", "output"):
            raise MongoError(ErrorCode.IDLUnknownField, f"BSON field '$fill.{k}' is an unknown field.")
    if "output" not in spec:
        raise MongoError(ErrorCode.IDLFailedToParse, "BSON field '$fill.output' is missing but a required field")
    if not isinstance(spec["output"], dict):
        raise MongoError(ErrorCode.TypeMismatch, f"BSON field '$fill.output' is the wrong type "
                                                 f"'{type_name(spec['output'])}', expected type 'object'")
    # The remaining IDL types (FillSpec): checked before the output specifications are read.
    if "sortBy" in spec and not isinstance(spec["sortBy"], dict):
        raise _idl_type("$fill.sortBy", spec["sortBy"], "type 'object'")
    if "partitionBy" in spec and type(spec["partitionBy"]) is not str and not isinstance(spec["partitionBy"], dict):
        raise _idl_type("$fill.partitionBy", spec["partitionBy"], "types '[string, object]'")
    if "partitionByFields" in spec:
        if not isinstance(spec["partitionByFields"], list):
            raise _idl_type("$fill.partitionByFields", spec["partitionByFields"], "type 'array'")
        for i, p in enumerate(spec["partitionByFields"]):
            if type(p) is not str:
                raise _idl_type(f"$fill.partitionByFields.{i}", p, "type 'string'")
    if not spec["output"]:
        raise MongoError(6050203, "The output field in '$fill' must contain an object with at least one element")
    window_output: dict = {}
    value_fields = []
    for name, method in spec["output"].items():
        if not isinstance(method, dict):
            raise MongoError(6050200, "Each fill output specification must be an object with exactly one field")
        for k in method:
            if k not in ("method", "value"):
                raise MongoError(ErrorCode.IDLUnknownField, f"BSON field '$fill.{k}' is an unknown field.")
        if "method" in method:
            if "value" in method:
                raise MongoError(6050201, "Each fill output specification must have exactly one of 'method' or "
                                          "'value' fields, not both")
            arg = method["method"]
            if type(arg) is not str:
                raise MongoError(ErrorCode.TypeMismatch, f"BSON field '$fill.method' is the wrong type "
                                                         f"'{type_name(arg)}', expected type 'string'")
            if arg not in ("locf", "linear"):
                raise MongoError(6050202, "Method must be either locf or linear")
            op = "$locf" if arg == "locf" else "$linearFill"
            window_output[name] = {op: "$" + name}
        elif "value" in method:
            value_fields.append((name, compile_expression(method["value"])))
    if "partitionBy" in spec and "partitionByFields" in spec:
        raise MongoError(6050204, "Maximum one of 'partitionBy' and 'partitionByFields can be specified in '$fill'")
    stages: list[Stage] = []
    if window_output:
        swf: dict = {"output": window_output, **({"sortBy": spec["sortBy"]} if "sortBy" in spec else {})}
        if "partitionBy" in spec:
            swf["partitionBy"] = spec["partitionBy"]
        elif "partitionByFields" in spec:
            pbf = spec["partitionByFields"]
            swf["partitionBy"] = {p.replace(".", "_"): "$" + p for p in pbf}
        stages.append(parse_set_window_fields(swf, ctx))
    variables = ctx.variables

    def fill_values(docs):
        for d in docs:
            out = d
            for name, fn in value_fields:
                parts = name.split(".")
                if _get(d, parts) in (None, MISSING):
                    out = set_field(out, parts, fn(d, variables))
            yield out

    def apply(docs):
        it = docs
        for st in stages:
            it = st.apply(it)
        return fill_values(it) if value_fields else it
    return Stage("$fill", spec, apply, blocking=bool(stages))


STAGES = {
    "$densify": parse_densify,
    "$fill": parse_fill,
}

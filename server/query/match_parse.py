"""Parse a MongoDB filter document into the AST of ``match_ast`` (validate only; no execution).

Errors follow mongod's MatchExpressionParser (codes and messages). ``$where`` is desugared,
as mongod does, into ``$expr`` over ``$function`` with ``this`` the document (``tidemark.query.javascript``).
Unsupported features raise 224 QueryFeatureNotAllowed "... is not supported by Tidemark" — distinct from invalid input
(2 BadValue). Geo operands are parsed by ``geo_query`` and ``$text`` by ``text_search``.
"""

from __future__ import annotations

import contextvars
import datetime
import math
from collections.abc import Mapping
from typing import Any

from bson.binary import Binary
from bson.code import Code
from bson.decimal128 import Decimal128
from bson.int64 import Int64

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query import javascript
from tidemark.query.expressions import compile_expression
from tidemark.query.geo_query import parse_intersects, parse_near, parse_within
from tidemark.query.jsonschema import compile_schema
from tidemark.query.match_ast import (
    VALUE_PATH,
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
    GeoNear,
    In,
    InternalExprCmp,
    JsonSchema,
    Mod,
    Node,
    Nor,
    Not,
    Or,
    Regex,
    Size,
    Text,
    Type,
)
from tidemark.query.match_regex import compile_regex, is_regex, pattern_and_options, validate_options
from tidemark.query.scoped import Scoped
from tidemark.query.text_search import parse_text
from tidemark.query.value_repr import bson_repr
from tidemark.query.values import DBREF_FIELDS, TYPE_ALIASES, TYPE_NUMBERS, is_number

__all__ = ["parse_filter", "parse_value_condition", "is_operator_document", "where_not_allowed", "QUERY_OPERATORS",
           "INTERNAL_EXPR_OPS", "SCALAR_TYPES", "true_value"]

_UNSUPPORTED_TOP = {"$where"}  # as a top-level key it parses (_parse_where); elsewhere it is refused
_GEO_OPS = {"$geoWithin", "$within", "$geoIntersects"}
_NEAR_OPS = {"$near", "$nearSphere", "$geoNear"}  # $geoNear: mongod's legacy synonym of $near (GEO_NEAR keyword)
_GEO_OPERAND_OPS = {"$box", "$center", "$centerSphere", "$polygon", "$geometry"}
_BITS_OPS = {"$bitsAllSet", "$bitsAnySet", "$bitsAllClear", "$bitsAnyClear"}
_PATH_OPS = {
    "$eq",
    "$ne",
    "$gt",
    "$gte",
    "$lt",
    "$lte",
    "$in",
    "$nin",
    "$exists",
    "$type",
    "$regex",
    "$options",
    "$elemMatch",
    "$size",
    "$all",
    "$mod",
    "$not",
    *_BITS_OPS,
}
_TOP_OPS = {"$and", "$or", "$nor", "$expr", "$jsonSchema", "$comment", "$alwaysTrue", "$alwaysFalse", "$sampleRate"}
# mongod's internal comparisons (accepted in filters, absent from the documented operator table)
INTERNAL_EXPR_OPS = frozenset({"$_internalExprEq", "$_internalExprGt", "$_internalExprGte", "$_internalExprLt",
                               "$_internalExprLte"})
# Every query operator a filter accepts (README's operator table is checked against it).
QUERY_OPERATORS = frozenset(_PATH_OPS | _TOP_OPS | _GEO_OPS | _NEAR_OPS | _GEO_OPERAND_OPS
                            | {"$text", "$maxDistance", "$minDistance", "$where"})


_WHERE_ALLOWED: contextvars.ContextVar[bool] = contextvars.ContextVar("tidemark_where_allowed", default=True)


def where_not_allowed() -> Scoped[bool]:
    """Parse filters inside an aggregation ``$match``: mongod refuses ``$where`` there (2, "$where is
    not allowed in this context"), JavaScript or not."""
    return Scoped(_WHERE_ALLOWED, False)


# What a filter may not hold where mongod parses it with only the default special features (a
# collection validator, a listCollections / listDatabases filter): refused in document order (2).
_BANNED_TOP = frozenset({"$text", "$where"})
_BANNED_NEAR = frozenset({"$near", "$nearSphere", "$geoNear"})


def refuse_special_features(flt: Any, banned_expressions: Mapping[str, tuple[int, str]] | None = None) -> None:
    """Refuse ``$text``, ``$where`` and the near operators (2 BadValue) wherever the filter parser
    would meet them (under ``$and``/``$or``/``$nor``, in ``$elemMatch`` and ``$not``), before the filter
    is compiled; with ``banned_expressions`` (name -> (code, message)), also those expressions anywhere
    inside an ``$expr`` (a ``$literal``'s contents are data)."""
    if not isinstance(flt, Mapping):
        return
    for key, value in flt.items():
        if key in _BANNED_TOP:
            raise MongoError(ErrorCode.BadValue, f"{key} is not allowed in this context")
        if key in ("$and", "$or", "$nor"):
            for child in value if isinstance(value, list) else ():
                refuse_special_features(child, banned_expressions)
        elif key == "$expr":
            if banned_expressions:
                _refuse_expressions(value, banned_expressions)
        elif not key.startswith("$") and isinstance(value, Mapping):
            _refuse_operators(value, banned_expressions)


def _refuse_operators(ops: Mapping, banned_expressions: Mapping[str, tuple[int, str]] | None) -> None:
    for op, arg in ops.items():
        if op in _BANNED_NEAR:
            raise MongoError(ErrorCode.BadValue, "$geoNear, $near, and $nearSphere are not allowed in this context")
        if op == "$elemMatch" and isinstance(arg, Mapping):
            refuse_special_features(arg, banned_expressions)  # a sub-filter ...
            _refuse_operators(arg, banned_expressions)  # ... or operators on the element
        elif op == "$not" and isinstance(arg, Mapping):
            _refuse_operators(arg, banned_expressions)


def _refuse_expressions(expr: Any, banned: Mapping[str, tuple[int, str]]) -> None:
    if isinstance(expr, list):
        for e in expr:
            _refuse_expressions(e, banned)
    elif isinstance(expr, Mapping):
        for key, value in expr.items():
            refused = banned.get(key)
            if refused is not None:
                raise MongoError(*refused)
            if key != "$literal":
                _refuse_expressions(value, banned)


def _parse_where(value: Any) -> Node:
    """``{$where: "js" | Code}`` -> ``Expr({$function: {body, args: ["$$CURRENT"], lang: "js",
    _internalSetObjToThis: true}})``, mongod's own desugaring (``this`` and ``obj`` are the document).
    The function compiles on first use, per thread (``javascript.JsFunction``)."""
    if not _WHERE_ALLOWED.get():
        raise MongoError(ErrorCode.BadValue, "$where is not allowed in this context")
    if isinstance(value, Code) and value.scope is not None:
        raise MongoError(4649201, "$where no longer supports deprecated BSON type CodeWScope")
    if not isinstance(value, str):  # (a JavaScript value, bson Code, is a str subclass: taken too)
        raise MongoError(ErrorCode.BadValue, "$where got bad type")
    if not value:
        raise MongoError(ErrorCode.BadValue, "code for $where cannot be empty")
    if not javascript.enabled():
        raise MongoError(6108304, "no globalScriptEngine in $where parsing")
    return Expr({"$function": {"body": Code(str(value)), "args": ["$$CURRENT"], "lang": "js",
                               "_internalSetObjToThis": True}})


def _not_supported(op: str) -> MongoError:
    return MongoError(ErrorCode.QueryFeatureNotAllowed, f"{op} is not supported by Tidemark")


def is_operator_document(value: Any, allow_incomplete_dbref: bool = False) -> bool:
    """True when ``value`` is ``{$op: ...}`` (an expression document, not a DBRef-like object)."""
    # (a dict first, and the common scalars next: an isinstance of the Mapping ABC costs a
    # Python-level __instancecheck__ call, and every value of a filter is asked)
    t = type(value)
    if t is not dict and (t in SCALAR_TYPES or not isinstance(value, Mapping)) or not value:
        return False
    for key in value:  # (the first key, without the calls of next(iter(...)))
        first = key
        break
    if first[:1] != "$":
        return False
    # not a DBRef-like object: $ref and $id, or (allow_incomplete_dbref) any of $ref, $id, $db
    if allow_incomplete_dbref:
        return not ("$ref" in value or "$id" in value or "$db" in value)
    return not ("$ref" in value and "$id" in value)


# The types of most filter values: none is a Mapping, a list or a regex, which a walk of a filter can
# tell by one set lookup, where an isinstance is a call (and a Mapping ABC check a Python-level one).
SCALAR_TYPES = frozenset({str, int, float, bool, type(None), datetime.datetime})


def parse_filter(filter: Mapping | None, *, no_where: bool = False) -> Node:
    """Parse a filter document; raises MongoError with mongod's code/message when invalid.
    ``no_where``: parsed as inside ``where_not_allowed()`` (an aggregation's ``$match``), without
    the block's calls."""
    if filter is None:
        return AlwaysTrue()
    if type(filter) is not dict and not isinstance(filter, Mapping):
        raise MongoError(ErrorCode.TypeMismatch, "filter must be an object")
    if not no_where:
        return _parse_object(filter, top=True, sub=False)
    token = _WHERE_ALLOWED.set(False)
    try:
        return _parse_object(filter, top=True, sub=False)
    finally:
        _WHERE_ALLOWED.reset(token)


def parse_value_condition(ops: Mapping) -> Node:
    """``{$gte: 5, $lt: 9}`` as a condition on one value (``VALUE_PATH``, like value-form $elemMatch)."""
    return _conj(_parse_path_operators(VALUE_PATH, ops, sub=True))


def _conj(children: list[Node]) -> Node:
    if not children:
        return AlwaysTrue()
    if len(children) == 1:
        return children[0]
    return And(tuple(children))


def _parse_object(obj: Mapping, *, top: bool, sub: bool) -> Node:
    children: list[Node] = []
    for key, value in obj.items():
        if key[:1] == "$":
            node = _parse_top_operator(key, value, top=top, sub=sub)
            if node is not None:
                children.append(node)
            continue
        if is_operator_document(value):
            children.extend(_parse_path_operators(key, value, sub=sub))
        elif type(value) not in SCALAR_TYPES and is_regex(value):
            children.append(_regex_node(key, value))
        else:
            children.append(Cmp(key, "$eq", value))
    # (_conj inline: every filter ends here)
    if len(children) > 1:
        return And(tuple(children))
    return children[0] if children else AlwaysTrue()


def _parse_top_operator(key: str, value: Any, *, top: bool, sub: bool) -> Node | None:
    if key in ("$and", "$or", "$nor"):
        if not isinstance(value, list):
            raise MongoError(ErrorCode.BadValue, f"{key} must be an array")
        if not value:
            raise MongoError(ErrorCode.BadValue, "$and/$or/$nor must be a nonempty array")
        parsed = []
        for entry in value:
            if not isinstance(entry, Mapping):
                raise MongoError(ErrorCode.BadValue, "$or/$and/$nor entries need to be full objects")
            parsed.append(_parse_object(entry, top=False, sub=sub))
        if key == "$and":
            return parsed[0] if len(parsed) == 1 else And(tuple(parsed))
        if key == "$or":
            return parsed[0] if len(parsed) == 1 else Or(tuple(parsed))
        return Nor(tuple(parsed))
    if key == "$comment":
        return None
    if key == "$expr":
        if sub:
            raise MongoError(ErrorCode.BadValue, "$expr can only be applied to the top-level document")
        compile_expression(value)  # validate now; compile_node compiles again (pure)
        return Expr(value)
    if key == "$jsonSchema":
        if not isinstance(value, Mapping):
            raise MongoError(ErrorCode.TypeMismatch, "$jsonSchema must be an object")

        compile_schema(value)  # validate now; compile_node compiles again (cheap, pure)
        return JsonSchema(value)
    if key == "$text":
        if sub:
            raise MongoError(ErrorCode.BadValue, "$text can only be applied to the top-level document")

        return Text(parse_text(value))
    if key in ("$alwaysTrue", "$alwaysFalse"):
        if _integer_arg(value, key) != 1:
            raise MongoError(ErrorCode.FailedToParse, f"{key} must be an integer value of 1")
        return AlwaysTrue() if key == "$alwaysTrue" else AlwaysFalse()
    if key == "$where":
        return _parse_where(value)
    if key in DBREF_FIELDS:  # (DBRef field names mongod accepts where an operator goes)
        # mongod's pathless parser maps $id/$ref/$db to parseDBRef: plain equality on that field name
        # with the value taken literally (an operator-looking object is not parsed), at any level, so
        # that {$elemMatch: {$id: ...}} matches DBRef elements. (mongod compares $ref/$db without the
        # collation; here the query's collation applies to all three.)
        return Cmp(key, "$eq", value)
    if key == "$sampleRate":
        return _parse_sample_rate(value, sub)
    if key in _UNSUPPORTED_TOP:
        raise _not_supported(key)
    raise MongoError(
        ErrorCode.BadValue,
        f"unknown top level operator: {key}. If you have a field name that starts with a '$' "
        "symbol, consider using $getField or $setField.",
    )


def _parse_sample_rate(value: Any, sub: bool) -> Node:
    """mongod's parseSampleRate: a number in [0, 1] (NaN refused: the bounds are tested as one
    inclusive range), read as ``$expr``: never at 0, always at 1, else ``{$lt: [{$rand: {}}, x]}`` —
    each document is kept with probability x."""
    if sub:
        raise MongoError(ErrorCode.BadValue, "$sampleRate can only be applied to the top-level document")
    if not is_number(value):
        raise MongoError(ErrorCode.BadValue, "argument to $sampleRate must be a numeric type")
    x = float(value.to_decimal()) if isinstance(value, Decimal128) else float(value)
    if not 0.0 <= x <= 1.0:
        raise MongoError(ErrorCode.BadValue, "numeric argument to $sampleRate must be in [0, 1]")
    if x in (0.0, 1.0):
        return Expr(x == 1.0)
    return Expr({"$lt": [{"$rand": {}}, x]})


def _integer_arg(value: Any, name: str) -> int:
    if not is_number(value):
        raise MongoError(ErrorCode.FailedToParse, f"Expected a number in: {name}: {bson_repr(value)}")
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value) or value != int(value):
            raise MongoError(ErrorCode.FailedToParse, f"Expected an integer: {name}: {bson_repr(value)}")
    if isinstance(value, Decimal128):
        d = value.to_decimal()
        if not d.is_finite() or d != int(d):
            raise MongoError(ErrorCode.FailedToParse, f"Expected an integer: {name}: {bson_repr(value)}")
        return int(d)
    return int(value)


def _regex_node(path: str, value: Any, options_override: str | None = None) -> Regex:
    pattern, options = pattern_and_options(value)
    if options_override is not None:
        options = options_override
    return Regex(path, pattern, options, compile_regex(pattern, options))


def _parse_path_operators(path: str, ops: Mapping, *, sub: bool) -> list[Node]:
    """``{path: {$op: v, ...}}`` -> one node per operator ($regex/$options fold into one)."""
    out: list[Node] = []
    if "$regex" in ops or "$options" in ops:
        out.append(_parse_regex_document(path, ops))
    near = None  # the first near operator
    for op in ops:
        if op in _NEAR_OPS:
            near = op
            break
    if near is not None:
        op = "$near" if near == "$geoNear" else near  # parsed exactly as $near (GeoNearExpression)
        out.append(GeoNear(path, parse_near(op, ops[near], ops)))
    elif "$maxDistance" in ops or "$minDistance" in ops:
        raise MongoError(ErrorCode.BadValue, "$maxDistance and $minDistance are only allowed with $near "
                                             "or $nearSphere")
    for op, arg in ops.items():
        if op in _COMPARISONS and type(arg) in SCALAR_TYPES:  # (no regex: _parse_path_operator's Cmp, no call)
            out.append(Cmp(path, op, arg))
        elif op == "$in" and type(arg) is list:  # (the usual $in: _parse_path_operator's, one call fewer)
            out.append(_parse_in(path, arg))
        elif op in ("$regex", "$options", "$maxDistance", "$minDistance") or op in _NEAR_OPS:
            continue
        else:
            out.append(_parse_path_operator(path, op, arg, sub=sub))
    return out


_COMPARISONS = frozenset({"$eq", "$gt", "$gte", "$lt", "$lte"})


def _parse_regex_document(path: str, ops: Mapping) -> Regex:
    if "$regex" not in ops:
        raise MongoError(ErrorCode.BadValue, "$options needs a $regex")
    regex = ops["$regex"]
    options = ""
    if type(regex) is str:
        pattern = regex
    elif is_regex(regex):
        pattern, options = pattern_and_options(regex)
    else:
        raise MongoError(ErrorCode.BadValue, "$regex has to be a string")
    if "$options" in ops:
        opt = ops["$options"]
        if type(opt) is not str:
            raise MongoError(ErrorCode.BadValue, "$options has to be a string")
        if options:  # (mongod's code says which came first)
            first = next(op for op in ops if op in ("$regex", "$options"))
            raise MongoError(51074 if first == "$options" else 51075, "options set in both $regex and $options")
        options = opt
    validate_options(options)
    return Regex(path, pattern, options, compile_regex(pattern, options))


def _parse_path_operator(path: str, op: str, arg: Any, *, sub: bool) -> Node:
    if op in ("$eq", "$gt", "$gte", "$lt", "$lte"):
        if op != "$eq" and type(arg) not in SCALAR_TYPES and is_regex(arg):
            raise MongoError(ErrorCode.BadValue, f"Can't have RegEx as arg to predicate over field '{path}'.")
        return Cmp(path, op, arg)
    if op in INTERNAL_EXPR_OPS:
        if isinstance(arg, list):
            raise MongoError(ErrorCode.BadValue, f"{op} cannot compare to an array")
        return InternalExprCmp(path, op, arg)
    if op == "$ne":
        if is_regex(arg):
            raise MongoError(ErrorCode.BadValue, "Can't have regex as arg to $ne.")
        return Not(Cmp(path, "$eq", arg))
    if op in ("$in", "$nin"):
        if type(arg) is not list and not isinstance(arg, list):
            raise MongoError(ErrorCode.BadValue, f"{op} needs an array")
        node = _parse_in(path, arg)
        return node if op == "$in" else Not(node)
    if op == "$exists":
        return Exists(path) if true_value(arg) else Not(Exists(path))
    if op == "$type":
        return Type(path, _parse_type_set(arg, "$type"))
    if op == "$size":
        return Size(path, _parse_size(arg))
    if op == "$mod":
        return _parse_mod(path, arg)
    if op == "$all":
        return _parse_all(path, arg, sub=sub)
    if op == "$elemMatch":
        return _parse_elem_match(path, arg)
    if op == "$not":
        return _parse_not(path, arg, sub=sub)
    if op in _BITS_OPS:
        return Bits(path, op, _parse_bitmask(op, arg), arg)
    if op in _GEO_OPS:
        if op == "$geoIntersects":
            return Geo(path, op, parse_intersects(arg))
        return Geo(path, "$geoWithin", parse_within(arg))
    if op in _GEO_OPERAND_OPS:
        raise MongoError(ErrorCode.BadValue, f"unknown operator: {op}")
    if op == "$where":
        raise MongoError(ErrorCode.BadValue, "$where cannot be applied to a field")
    if op == "$expr":
        raise MongoError(ErrorCode.BadValue, "unknown operator: $expr")
    raise MongoError(ErrorCode.BadValue, f"unknown operator: {op}")


def true_value(v: Any) -> bool:
    """mongod's BSONElement::trueValue, as ``$exists`` reads its argument (also ``index_bounds``)."""
    if v is None or v is False:
        return False
    if is_number(v):
        if isinstance(v, Decimal128):
            return v.to_decimal() != 0
        return v != 0
    return True


def _parse_in(path: str, arr: list) -> In:
    values, regexes = [], []
    for entry in arr:
        if type(entry) in SCALAR_TYPES:  # (neither an operator document nor a regex: no call)
            values.append(entry)
        elif is_operator_document(entry):
            raise MongoError(ErrorCode.BadValue, "cannot nest $ under $in")
        elif is_regex(entry):
            regexes.append(_regex_node(VALUE_PATH, entry))
        else:
            values.append(entry)
    return In(path, tuple(values), tuple(regexes))


def _parse_type_set(arg: Any, name: str) -> frozenset:
    entries = arg if isinstance(arg, list) else [arg]
    types: set = set()
    for entry in entries:
        # Code is a str subclass (and unhashable) but BSON type javascript, neither a number nor a string for mongod
        if type(entry) is str:
            if entry not in TYPE_ALIASES:
                raise MongoError(ErrorCode.BadValue, f"Unknown type name alias: {entry}")
            types.add(TYPE_ALIASES[entry])
        elif is_number(entry):
            finite = not isinstance(entry, float) or math.isfinite(entry)
            number = (
                _integer_arg(entry, name) if finite and (not isinstance(entry, float) or entry == int(entry)) else None
            )
            if number is None or number not in TYPE_NUMBERS.values():
                raise MongoError(ErrorCode.BadValue, f"Invalid numerical type code: {entry}")
            types.add(number)
        else:
            raise MongoError(ErrorCode.TypeMismatch, "type must be represented as a number or a string")
    if not types:
        raise MongoError(ErrorCode.FailedToParse, f"{name} must match at least one type")
    return frozenset(types)


def _parse_size(arg: Any) -> int:
    if isinstance(arg, bool) or not is_number(arg):
        raise MongoError(ErrorCode.BadValue, "$size needs a number")
    if isinstance(arg, float):
        if math.isnan(arg) or math.isinf(arg) or arg != int(arg):
            raise MongoError(ErrorCode.BadValue, "$size must be a whole number")
        arg = int(arg)
    elif isinstance(arg, Decimal128):
        raise MongoError(ErrorCode.BadValue, "$size needs a number")
    if isinstance(arg, Int64) and not -(2**31) <= arg < 2**31:
        raise MongoError(ErrorCode.BadValue, "$size must be representable as a 32-bit integer")
    if arg < 0:
        raise MongoError(ErrorCode.BadValue, "$size may not be negative")
    return int(arg)


def _mod_operand(v: Any, what: str) -> int:
    if not is_number(v):
        raise MongoError(ErrorCode.BadValue, f"malformed mod, {what} not a number")
    f = float(v.to_decimal()) if isinstance(v, Decimal128) else float(v)
    if math.isnan(f) or math.isinf(f) or not -(2**63) <= f < 2**63:
        raise MongoError(
            ErrorCode.BadValue,
            f"malformed mod, {what} value is invalid :: caused by :: Unable to coerce NaN/Inf to integral type",
        )
    return int(v.to_decimal()) if isinstance(v, Decimal128) else int(v)


def _parse_mod(path: str, arg: Any) -> Mod:
    if not isinstance(arg, list):
        raise MongoError(ErrorCode.BadValue, "malformed mod, needs to be an array")
    if len(arg) < 2:
        raise MongoError(ErrorCode.BadValue, "malformed mod, not enough elements")
    if len(arg) > 2:
        raise MongoError(ErrorCode.BadValue, "malformed mod, too many elements")
    divisor = _mod_operand(arg[0], "divisor")
    remainder = _mod_operand(arg[1], "remainder")
    if divisor == 0:
        raise MongoError(ErrorCode.BadValue, "divisor cannot be 0")
    return Mod(path, divisor, remainder)


# A bit position past every bit a BinData value can have (a document is at most 16 MiB): positions up to
# mongod's 2^31 - 1 are read as this one, which is clear in every BinData value and, as every position
# from 63 on, the sign bit of a number. So a mask never has more than 2^27 bits, however far a position.
_BEYOND_ANY_BINARY = 8 * 16 * 1024 * 1024
_INT32_MAX = 2**31 - 1


def _bit_position(pos: Any) -> int:
    """One position of a $bits* position list, checked as mongod's parseBitPositionsArray (2 BadValue)."""
    if not is_number(pos):
        raise MongoError(ErrorCode.BadValue, f"bit positions must be an integer but got: {pos!r}")
    if isinstance(pos, Decimal128):
        d = pos.to_decimal()
        if d.is_nan():
            raise MongoError(ErrorCode.BadValue, f"bit positions cannot take a NaN: {pos!r}")
        if not -_INT32_MAX - 1 <= d <= _INT32_MAX:
            raise MongoError(ErrorCode.BadValue, f"bit positions cannot be represented as a 32-bit signed integer: {pos!r}")
        if d != d.to_integral_value():
            raise MongoError(ErrorCode.BadValue, f"bit positions must be an integer but got: {pos!r}")
        value = int(d)
    elif isinstance(pos, float):
        if math.isnan(pos):
            raise MongoError(ErrorCode.BadValue, f"bit positions cannot take a NaN: {pos!r}")
        if not -_INT32_MAX - 1 <= pos <= _INT32_MAX:
            raise MongoError(ErrorCode.BadValue, f"bit positions cannot be represented as a 32-bit signed integer: {pos!r}")
        if pos != int(pos):
            raise MongoError(ErrorCode.BadValue, f"bit positions must be an integer but got: {pos!r}")
        value = int(pos)
    else:
        value = int(pos)
        if not -_INT32_MAX - 1 <= value <= _INT32_MAX:
            raise MongoError(ErrorCode.BadValue, f"bit positions cannot be represented as a 32-bit signed integer: {pos!r}")
    if value < 0:
        raise MongoError(ErrorCode.BadValue, f"bit positions must be >= 0 but got: {pos!r}")
    return min(value, _BEYOND_ANY_BINARY)


def _parse_bitmask(op: str, arg: Any) -> int:
    if isinstance(arg, list):
        positions = [_bit_position(pos) for pos in arg]
        if not positions:
            return 0
        # built in one pass over a bytearray: or-ing 1 << p per position would copy the mask each time
        bits = bytearray(max(positions) // 8 + 1)
        for p in positions:
            bits[p >> 3] |= 1 << (p & 7)
        return int.from_bytes(bits, "little")
    if is_number(arg):
        value = _integer_arg(arg, op)
        if value < 0:
            raise MongoError(ErrorCode.FailedToParse, f"Expected a positive number in: {op}: {bson_repr(arg)}")
        return value
    if isinstance(arg, (bytes, Binary)):
        return int.from_bytes(bytes(arg), "little")
    raise MongoError(ErrorCode.BadValue, f"{op} takes an Array, a number, or a BinData but received: {op}: {bson_repr(arg)}")


def _parse_all(path: str, arg: Any, *, sub: bool) -> Node:
    if not isinstance(arg, list):
        raise MongoError(ErrorCode.BadValue, "$all needs an array")
    if not arg:
        return AlwaysFalse()
    first = arg[0]
    if isinstance(first, Mapping) and first and next(iter(first)) == "$elemMatch":
        nodes = []
        for entry in arg:
            if not isinstance(entry, Mapping) or not entry or next(iter(entry)) != "$elemMatch":
                raise MongoError(ErrorCode.BadValue, "$all/$elemMatch has to be consistent")
            nodes.append(_parse_elem_match(path, entry["$elemMatch"]))
        return nodes[0] if len(nodes) == 1 else And(tuple(nodes))
    values = []
    for entry in arg:
        if isinstance(entry, Mapping) and entry and next(iter(entry)) in _PATH_OPS:
            raise MongoError(ErrorCode.BadValue, "no $ expressions in $all")
        values.append(_regex_node(VALUE_PATH, entry) if is_regex(entry) else entry)
    return All(path, tuple(values))


def _parse_elem_match(path: str, arg: Any) -> ElemMatch:
    if not isinstance(arg, Mapping):
        raise MongoError(ErrorCode.BadValue, "$elemMatch needs an Object")
    value_form = False
    if is_operator_document(arg, allow_incomplete_dbref=True):
        first = next(iter(arg))
        value_form = first not in _TOP_OPS and first not in _UNSUPPORTED_TOP and first != "$text"
    if value_form:
        child = _conj(_parse_path_operators(VALUE_PATH, arg, sub=True))
        return ElemMatch(path, child, True)
    if "$where" in arg:
        raise MongoError(ErrorCode.BadValue, "$elemMatch cannot contain $where expression")
    return ElemMatch(path, _parse_object(arg, top=False, sub=True), False)


def _parse_not(path: str, arg: Any, *, sub: bool) -> Node:
    if is_regex(arg):
        return Not(_regex_node(path, arg))
    if not isinstance(arg, Mapping):
        raise MongoError(ErrorCode.BadValue, "$not needs a regex or a document")
    if not arg:
        raise MongoError(ErrorCode.BadValue, "$not cannot be empty")
    for op in arg:
        if not op.startswith("$"):
            raise MongoError(ErrorCode.BadValue, f"unknown operator: {op}")
    children = _parse_path_operators(path, arg, sub=sub)
    return Not(children[0] if len(children) == 1 else And(tuple(children)))

"""``$jsonSchema``: the MongoDB subset of JSON Schema draft 4, compiled once into a validator.

Used as a query operator (``{$jsonSchema: {...}}``) and by collection validators:
``compiled = compile_schema(schema)`` (raises MongoError for invalid schemas) then
``validate(compiled, doc) -> bool``; the caller raises 121 DocumentValidationFailure.

Semantics (as mongod): a keyword constrains only values of the types it is about — ``minimum``
ignores strings, ``properties`` ignores non-objects — so ``{minimum: 5}`` accepts ``"abc"``.
Absent properties satisfy their subschema unless listed in ``required``. ``description``,
``title`` and ``$comment`` are ignored. Supported: bsonType, type, required, properties,
additionalProperties, patternProperties, minimum/maximum (+ exclusive*), minLength/maxLength,
enum, pattern, items, additionalItems, minItems/maxItems, uniqueItems, minProperties/
maxProperties, allOf/anyOf/oneOf/not, dependencies. Anything else -> 2 "Unknown $jsonSchema
keyword: x".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query.match_regex import compile_regex, matches
from tidemark.query.values import TYPE_ALIASES, bson_type_number, compare, equal, is_number, sort_key

__all__ = ["compile_schema", "validate", "CompiledSchema"]

CompiledSchema = Callable[[Any], bool]

_JSON_TYPES = {"object", "array", "number", "boolean", "string", "null"}
_IGNORED = {"description", "title", "$comment"}
_KNOWN = {
    "bsonType",
    "type",
    "required",
    "properties",
    "additionalProperties",
    "patternProperties",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "enum",
    "pattern",
    "items",
    "additionalItems",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "dependencies",
    *_IGNORED,
}


def validate(compiled: CompiledSchema, doc: Any) -> bool:
    """True when ``doc`` satisfies the compiled schema."""
    return compiled(doc)


def compile_schema(schema: Mapping) -> CompiledSchema:
    """Validate and compile a ``$jsonSchema`` document (top level must describe an object)."""
    if not isinstance(schema, Mapping):
        raise MongoError(ErrorCode.TypeMismatch, "$jsonSchema must be an object")
    return _compile(schema, top=True)


def _bad(msg: str, code: int = ErrorCode.FailedToParse) -> MongoError:
    return MongoError(code, msg)


def _non_negative_int(schema: Mapping, key: str) -> int:
    v = schema[key]
    if not is_number(v):
        raise _bad(f"$jsonSchema keyword '{key}' must be a number", ErrorCode.TypeMismatch)
    if float(str(v)) != int(float(str(v))) or float(str(v)) < 0:
        raise _bad(f"$jsonSchema keyword '{key}' must be a representable as a non-negative integer")
    return int(float(str(v)))


def _is_object(v: Any) -> bool:
    return isinstance(v, Mapping)


def _json_type_ok(v: Any, name: str) -> bool:
    if name == "object":
        return isinstance(v, Mapping)
    if name == "array":
        return isinstance(v, list)
    if name == "number":
        return is_number(v)
    if name == "boolean":
        return isinstance(v, bool)
    if name == "string":
        return isinstance(v, str)
    return v is None  # "null"


def _type_names(schema: Mapping, key: str) -> list:
    raw = schema[key]
    names = raw if isinstance(raw, list) else [raw]
    if not names or not all(isinstance(n, str) for n in names):
        raise _bad(
            f"$jsonSchema keyword '{key}' must be either a string or an array of strings",
            ErrorCode.TypeMismatch,
        )
    if len(set(names)) != len(names):
        raise _bad(f"$jsonSchema keyword '{key}' has duplicate value")
    for n in names:
        if key == "type":
            if n == "integer":
                raise _bad("$jsonSchema type 'integer' is not currently supported.")
            if n not in _JSON_TYPES:
                raise _bad(f"Unknown type name alias: {n}", ErrorCode.BadValue)
        elif n not in TYPE_ALIASES:
            raise _bad(f"Unknown type name alias: {n}", ErrorCode.BadValue)
    return names


def _compile(schema: Mapping, *, top: bool = False) -> CompiledSchema:
    if not isinstance(schema, Mapping):
        raise _bad("$jsonSchema subschema must be an object", ErrorCode.TypeMismatch)
    for key in schema:
        if key not in _KNOWN:
            raise _bad(f"Unknown $jsonSchema keyword: {key}", ErrorCode.BadValue)
    if "type" in schema and "bsonType" in schema:
        raise _bad("Cannot specify both $jsonSchema keywords 'type' and 'bsonType'")
    checks: list[CompiledSchema] = []

    if "type" in schema:
        names = _type_names(schema, "type")
        checks.append(lambda v: any(_json_type_ok(v, n) for n in names))
    if "bsonType" in schema:
        names = _type_names(schema, "bsonType")
        wanted = {TYPE_ALIASES[n] for n in names}

        def bson_type_ok(v: Any) -> bool:
            if "number" in wanted and is_number(v):
                return True
            try:
                return bson_type_number(v) in wanted
            except TypeError:
                return False

        checks.append(bson_type_ok)

    _numeric_bounds(schema, checks)
    _string_checks(schema, checks)
    _object_checks(schema, checks)
    _array_checks(schema, checks)
    _logic_checks(schema, checks)

    if "enum" in schema:
        members = schema["enum"]
        if not isinstance(members, list):
            raise _bad("$jsonSchema keyword 'enum' must be an array", ErrorCode.TypeMismatch)
        if not members:
            raise _bad("$jsonSchema keyword 'enum' cannot be an empty array")
        checks.append(lambda v: any(equal(v, m) for m in members))

    if not checks:
        return lambda v: True
    checks_t = tuple(checks)
    return lambda v: all(c(v) for c in checks_t)


def _numeric_bounds(schema: Mapping, checks: list) -> None:
    for key, excl_key, sign in (("minimum", "exclusiveMinimum", 1), ("maximum", "exclusiveMaximum", -1)):
        if excl_key in schema:
            if not isinstance(schema[excl_key], bool):
                raise _bad(f"$jsonSchema keyword '{excl_key}' must be a boolean", ErrorCode.TypeMismatch)
            if key not in schema:
                raise _bad(f"$jsonSchema keyword '{key}' must be a present if {excl_key} is present")
        if key not in schema:
            continue
        bound = schema[key]
        if not is_number(bound):
            raise _bad(f"$jsonSchema keyword '{key}' must be a number", ErrorCode.TypeMismatch)
        exclusive = bool(schema.get(excl_key, False))

        def in_bound(v: Any, bound=bound, sign=sign, exclusive=exclusive) -> bool:
            if not is_number(v):
                return True
            c = compare(v, bound) * sign  # > 0: on the allowed side
            return c > 0 if exclusive else c >= 0

        checks.append(in_bound)


def _string_checks(schema: Mapping, checks: list) -> None:
    if "minLength" in schema:
        n = _non_negative_int(schema, "minLength")
        checks.append(lambda v: not isinstance(v, str) or len(v) >= n)
    if "maxLength" in schema:
        m = _non_negative_int(schema, "maxLength")
        checks.append(lambda v: not isinstance(v, str) or len(v) <= m)
    if "pattern" in schema:
        if not isinstance(schema["pattern"], str):
            raise _bad("$jsonSchema keyword 'pattern' must be a string", ErrorCode.TypeMismatch)
        rx = compile_regex(schema["pattern"], "")
        checks.append(lambda v: not isinstance(v, str) or matches(rx, v))


def _object_checks(schema: Mapping, checks: list) -> None:
    if "required" in schema:
        req = schema["required"]
        if not isinstance(req, list) or not all(isinstance(r, str) for r in req):
            raise _bad("$jsonSchema keyword 'required' must be an array of strings", ErrorCode.TypeMismatch)
        if not req:
            raise _bad("$jsonSchema keyword 'required' cannot be an empty array")
        checks.append(lambda v: not _is_object(v) or all(r in v for r in req))
    props: dict[str, CompiledSchema] = {}
    if "properties" in schema:
        if not isinstance(schema["properties"], Mapping):
            raise _bad("$jsonSchema keyword 'properties' must be an object", ErrorCode.TypeMismatch)
        props = {k: _compile(s) for k, s in schema["properties"].items()}

        def props_ok(v: Any) -> bool:
            if not _is_object(v):
                return True
            for k, check in props.items():
                if k in v and not check(v[k]):
                    return False
            return True

        checks.append(props_ok)
    patterns: list = []
    if "patternProperties" in schema:
        if not isinstance(schema["patternProperties"], Mapping):
            raise _bad("$jsonSchema keyword 'patternProperties' must be an object", ErrorCode.TypeMismatch)
        patterns = [(compile_regex(p, ""), _compile(s)) for p, s in schema["patternProperties"].items()]

        def patterns_ok(v: Any) -> bool:
            if not _is_object(v):
                return True
            for k, x in v.items():
                for rx, check in patterns:
                    if matches(rx, k) and not check(x):
                        return False
            return True

        checks.append(patterns_ok)
    if "additionalProperties" in schema:
        extra = schema["additionalProperties"]
        if isinstance(extra, bool):
            extra_check = None if extra else (lambda x: False)
        elif isinstance(extra, Mapping):
            extra_check = _compile(extra)
        else:
            raise _bad(
                "$jsonSchema keyword 'additionalProperties' must be either an object or a boolean",
                ErrorCode.TypeMismatch,
            )
        if extra_check is not None:

            def additional_ok(v: Any) -> bool:
                if not _is_object(v):
                    return True
                for k, x in v.items():
                    if k in props or any(matches(rx, k) for rx, _ in patterns):
                        continue
                    if not extra_check(x):
                        return False
                return True

            checks.append(additional_ok)
    if "minProperties" in schema:
        n = _non_negative_int(schema, "minProperties")
        checks.append(lambda v: not _is_object(v) or len(v) >= n)
    if "maxProperties" in schema:
        m = _non_negative_int(schema, "maxProperties")
        checks.append(lambda v: not _is_object(v) or len(v) <= m)
    if "dependencies" in schema:
        deps = schema["dependencies"]
        if not isinstance(deps, Mapping):
            raise _bad("$jsonSchema keyword 'dependencies' must be an object", ErrorCode.TypeMismatch)
        for field, dep in deps.items():
            if isinstance(dep, list):
                names = list(dep)
                checks.append(
                    lambda v, f=field, names=names: (
                        not _is_object(v) or f not in v or all(n in v for n in names)
                    )
                )
            else:
                sub = _compile(dep)
                checks.append(lambda v, f=field, sub=sub: not _is_object(v) or f not in v or sub(v))


def _array_checks(schema: Mapping, checks: list) -> None:
    if "minItems" in schema:
        n = _non_negative_int(schema, "minItems")
        checks.append(lambda v: not isinstance(v, list) or len(v) >= n)
    if "maxItems" in schema:
        m = _non_negative_int(schema, "maxItems")
        checks.append(lambda v: not isinstance(v, list) or len(v) <= m)
    if schema.get("uniqueItems") is True:

        def unique_ok(v: Any) -> bool:
            if not isinstance(v, list):
                return True
            keys = [sort_key(x) for x in v]
            return len(set(keys)) == len(keys)

        checks.append(unique_ok)
    elif "uniqueItems" in schema and not isinstance(schema["uniqueItems"], bool):
        raise _bad("$jsonSchema keyword 'uniqueItems' must be a boolean", ErrorCode.TypeMismatch)
    if "items" in schema:
        items = schema["items"]
        if isinstance(items, Mapping):
            each = _compile(items)
            checks.append(lambda v: not isinstance(v, list) or all(each(x) for x in v))
        elif isinstance(items, list):
            tuple_checks = [_compile(s) for s in items]
            extra = schema.get("additionalItems", True)
            if isinstance(extra, Mapping):
                extra_check: Any = _compile(extra)
            elif isinstance(extra, bool):
                extra_check = None if extra else False
            else:
                raise _bad(
                    "$jsonSchema keyword 'additionalItems' must be either an object or a boolean",
                    ErrorCode.TypeMismatch,
                )

            def tuple_ok(v: Any) -> bool:
                if not isinstance(v, list):
                    return True
                for check, x in zip(tuple_checks, v, strict=False):
                    if not check(x):
                        return False
                rest = v[len(tuple_checks) :]
                if extra_check is False:
                    return not rest
                if extra_check is not None:
                    return all(extra_check(x) for x in rest)
                return True

            checks.append(tuple_ok)
        else:
            raise _bad("$jsonSchema keyword 'items' must be an array or an object", ErrorCode.TypeMismatch)


def _schema_list(schema: Mapping, key: str) -> list[CompiledSchema]:
    subs = schema[key]
    if not isinstance(subs, list):
        raise _bad(f"$jsonSchema keyword '{key}' must be an array", ErrorCode.TypeMismatch)
    if not subs:
        raise _bad(f"$jsonSchema keyword '{key}' must be a non-empty array")
    return [_compile(s) for s in subs]


def _logic_checks(schema: Mapping, checks: list) -> None:
    if "allOf" in schema:
        subs = _schema_list(schema, "allOf")
        checks.append(lambda v: all(s(v) for s in subs))
    if "anyOf" in schema:
        subs_any = _schema_list(schema, "anyOf")
        checks.append(lambda v: any(s(v) for s in subs_any))
    if "oneOf" in schema:
        subs_one = _schema_list(schema, "oneOf")
        checks.append(lambda v: sum(1 for s in subs_one if s(v)) == 1)
    if "not" in schema:
        if not isinstance(schema["not"], Mapping):
            raise _bad("$jsonSchema keyword 'not' must be an object", ErrorCode.TypeMismatch)
        neg = _compile(schema["not"])
        checks.append(lambda v: not neg(v))

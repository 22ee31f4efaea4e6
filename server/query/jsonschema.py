"""``$jsonSchema``: the MongoDB subset of JSON Schema draft 4, compiled once into a validator.

Used as a query operator (``{$jsonSchema: {...}}``) and by collection validators:
``compiled = compile_schema(schema)`` (raises MongoError for invalid schemas) then
``validate(compiled, doc) -> bool``; the caller raises 121 DocumentValidationFailure.

Semantics (as mongod): a keyword constrains only values of the types it is about — ``minimum``
ignores strings, ``properties`` ignores non-objects — so ``{minimum: 5}`` accepts ``"abc"``.
Absent properties satisfy their subschema unless listed in ``required``. Arrays are values: no
keyword traverses them implicitly. ``enum`` and ``uniqueItems`` compare embedded documents
ignoring field order. Collations never apply. Keywords: bsonType, type, required, properties,
additionalProperties, patternProperties, minimum/maximum (+ exclusive*), multipleOf,
minLength/maxLength, pattern, enum, items, additionalItems, minItems/maxItems, uniqueItems,
minProperties/maxProperties, allOf/anyOf/oneOf/not, dependencies, encrypt/encryptMetadata (client-side
field level encryption: ``encrypt`` accepts BinData of subtype 6; with its ``bsonType``, FLE1 blobs
whose header names one of those types), description/title (strings, otherwise ignored).
``$ref``, ``$schema``, ``default``, ``definitions``, ``format``, ``id`` -> 9 "... is not currently
supported"; anything else -> 9 "Unknown $jsonSchema keyword: x".

Parsing follows mongod's JSON Schema parser step for step (keyword names, then description/title,
type/bsonType/encrypt conflicts, the type set, scalar, array, encryption, object and logical keywords),
so that a schema with several faults reports the fault mongod reports, with its code and message.
"""

from __future__ import annotations

import contextlib
import contextvars
import decimal
import math
from collections.abc import Callable, Iterator, Mapping
from fractions import Fraction
from typing import Any

from bson import Decimal128
from bson.binary import Binary

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query.match_regex import compile_regex, matches
from tidemark.query.value_repr import bson_repr
from tidemark.query.values import TYPE_ALIASES, bson_type_name, bson_type_number, compare, is_number, sort_key

__all__ = ["compile_schema", "validate", "CompiledSchema", "unordered_key", "encrypt_keywords_refused"]

CompiledSchema = Callable[[Any], bool]

_KEYWORDS = frozenset({
    "additionalItems", "additionalProperties", "allOf", "anyOf", "bsonType", "dependencies", "description",
    "encrypt", "encryptMetadata", "enum", "exclusiveMaximum", "exclusiveMinimum", "items", "maxItems",
    "maxLength", "maxProperties", "maximum", "minItems", "minLength", "minProperties", "minimum", "multipleOf",
    "not", "oneOf", "pattern", "patternProperties", "properties", "required", "title", "type", "uniqueItems",
})
_UNSUPPORTED = frozenset({"$ref", "$schema", "default", "definitions", "format", "id"})
# JSON Schema's own type names (``type``); ``bsonType`` takes MongoDB's aliases (values.TYPE_ALIASES).
_JSON_TYPES: dict[str, int | str] = {"array": 4, "boolean": 8, "null": 10, "object": 3, "string": 2,
                                     "number": "number"}
_ENCRYPT_ALGORITHMS = frozenset({"AEAD_AES_256_CBC_HMAC_SHA_512-Deterministic",
                                 "AEAD_AES_256_CBC_HMAC_SHA_512-Random"})
_ENCRYPT_SUBTYPE = 6
_FLE1_BLOB_SUBTYPES = frozenset({1, 2})  # deterministic, random: [subtype][key UUID x16][original BSON type]
_INT64_LIMIT = 2 ** 63
# Whether 'encrypt'/'encryptMetadata' may be parsed here: mongod drops kEncryptKeywords from the allowed
# features of a validator whose action is 'warn' or level 'moderate' (plaintext must not reach its logs).
_ENCRYPT_ALLOWED: contextvars.ContextVar[bool] = contextvars.ContextVar("tidemark_encrypt_allowed", default=True)


@contextlib.contextmanager
def encrypt_keywords_refused(refused: bool = True) -> Iterator[None]:
    """Schemas parsed inside this block refuse the encryption keywords (224 QueryFeatureNotAllowed)
    when ``refused``."""
    token = _ENCRYPT_ALLOWED.set(not refused)
    try:
        yield
    finally:
        _ENCRYPT_ALLOWED.reset(token)


def validate(compiled: CompiledSchema, doc: Any) -> bool:
    """True when ``doc`` satisfies the compiled schema."""
    return compiled(doc)


def compile_schema(schema: Any) -> CompiledSchema:
    """Validate and compile a ``$jsonSchema`` document (its top level describes the whole document)."""
    if not isinstance(schema, Mapping):
        raise MongoError(ErrorCode.TypeMismatch, "$jsonSchema must be an object")
    return _compile(schema, top=True)


def unordered_key(v: Any) -> Any:
    """A hashable identity of ``v`` under BSON equality where embedded documents compare ignoring
    field order (mongod's UnorderedFieldsBSONElementComparator: ``enum``, ``uniqueItems``)."""
    if isinstance(v, Mapping):
        return ("\x03doc", tuple(sorted((k, unordered_key(x)) for k, x in v.items())))
    if isinstance(v, list):
        return ("\x04arr", tuple(unordered_key(x) for x in v))
    return sort_key(v)


def _bad(code: int, msg: str) -> MongoError:
    return MongoError(code, msg)


def _type_of(v: Any) -> str:
    """mongod's name of a value's BSON type in parse errors ("double", "string", "object", ...)."""
    try:
        return bson_type_name(v)
    except (TypeError, KeyError):
        return type(v).__name__


def _compile(schema: Mapping, *, top: bool = False) -> CompiledSchema:
    for key in schema:
        if key not in _KEYWORDS:
            if key in _UNSUPPORTED:
                raise _bad(ErrorCode.FailedToParse, f"$jsonSchema keyword '{key}' is not currently supported")
            raise _bad(ErrorCode.FailedToParse, f"Unknown $jsonSchema keyword: {key}")
    for key in ("description", "title"):
        if key in schema and type(schema[key]) is not str:
            raise _bad(ErrorCode.TypeMismatch, f"$jsonSchema keyword '{key}' must be of type string")
    if "type" in schema and "bsonType" in schema:
        raise _bad(ErrorCode.FailedToParse, "Cannot specify both $jsonSchema keywords 'type' and 'bsonType'")
    for key in ("type", "bsonType"):
        if key in schema and "encrypt" in schema:
            raise _bad(ErrorCode.FailedToParse,
                       f"$jsonSchema keyword 'encrypt' cannot be used in conjunction with '{key}', "
                       "'encrypt' implies type 'bsonType::BinData'")

    checks: list[CompiledSchema] = []
    type_check: CompiledSchema | None = None
    if "type" in schema:
        type_check = _type_set_check(schema["type"], "type", _JSON_TYPES)
    elif "bsonType" in schema:
        type_check = _type_set_check(schema["bsonType"], "bsonType", TYPE_ALIASES)
    _scalar_checks(schema, checks, top)
    _array_checks(schema, checks)
    _encrypt_checks(schema, checks)
    _object_checks(schema, checks)
    _logic_checks(schema, checks)
    if type_check is not None:
        checks.insert(0, type_check)  # the cheapest test first
    if not checks:
        return lambda v: True
    if len(checks) == 1:
        return checks[0]
    checks_t = tuple(checks)
    return lambda v: all(c(v) for c in checks_t)


# --------------------------------------------------------------------------------------------------
# types and numbers
# --------------------------------------------------------------------------------------------------

def _type_set(raw: Any, key: str, aliases: Mapping[str, int | str]) -> tuple[bool, frozenset[int]]:
    """mongod's parseTypeSet: (matches all numbers, BSON type numbers)."""
    if type(raw) is str:
        names = [raw]
    elif isinstance(raw, list):
        names = []
        for name in raw:
            if type(name) is not str:
                raise _bad(ErrorCode.TypeMismatch, f"$jsonSchema keyword '{key}' array elements must be strings")
            if name == "integer":
                raise _bad(ErrorCode.FailedToParse, "$jsonSchema type 'integer' is not currently supported.")
            if name in names:
                raise _bad(ErrorCode.FailedToParse, f"$jsonSchema keyword '{key}' has duplicate value: {name}")
            names.append(name)
    else:
        raise _bad(ErrorCode.TypeMismatch,
                   f"$jsonSchema keyword '{key}' must be either a string or an array of strings")
    if names == ["integer"]:
        raise _bad(ErrorCode.FailedToParse, "$jsonSchema type 'integer' is not currently supported.")
    all_numbers = False
    numbers: set[int] = set()
    for name in sorted(names):  # mongod walks a sorted set: the first unknown alias in that order
        if name not in aliases:
            raise _bad(ErrorCode.BadValue, f"Unknown type name alias: {name}")
        t = aliases[name]
        if t == "number":
            all_numbers = True
        else:
            numbers.add(int(t))
    if not all_numbers and not numbers:
        raise _bad(ErrorCode.FailedToParse, f"$jsonSchema keyword '{key}' must name at least one type")
    return all_numbers, frozenset(numbers)


def _type_set_check(raw: Any, key: str, aliases: Mapping[str, int | str]) -> CompiledSchema:
    all_numbers, numbers = _type_set(raw, key, aliases)

    def type_ok(v: Any) -> bool:
        if all_numbers and is_number(v):
            return True
        try:
            return bson_type_number(v) in numbers
        except TypeError:
            return False

    return type_ok


def _non_negative_long(key: str, v: Any) -> int:
    """mongod's parseIntegerElementToNonNegativeLong (minLength, maxItems, minProperties ...)."""
    shown = f"{key}: {bson_repr(v)}"
    if not is_number(v):
        raise _bad(ErrorCode.FailedToParse, f"Expected a number in: {shown}")
    if isinstance(v, float):
        if math.isinf(v) or (v == v and not -_INT64_LIMIT <= v < _INT64_LIMIT):
            raise _bad(ErrorCode.FailedToParse, f"Cannot represent as a 64-bit integer: {shown}")
        if v != v or v != math.floor(v):
            raise _bad(ErrorCode.FailedToParse, f"Expected an integer: {shown}")
        n = int(v)
    elif isinstance(v, Decimal128):
        d = v.to_decimal()
        if not d.is_finite() or not -_INT64_LIMIT <= d < _INT64_LIMIT:
            raise _bad(ErrorCode.FailedToParse, f"Cannot represent as a 64-bit integer: {shown}")
        if d != d.to_integral_value():
            raise _bad(ErrorCode.FailedToParse, f"Expected an integer: {shown}")
        n = int(d)
    else:
        n = int(v)
    if n < 0:
        # BSONElement::parseIntegerElementToNonNegativeLong's text
        raise _bad(ErrorCode.FailedToParse, f"Expected a positive number in: {shown}")
    return n


def _as_decimal(v: Any) -> decimal.Decimal:
    """A number as mongod's numberDecimal(): doubles rounded to 15 significant digits."""
    if isinstance(v, Decimal128):
        return v.to_decimal()
    if isinstance(v, float):
        return decimal.Decimal(format(v, ".15g")) if math.isfinite(v) else decimal.Decimal(repr(v))
    return decimal.Decimal(int(v))


def _multiple_of_check(divisor: decimal.Decimal) -> CompiledSchema:
    """$_internalSchemaFmod(divisor, 0): the decimal remainder of a number is zero (exact here)."""
    exact = Fraction(divisor) if divisor.is_finite() else None

    def multiple_ok(v: Any) -> bool:
        if not is_number(v):
            return True
        d = _as_decimal(v)
        if not d.is_finite():
            return False  # NaN and +-inf leave a NaN remainder
        if exact is None:  # x mod inf = x; NaN divisor leaves NaN
            return not divisor.is_nan() and d == 0
        return (Fraction(d) / exact).denominator == 1

    return multiple_ok


def _scalar_checks(schema: Mapping, checks: list, top: bool) -> None:
    if "pattern" in schema:
        pattern = schema["pattern"]
        if type(pattern) is not str:
            raise _bad(ErrorCode.TypeMismatch, "$jsonSchema keyword 'pattern' must be a string")
        if not top:  # mongod compiles no regex where the keyword cannot apply (the document is an object)
            rx = compile_regex(pattern, "")
            checks.append(lambda v: type(v) is not str or matches(rx, v))
    for key, op in (("maxLength", int.__le__), ("minLength", int.__ge__)):
        if key in schema:
            n = _non_negative_long(key, schema[key])
            # BSON strings count UTF-8 code points, which is what len() of a str counts
            checks.append(lambda v, n=n, op=op: type(v) is not str or op(len(v), n))
    if "multipleOf" in schema:
        m = schema["multipleOf"]
        if not is_number(m):
            raise _bad(ErrorCode.TypeMismatch, "$jsonSchema keyword 'multipleOf' must be a number")
        divisor = _as_decimal(m)
        if divisor.is_signed() or divisor.is_zero():
            raise _bad(ErrorCode.FailedToParse, "$jsonSchema keyword 'multipleOf' must have a positive value")
        checks.append(_multiple_of_check(divisor))
    for key, excl_key, sign in (("maximum", "exclusiveMaximum", -1), ("minimum", "exclusiveMinimum", 1)):
        if key not in schema:
            if excl_key in schema:
                raise _bad(ErrorCode.FailedToParse,
                           f"$jsonSchema keyword '{key}' must be a present if {excl_key} is present")
            continue
        exclusive = schema.get(excl_key, False)
        if not isinstance(exclusive, bool):
            raise _bad(ErrorCode.TypeMismatch, f"$jsonSchema keyword '{excl_key}' must be a boolean")
        bound = schema[key]
        if not is_number(bound):
            raise _bad(ErrorCode.TypeMismatch, f"$jsonSchema keyword '{key}' must be a number")
        checks.append(_bound_check(bound, sign, exclusive))


def _bound_check(bound: Any, sign: int, exclusive: bool) -> CompiledSchema:
    def in_bound(v: Any) -> bool:
        if not is_number(v):
            return True
        c = compare(v, bound) * sign  # > 0: on the allowed side
        return c > 0 if exclusive else c >= 0

    return in_bound


# --------------------------------------------------------------------------------------------------
# arrays and encryption
# --------------------------------------------------------------------------------------------------

def _array_checks(schema: Mapping, checks: list) -> None:
    for key, op in (("minItems", int.__ge__), ("maxItems", int.__le__)):
        if key in schema:
            n = _non_negative_long(key, schema[key])
            checks.append(lambda v, n=n, op=op: not isinstance(v, list) or op(len(v), n))
    if "uniqueItems" in schema:
        unique = schema["uniqueItems"]
        if not isinstance(unique, bool):
            raise _bad(ErrorCode.TypeMismatch, "$jsonSchema keyword 'uniqueItems' must be a boolean")
        if unique:

            def unique_ok(v: Any) -> bool:
                if not isinstance(v, list):
                    return True
                seen = set()
                for x in v:
                    k = unordered_key(x)
                    if k in seen:
                        return False
                    seen.add(k)
                return True

            checks.append(unique_ok)
    tuple_len: int | None = None  # where additionalItems starts: only when items is an array
    if "items" in schema:
        items = schema["items"]
        if isinstance(items, list):
            subs = []
            for sub in items:
                if not isinstance(sub, Mapping):
                    raise _bad(ErrorCode.TypeMismatch, "$jsonSchema keyword 'items' requires that each element "
                               f"of the array is an object, but found a {_type_of(sub)}")
                subs.append(_compile(sub))
            tuple_checks = tuple(subs)
            tuple_len = len(tuple_checks)
            checks.append(lambda v: not isinstance(v, list) or all(
                c(x) for c, x in zip(tuple_checks, v, strict=False)))
        elif isinstance(items, Mapping):
            each = _compile(items)
            checks.append(lambda v: not isinstance(v, list) or all(each(x) for x in v))
        else:
            raise _bad(ErrorCode.TypeMismatch,
                       f"$jsonSchema keyword 'items' must be an array or an object, not {_type_of(items)}")
    if "additionalItems" in schema:
        extra = schema["additionalItems"]
        if isinstance(extra, bool):
            extra_check: CompiledSchema | None = None if extra else (lambda x: False)
        elif isinstance(extra, Mapping):
            extra_check = _compile(extra)
        else:
            raise _bad(ErrorCode.TypeMismatch, "$jsonSchema keyword 'additionalItems' must be either an object "
                       f"or a boolean, but got a {_type_of(extra)}")
        if extra_check is not None and tuple_len is not None:
            start, rest_check = tuple_len, extra_check
            checks.append(lambda v: not isinstance(v, list) or all(rest_check(x) for x in v[start:]))


def _idl_fields(value: Mapping, name: str, allowed: frozenset[str]) -> None:
    for field in value:
        if field not in allowed:
            raise _bad(ErrorCode.IDLUnknownField, f"BSON field '{name}.{field}' is an unknown field.")
    algorithm = value.get("algorithm")
    if algorithm is not None:
        if type(algorithm) is not str:
            raise _bad(ErrorCode.TypeMismatch, f"BSON field '{name}.algorithm' is the wrong type "
                       f"'{_type_of(algorithm)}', expected type 'string'")
        if algorithm not in _ENCRYPT_ALGORITHMS:
            raise _bad(ErrorCode.BadValue,
                       f"Enumeration value '{algorithm}' for field '{name}.algorithm' is not a valid value.")
    key_id = value.get("keyId")
    if key_id is not None and type(key_id) is not str and not isinstance(key_id, list):
        raise _bad(ErrorCode.TypeMismatch, f"BSON field '{name}.keyId' is the wrong type "
                   f"'{_type_of(key_id)}', expected types '[string, array]'")


def _encrypt_checks(schema: Mapping, checks: list) -> None:
    if ("encrypt" in schema or "encryptMetadata" in schema) and not _ENCRYPT_ALLOWED.get():
        raise _bad(ErrorCode.QueryFeatureNotAllowed,
                   "Encryption-related validator keywords are not allowed in this context")
    if "encrypt" in schema and "encryptMetadata" in schema:
        raise _bad(ErrorCode.FailedToParse,
                   "Cannot specify both $jsonSchema keywords 'encrypt' and 'encryptMetadata'")
    if "encryptMetadata" in schema:
        meta = schema["encryptMetadata"]
        if not isinstance(meta, Mapping):
            raise _bad(ErrorCode.TypeMismatch, "$jsonSchema keyword 'encryptMetadata' must be an object ")
        if not meta:
            raise _bad(ErrorCode.FailedToParse, "$jsonSchema keyword 'encryptMetadata' cannot be an empty object ")
        _idl_fields(meta, "encryptMetadata", frozenset({"algorithm", "keyId"}))
    if "encrypt" not in schema:
        return
    info = schema["encrypt"]
    if not isinstance(info, Mapping):
        raise _bad(ErrorCode.TypeMismatch, "$jsonSchema keyword 'encrypt' must be an object ")
    _idl_fields(info, "encrypt", frozenset({"algorithm", "bsonType", "keyId"}))
    checks.append(lambda v: isinstance(v, Binary) and v.subtype == _ENCRYPT_SUBTYPE)
    if "bsonType" in info:
        _, types = _type_set(info["bsonType"], "bsonType", TYPE_ALIASES)

        def original_type_ok(v: Any) -> bool:
            # the blob's header names the encrypted value's BSON type (byte 17 after subtype and key id)
            data = bytes(v)
            return len(data) >= 18 and data[0] in _FLE1_BLOB_SUBTYPES and data[17] in types

        checks.append(original_type_ok)


# --------------------------------------------------------------------------------------------------
# objects
# --------------------------------------------------------------------------------------------------

def _required(schema: Mapping) -> list[str]:
    req = schema["required"]
    if not isinstance(req, list):
        raise _bad(ErrorCode.TypeMismatch, "$jsonSchema keyword 'required' must be an array, but found an "
                   f"element of type {_type_of(req)}")
    for name in req:
        if type(name) is not str:
            raise _bad(ErrorCode.TypeMismatch, "$jsonSchema keyword 'required' must be an array of strings, but "
                       f"found an element of type: {_type_of(name)}")
    if not req:
        raise _bad(ErrorCode.FailedToParse, "$jsonSchema keyword 'required' cannot be an empty array")
    if len(set(req)) != len(req):
        raise _bad(ErrorCode.FailedToParse, "$jsonSchema keyword 'required' array cannot contain duplicate values")
    return req


def _object_checks(schema: Mapping, checks: list) -> None:
    req = _required(schema) if "required" in schema else []
    props: dict[str, CompiledSchema] = {}
    if "properties" in schema:
        raw_props = schema["properties"]
        if not isinstance(raw_props, Mapping):
            raise _bad(ErrorCode.TypeMismatch, "$jsonSchema keyword 'properties' must be an object")
        for name, sub in raw_props.items():
            if not isinstance(sub, Mapping):
                raise _bad(ErrorCode.TypeMismatch, f"Nested schema for $jsonSchema property '{name}' must be an object")
            props[name] = _compile(sub)
        prop_items = tuple(props.items())

        def props_ok(v: Any) -> bool:
            if not isinstance(v, Mapping):
                return True
            for k, check in prop_items:
                if k in v and not check(v[k]):
                    return False
            return True

        checks.append(props_ok)
    if "patternProperties" in schema or "additionalProperties" in schema:
        checks.append(_allowed_properties(schema, frozenset(props)))
    if req:
        req_t = tuple(req)
        checks.append(lambda v: not isinstance(v, Mapping) or all(r in v for r in req_t))
    for key, op in (("minProperties", int.__ge__), ("maxProperties", int.__le__)):
        if key in schema:
            n = _non_negative_long(key, schema[key])
            checks.append(lambda v, n=n, op=op: not isinstance(v, Mapping) or op(len(v), n))
    if "dependencies" in schema:
        _dependencies(schema["dependencies"], checks)


def _allowed_properties(schema: Mapping, named: frozenset[str]) -> CompiledSchema:
    """patternProperties and additionalProperties: each field matching a pattern satisfies that
    pattern's schema; a field neither named in properties nor matching a pattern satisfies
    additionalProperties."""
    patterns: list[tuple[Any, CompiledSchema]] = []
    if "patternProperties" in schema:
        raw = schema["patternProperties"]
        if not isinstance(raw, Mapping):
            raise _bad(ErrorCode.TypeMismatch, "$jsonSchema keyword 'patternProperties' must be an object")
        for pattern, sub in raw.items():
            if not isinstance(sub, Mapping):
                raise _bad(ErrorCode.TypeMismatch, f"$jsonSchema keyword 'patternProperties' has property "
                           f"'{pattern}' which is not an object")
            patterns.append((compile_regex(pattern, ""), _compile(sub)))
    extra_check: CompiledSchema | None = None
    if "additionalProperties" in schema:
        extra = schema["additionalProperties"]
        if isinstance(extra, bool):
            extra_check = None if extra else (lambda x: False)
        elif isinstance(extra, Mapping):
            extra_check = _compile(extra)
        else:
            raise _bad(ErrorCode.TypeMismatch,
                       "$jsonSchema keyword 'additionalProperties' must be an object or a boolean")
    patterns_t = tuple(patterns)

    def allowed_ok(v: Any) -> bool:
        if not isinstance(v, Mapping):
            return True
        for k, x in v.items():
            matched = False
            for rx, check in patterns_t:
                if matches(rx, k):
                    matched = True
                    if not check(x):
                        return False
            if not matched and extra_check is not None and k not in named and not extra_check(x):
                return False
        return True

    return allowed_ok


def _dependencies(deps: Any, checks: list) -> None:
    if not isinstance(deps, Mapping):
        raise _bad(ErrorCode.TypeMismatch, "$jsonSchema keyword 'dependencies' must be an object")
    for field, dep in deps.items():
        where = "in $jsonSchema keyword 'dependencies'"
        if isinstance(dep, Mapping):
            sub = _compile(dep)
            checks.append(lambda v, f=field, sub=sub: not isinstance(v, Mapping) or f not in v or sub(v))
        elif isinstance(dep, list):
            if not dep:
                raise _bad(ErrorCode.FailedToParse, f"property '{field}' {where} cannot be an empty array")
            names: list[str] = []
            for name in dep:
                if type(name) is not str:
                    raise _bad(ErrorCode.TypeMismatch, f"array '{field}' {where} can only contain strings, but "
                               f"found element of type: {_type_of(name)}")
                if name in names:
                    raise _bad(ErrorCode.FailedToParse, f"array '{field}' {where} contains duplicate element: {name}")
                names.append(name)
            names_t = tuple(names)
            checks.append(lambda v, f=field, names_t=names_t: (
                not isinstance(v, Mapping) or f not in v or all(n in v for n in names_t)))
        else:
            raise _bad(ErrorCode.TypeMismatch, f"property '{field}' {where} must be either an object or an array")


# --------------------------------------------------------------------------------------------------
# logical keywords and enum
# --------------------------------------------------------------------------------------------------

def _schema_list(schema: Mapping, key: str) -> tuple[CompiledSchema, ...]:
    subs = schema[key]
    if not isinstance(subs, list):
        raise _bad(ErrorCode.TypeMismatch, f"$jsonSchema keyword '{key}' must be an array")
    if not subs:
        raise _bad(ErrorCode.BadValue, f"$jsonSchema keyword '{key}' must be a non-empty array")
    out = []
    for sub in subs:
        if not isinstance(sub, Mapping):
            raise _bad(ErrorCode.TypeMismatch, f"$jsonSchema keyword '{key}' must be an array of objects, but "
                       f"found an element of type {_type_of(sub)}")
        out.append(_compile(sub))
    return tuple(out)


def _logic_checks(schema: Mapping, checks: list) -> None:
    if "allOf" in schema:
        subs_all = _schema_list(schema, "allOf")
        checks.append(lambda v: all(s(v) for s in subs_all))
    if "anyOf" in schema:
        subs_any = _schema_list(schema, "anyOf")
        checks.append(lambda v: any(s(v) for s in subs_any))
    if "oneOf" in schema:
        subs_one = _schema_list(schema, "oneOf")
        checks.append(lambda v: sum(1 for s in subs_one if s(v)) == 1)
    if "not" in schema:
        negated = schema["not"]
        if not isinstance(negated, Mapping):
            raise _bad(ErrorCode.TypeMismatch, "$jsonSchema keyword 'not' must be an object, but found an element "
                       f"of type {_type_of(negated)}")
        neg = _compile(negated)
        checks.append(lambda v: not neg(v))
    if "enum" in schema:
        members = schema["enum"]
        if not isinstance(members, list):
            raise _bad(ErrorCode.TypeMismatch, "$jsonSchema keyword 'enum' must be an array, but found an element "
                       f"of type {_type_of(members)}")
        if not members:
            raise _bad(ErrorCode.FailedToParse, "$jsonSchema keyword 'enum' cannot be an empty array")
        keys = set()
        for m in members:
            k = unordered_key(m)
            if k in keys:
                raise _bad(ErrorCode.FailedToParse, "$jsonSchema keyword 'enum' array cannot contain duplicate values.")
            keys.add(k)
        frozen = frozenset(keys)
        # membership by identity key: numbers of any type compare by value, documents ignore field order
        checks.append(lambda v: unordered_key(v) in frozen)

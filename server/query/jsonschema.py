"""``$jsonSchema``: the MongoDB subset of JSON Schema draft 4, compiled once into a validator.

Used as a query operator (``{$jsonSchema: {...}}``) and by collection validators:
``compiled = compile_schema(schema)`` (raises MongoError for invalid schemas) then
``validate(compiled, doc) -> bool``; the caller raises 121 DocumentValidationFailure, whose
``errInfo.details`` is ``explain_schema(compiled, doc)``: the rules the document fails, as mongod's
doc_validation_error reports them (each keyword is one rule: its check and its explanation together).

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

The keywords are rules (``jsonschema_rules``: a check and its explanation); the object keywords are
built in ``jsonschema_objects``. Parsing follows mongod's JSON Schema parser step for step (keyword names, then description/title,
type/bsonType/encrypt conflicts, the type set, scalar, array, encryption, object and logical keywords),
so that a schema with several faults reports the fault mongod reports, with its code and message.
"""

from __future__ import annotations

import contextlib
import contextvars
import decimal
import math
from collections.abc import Iterator, Mapping
from fractions import Fraction
from typing import Any

from bson import Decimal128
from bson.binary import Binary

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query.jsonschema_objects import object_checks
from tidemark.query.jsonschema_rules import (
    Check,
    Explain,
    Restriction,
    Rule,
    Schema,
    bad,
    failure,
    non_negative_long,
    schema_annotations,
    size_check,
    type_of,
    unordered_key,
)
from tidemark.query.match_regex import compile_regex, matches
from tidemark.query.validation_detail import DetailContext, considered, entry, type_names
from tidemark.query.values import TYPE_ALIASES, bson_type_number, compare, is_number

CompiledSchema = Schema
_NUMBER_TYPES = frozenset({1, 16, 18, 19})

__all__ = ["compile_schema", "validate", "explain_schema", "CompiledSchema", "Schema", "unordered_key",
           "encrypt_keywords_refused"]

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


def explain_schema(compiled: CompiledSchema, schema: Mapping, doc: Mapping, ctx: DetailContext) -> dict:
    """The details of a document ``compiled`` refuses: ``{operatorName: "$jsonSchema", title?,
    description?, schemaRulesNotSatisfied: [...]}`` (a top-level type without "object" matches nothing:
    mongod reports the whole schema as always false)."""
    if compiled.always_false:
        out = {"operatorName": "$jsonSchema"}
        ctx.specified(out, {"$jsonSchema": schema})
        out["reason"] = "expression always evaluates to false"
        return out
    return {"operatorName": "$jsonSchema", **compiled.annotations,
            "schemaRulesNotSatisfied": compiled.explain(doc, ctx)}


def _compile(schema: Mapping, *, top: bool = False) -> CompiledSchema:
    for key in schema:
        if key not in _KEYWORDS:
            if key in _UNSUPPORTED:
                raise bad(ErrorCode.FailedToParse, f"$jsonSchema keyword '{key}' is not currently supported")
            raise bad(ErrorCode.FailedToParse, f"Unknown $jsonSchema keyword: {key}")
    for key in ("description", "title"):
        if key in schema and type(schema[key]) is not str:
            raise bad(ErrorCode.TypeMismatch, f"$jsonSchema keyword '{key}' must be of type string")
    if "type" in schema and "bsonType" in schema:
        raise bad(ErrorCode.FailedToParse, "Cannot specify both $jsonSchema keywords 'type' and 'bsonType'")
    for key in ("type", "bsonType"):
        if key in schema and "encrypt" in schema:
            raise bad(ErrorCode.FailedToParse,
                       f"$jsonSchema keyword 'encrypt' cannot be used in conjunction with '{key}', "
                       "'encrypt' implies type 'bsonType::BinData'")

    rules: list[Rule] = []
    type_rule: Rule | None = None
    stated: Restriction = None  # a single stated type: keywords about other types are dropped (mongod)
    if "type" in schema or "bsonType" in schema:
        key = "type" if "type" in schema else "bsonType"
        all_numbers, numbers = _type_set(schema[key], key, _JSON_TYPES if key == "type" else TYPE_ALIASES)
        if top:
            if 3 not in numbers:  # only documents are stored: the whole schema matches nothing
                return Schema([], None, schema_annotations(schema), always_false=True)
        else:
            type_rule = _type_rule(key, schema[key], all_numbers, numbers)
        if all_numbers and not numbers:
            stated = "number"
        elif not all_numbers and len(numbers) == 1:
            stated = next(iter(numbers))
    elif "encrypt" in schema:
        stated = 5  # 'encrypt' implies BinData
    _scalar_checks(schema, rules, top)
    _array_checks(schema, rules)
    _encrypt_checks(schema, rules)
    object_checks(schema, rules, _compile)
    _logic_checks(schema, rules, top)
    if stated is not None:
        rules = [r for r in rules if r.restriction is None or r.restriction == stated
                 or (r.restriction == "number" and (stated == "number" or stated in _NUMBER_TYPES))]
    if type_rule is not None:
        rules.append(type_rule)
    return Schema(rules, type_rule, schema_annotations(schema))


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
                raise bad(ErrorCode.TypeMismatch, f"$jsonSchema keyword '{key}' array elements must be strings")
            if name == "integer":
                raise bad(ErrorCode.FailedToParse, "$jsonSchema type 'integer' is not currently supported.")
            if name in names:
                raise bad(ErrorCode.FailedToParse, f"$jsonSchema keyword '{key}' has duplicate value: {name}")
            names.append(name)
    else:
        raise bad(ErrorCode.TypeMismatch,
                   f"$jsonSchema keyword '{key}' must be either a string or an array of strings")
    if names == ["integer"]:
        raise bad(ErrorCode.FailedToParse, "$jsonSchema type 'integer' is not currently supported.")
    all_numbers = False
    numbers: set[int] = set()
    for name in sorted(names):  # mongod walks a sorted set: the first unknown alias in that order
        if name not in aliases:
            raise bad(ErrorCode.BadValue, f"Unknown type name alias: {name}")
        t = aliases[name]
        if t == "number":
            all_numbers = True
        else:
            numbers.add(int(t))
    if not all_numbers and not numbers:
        raise bad(ErrorCode.FailedToParse, f"$jsonSchema keyword '{key}' must name at least one type")
    return all_numbers, frozenset(numbers)


def _type_rule(key: str, raw: Any, all_numbers: bool, numbers: frozenset[int]) -> Rule:
    def type_ok(v: Any) -> bool:
        if all_numbers and is_number(v):
            return True
        try:
            return bson_type_number(v) in numbers
        except TypeError:
            return False

    def explain(v: Any, ctx: DetailContext) -> list:
        out = entry(key, {key: raw}, ctx)
        out["reason"] = "type did not match"
        considered(out, [v], False, ctx)
        type_names(out, "consideredType", [v])
        return [out]

    return Rule(type_ok, explain)


def _as_decimal(v: Any) -> decimal.Decimal:
    """A number as mongod's numberDecimal(): doubles rounded to 15 significant digits."""
    if isinstance(v, Decimal128):
        return v.to_decimal()
    if isinstance(v, float):
        return decimal.Decimal(format(v, ".15g")) if math.isfinite(v) else decimal.Decimal(repr(v))
    return decimal.Decimal(int(v))


def _multiple_of_check(divisor: decimal.Decimal) -> Check:
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


def _scalar_checks(schema: Mapping, rules: list, top: bool) -> None:
    if "pattern" in schema:
        pattern = schema["pattern"]
        if type(pattern) is not str:
            raise bad(ErrorCode.TypeMismatch, "$jsonSchema keyword 'pattern' must be a string")
        if not top:  # mongod compiles no regex where the keyword cannot apply (the document is an object)
            rx = compile_regex(pattern, "")
            rules.append(Rule(lambda v: type(v) is not str or matches(rx, v),
                              failure("pattern", {"pattern": pattern}, "regular expression did not match"), 2))
    for key, op in (("maxLength", int.__le__), ("minLength", int.__ge__)):
        if key in schema:
            n = non_negative_long(key, schema[key])
            # BSON strings count UTF-8 code points, which is what len() of a str counts
            rules.append(Rule(size_check(str, op, n),
                              failure(key, {key: schema[key]}, "specified string length was not satisfied"), 2))
    if "multipleOf" in schema:
        m = schema["multipleOf"]
        if not is_number(m):
            raise bad(ErrorCode.TypeMismatch, "$jsonSchema keyword 'multipleOf' must be a number")
        divisor = _as_decimal(m)
        if divisor.is_signed() or divisor.is_zero():
            raise bad(ErrorCode.FailedToParse, "$jsonSchema keyword 'multipleOf' must have a positive value")
        rules.append(Rule(_multiple_of_check(divisor), failure(
            "multipleOf", {"multipleOf": m}, "considered value is not a multiple of the specified value"), "number"))
    for key, excl_key, sign in (("maximum", "exclusiveMaximum", -1), ("minimum", "exclusiveMinimum", 1)):
        if key not in schema:
            if excl_key in schema:
                raise bad(ErrorCode.FailedToParse,
                           f"$jsonSchema keyword '{key}' must be a present if {excl_key} is present")
            continue
        exclusive = schema.get(excl_key, False)
        if not isinstance(exclusive, bool):
            raise bad(ErrorCode.TypeMismatch, f"$jsonSchema keyword '{excl_key}' must be a boolean")
        bound = schema[key]
        if not is_number(bound):
            raise bad(ErrorCode.TypeMismatch, f"$jsonSchema keyword '{key}' must be a number")
        spec = {key: bound, excl_key: True} if exclusive else {key: bound}
        rules.append(Rule(_bound_check(bound, sign, exclusive), failure(key, spec, "comparison failed"), "number"))


def _bound_check(bound: Any, sign: int, exclusive: bool) -> Check:
    def in_bound(v: Any) -> bool:
        if not is_number(v):
            return True
        c = compare(v, bound) * sign  # > 0: on the allowed side
        return c > 0 if exclusive else c >= 0

    return in_bound


# --------------------------------------------------------------------------------------------------
# arrays and encryption
# --------------------------------------------------------------------------------------------------

def _array_checks(schema: Mapping, rules: list) -> None:
    for key, op in (("minItems", int.__ge__), ("maxItems", int.__le__)):
        if key in schema:
            n = non_negative_long(key, schema[key])

            def items_explain(v: Any, ctx: DetailContext, key: str = key) -> list:
                out = entry(key, {key: schema[key]}, ctx)
                out["reason"] = "array did not match specified length"
                out["consideredValue"] = v
                out["numberOfItems"] = len(v)
                return [out]

            rules.append(Rule(size_check(list, op, n), items_explain, 4))
    if "uniqueItems" in schema:
        unique = schema["uniqueItems"]
        if not isinstance(unique, bool):
            raise bad(ErrorCode.TypeMismatch, "$jsonSchema keyword 'uniqueItems' must be a boolean")
        if unique:
            rules.append(Rule(lambda v: not isinstance(v, list) or _first_duplicate(v) is None, _unique_explain, 4))
    tuple_len: int | None = None  # where additionalItems starts: only when items is an array
    if "items" in schema:
        items = schema["items"]
        if isinstance(items, list):
            subs = []
            for sub in items:
                if not isinstance(sub, Mapping):
                    raise bad(ErrorCode.TypeMismatch, "$jsonSchema keyword 'items' requires that each element "
                               f"of the array is an object, but found a {type_of(sub)}")
                subs.append(_compile(sub))
            tuple_checks = tuple(subs)
            tuple_len = len(tuple_checks)

            def tuple_explain(v: Any, ctx: DetailContext) -> list:
                failed = [{"itemIndex": i, "details": c.explain(x, ctx)}
                          for i, (c, x) in enumerate(zip(tuple_checks, v, strict=False)) if not c(x)]
                return [{"operatorName": "items", "details": failed}]

            rules.append(Rule(lambda v: not isinstance(v, list) or all(
                c(x) for c, x in zip(tuple_checks, v, strict=False)), tuple_explain, 4))
        elif isinstance(items, Mapping):
            each = _compile(items)
            rules.append(Rule(lambda v: not isinstance(v, list) or all(each(x) for x in v),
                              _items_explain("items", each, 0, "At least one item did not match the sub-schema"), 4))
        else:
            raise bad(ErrorCode.TypeMismatch,
                       f"$jsonSchema keyword 'items' must be an array or an object, not {type_of(items)}")
    if "additionalItems" in schema:
        extra = schema["additionalItems"]
        if isinstance(extra, bool):
            extra_check: Schema | None = None
        elif isinstance(extra, Mapping):
            extra_check = _compile(extra)
        else:
            raise bad(ErrorCode.TypeMismatch, "$jsonSchema keyword 'additionalItems' must be either an object "
                       f"or a boolean, but got a {type_of(extra)}")
        if tuple_len is not None and extra is not True:
            start = tuple_len
            if extra_check is None:  # additionalItems: false

                def no_extra_explain(v: Any, ctx: DetailContext) -> list:
                    out = entry("additionalItems", {"additionalItems": False}, ctx)
                    out["reason"] = "found additional items"
                    out["additionalItems"] = v[start:]
                    return [out]

                rules.append(Rule(lambda v: not isinstance(v, list) or len(v) <= start, no_extra_explain, 4))
            else:
                rest_check = extra_check
                rules.append(Rule(lambda v: not isinstance(v, list) or all(rest_check(x) for x in v[start:]),
                                  _items_explain("additionalItems", rest_check, start,
                                                 "At least one additional item did not match the sub-schema"), 4))


def _first_duplicate(v: list) -> Any:
    """The first element equal (documents ignoring field order) to an earlier one; None if none (a
    duplicated null is reported as the list [None] to tell it from no duplicate)."""
    seen = set()
    for x in v:
        k = unordered_key(x)
        if k in seen:
            return [x]
        seen.add(k)
    return None


def _unique_explain(v: Any, ctx: DetailContext) -> list:
    out = entry("uniqueItems", {"uniqueItems": True}, ctx)
    out["reason"] = "found a duplicate item"
    out["consideredValue"] = v
    out["duplicatedValue"] = _first_duplicate(v)[0]
    return [out]


def _items_explain(name: str, sub: Schema, start: int, reason: str) -> Explain:
    """items: {schema} / additionalItems: {schema}: the first element (from ``start``) the subschema
    refuses, with the subschema's own failures."""

    def explain(v: Any, ctx: DetailContext) -> list:
        index = next(i for i in range(start, len(v)) if not sub(v[i]))
        return [{"operatorName": name, **sub.annotations, "reason": reason, "itemIndex": index,
                 "details": sub.explain(v[index], ctx)}]

    return explain


def _idl_fields(value: Mapping, name: str, allowed: frozenset[str]) -> None:
    for field in value:
        if field not in allowed:
            raise bad(ErrorCode.IDLUnknownField, f"BSON field '{name}.{field}' is an unknown field.")
    algorithm = value.get("algorithm")
    if algorithm is not None:
        if type(algorithm) is not str:
            raise bad(ErrorCode.TypeMismatch, f"BSON field '{name}.algorithm' is the wrong type "
                       f"'{type_of(algorithm)}', expected type 'string'")
        if algorithm not in _ENCRYPT_ALGORITHMS:
            raise bad(ErrorCode.BadValue,
                       f"Enumeration value '{algorithm}' for field '{name}.algorithm' is not a valid value.")
    key_id = value.get("keyId")
    if key_id is not None and type(key_id) is not str and not isinstance(key_id, list):
        raise bad(ErrorCode.TypeMismatch, f"BSON field '{name}.keyId' is the wrong type "
                   f"'{type_of(key_id)}', expected types '[string, array]'")


def _encrypt_checks(schema: Mapping, rules: list) -> None:
    if ("encrypt" in schema or "encryptMetadata" in schema) and not _ENCRYPT_ALLOWED.get():
        raise bad(ErrorCode.QueryFeatureNotAllowed,
                   "Encryption-related validator keywords are not allowed in this context")
    if "encrypt" in schema and "encryptMetadata" in schema:
        raise bad(ErrorCode.FailedToParse,
                   "Cannot specify both $jsonSchema keywords 'encrypt' and 'encryptMetadata'")
    if "encryptMetadata" in schema:
        meta = schema["encryptMetadata"]
        if not isinstance(meta, Mapping):
            raise bad(ErrorCode.TypeMismatch, "$jsonSchema keyword 'encryptMetadata' must be an object ")
        if not meta:
            raise bad(ErrorCode.FailedToParse, "$jsonSchema keyword 'encryptMetadata' cannot be an empty object ")
        _idl_fields(meta, "encryptMetadata", frozenset({"algorithm", "keyId"}))
    if "encrypt" not in schema:
        return
    info = schema["encrypt"]
    if not isinstance(info, Mapping):
        raise bad(ErrorCode.TypeMismatch, "$jsonSchema keyword 'encrypt' must be an object ")
    _idl_fields(info, "encrypt", frozenset({"algorithm", "bsonType", "keyId"}))

    def encrypted(v: Any) -> bool:
        return isinstance(v, Binary) and v.subtype == _ENCRYPT_SUBTYPE

    rules.append(Rule(encrypted, lambda v, ctx: [{"operatorName": "encrypt", "reason": "value was not encrypted"}]))
    if "bsonType" in info:
        _, types = _type_set(info["bsonType"], "bsonType", TYPE_ALIASES)

        def original_type_ok(v: Any) -> bool:
            if not encrypted(v):
                return True  # (the rule above refuses it)
            # the blob's header names the encrypted value's BSON type (byte 17 after subtype and key id)
            data = bytes(v)
            return len(data) >= 18 and data[0] in _FLE1_BLOB_SUBTYPES and data[17] in types

        rules.append(Rule(original_type_ok, lambda v, ctx: [
            {"operatorName": "encrypt", "reason": "encrypted value has wrong type"}]))


# --------------------------------------------------------------------------------------------------
# logical keywords and enum
# --------------------------------------------------------------------------------------------------

def _schema_list(schema: Mapping, key: str) -> tuple[Schema, ...]:
    subs = schema[key]
    if not isinstance(subs, list):
        raise bad(ErrorCode.TypeMismatch, f"$jsonSchema keyword '{key}' must be an array")
    if not subs:
        raise bad(ErrorCode.BadValue, f"$jsonSchema keyword '{key}' must be a non-empty array")
    out = []
    for sub in subs:
        if not isinstance(sub, Mapping):
            raise bad(ErrorCode.TypeMismatch, f"$jsonSchema keyword '{key}' must be an array of objects, but "
                       f"found an element of type {type_of(sub)}")
        out.append(_compile(sub))
    return tuple(out)


def _subschema_failures(key: str, subs: tuple[Schema, ...], indexes: Iterator[int] | range, v: Any,
                        ctx: DetailContext) -> list:
    return [{"operatorName": key, "schemasNotSatisfied": [
        {"index": i, **subs[i].annotations, "details": subs[i].explain(v, ctx)} for i in indexes]}]


def _logic_checks(schema: Mapping, rules: list, top: bool) -> None:
    if "allOf" in schema:
        subs_all = _schema_list(schema, "allOf")
        rules.append(Rule(lambda v: all(s(v) for s in subs_all), lambda v, ctx: _subschema_failures(
            "allOf", subs_all, (i for i, s in enumerate(subs_all) if not s(v)), v, ctx)))
    if "anyOf" in schema:
        subs_any = _schema_list(schema, "anyOf")
        rules.append(Rule(lambda v: any(s(v) for s in subs_any), lambda v, ctx: _subschema_failures(
            "anyOf", subs_any, range(len(subs_any)), v, ctx)))
    if "oneOf" in schema:
        subs_one = _schema_list(schema, "oneOf")

        def one_explain(v: Any, ctx: DetailContext) -> list:
            matching = [i for i, s in enumerate(subs_one) if s(v)]
            if matching:
                return [{"operatorName": "oneOf", "reason": "more than one subschema matched",
                         "matchingSchemaIndexes": matching}]
            return _subschema_failures("oneOf", subs_one, range(len(subs_one)), v, ctx)

        rules.append(Rule(lambda v: sum(1 for s in subs_one if s(v)) == 1, one_explain))
    if "not" in schema:
        negated = schema["not"]
        if not isinstance(negated, Mapping):
            raise bad(ErrorCode.TypeMismatch, "$jsonSchema keyword 'not' must be an object, but found an element "
                       f"of type {type_of(negated)}")
        neg = _compile(negated)
        # (mongod does not say why the negated schema matched)
        rules.append(Rule(lambda v: not neg(v), lambda v, ctx: [{"operatorName": "not",
                                                                  "reason": "child expression matched"}]))
    if "enum" in schema:
        members = schema["enum"]
        if not isinstance(members, list):
            raise bad(ErrorCode.TypeMismatch, "$jsonSchema keyword 'enum' must be an array, but found an element "
                       f"of type {type_of(members)}")
        if not members:
            raise bad(ErrorCode.FailedToParse, "$jsonSchema keyword 'enum' cannot be an empty array")
        keys = set()
        for m in members:
            k = unordered_key(m)
            if k in keys:
                raise bad(ErrorCode.FailedToParse, "$jsonSchema keyword 'enum' array cannot contain duplicate values.")
            keys.add(k)
        frozen = frozenset(keys)
        # at the top level only documents can equal the (stored) document: without one, always false
        never = top and not any(isinstance(m, Mapping) for m in members)

        def enum_explain(v: Any, ctx: DetailContext) -> list:
            out = entry("enum", {"enum": members}, ctx)
            if never:
                out["reason"] = "expression always evaluates to false"
            else:
                out["reason"] = "value was not found in enum"
                considered(out, [v], False, ctx)
            return [out]

        # membership by identity key: numbers of any type compare by value, documents ignore field order
        rules.append(Rule(lambda v: unordered_key(v) in frozen, enum_explain))

"""Object expressions: $mergeObjects $getField $setField $unsetField $objectToArray $arrayToObject
$bsonSize."""

from __future__ import annotations

from typing import Any

from tidemark.protocol.codec import encode
from tidemark.protocol.errors import MongoError
from tidemark.query.expr_base import args_list, check_arity, nullish, type_name
from tidemark.query.value_repr import bson_repr
from tidemark.query.values import MISSING


def merge_objects(values) -> dict:
    """Later fields win; null/missing operands are skipped (40400 for non-objects)."""
    out: dict = {}
    for v in values:
        if nullish(v):
            continue
        if type(v) is not dict:
            raise MongoError(40400, f"$mergeObjects requires object inputs, but input {bson_repr(v)} is of type "
                                   f"{type_name(v)}")
        out.update(v)
    return out


def compile_merge_objects(args, cc):
    fns = [cc(x) for x in args_list(args)]
    return lambda doc, vars: merge_objects(f(doc, vars) for f in fns)


def _constant_field(name: str, operand: Any, cc, codes: tuple[int, int, int]) -> str:
    """The 'field' of $getField/$setField/$unsetField: mongod parses it as an expression operand and
    requires a constant string. ``codes`` are that operator's (field path, not a constant, not a
    string) codes; a sub-expression's own parse errors come first, as its parse runs first."""
    path_code, not_constant_code, not_string_code = codes
    if type(operand) is str and operand.startswith("$"):
        cc(operand)  # an undefined variable or a bad path fails as it would anywhere
        path = operand[len("$$CURRENT."):] if operand.startswith("$$CURRENT.") else operand[1:]
        raise MongoError(path_code, f"'{path}' is a field path reference which is not allowed in this context. "
                                    f"Did you mean {{$literal: '{path}'}}?")
    if type(operand) is dict and len(operand) == 1 and next(iter(operand)) in ("$literal", "$const"):
        value = next(iter(operand.values()))
    elif type(operand) is dict or type(operand) is list:
        cc(operand)
        raise MongoError(not_constant_code, f"{name} requires 'field' to evaluate to a constant, but got a "
                                            "non-constant argument")
    else:
        value = operand
    if type(value) is not str:
        raise MongoError(not_string_code, f"{name} requires 'field' to evaluate to type String, but got "
                                          f"{type_name(value)}")
    return value


def compile_get_field(args, cc):
    """mongod's ExpressionGetField::parse: an object whose first field starts with '$' is itself the
    'field' expression (the short form, reading $$CURRENT), as is any non-object argument; 'field'
    must be a constant string (5.0-7.1; 7.2 accepts any expression)."""
    field_operand: Any = MISSING
    input_operand: Any = MISSING
    if type(args) is dict:
        for key, value in args.items():
            if field_operand is MISSING and input_operand is MISSING and key.startswith("$"):
                field_operand, input_operand = args, "$$CURRENT"
                break
            if key == "field":
                field_operand = value
            elif key == "input":
                input_operand = value
            else:
                raise MongoError(3041701, f"$getField found an unknown argument: {key}")
    else:
        field_operand, input_operand = args, "$$CURRENT"
    if field_operand is MISSING:
        raise MongoError(3041702, "$getField requires 'field' to be specified")
    # an omitted input is $$CURRENT, as MongoDB documents it for 5.0 to 8.0 (an older revision of
    # expression_get_field.js expected 3041703 here)
    inp = cc("$$CURRENT" if input_operand is MISSING else input_operand)
    field = _constant_field("$getField", field_operand, cc, (5654600, 5654601, 5654602))

    def get_field(doc, vars):
        v = inp(doc, vars)
        if nullish(v):
            return MISSING if v is MISSING else None
        if type(v) is not dict:
            return MISSING
        return v.get(field, MISSING)
    return get_field


def compile_set_field(args, cc, unset=False):
    """mongod's ExpressionSetField::parse ($unsetField is $setField with a $$REMOVE value): the
    arguments in order (4161101 for an unknown one), then field, value, input present, then the
    field a constant string."""
    name = "$unsetField" if unset else "$setField"
    if type(args) is not dict:
        raise MongoError(4161100, f"{name} only supports an object as its argument")
    allowed = ("field", "input") if unset else ("field", "input", "value")
    for key in args:
        if key not in allowed:
            raise MongoError(4161101, f"{name} found an unknown argument: {key}")
    if "field" not in args:
        raise MongoError(4161102, f"{name} requires 'field' to be specified")
    if not unset and "value" not in args:
        raise MongoError(4161103, f"{name} requires 'value' to be specified")
    if "input" not in args:
        raise MongoError(4161109, f"{name} requires 'input' to be specified")
    inp = cc(args["input"])
    val: Any = None if unset else cc(args["value"])
    field = _constant_field(name, args["field"], cc, (4161108, 4161106, 4161107))

    def set_field(doc, vars):
        obj = inp(doc, vars)
        if nullish(obj):
            return None
        if type(obj) is not dict:
            raise MongoError(4161105, "$setField requires 'input' to evaluate to type Object")
        out = dict(obj)  # an existing field keeps its position, a new one goes last
        v = MISSING if unset else val(doc, vars)
        if v is MISSING:
            out.pop(field, None)
        else:
            out[field] = v
        return out
    return set_field


def compile_object_to_array(args, cc):
    (a,) = (cc(x) for x in check_arity("$objectToArray", args, 1))

    def object_to_array(doc, vars):
        v = a(doc, vars)
        if nullish(v):
            return None
        if type(v) is not dict:
            raise MongoError(40390, f"$objectToArray requires a document input, found: {type_name(v)}")
        return [{"k": k, "v": x} for k, x in v.items()]
    return object_to_array


def compile_array_to_object(args, cc):
    (a,) = (cc(x) for x in check_arity("$arrayToObject", args, 1))
    return lambda doc, vars: array_to_object(a(doc, vars))


def array_to_object(v: Any) -> Any:
    """mongod's $arrayToObject: the first element fixes the format ([k, v] pairs or {k, v}
    documents), every element is checked against it in order, a repeated key keeps its first
    position and its last value."""
    if nullish(v):
        return None
    if type(v) is not list:
        raise MongoError(40386, f"$arrayToObject requires an array input, found: {type_name(v)}")
    out: dict = {}
    if not v:
        return out
    if type(v[0]) is list:
        pairs = True
    elif type(v[0]) is dict:
        pairs = False
    else:
        raise MongoError(40398, f"Unrecognised input type format for $arrayToObject: {type_name(v[0])}")
    for el in v:
        if pairs:
            if type(el) is not list:
                raise MongoError(40396, "$arrayToObject requires a consistent input format. Elements must all be "
                                        f"arrays or all be objects. Array was detected, now found: {type_name(el)}")
            if len(el) != 2:
                raise MongoError(40397, "$arrayToObject requires an array of size 2 arrays,found array of size: "
                                        f"{len(el)}")
            k, x = el
            if type(k) is not str:
                raise MongoError(40395, "$arrayToObject requires an array of key-value pairs, where the key must be "
                                        f"of type string. Found key type: {type_name(k)}")
            if "\0" in k:
                raise MongoError(4940400, "Key field cannot contain an embedded null byte")
        else:
            if type(el) is not dict:
                raise MongoError(40391, "$arrayToObject requires a consistent input format. Elements must all be "
                                        f"arrays or all be objects. Object was detected, now found: {type_name(el)}")
            if len(el) != 2:
                raise MongoError(40392, "$arrayToObject requires an object keys of 'k' and 'v'. "
                                        f"Found incorrect number of keys:{len(el)}")
            if "k" not in el or "v" not in el:
                raise MongoError(40393, "$arrayToObject requires an object with keys 'k' and 'v'. Missing either or "
                                        f"both keys from: {bson_repr(el)}")
            k, x = el["k"], el["v"]
            if type(k) is not str:
                raise MongoError(40394, "$arrayToObject requires an object with keys 'k' and 'v', where the value of "
                                        f"'k' must be of type string. Found type: {type_name(k)}")
            if "\0" in k:
                raise MongoError(4940401, "Key field cannot contain an embedded null byte")
        out[k] = x
    return out


def compile_bson_size(args, cc):
    """``$bsonSize``: the BSON size (int32) of a document; null for nullish, 31393 for anything else
    (mongod's ExpressionBsonSize). The size of a document does not depend on its field order, so the
    plain encoder serves."""
    (a,) = (cc(x) for x in check_arity("$bsonSize", args, 1))

    def bson_size(doc, vars):
        v = a(doc, vars)
        if nullish(v):
            return None
        if type(v) is not dict:
            raise MongoError(31393, f"$bsonSize requires a document input, found: {type_name(v)}")
        return len(encode(v))
    return bson_size


OPERATORS = {
    "$bsonSize": compile_bson_size,
    "$mergeObjects": compile_merge_objects,
    "$getField": compile_get_field,
    "$setField": compile_set_field,
    "$unsetField": lambda args, cc: compile_set_field(args, cc, unset=True),
    "$objectToArray": compile_object_to_array,
    "$arrayToObject": compile_array_to_object,
}

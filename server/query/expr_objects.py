"""Object expressions: $mergeObjects $getField $setField $unsetField $objectToArray $arrayToObject."""

from __future__ import annotations

from typing import Any

from tidemark.protocol.errors import MongoError
from tidemark.query.expr_base import args_list, check_arity, nullish, require_object, type_name
from tidemark.query.values import MISSING


def merge_objects(values) -> dict:
    """Later fields win; null/missing operands are skipped (40400 for non-objects)."""
    out: dict = {}
    for v in values:
        if nullish(v):
            continue
        if type(v) is not dict:
            raise MongoError(40400, f"$mergeObjects requires object inputs, but input {v!r} is of type {type_name(v)}")
        out.update(v)
    return out


def compile_merge_objects(args, cc):
    fns = [cc(x) for x in args_list(args)]
    return lambda doc, vars: merge_objects(f(doc, vars) for f in fns)


def _field_name(name, spec, cc):
    field = spec["field"]
    if isinstance(field, dict) and set(field) == {"$literal"}:
        field = field["$literal"]
    if type(field) is not str:
        raise MongoError(5654601 if name == "$getField" else 4161106,
                         f"{name} requires 'field' to evaluate to type String, but got {type_name(field)}")
    return field


def compile_get_field(args, cc):
    if not isinstance(args, dict):
        args = {"field": args, "input": "$$CURRENT"}
    spec = require_object("$getField", args, {"field", "input"}, ("field",))
    field = _field_name("$getField", spec, cc)
    inp = cc(spec.get("input", "$$CURRENT"))

    def get_field(doc, vars):
        v = inp(doc, vars)
        if nullish(v):
            return MISSING if v is MISSING else None
        if type(v) is not dict:
            return MISSING
        return v.get(field, MISSING)
    return get_field


def compile_set_field(args, cc, unset=False):
    name = "$unsetField" if unset else "$setField"
    allowed = {"field", "input"} if unset else {"field", "input", "value"}
    spec = require_object(name, args, allowed, ("field", "input") if unset else ("field", "input", "value"))
    field = _field_name(name, spec, cc)
    inp = cc(spec["input"])
    val: Any = None if unset else cc(spec["value"])

    def set_field(doc, vars):
        obj = inp(doc, vars)
        if nullish(obj):
            return None
        if type(obj) is not dict:
            raise MongoError(4161105, f"{name} requires 'input' to evaluate to type Object")
        out = dict(obj)
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

    def array_to_object(doc, vars):
        v = a(doc, vars)
        if nullish(v):
            return None
        if type(v) is not list:
            raise MongoError(40386, f"$arrayToObject requires an array input, found: {type_name(v)}")
        out: dict = {}
        if not v:
            return out
        pairs = type(v[0]) is list
        for el in v:
            if pairs:
                if type(el) is not list or len(el) != 2:
                    raise MongoError(40397 if type(el) is not list else 40397,
                                     "$arrayToObject requires an array of size 2 arrays,found array of size: "
                                     f"{len(el) if type(el) is list else 0}")
                k, x = el
            else:
                if type(el) is not dict or set(el) != {"k", "v"}:
                    raise MongoError(40392, "$arrayToObject requires an object keys of 'k' and 'v'. "
                                            f"Found incorrect number of keys:{len(el) if type(el) is dict else 0}")
                k, x = el["k"], el["v"]
            if type(k) is not str:
                raise MongoError(40394 if not pairs else 40395,
                                 f"$arrayToObject requires an object with keys 'k' and 'v', where the value of 'k' "
                                 f"must be of type string. Found type: {type_name(k)}")
            if "\0" in k:
                raise MongoError(4940400, "Key field cannot contain an embedded null byte")
            out[k] = x
        return out
    return array_to_object


OPERATORS = {
    "$mergeObjects": compile_merge_objects,
    "$getField": compile_get_field,
    "$setField": compile_set_field,
    "$unsetField": lambda args, cc: compile_set_field(args, cc, unset=True),
    "$objectToArray": compile_object_to_array,
    "$arrayToObject": compile_array_to_object,
}

"""The ``$jsonSchema`` object keywords (properties, patternProperties/additionalProperties, required,
minProperties/maxProperties, dependencies) as rules, in the order mongod's parser adds them; a keyword
holding subschemas compiles them with the ``compile_sub`` it is given (``jsonschema._compile``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from tidemark.protocol.errors import ErrorCode
from tidemark.query.jsonschema_rules import (
    Rule,
    Schema,
    bad,
    non_negative_long,
    schema_annotations,
    size_check,
    type_of,
)
from tidemark.query.match_regex import compile_regex, matches
from tidemark.query.validation_detail import DetailContext, entry

__all__ = ["object_checks"]

CompileSub = Callable[[Mapping], Schema]


def _required(schema: Mapping) -> list[str]:
    req = schema["required"]
    if not isinstance(req, list):
        raise bad(ErrorCode.TypeMismatch, "$jsonSchema keyword 'required' must be an array, but found an "
                   f"element of type {type_of(req)}")
    for name in req:
        if type(name) is not str:
            raise bad(ErrorCode.TypeMismatch, "$jsonSchema keyword 'required' must be an array of strings, but "
                       f"found an element of type: {type_of(name)}")
    if not req:
        raise bad(ErrorCode.FailedToParse, "$jsonSchema keyword 'required' cannot be an empty array")
    if len(set(req)) != len(req):
        raise bad(ErrorCode.FailedToParse, "$jsonSchema keyword 'required' array cannot contain duplicate values")
    return req


def object_checks(schema: Mapping, rules: list, compile_sub: CompileSub) -> None:
    req = _required(schema) if "required" in schema else []
    props: dict[str, Schema] = {}
    if "properties" in schema:
        raw_props = schema["properties"]
        if not isinstance(raw_props, Mapping):
            raise bad(ErrorCode.TypeMismatch, "$jsonSchema keyword 'properties' must be an object")
        for name, sub in raw_props.items():
            if not isinstance(sub, Mapping):
                raise bad(ErrorCode.TypeMismatch, f"Nested schema for $jsonSchema property '{name}' must be an object")
            props[name] = compile_sub(sub)
        prop_items = tuple(props.items())

        def props_ok(v: Any) -> bool:
            if not isinstance(v, Mapping):
                return True
            for k, check in prop_items:
                if k in v and not check(v[k]):
                    return False
            return True

        def props_explain(v: Any, ctx: DetailContext) -> list:
            failed = []
            for k, check in prop_items:
                if k in v and not check(v[k]):
                    details = check.explain(v[k], ctx)
                    if details:  # (a property whose failures explain nothing is left out, as in mongod)
                        failed.append({"propertyName": k, **check.annotations, "details": details})
            return [{"operatorName": "properties", "propertiesNotSatisfied": failed}] if failed else []

        rules.append(Rule(props_ok, props_explain, 3))
    if "patternProperties" in schema or "additionalProperties" in schema:
        rules.append(_allowed_properties(schema, frozenset(props), compile_sub))
    if req:
        req_t = tuple(req)

        def required_explain(v: Any, ctx: DetailContext) -> list:
            out = entry("required", {"required": req}, ctx)
            out["missingProperties"] = sorted(r for r in req_t if r not in v)
            return [out]

        rules.append(Rule(lambda v: not isinstance(v, Mapping) or all(r in v for r in req_t), required_explain, 3))
    for key, op in (("minProperties", int.__ge__), ("maxProperties", int.__le__)):
        if key in schema:
            n = non_negative_long(key, schema[key])

            def count_explain(v: Any, ctx: DetailContext, key: str = key) -> list:
                out = entry(key, {key: schema[key]}, ctx)
                out["reason"] = "specified number of properties was not satisfied"
                out["numberOfProperties"] = len(v)
                return [out]

            rules.append(Rule(size_check(Mapping, op, n), count_explain, 3))
    if "dependencies" in schema:
        rules.append(_dependencies(schema["dependencies"], compile_sub))


def _allowed_properties(schema: Mapping, named: frozenset[str], compile_sub: CompileSub) -> Rule:
    """patternProperties and additionalProperties: each field matching a pattern satisfies that
    pattern's schema; a field neither named in properties nor matching a pattern satisfies
    additionalProperties."""
    patterns: list[tuple[str, Any, Schema]] = []
    if "patternProperties" in schema:
        raw = schema["patternProperties"]
        if not isinstance(raw, Mapping):
            raise bad(ErrorCode.TypeMismatch, "$jsonSchema keyword 'patternProperties' must be an object")
        for pattern, sub in raw.items():
            if not isinstance(sub, Mapping):
                raise bad(ErrorCode.TypeMismatch, f"$jsonSchema keyword 'patternProperties' has property "
                           f"'{pattern}' which is not an object")
            patterns.append((pattern, compile_regex(pattern, ""), compile_sub(sub)))
    extra: Any = True
    extra_check: Schema | None = None
    if "additionalProperties" in schema:
        extra = schema["additionalProperties"]
        if isinstance(extra, Mapping):
            extra_check = compile_sub(extra)
        elif not isinstance(extra, bool):
            raise bad(ErrorCode.TypeMismatch,
                       "$jsonSchema keyword 'additionalProperties' must be an object or a boolean")
    patterns_t = tuple(patterns)

    def extra_ok(x: Any) -> bool:
        return extra is not False and (extra_check is None or extra_check(x))

    def additional(v: Mapping) -> list[str]:
        return [k for k in v if k not in named and not any(matches(rx, k) for _, rx, _ in patterns_t)]

    def allowed_ok(v: Any) -> bool:
        if not isinstance(v, Mapping):
            return True
        for k, x in v.items():
            matched = False
            for _, rx, check in patterns_t:
                if matches(rx, k):
                    matched = True
                    if not check(x):
                        return False
            if not matched and extra is not True and k not in named and not extra_ok(x):
                return False
        return True

    def allowed_explain(v: Any, ctx: DetailContext) -> list:
        out: list[dict] = []
        extras = additional(v)
        if extra is False and extras:
            out.append({"operatorName": "additionalProperties", "specifiedAs": {"additionalProperties": False},
                        "additionalProperties": extras})
        elif extra_check is not None:
            failing = next((k for k in extras if not extra_check(v[k])), None)
            if failing is not None:
                out.append({"operatorName": "additionalProperties", **extra_check.annotations,
                            "reason": "at least one additional property did not match the subschema",
                            "failingProperty": failing, "details": extra_check.explain(v[failing], ctx)})
        by_pattern = []
        for raw_pattern, rx, check in patterns_t:
            failing = next((k for k in v if matches(rx, k) and not check(v[k])), None)
            if failing is not None:
                by_pattern.append({"propertyName": failing, **check.annotations, "regexMatched": raw_pattern,
                                   "details": check.explain(v[failing], ctx)})
        if by_pattern:
            out.append({"operatorName": "patternProperties", "details": by_pattern})
        return out

    return Rule(allowed_ok, allowed_explain, 3)


def _dependencies(deps: Any, compile_sub: CompileSub) -> Rule:
    if not isinstance(deps, Mapping):
        raise bad(ErrorCode.TypeMismatch, "$jsonSchema keyword 'dependencies' must be an object")
    # (field, subschema) or (field, property names): each applies where the document has the field
    each: list[tuple[str, Schema | tuple[str, ...]]] = []
    for field, dep in deps.items():
        where = "in $jsonSchema keyword 'dependencies'"
        if isinstance(dep, Mapping):
            each.append((field, compile_sub(dep)))
        elif isinstance(dep, list):
            if not dep:
                raise bad(ErrorCode.FailedToParse, f"property '{field}' {where} cannot be an empty array")
            names: list[str] = []
            for name in dep:
                if type(name) is not str:
                    raise bad(ErrorCode.TypeMismatch, f"array '{field}' {where} can only contain strings, but "
                               f"found element of type: {type_of(name)}")
                if name in names:
                    raise bad(ErrorCode.FailedToParse, f"array '{field}' {where} contains duplicate element: {name}")
                names.append(name)
            each.append((field, tuple(names)))
        else:
            raise bad(ErrorCode.TypeMismatch, f"property '{field}' {where} must be either an object or an array")
    each_t = tuple(each)

    def satisfied(v: Mapping, field: str, dep: Schema | tuple[str, ...]) -> bool:
        if field not in v:
            return True
        return dep(v) if isinstance(dep, Schema) else all(n in v for n in dep)

    def explain(v: Any, ctx: DetailContext) -> list:
        failing: list[dict] = []
        for field, dep in each_t:
            if satisfied(v, field, dep):
                continue
            if isinstance(dep, Schema):
                failing.append({"conditionalProperty": field, "details": dep.explain(v, ctx)})
            else:
                failing.append({"conditionalProperty": field, "missingProperties": [n for n in dep if n not in v]})
        return [{"operatorName": "dependencies", **schema_annotations(deps), "failingDependencies": failing}]

    return Rule(lambda v: not isinstance(v, Mapping) or all(satisfied(v, f, d) for f, d in each_t), explain)

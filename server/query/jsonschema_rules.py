"""The pieces every ``$jsonSchema`` keyword is built from: a ``Rule`` (its check and, where the check
fails, its explanation), a compiled ``Schema`` (a subschema's rules in mongod's order), and the parse
helpers the keyword modules share (``jsonschema`` compiles, ``jsonschema_objects`` builds the object
keywords)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from bson import Decimal128

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query.validation_detail import DetailContext, considered, entry
from tidemark.query.value_repr import bson_repr
from tidemark.query.values import bson_type_name, is_number, sort_key

__all__ = ["Check", "Explain", "Restriction", "Rule", "Schema", "unordered_key", "bad", "type_of",
           "schema_annotations", "failure", "size_check", "non_negative_long"]

_INT64_LIMIT = 2 ** 63

Check = Callable[[Any], bool]
# A failed rule's details: the value it failed on and the detail context -> its entries (mongod's order)
Explain = Callable[[Any, DetailContext], list]
# what a rule constrains: a BSON type number, "number", or None (every value)
Restriction = int | str | None


class Rule:
    """One keyword of a (sub)schema: ``check(v)`` and, where it fails, ``explain(v, ctx)``."""

    __slots__ = ("check", "explain", "restriction")

    def __init__(self, check: Check, explain: Explain, restriction: Restriction = None):
        self.check = check
        self.explain = explain
        self.restriction = restriction


class Schema:
    """A compiled (sub)schema: ``schema(v)`` is whether ``v`` satisfies it; ``explain(v, ctx)`` lists the
    rules ``v`` fails, in the order mongod's parser builds them (the type keyword last).

    ``always_false``: a top-level schema whose type excludes objects (nothing stored can match)."""

    __slots__ = ("rules", "checks", "annotations", "always_false")

    def __init__(self, rules: list[Rule], first: Rule | None, annotations: dict, always_false: bool = False):
        self.rules = tuple(rules)
        # the type test runs first when matching (the cheapest), last when explaining (mongod's order)
        self.checks = tuple(([first.check] if first is not None else []) + [r.check for r in rules if r is not first])
        self.annotations = annotations
        self.always_false = always_false

    def __call__(self, v: Any) -> bool:
        if self.always_false:
            return False
        for check in self.checks:
            if not check(v):
                return False
        return True

    def explain(self, v: Any, ctx: DetailContext) -> list:
        out: list = []
        for rule in self.rules:
            if not rule.check(v):
                out.extend(rule.explain(v, ctx))
        return out



def schema_annotations(schema: Mapping) -> dict:
    """A schema's title and description, which mongod repeats in the details of its failures."""
    return {k: schema[k] for k in ("title", "description") if k in schema}


def unordered_key(v: Any) -> Any:
    """A hashable identity of ``v`` under BSON equality where embedded documents compare ignoring
    field order (mongod's UnorderedFieldsBSONElementComparator: ``enum``, ``uniqueItems``)."""
    if isinstance(v, Mapping):
        return ("\x03doc", tuple(sorted((k, unordered_key(x)) for k, x in v.items())))
    if isinstance(v, list):
        return ("\x04arr", tuple(unordered_key(x) for x in v))
    return sort_key(v)


def bad(code: int, msg: str) -> MongoError:
    return MongoError(code, msg)


def type_of(v: Any) -> str:
    """mongod's name of a value's BSON type in parse errors ("double", "string", "object", ...)."""
    try:
        return bson_type_name(v)
    except (TypeError, KeyError):
        return type(v).__name__


def failure(name: str, spec: dict, reason: str) -> Explain:
    """A keyword failing on the value at its path: operatorName, specifiedAs, reason, consideredValue."""

    def explain(v: Any, ctx: DetailContext) -> list:
        out = entry(name, spec, ctx)
        out["reason"] = reason
        considered(out, [v], False, ctx)
        return [out]

    return explain


def size_check(kind: type[Any], op: Callable[[int, int], bool], n: int) -> Check:
    """minLength/maxLength, minItems/maxItems, minProperties/maxProperties: the size of a value of
    their kind (a str counts code points, as BSON strings count them)."""

    def size_ok(v: Any) -> bool:
        return not isinstance(v, kind) or op(len(v), n)

    return size_ok


def non_negative_long(key: str, v: Any) -> int:
    """mongod's parseIntegerElementToNonNegativeLong (minLength, maxItems, minProperties ...)."""
    shown = f"{key}: {bson_repr(v)}"
    if not is_number(v):
        raise bad(ErrorCode.FailedToParse, f"Expected a number in: {shown}")
    if isinstance(v, float):
        if math.isinf(v) or (v == v and not -_INT64_LIMIT <= v < _INT64_LIMIT):
            raise bad(ErrorCode.FailedToParse, f"Cannot represent as a 64-bit integer: {shown}")
        if v != v or v != math.floor(v):
            raise bad(ErrorCode.FailedToParse, f"Expected an integer: {shown}")
        n = int(v)
    elif isinstance(v, Decimal128):
        d = v.to_decimal()
        if not d.is_finite() or not -_INT64_LIMIT <= d < _INT64_LIMIT:
            raise bad(ErrorCode.FailedToParse, f"Cannot represent as a 64-bit integer: {shown}")
        if d != d.to_integral_value():
            raise bad(ErrorCode.FailedToParse, f"Expected an integer: {shown}")
        n = int(d)
    else:
        n = int(v)
    if n < 0:
        # BSONElement::parseIntegerElementToNonNegativeLong's text
        raise bad(ErrorCode.FailedToParse, f"Expected a positive number in: {shown}")
    return n

"""The filter AST: small frozen dataclasses that ``parse_filter`` produces and ``compile_node`` runs.

Every path-bearing node carries the full dotted ``path`` it applies to; a condition on a value itself
(the children of a value-form ``$elemMatch``: the array element; the regexes of ``$in``/``$all``;
``parse_value_condition``) has the path ``VALUE_PATH``, which no document field can have: a field
named ``""`` is a field like any other (``{"": 1}`` matches ``{"": 1}``, as in mongod). The tree is
meant to be rewritten (the time-series layer renames paths and derives bucket bounds from
``Cmp`` nodes on the time field): use ``dataclasses.replace`` and rebuild parents.

Normal forms the parser guarantees (so rewriters see few shapes):
- ``$ne: v`` is ``Not(Cmp(path, "$eq", v))``; ``$nin`` is ``Not(In(...))``;
  ``$exists: false`` is ``Not(Exists(path))``.
- ``{a: /re/}`` and ``{a: {$regex: ...}}`` are ``Regex``; ``{a: {$not: {...}}}`` is ``Not(And(...))``.
- ``$all: [x, y]`` is ``All(path, (x, y))``; ``$all: []`` is ``AlwaysFalse()``.
- An object with several conditions is an ``And``; an ``And``/``Or`` with one child is the child;
  an empty filter is ``AlwaysTrue()``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# (NUL never occurs in a BSON field name)
VALUE_PATH = "\x00"

__all__ = [
    "VALUE_PATH",
    "Node",
    "And",
    "Or",
    "Nor",
    "Not",
    "Cmp",
    "InternalExprCmp",
    "In",
    "Exists",
    "Type",
    "Regex",
    "ElemMatch",
    "Size",
    "All",
    "Mod",
    "Bits",
    "Expr",
    "JsonSchema",
    "AlwaysTrue",
    "AlwaysFalse",
    "Geo",
    "GeoNear",
    "Text",
    "COMPARISON_OPS",
]

COMPARISON_OPS = ("$eq", "$gt", "$gte", "$lt", "$lte")


class Node:
    """Base class of all filter nodes."""

    __slots__ = ()


@dataclass(frozen=True)
class And(Node):
    children: tuple[Node, ...]


@dataclass(frozen=True)
class Or(Node):
    children: tuple[Node, ...]


@dataclass(frozen=True)
class Nor(Node):
    children: tuple[Node, ...]


@dataclass(frozen=True)
class Not(Node):
    child: Node


@dataclass(frozen=True)
class Cmp(Node):
    """``path op value`` with op in $eq/$gt/$gte/$lt/$lte (BSON order, type-bracketed)."""

    path: str
    op: str
    value: Any


@dataclass(frozen=True)
class InternalExprCmp(Node):
    """``path op value`` with op in $_internalExprEq/Gt/Gte/Lt/Lte: mongod's comparisons without type
    bracketing (BSON order across types, as ``$expr`` compares), a leaf array compared whole, a missing
    value below every value. mongod writes its time-series bucket filters with them."""

    path: str
    op: str
    value: Any


@dataclass(frozen=True)
class In(Node):
    """``path $in values``; ``regexes`` are the regex members as ``Regex`` nodes (path ``""``: the
    pattern and options as given, for rewriting, and compiled)."""

    path: str
    values: tuple[Any, ...]
    regexes: tuple[Any, ...] = ()


@dataclass(frozen=True)
class Exists(Node):
    path: str


@dataclass(frozen=True)
class Type(Node):
    """``types`` holds BSON type numbers and/or the string ``"number"``."""

    path: str
    types: frozenset


@dataclass(frozen=True)
class Regex(Node):
    """``pattern``/``options`` as the user wrote them; ``compiled`` is the Python pattern."""

    path: str
    pattern: str
    options: str
    compiled: Any = None


@dataclass(frozen=True)
class ElemMatch(Node):
    """Some element of the array at ``path`` matches ``child``.

    ``value_form`` True: ``child`` tests the element itself (paths ``""``), e.g. {$elemMatch: {$gt: 1}};
    False: ``child`` is a filter over the element as a document, e.g. {$elemMatch: {x: 1}}.
    """

    path: str
    child: Node
    value_form: bool


@dataclass(frozen=True)
class Size(Node):
    path: str
    size: int


@dataclass(frozen=True)
class All(Node):
    """Every entry matches (equality, or the regex of ``Regex`` node entries, path ``""``)."""

    path: str
    values: tuple[Any, ...]


@dataclass(frozen=True)
class Mod(Node):
    path: str
    divisor: int
    remainder: int


@dataclass(frozen=True)
class Bits(Node):
    """$bitsAllSet / $bitsAnySet / $bitsAllClear / $bitsAnyClear with an integer ``mask``; ``spec`` the
    argument as given (a mask past 64 bits is no BSON value: a rendered filter repeats the argument)."""

    path: str
    op: str
    mask: int
    spec: Any = field(default=None, compare=False)


@dataclass(frozen=True)
class Expr(Node):
    """``$expr``: an aggregation expression evaluated against the whole document."""

    expr: Any


@dataclass(frozen=True)
class JsonSchema(Node):
    schema: Any


@dataclass(frozen=True)
class AlwaysTrue(Node):
    pass


@dataclass(frozen=True)
class AlwaysFalse(Node):
    pass


@dataclass(frozen=True)
class Geo(Node):
    """``$geoWithin`` / ``$geoIntersects``: ``region`` is a ``geo_query.Region``."""

    path: str
    op: str
    region: Any


@dataclass(frozen=True)
class GeoNear(Node):
    """``$near`` / ``$nearSphere``: ``near`` is a ``geo_query.NearQuery``. As a predicate it keeps the
    documents inside the distance range; the order by distance is the read plan's job."""

    path: str
    near: Any


@dataclass(frozen=True)
class Text(Node):
    """``$text`` (a ``text_search.TextQuery``). Only a text-index read (plan kind TEXT) can answer it:
    that read yields exactly the matching documents, so the predicate itself accepts every document."""

    query: Any

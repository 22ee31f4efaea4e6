"""Index choice for the special query kinds (pure; called by ``plan.choose_plan``):

- ``$text`` -> a TEXT plan on the collection's text index (27 IndexNotFound "text index required for
  $text query" without one, 291 "need exactly one text index for $text query" when it is hidden); a compound text index needs equality on its leading fields;
- ``$near`` / ``$nearSphere`` -> a GEO_NEAR plan on a geo index of that field (GeoJSON: 2dsphere;
  legacy ``$near``: 2d; legacy ``$nearSphere``: either), else 291 "unable to find index for $geoNear
  query"; the read executes it as an expanding search (``geo_near.near_scan``);
- ``$geoWithin`` / ``$geoIntersects`` on the leading field of a geo index, and equality / ``$in`` on the
  leading field of a hashed index -> an IXSCAN over the covering cells / hashes, when no
  ascending/descending index serves the filter better. Bounds are loose; the filter is re-applied.

``check_find_specials(node, sort=, hint=, tailable=)``: mongod's parse-time checks of a find's ``$text`` /
``$near`` against its sort, hint and tailable option (2 BadValue, e.g. "Tailable cursors and geo $near
cannot be used together"), which the find's parse (``collections.FindSpec``) calls.

``$text`` and ``$near`` may only appear once each, in the top-level conjunction, and not together; a
``$text`` may also sit below ``$or`` when every other branch on the way is indexed: then (for callers
that run index unions) a TEXT plan whose read is the union of the TEXT read and those branches' index
scans, each document decided by the text matcher or else by the filter with the ``$text`` false.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, cast

from bson.regex import Regex

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query.access_path import Interval, Plan
from tidemark.query.geo_keys import Plane, cells_intervals, region_intervals
from tidemark.query.geo_near import near_scan
from tidemark.query.geo_parse import Shape
from tidemark.query.geo_query import parse_intersects, parse_within
from tidemark.query.hashed import hashed_key
from tidemark.query.index_kinds import is_special, key_direction
from tidemark.query.match_ast import And, GeoNear, Node, Text
from tidemark.query.match_parse import parse_filter
from tidemark.query.text_index import index_term
from tidemark.query.text_search import TextMatcher
from tidemark.storage.keys import encode_key

NEAR_OPS = frozenset({"$near", "$nearSphere", "$geoNear"})  # $geoNear: the legacy query synonym of $near
SPECIAL_OPS = NEAR_OPS | {"$geoWithin", "$within", "$geoIntersects"}
NO_PLAN = ErrorCode.NoQueryExecutionPlans


def mentions_special(filter: dict | None) -> bool:
    """Cheap test (once per query): does the filter's top-level conjunction use $text or a geo operator,
    or is there a $text anywhere below its logical operators (which ``special_plan`` must refuse or plan)?"""
    if not filter:
        return False
    for k, v in filter.items():
        if k == "$text":
            return True
        if k == "$and" and isinstance(v, list):
            if any(isinstance(sub, dict) and mentions_special(sub) for sub in v):
                return True
        elif k in ("$or", "$nor") and isinstance(v, list):
            if any(isinstance(sub, dict) and _text_paths(sub, ()) for sub in v):
                return True
            if k == "$or" and len(v) == 1 and isinstance(v[0], dict) and mentions_special(v[0]):
                return True  # (a one-branch $or is its branch: _collapse_single_or)
        elif type(v) is dict and v and not SPECIAL_OPS.isdisjoint(v):
            return True
    return False


def _text_paths(filter: dict, path: tuple) -> list[tuple]:
    """Where the filter's $text predicates are: for each, the chain of (logical operator, its branches,
    the branch holding the $text) from the root down. Only $and / $or / $nor can hold a $text (the
    parser refuses it below $elemMatch, $not and field paths: 2 "$text can only be applied to the
    top-level document")."""
    found = []
    for k, v in filter.items():
        if k == "$text":
            found.append(path)
        elif k in ("$and", "$or", "$nor") and isinstance(v, list):
            for sub in v:
                if isinstance(sub, dict):
                    found.extend(_text_paths(sub, (*path, (k, v, sub))))
    return found


def _conjuncts(filter: dict) -> Iterator[tuple[str, Any]]:
    for k, v in filter.items():
        if k == "$and" and isinstance(v, list):
            for sub in v:
                if isinstance(sub, dict):
                    yield from _conjuncts(sub)
        else:
            yield k, v


def _nested_special(value: Any, top: bool = True) -> bool:
    """Is there a $text / $near below a logical operator (where no index can answer it)?"""
    if isinstance(value, dict):
        for k, v in value.items():
            if not top and (k == "$text" or k in NEAR_OPS):
                return True
            if k in ("$or", "$nor", "$not", "$elemMatch") or (k == "$and" and not top):
                if _nested_special(v, False):
                    return True
            elif k == "$and":
                if any(_nested_special(sub, True) for sub in v if isinstance(sub, dict)):
                    return True
            elif isinstance(v, dict) and _nested_special(v, top and not k.startswith("$")):
                return True
    elif isinstance(value, list):
        return any(_nested_special(v, False) for v in value)
    return False


_TEXT_UNDER_OR = ("error processing query: planner returned error :: caused by :: Failed to produce a solution "
                  "for TEXT under OR - other non-TEXT clauses under OR have to be indexed as well.")
_NO_SOLUTIONS = "error processing query: planner returned error :: caused by :: No query solutions"


def _refuse_nested(filter: dict, indexes: list[dict], union: bool = False, collation: Any = None) -> Any:
    """mongod's checks of a $text / $near below a logical operator, in its order: the canonical query's
    (``CanonicalQuery::isValid``: 2 "Too many text expressions", 2 "text expression not allowed in nor",
    2 "geoNear must be top-level expr"), then the planner's for a $text below $or: every other branch of
    each $or on the way down must be indexed, else 291 (the "TEXT under OR" message when the root is
    that $or and the $text one of its branches, "No query solutions" otherwise). A $text below $or with
    every branch indexed is an index union (``_text_union``, under the query's ``collation``) when the
    caller can run one (``union``), else 224. None when there is no such $text."""
    texts = _text_paths(filter, ())
    if texts and not any("_fts" in s["key"] for s in indexes):  # mongod's parse, before these checks
        raise MongoError(ErrorCode.IndexNotFound, "text index required for $text query")
    if len(texts) > 1:
        raise MongoError(ErrorCode.BadValue, "Too many text expressions")
    if texts and any(op == "$nor" for op, _, _ in texts[0]):
        raise MongoError(ErrorCode.BadValue, "text expression not allowed in nor")
    if not _nested_special(filter):
        return None
    if not texts or all(op != "$or" for op, _, _ in texts[0]):  # the nested one is a $near
        raise MongoError(ErrorCode.BadValue, "geoNear must be top-level expr")
    return _plan_text_under_or(filter, indexes, texts[0], union, collation)


def _plan_text_under_or(filter: dict, indexes: list[dict], path: tuple, union: bool, collation: Any) -> Any:
    """The plan of a $text below $or (``path``: from ``_text_paths``): 291 when a sibling branch of an $or
    on the way down has no index (mongod cannot collection-scan a branch of a TEXT query); else the index
    union of the TEXT read and the siblings' scans, or 224 when the caller runs no union."""
    siblings = []
    for op, branches, holder in path:
        if op != "$or":
            continue
        for branch in branches:
            if branch is holder or not isinstance(branch, dict):
                continue
            sibling = _sibling_plan(indexes, branch, collation)
            if sibling is None:
                raise MongoError(ErrorCode.NoQueryExecutionPlans,
                                 _TEXT_UNDER_OR if _under_root_or(filter, path) else _NO_SOLUTIONS)
            siblings.append(sibling)
    if not union or any(sibling.kind != "IXSCAN" for sibling in siblings):
        raise MongoError(ErrorCode.QueryFeatureNotAllowed, "$text below $or is not supported by Tidemark")
    return _text_union(filter, indexes, path, siblings, collation)


def _sibling_plan(indexes: list[dict], branch: dict, collation: Any) -> Any:
    """The index scan of a $text's sibling branch (None: it has none). Besides what ``choose_plan``
    serves, a regex on the leading field of an ascending/descending index under the simple collation
    scans that whole index (mongod bounds it to strings and the regex, inexact: the filter decides)."""
    from tidemark.query import plan as planner  # plan imports this module: bind at call time

    found = planner.choose_plan(indexes, branch, collation=collation)
    if found.kind != "COLLSCAN":
        return found
    regex_paths = {k for k, v in _conjuncts(branch) if isinstance(v, (Regex, re.Pattern))
                   or (type(v) is dict and "$regex" in v)}
    for spec in indexes:
        first = next(iter(spec["key"]))
        if (first in regex_paths and not is_special(spec["key"]) and not spec.get("hidden")
                and not spec.get("sparse") and "partialFilterExpression" not in spec
                and spec.get("collation", {"locale": "simple"}).get("locale") == "simple"):
            return Plan("IXSCAN", index=spec, intervals=[Interval(None, None, True, True)],
                        bounds_desc={f: ["[MinKey, MaxKey]"] for f in spec["key"]})
    return None


def _under_root_or(filter: dict, path: tuple) -> bool:
    """Whether the $text at ``path`` is a child of the root $or of mongod's optimized tree, which drops
    one-child $ands and merges an $or into its parent $or: every document on the way holds one key."""
    if len(filter) != 1:
        return False
    for op, branches, holder in path:
        if len(holder) != 1 or op == "$nor" or (op == "$and" and len(branches) != 1):
            return False
    return any(op == "$or" for op, _, _ in path)


def _collapse_single_or(filter: dict) -> dict:
    """``filter`` with each ``$or`` of one branch (at the top or in a top-level ``$and``) read as that
    branch, as mongod's canonical query does before it looks for $text / $near: ``{$or: [{loc: {$near:
    P}}]}`` is a top-level $near."""
    single = filter.get("$or")
    collapsed = {k: v for k, v in filter.items()}
    if isinstance(single, list) and len(single) == 1 and isinstance(single[0], dict):
        del collapsed["$or"]
        collapsed["$and"] = [*collapsed.get("$and", []), single[0]]
    branches = collapsed.get("$and")
    if isinstance(branches, list):
        collapsed["$and"] = [_collapse_single_or(b) if isinstance(b, dict) else b for b in branches]
    return collapsed


def special_plan(indexes: list[dict], filter: dict, bounds: dict, union: bool = False, collation: Any = None) -> Any:
    """A TEXT or GEO_NEAR plan when the filter needs one (a $text below $or: an index union when the
    caller runs one, ``union``, under the query's ``collation``); None otherwise."""
    if "$or" in filter or "$and" in filter:
        filter = _collapse_single_or(filter)
    text = near = None
    for k, v in _conjuncts(filter):
        if k == "$text":
            if text is not None:
                raise MongoError(ErrorCode.BadValue, "Too many text expressions")
            text = v
        elif type(v) is dict and not NEAR_OPS.isdisjoint(v):
            if near is not None:
                raise MongoError(ErrorCode.BadValue, "Too many geoNear expressions")
            near = (k, v)
    if text is None and near is None:
        return _refuse_nested(filter, indexes, union, collation)
    _refuse_nested(filter, indexes)
    if text is not None and near is not None:
        raise MongoError(ErrorCode.BadValue, "text and geoNear not allowed in same query")
    if text is not None:
        # Array equalities of the conjunction: the bounds leave arrays out, but on a text index's
        # prefix field mongod takes one as the prefix key itself (an EQ predicate), which no entry has
        # (an array there fails the write: 201). Collected here, once per query.
        arrays = {k for k, v in _conjuncts(filter)
                  if type(v) is list or (type(v) is dict and type(v.get("$eq")) is list)}
        return _text_plan(indexes, cast(Text, parse_filter({"$text": text})).query, bounds, arrays)
    assert near is not None  # neither text nor near returned above
    node = parse_filter({near[0]: near[1]})
    query = next(n.near for n in (node.children if isinstance(node, And) else (node,)) if isinstance(n, GeoNear))
    return _near_plan(indexes, near[0], query, bounds)


def _count_special(node: Any) -> tuple[int, int]:
    """(the $text nodes, the $near nodes) of a parsed filter."""
    if isinstance(node, Text):
        return 1, 0
    if isinstance(node, GeoNear):
        return 0, 1
    kids = getattr(node, "children", None) or ((node.child,) if isinstance(getattr(node, "child", None), Node) else ())
    texts = nears = 0
    for kid in kids:
        t, n = _count_special(kid)
        texts, nears = texts + t, nears + n
    return texts, nears


def check_find_specials(node: Any, *, sort: dict | None = None, hint: Any = None, tailable: bool = False) -> None:
    """mongod 7.0's checks of a find's $text / $near against the find's other options, made when the
    find is parsed, before any collection or index is looked at (``parsed_find_command::
    validateAndGetAvailableMetadata``), in its order, all 2 BadValue: $near with a ``$natural`` sort or
    hint; $text with a ``$natural`` sort or any hint; a tailable find with a $text ("text and tailable
    cursor not allowed in same query") or a $near ("Tailable cursors and geo $near cannot be used
    together" — on any collection, capped or not, existing or not). The checks of the filter alone
    (how many, where, together) are ``special_plan``'s. ``node``: the parsed filter
    (``match_parse.parse_filter``); ``sort`` / ``hint``: as the command gave them (a ``$natural`` sort
    not yet turned into the hint)."""
    if node is None:
        return
    texts, nears = _count_special(node)
    if not texts and not nears:
        return
    natural_sort = isinstance(sort, dict) and "$natural" in sort
    natural_hint = isinstance(hint, dict) and "$natural" in hint
    if nears and natural_sort:
        raise MongoError(ErrorCode.BadValue, "geoNear expression not allowed with $natural sort order")
    if nears and natural_hint:
        raise MongoError(ErrorCode.BadValue, "geoNear expression not allowed with $natural hint")
    if texts and natural_sort:
        raise MongoError(ErrorCode.BadValue, "text expression not allowed with $natural sort order")
    if texts and hint not in (None, {}):
        raise MongoError(ErrorCode.BadValue, "text and hint not allowed in same query")
    if texts and tailable:
        raise MongoError(ErrorCode.BadValue, "text and tailable cursor not allowed in same query")
    if nears and tailable:
        raise MongoError(ErrorCode.BadValue, "Tailable cursors and geo $near cannot be used together")


# --------------------------------------------------------------------------------------------------
# $text
# --------------------------------------------------------------------------------------------------


class TextPlan:
    """What a TEXT read needs: the matcher and the per-term key prefixes."""

    def __init__(self, matcher: Any, prefixes: list[tuple]):
        self.matcher = matcher
        self.prefixes = prefixes

    def explain(self, plan: Plan, filter: dict | None) -> dict:
        """The winningPlan of a TEXT plan, in mongod's stage names."""
        inner = {"stage": "TEXT_OR", "inputStage": plan.ixscan_explain()}
        index = cast(dict, plan.index)  # a TEXT plan has its index
        return {"stage": "TEXT_MATCH", "indexPrefix": {}, "indexName": index["name"],
                "parsedTextQuery": {"terms": plan.bounds_desc.get("terms", [])},
                "textIndexVersion": self.matcher.spec.version,
                "inputStage": {"stage": "FETCH", "inputStage": inner}}


def _text_plan(indexes: list[dict], query: Any, bounds: dict, arrays: frozenset[str] | set[str] = frozenset()) -> Any:
    """The TEXT plan of ``query``: per positive term, one key per combination of the equality values on
    the compound index's prefix fields. ``arrays``: paths with an array equality in the conjunction
    (a prefix key no entry has: the read finds nothing, as mongod's)."""
    import itertools

    texts = [s for s in indexes if "_fts" in s["key"]]
    if not texts:  # mongod's $text parse looks for a text index in the catalog, hidden ones included
        raise MongoError(ErrorCode.IndexNotFound, "text index required for $text query")
    specs = [s for s in texts if not s.get("hidden")]
    if not specs:  # ... but the planner sees no hidden index (nor, under apiStrict, a text index at all):
        # query_planner.cpp counts the text indexes it was given before anything else
        raise MongoError(ErrorCode.NoQueryExecutionPlans, "error processing query: planner returned error :: "
                                                          "caused by :: need exactly one text index for $text query")
    spec = specs[0]
    matcher = TextMatcher(query, spec)
    before = matcher.spec.before
    prefix_values: list[Any] = []  # per prefix field, its equality values
    for field in before:
        b = bounds.get(field)
        if field in arrays:
            prefix_values.append([])  # no key: an array never is a prefix key (201 on write)
            continue
        if b is None or not b.is_point:
            # (query_planner.cpp: "the text node is tagged with zero indices", 291 since 4.4)
            raise MongoError(NO_PLAN, "error processing query: planner returned error :: caused by :: "
                                      "failed to use text index to satisfy $text query (if text index "
                                      "is compound, are equality predicates given for all prefix fields?)")
        prefix_values.append(b.points)
    directions = [key_direction(spec["key"][f]) for f in before] + [1]
    intervals = []
    for prefix in itertools.product(*prefix_values):
        for term in matcher.bound_terms:
            key = encode_key((*prefix, index_term(term)), directions)
            intervals.append(Interval(key, key, True, True))
    intervals.sort(key=lambda iv: cast(bytes, iv.lo))  # every interval here is bounded by keys
    plan = Plan("TEXT", index=spec, intervals=intervals,
                    bounds_desc={"terms": list(matcher.bound_terms)})
    plan.special = TextPlan(matcher, prefix_values)
    return plan


def _text_union(filter: dict, indexes: list[dict], path: tuple, siblings: list[Plan], collation: Any) -> Plan:
    """A $text below $or with indexed siblings: the TEXT read (bounded by the equalities of the branch
    holding the $text, the conjunction below the innermost $or) and the siblings' index scans, as
    mongod's OR plan. Their union holds every match; which of them match is decided per document:
    the text matcher, else the filter with the $text false (``_TextUnion``)."""
    holder = next(sub for op, _, sub in reversed(path) if op == "$or")
    text = next(v for k, v in _conjuncts(holder) if k == "$text")
    arrays = {k for k, v in _conjuncts(holder) if type(v) is list or (type(v) is dict and type(v.get("$eq")) is list)}
    from tidemark.query.index_bounds import extract_bounds, special_index_bounds
    from tidemark.query.match import compile_filter

    read = _text_plan(indexes, cast(Text, parse_filter({"$text": text})).query,
                      special_index_bounds(extract_bounds(holder, with_expr=False)), arrays)
    try:
        # compiled once per query; the read's own filter (with its variables) still runs after
        rest = compile_filter(_without_text(filter, path), collation=collation)
    except MongoError as error:
        if error.code != 17276:  # (an invalid filter fails here as it would in the read)
            raise
        # a let variable the planner is not given: no union then
        raise MongoError(ErrorCode.QueryFeatureNotAllowed, "$text below $or is not supported by Tidemark") from None
    plan = Plan("TEXT", index=read.index, intervals=read.intervals, bounds_desc=read.bounds_desc)
    plan.special = _TextUnion(read, siblings, rest)
    return plan


def _without_text(node: dict, path: tuple, depth: int = 0) -> dict:
    """``node`` with the $text at ``path`` read as false (``$alwaysFalse``), the rest shared."""
    if depth == len(path):
        return {**{k: v for k, v in node.items() if k != "$text"}, "$alwaysFalse": 1}
    op, branches, holder = path[depth]
    at = next(i for i, branch in enumerate(branches) if branch is holder)
    return {**node, op: [*branches[:at], _without_text(holder, path, depth + 1), *branches[at + 1:]]}


class _TextUnion:
    """An index union with a $text branch: ``read`` (the TEXT plan), ``siblings`` (IXSCAN plans) and
    ``rest`` (the filter with the $text false). The read's filter treats $text as true (the text index
    is what decides it), so a document is kept when the text matches (then scored) or ``rest`` holds."""

    def __init__(self, read: Plan, siblings: list[Plan], rest: Any):
        self.read = read
        self.siblings = siblings
        self.rest = rest

    def explain(self, plan: Plan, filter: dict | None) -> dict:
        """FETCH over an OR of the TEXT read and the siblings' index scans, in mongod's stage names."""
        inputs = [self.read.special.explain(self.read, None),
                  *({"stage": "FETCH", "inputStage": s.ixscan_explain()} for s in self.siblings)]
        node = {"stage": "OR", "inputStages": inputs}
        return {"stage": "FETCH", "filter": filter, "inputStage": node} if filter else node


def _text_union_scan(plan: Plan, scan) -> Iterator[tuple[bytes, dict]]:
    """Each record the union's scans reach, once (``scan`` shares one seen set), when it matches."""
    union = cast(_TextUnion, plan.special)
    matcher, meta, rest = union.read.special.matcher, plan.meta, union.rest
    for source in (union.read, *union.siblings):
        for rid, doc in scan(source.intervals, source.index):
            score = matcher.evaluate(doc, want_score=meta is not None)
            if score is not None:
                if meta is not None:
                    meta.set(doc, "textScore", score)
                yield rid, doc
            elif rest(doc):
                yield rid, doc


# --------------------------------------------------------------------------------------------------
# $near / $nearSphere
# --------------------------------------------------------------------------------------------------


def geo_index_for(indexes: list[dict], path: str, near: Any) -> dict | None:
    """The geo index a near query on ``path`` can use (2d preferred for legacy points)."""
    wanted = ("2dsphere",) if near.geojson else ("2d",) if not near.spherical else ("2d", "2dsphere")
    for kind in wanted:
        for spec in indexes:
            if spec.get("hidden"):
                continue
            if spec["key"].get(path) == kind:
                return spec
    return None


def _near_plan(indexes: list[dict], path: str, near: Any, bounds: dict) -> Any:
    spec = geo_index_for(indexes, path, near)
    if spec is None:
        kind = "$nearSphere" if near.spherical and not near.geojson else "$near"
        raise MongoError(NO_PLAN, f"error processing query: ns=? GEONEAR field={path} maxdist={near.max_distance:g} "
                                  f"isNearSphere={int(kind == '$nearSphere')} planner returned error :: caused by :: "
                                  "unable to find index for $geoNear query")
    stage = "GEO_NEAR_2DSPHERE" if spec["key"][path] == "2dsphere" else "GEO_NEAR_2D"
    plan = Plan("GEO_NEAR", index=spec, bounds_desc={path: [stage]})
    plan.special = NearPlan(path, near, spec, _prefix_points(spec, path, bounds))
    return plan


class NearPlan:
    def __init__(self, path: str, near: Any, spec: dict, prefix: list[tuple] | None):
        self.path = path
        self.near = near
        self.spec = spec
        self.prefix = prefix  # equality values of the fields before the geo field; None: unbounded
        self.output: Any = None  # $geoNear: (distanceField, multiplier, includeLocs)

    def explain(self, plan: Plan, filter: dict | None) -> dict:
        """The winningPlan of a GEO_NEAR plan, in mongod's stage names."""
        index = cast(dict, plan.index)  # a GEO_NEAR plan has its index
        kind = "GEO_NEAR_2DSPHERE" if "2dsphere" in index["key"].values() else "GEO_NEAR_2D"
        node = {"stage": kind, "keyPattern": index["key"], "indexName": index["name"],
                "indexVersion": 2}
        if filter:
            return {"stage": "FETCH", "filter": filter, "inputStage": node}
        return {"stage": "FETCH", "inputStage": node}


def _prefix_points(spec: dict, path: str, bounds: dict) -> list[tuple] | None:
    import itertools

    fields = list(spec["key"])
    before = fields[: fields.index(path)]
    values = []
    for f in before:
        b = bounds.get(f)
        if b is None or not b.is_point:
            return None
        values.append(b.points)
    return list(itertools.product(*values))


# --------------------------------------------------------------------------------------------------
# $geoWithin / $geoIntersects through a geo index; equality through a hashed index
# --------------------------------------------------------------------------------------------------


def fallback_plan(indexes: list[dict], filter: dict | None, bounds: dict) -> Any:
    """An IXSCAN on a geo or hashed index when the filter allows one (None otherwise)."""
    if not filter:
        return None
    usable = [s for s in indexes if not s.get("hidden") and not s.get("sparse")
              and "partialFilterExpression" not in s]
    for spec in usable:
        first, kind = next(iter(spec["key"].items()))
        if kind == "hashed":
            b = bounds.get(first)
            if b is not None and b.is_point:
                return _hashed_plan(spec, first, b.points)
    for path, cond in _conjuncts(filter):
        if type(cond) is not dict or SPECIAL_OPS.isdisjoint(cond):
            continue
        for spec in usable:
            first, kind = next(iter(spec["key"].items()))
            if first != path or kind not in ("2dsphere", "2d"):
                continue
            ranges = _geo_ranges(spec, kind, cond)
            if ranges is not None:
                return _range_plan(spec, path, ranges)
    return None


def hinted_plan(spec: dict, filter: dict | None, bounds: dict) -> Any:
    """A hinted special index: hashed equality or geo bounds when the filter has them, else the whole
    index (its keys are not values, so value bounds cannot narrow it; the filter is re-applied)."""
    first, kind = next(iter(spec["key"].items()))
    b = bounds.get(first)
    if kind == "hashed" and b is not None and b.is_point:
        return _hashed_plan(spec, first, b.points)
    plan = fallback_plan([spec], filter, {}) if kind in ("2dsphere", "2d") else None
    return plan or Plan("IXSCAN", index=spec, intervals=[Interval(None, None, True, True)],
                            bounds_desc={f: ["[MinKey, MaxKey]"] for f in spec["key"]})


def _hashed_plan(spec: dict, path: str, points: list) -> Any:
    keys = sorted({encode_key((hashed_key(p),), (1,)) for p in points if not isinstance(p, list)})
    intervals = [Interval(k, k, True, True) for k in keys]
    return Plan("IXSCAN", index=spec, intervals=intervals,
                    bounds_desc={path: [f"[{int(hashed_key(p))}, {int(hashed_key(p))}]" for p in points]})


def _geo_ranges(spec: dict, kind: str, cond: dict) -> list[tuple] | None:
    op = next((o for o in ("$geoWithin", "$within", "$geoIntersects") if o in cond), None)
    if op is None:
        return None
    region = parse_intersects(cond[op]) if op == "$geoIntersects" else parse_within(cond[op])
    if kind == "2dsphere":
        if region.kind == "cap":
            return region_intervals(region.cap)
        if region.kind in ("sphere", "geometry"):
            import s2geometry as s2

            shape = cast(Shape, region.shape)  # a $geometry / $centerSphere region has its shape
            cells = {s2.S2CellId(p).id(): s2.S2CellId(p) for p in shape.points}
            out = []
            for r in (*shape.lines, *shape.polygons):
                out += region_intervals(r)
            if cells:
                out += cells_intervals(cells.values())
            return out
        return None  # planar operators cannot use a spherical index
    if region.planar:
        plane = Plane(spec)
        if region.kind == "center":
            (cx, cy), r = region.flat
            return plane.box_intervals(cx - r, cy - r, cx + r, cy + r)
        x1, y1, x2, y2 = region.flat.bounds
        return plane.box_intervals(x1, y1, x2, y2)
    return None


def _range_plan(spec: dict, path: str, ranges: list[tuple]) -> Any:
    intervals = [Interval(encode_key((lo,), (1,)), encode_key((hi,), (1,)), True, True) for lo, hi in ranges]
    intervals.sort(key=lambda iv: cast(bytes, iv.lo))  # every interval here is bounded by keys
    return Plan("IXSCAN", index=spec, intervals=intervals,
                    bounds_desc={path: [f"[{int(lo)}, {int(hi)}]" for lo, hi in ranges[:20]]})


# --------------------------------------------------------------------------------------------------
# execution (the storage side passes ``scan(intervals, index=None) -> (rid, doc)`` of not-yet-seen records)
# --------------------------------------------------------------------------------------------------


def special_scan(plan: Any, scan) -> Iterator[tuple[bytes, dict]]:
    if plan.kind == "GEO_NEAR":
        return near_scan(plan, scan)
    if isinstance(plan.special, _TextUnion):
        return _text_union_scan(plan, scan)
    return _text_scan(plan, scan)


def _text_scan(plan: Any, scan) -> Iterator[tuple[bytes, dict]]:
    """Documents holding a looked-up term that satisfy the whole $text (negations, phrases)."""
    matcher = plan.special.matcher
    meta = plan.meta
    for rid, doc in scan(plan.intervals):
        score = matcher.evaluate(doc, want_score=meta is not None)
        if score is not None:
            if meta is not None:
                meta.set(doc, "textScore", score)
            yield rid, doc

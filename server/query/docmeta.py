"""Document metadata (``{$meta: ...}``): ``textScore`` from a ``$text`` read, ``geoNearDistance`` and
``geoNearPoint`` from a ``$near`` / ``$geoNear`` read, ``indexKey`` from an index scan, ``sortKey`` from a
sort (pure).

Documents are plain dicts, so metadata lives beside them in a ``DocMeta`` table keyed by object
identity; the table holds each document it describes, so an identity is never reused while its
entry exists. A read that needs metadata (its projection, sort or pipeline mentions ``$meta``)
creates one table and puts it in the read's variables under ``META_VAR`` (not a valid user variable
name), where the ``$meta`` expression, ``$meta`` sorts and projections find it. Pipeline stages that
map one document to others hand the metadata on (``pipeline``); ``$group`` and friends drop it, as
in mongod. A read that needs no metadata creates no table and pays nothing.

``indexKey`` and ``sortKey`` cost work per document (the key document, the sort key array), so their
producers (the index scan in ``core.collection.plan_docs``, ``sort.sort_documents``) make them only
when a consumer asked at parse time: a projection naming them puts their names in ``wants``.
"""

from __future__ import annotations

import datetime
from typing import Any

from bson.int64 import Int64

from tidemark.protocol.errors import MongoError

META_VAR = "__docmeta"
NAMES = ("textScore", "geoNearDistance", "geoNearPoint", "randVal", "searchScore", "searchHighlights",
         "indexKey", "recordId", "sortKey", "searchScoreDetails", "vectorSearchScore")
SUPPORTED = ("textScore", "geoNearDistance", "geoNearPoint", "indexKey", "sortKey")
# The metadata made per document only on request (``DocMeta.wants``).
ON_REQUEST = frozenset({"indexKey", "sortKey"})


class DocMeta:
    """A read's metadata table. ``wants``: the ``ON_REQUEST`` names a consumer compiled at parse time
    asks for. ``sort_keys``: for a find whose plan gives the sort order (no sort runs), what builds a
    document's sort key (``fn(doc) -> list``), set by the find command; None elsewhere."""

    __slots__ = ("_entries", "wants", "sort_keys")

    def __init__(self) -> None:
        self._entries: dict[int, tuple[Any, dict]] = {}
        self.wants: set[str] = set()
        self.sort_keys: Any = None

    def want(self, name: str) -> None:
        """A consumer (parsed before the read runs) will read ``name`` (an ``ON_REQUEST`` name)."""
        if name in ON_REQUEST:
            self.wants.add(name)

    def set(self, doc: Any, name: str, value: Any) -> None:
        entry = self._entries.get(id(doc))
        if entry is None or entry[0] is not doc:
            entry = (doc, {})
            self._entries[id(doc)] = entry
        entry[1][name] = value

    def get(self, doc: Any, name: str) -> Any:
        entry = self._entries.get(id(doc))
        if entry is None or entry[0] is not doc:
            return None
        return entry[1].get(name)

    def take(self, doc: Any) -> dict:
        """Remove ``doc``'s metadata from the table and return it ({name: value}; {} when none): a
        spilled sort run keeps it beside the document on disk (``spill``), so the table no longer
        holds the document in memory."""
        entry = self._entries.get(id(doc))
        if entry is None or entry[0] is not doc:
            return {}
        del self._entries[id(doc)]
        return entry[1]

    def give(self, doc: Any, values: dict) -> None:
        """``doc`` (a spilled document read back) carries ``values`` (what ``take`` returned)."""
        if values:
            self._entries[id(doc)] = (doc, values)

    def hand_on(self, src: Any, dst: Any) -> None:
        """``dst`` (a stage's output) carries the metadata of ``src`` (its input)."""
        if dst is src:
            return
        entry = self._entries.get(id(src))
        if entry is not None and entry[0] is src:
            self._entries[id(dst)] = (dst, dict(entry[1]))


def mentions_meta(value: Any) -> bool:
    """Whether a spec (projection, sort, pipeline) contains a ``$meta`` operator anywhere."""
    # Every read walks its whole pipeline here: one breadth-first pass over a list of the containers met,
    # which grows as it is read (no call per container nor per scalar, no isinstance per scalar; a
    # client controls the nesting, so no recursion either). Subclasses of dict/list (SON...) take the
    # isinstance branch.
    todo = [value]
    for v in todo:
        t = type(v)
        if t is dict or t is not list and isinstance(v, dict):
            if "$meta" in v:
                return True
            for k in v:
                if (tx := type(x := v[k])) is dict or tx is list or tx not in _SCALARS and isinstance(x, (dict, list)):
                    todo += (x,)
        elif t is list or isinstance(v, list):
            for x in v:
                if (tx := type(x)) is dict or tx is list or tx not in _SCALARS and isinstance(x, (dict, list)):
                    todo += (x,)
    return False


# The values a spec holds most that are neither dicts nor lists (``mentions_meta`` skips them untested).
_SCALARS = frozenset({str, int, float, bool, type(None), datetime.datetime, Int64})


# The metadata a read makes only when its pipeline opens with what makes it (mongod's
# DepsTracker::kDefaultUnavailableMetadata), named as mongod's 40218 names it.
_UNAVAILABLE = {"textScore": "text score", "geoNearDistance": "$geoNear distance", "geoNearPoint": "$geoNear point"}
# Stages after which no metadata of the input is left (EXHAUSTIVE_ALL: $group and the stages made of
# it; $facet, whose own pipelines are walked): mongod's dependency walk ends there.
_DROPS_METADATA = frozenset({"$group", "$bucket", "$bucketAuto", "$count", "$sortByCount", "$facet"})
# Sub-pipelines read another collection, whose read decides its own metadata.
_OWN_READ = frozenset({"$lookup", "$unionWith", "$graphLookup"})


def check_available(pipeline: list) -> None:
    """40218 when a stage of an aggregation reads metadata its read cannot make: ``textScore``
    unless the pipeline opens with a ``$match`` holding ``$text``, ``geoNearDistance`` /
    ``geoNearPoint`` unless it opens with ``$geoNear`` (mongod's Pipeline::getDependencies with the
    read's unavailable metadata, after every stage parsed). A find checks its own projection and sort
    (``special_reads.find_meta``)."""
    first = pipeline[0] if pipeline and isinstance(pipeline[0], dict) else {}
    unavailable = dict(_UNAVAILABLE)
    if "$geoNear" in first:
        del unavailable["geoNearDistance"], unavailable["geoNearPoint"]
    elif _has_text(first.get("$match")):
        del unavailable["textScore"]
    _check_stages(pipeline, unavailable)


def _has_text(value: Any) -> bool:
    """A ``$text`` anywhere in a filter (mongod's DocumentSourceMatch::isTextQuery)."""
    if isinstance(value, dict):
        return any(k == "$text" or _has_text(v) for k, v in value.items())
    return isinstance(value, list) and any(_has_text(v) for v in value)


def _check_stages(stages: list, unavailable: dict[str, str]) -> None:
    for stage in stages:
        if not isinstance(stage, dict) or len(stage) != 1:
            return  # (refused when parsed)
        (name, spec), = stage.items()
        if name in _OWN_READ:
            continue
        if name == "$facet" and isinstance(spec, dict):
            for sub in spec.values():
                if isinstance(sub, list):
                    _check_stages(sub, unavailable)
            return
        needed = _needed(spec, unavailable)
        if needed is not None:
            raise MongoError(40218, f"query requires {unavailable[needed]} metadata, but it is not available")
        if name in _DROPS_METADATA:
            return


def _needed(value: Any, unavailable: dict[str, str]) -> str | None:
    """The first unavailable metadata name a stage's spec reads (``{$meta: name}``; not inside a
    ``$literal``)."""
    if isinstance(value, dict):
        for k, v in value.items():
            if k == "$meta":
                if type(v) is str and v in unavailable:
                    return v
            elif k != "$literal" and isinstance(v, (dict, list)):
                found = _needed(v, unavailable)
                if found is not None:
                    return found
    elif isinstance(value, list):
        for v in value:
            if isinstance(v, (dict, list)):
                found = _needed(v, unavailable)
                if found is not None:
                    return found
    return None


def table(variables: dict | None) -> DocMeta | None:
    return (variables or {}).get(META_VAR)


def comparison_key_value(value: Any, collation: Any) -> Any:
    """``value`` as mongod shows a key made under ``collation`` (a ``collation.Collation``; None:
    simple, unchanged): each string, at any depth, is the collator's comparison key (the ICU sort
    key without its terminating zero byte). mongod sends those bytes as the BSON string; a wire
    string here is UTF-8, so each byte becomes one character (Latin-1): the same bytes for an ASCII
    key. (An index key and a sort key under a collation both hold these.)"""
    if collation is None:
        return value
    t = type(value)
    if t is str:
        return collation.string_key(value).decode("latin-1").removesuffix("\x00")
    if t is dict:
        return {k: comparison_key_value(v, collation) for k, v in value.items()}
    if t is list:
        return [comparison_key_value(v, collation) for v in value]
    return value

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

from typing import Any

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
    # (loops, and no call for a scalar: every read walks its whole pipeline here)
    if isinstance(value, dict):
        for k, v in value.items():
            if k == "$meta" or isinstance(v, (dict, list)) and mentions_meta(v):
                return True
        return False
    if isinstance(value, list):
        for v in value:
            if isinstance(v, (dict, list)) and mentions_meta(v):
                return True
    return False


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

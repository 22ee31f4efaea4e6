"""Document metadata (``{$meta: ...}``): ``textScore`` from a ``$text`` read, ``geoNearDistance`` and
``geoNearPoint`` from a ``$near`` / ``$geoNear`` read (pure).

Documents are plain dicts, so metadata lives beside them in a ``DocMeta`` table keyed by object
identity; the table holds each document it describes, so an identity is never reused while its
entry exists. A read that needs metadata (its projection, sort or pipeline mentions ``$meta``)
creates one table and puts it in the read's variables under ``META_VAR`` (not a valid user variable
name), where the ``$meta`` expression, ``$meta`` sorts and projections find it. Pipeline stages that
map one document to others hand the metadata on (``pipeline``); ``$group`` and friends drop it, as
in mongod. A read that needs no metadata creates no table and pays nothing.
"""

from __future__ import annotations

from typing import Any

META_VAR = "__docmeta"
NAMES = ("textScore", "geoNearDistance", "geoNearPoint", "randVal", "searchScore", "searchHighlights",
         "indexKey", "recordId", "sortKey", "searchScoreDetails", "vectorSearchScore")
SUPPORTED = ("textScore", "geoNearDistance", "geoNearPoint")


class DocMeta:
    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: dict[int, tuple[Any, dict]] = {}

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

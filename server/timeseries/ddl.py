"""Catalog objects of time-series collections: names, the view document, stored options, listCollections
entries (the create and drop commands that write them are in server/commands/timeseries_ddl.py).

A time-series collection ``db.c`` is two catalog objects (spec §1.1): the view document
``{_id: "db.c", viewOn: "system.buckets.c", pipeline: [{$_internalUnpackBucket: ...}]}`` in
``db.system.views`` and the clustered collection ``db.system.buckets.c`` whose options carry
``validator``, ``clusteredIndex: true``, ``timeseries`` and the other allowed create options.
"""

from __future__ import annotations

from typing import Any

from tidemark.core.namespace import BUCKETS_PREFIX, SYSTEM_VIEWS
from tidemark.core.namespace import find_view as get_view  # (rid, doc): a point lookup by _id
from tidemark.protocol.codec import encode
from tidemark.query.index_keys import index_key_map
from tidemark.timeseries import options as ts_options

LIST_OPTION_KEYS = ("timeseries", "expireAfterSeconds", "collation", "storageEngine", "indexOptionDefaults")


def buckets_ns(db: str, name: str) -> str:
    return f"{db}.{BUCKETS_PREFIX}{name}"


def view_name_of(name: str) -> str:
    """``c`` for ``c`` or ``system.buckets.c``."""
    return name[len(BUCKETS_PREFIX):] if name.startswith(BUCKETS_PREFIX) else name


# ------------------------------------------------------------------ system.views helpers (in a txn)


def _views_info(r: Any, db: str) -> Any:
    return r.get_collection(f"{db}.{SYSTEM_VIEWS}")


def _insert_view(w: Any, db: str, view_doc: dict[str, Any]) -> None:
    info = _views_info(w, db)
    if info is None:
        info = w.create_collection(f"{db}.{SYSTEM_VIEWS}", {})
    w.insert(info, encode(view_doc), index_key_map(info.indexes, view_doc))


def _delete_view(w: Any, db: str, name: str) -> bool:
    rid, doc = get_view(w, db, name)
    if rid is None or doc is None:
        return False
    info = _views_info(w, db)
    w.delete(info, rid, index_key_map(info.indexes, doc))
    return True


def stored_options(buckets_info: Any) -> ts_options.TimeseriesOptions | None:
    opts = (buckets_info.options or {}).get("timeseries") if buckets_info is not None else None
    return ts_options.from_document(opts) if opts else None


# ------------------------------------------------------------------ listCollections


def list_collections_entry(name: str, view_doc: dict[str, Any] | None, buckets_info: Any, *, name_only: bool = False) -> dict[str, Any]:
    """``{name, type: "timeseries", options, info: {readOnly: false}}`` (spec §1.5)."""
    if name_only:
        return {"name": name, "type": "timeseries"}
    options: dict[str, Any] = {}
    if buckets_info is not None:
        stored = buckets_info.options or {}
        for key in LIST_OPTION_KEYS:
            if key in stored:
                options[key] = stored[key]
    return {"name": name, "type": "timeseries", "options": options, "info": {"readOnly": False}}


def buckets_list_collections_entry(buckets_info: Any, *, name_only: bool = False) -> dict[str, Any]:
    """The ``system.buckets.<c>`` entry: a collection with ``clusteredIndex: true``."""
    if name_only:
        return {"name": buckets_info.name, "type": "collection"}
    options = dict(buckets_info.options or {})
    options["clusteredIndex"] = True
    return {"name": buckets_info.name, "type": "collection", "options": options,
            "info": {"readOnly": False, "uuid": buckets_info.uuid}}

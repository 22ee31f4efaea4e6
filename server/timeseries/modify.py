"""Updates and deletes on a time-series collection, at the bucket level (pure; spec §6).

Updates follow the 5.1+ rules (the project's decision for 7.0): multi only, operator updates only,
metaField paths only, no upsert. A valid update is translated to an update of the bucket's ``meta``
(the metaField path ``<m>[.x]`` becomes ``meta[.x]``) and applied to every bucket whose ``meta``
matches the translated query; ``n``/``nModified`` count the measurements of those buckets.

Deletes follow 7.0's arbitrary deletes: any filter. ``plan_delete`` decides between

- **whole buckets** — the filter is empty or only references the metaField, and the delete is
  multi: matching bucket documents are removed without unpacking (``bucket_filter`` is exact);
- **unpack and repack** — otherwise: buckets pre-selected by the loose ``bucket_filter`` are
  unpacked, measurements matching the full filter are removed, and the bucket is rewritten with
  the same ``_id`` (``repack``) or deleted when nothing remains.

Invariant: a bucket-level filter produced here may only be *looser* than the user's filter for the
unpack path (the per-measurement filter is re-applied); for the whole-bucket path it is exact, which
is why that path is only taken when every predicate is on the metaField.

Collation: a statement runs under its effective collation (its own, else the collection default, as
mongod decides: ``_collection.effective_collation``). Every filter of a plan — bucket and measurement
level — is compiled with it (``DeletePlan.collation``); the bucket filter of the unpack path comes from
the one derivation under that collation (loose for strings on control min/max, exact on ``meta``).
Meta updates only *match* under the collation; the values they write are taken as given.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query.match import parse_filter
from tidemark.timeseries.batch import document_of_rows
from tidemark.timeseries.bucketdoc import MISSING, date_ms_of, normalize_meta
from tidemark.timeseries.filters import derive
from tidemark.timeseries.indexes import meta_subpath

_LOGICAL = ("$and", "$or", "$nor")


def _not_meta_query(meta_field: str | None) -> MongoError:
    return MongoError(
        ErrorCode.InvalidOptions,
        "Cannot perform an update or delete on a time-series collection when querying on a field that is "
        f"not the metaField '{meta_field}'",
    )


# --------------------------------------------------------------------------------------------------
# query translation (metaField paths -> meta)
# --------------------------------------------------------------------------------------------------


def is_meta_only(query: Any, meta_field: str | None) -> bool:
    """True when ``query`` is empty or every field path it names is the metaField or under it."""
    try:
        translate_meta_query(query, meta_field)
    except MongoError:
        return False
    return True


def translate_meta_query(query: Any, meta_field: str | None) -> dict[str, Any]:
    """``query`` with ``<m>[.x]`` renamed to ``meta[.x]``; 72 if it names any other field.

    Follows ``$and/$or/$nor`` and ``$jsonSchema`` ``properties``/``required``; refuses ``$expr`` and
    ``$where`` with mongod's messages.
    """
    if query is None:
        return {}
    if not isinstance(query, dict):
        raise MongoError(ErrorCode.TypeMismatch, "query must be an object")
    out: dict[str, Any] = {}
    for key, value in query.items():
        if key in _LOGICAL:
            if not isinstance(value, list):
                raise MongoError(ErrorCode.BadValue, f"{key} must be an array")
            out[key] = [translate_meta_query(sub, meta_field) for sub in value]
        elif key in ("$expr", "$where"):
            raise MongoError(
                ErrorCode.InvalidOptions,
                f"Cannot use {key} when performing an update or delete on a time-series collection",
            )
        elif key == "$comment":
            out[key] = value
        elif key == "$jsonSchema":
            out[key] = _translate_json_schema(value, meta_field)
        elif key.startswith("$"):
            raise _not_meta_query(meta_field)
        else:
            sub = meta_subpath(key, meta_field)
            if sub is None:
                raise _not_meta_query(meta_field)
            out[sub] = value
    return out


def _translate_json_schema(schema: Any, meta_field: str | None) -> Any:
    if not isinstance(schema, dict):
        return schema
    out = dict(schema)
    if isinstance(schema.get("properties"), dict):
        props = {}
        for name, sub in schema["properties"].items():
            if name != meta_field:
                raise _not_meta_query(meta_field)
            props["meta"] = sub
        out["properties"] = props
    if isinstance(schema.get("required"), list):
        if any(name != meta_field for name in schema["required"]):
            raise _not_meta_query(meta_field)
        out["required"] = ["meta" for _ in schema["required"]]
    return out


# --------------------------------------------------------------------------------------------------
# updates
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BucketUpdate:
    """One update statement translated to the bucket level."""

    bucket_query: dict[str, Any]
    bucket_update: dict[str, Any]
    array_filters: list[Any] | None
    hint: Any
    collation: Any  # the statement's effective collation.Collation (None = simple): matching only


def translate_update(statement: Any, meta_field: str | None, *, collation: Any = None) -> BucketUpdate:
    """Validate one ``updates`` entry for a time-series collection and translate it (72 on violations);
    ``collation``: the statement's effective collation."""
    if not isinstance(statement, dict):
        raise MongoError(ErrorCode.TypeMismatch, "Each update statement must be an object")
    if meta_field is None:
        raise MongoError(
            ErrorCode.InvalidOptions,
            "Cannot perform an update on a time-series collection that does not have a metaField",
        )
    if not statement.get("multi", False):
        raise MongoError(
            ErrorCode.InvalidOptions, "Cannot perform a non-multi update on a time-series collection"
        )
    if statement.get("upsert", False):
        raise MongoError(ErrorCode.InvalidOptions, "Cannot perform an upsert on a time-series collection")
    query = translate_meta_query(statement.get("q") or {}, meta_field)
    update = statement.get("u")
    if isinstance(update, list):
        raise MongoError(
            ErrorCode.InvalidOptions,
            "Cannot perform an update on a time-series collection using a pipeline update",
        )
    if not isinstance(update, dict) or not update or not all(k.startswith("$") for k in update):
        raise MongoError(
            ErrorCode.InvalidOptions,
            "Cannot perform an update on a time-series collection using a replacement document",
        )
    return BucketUpdate(
        bucket_query=query,
        bucket_update=translate_update_operators(update, meta_field),
        array_filters=statement.get("arrayFilters"),
        hint=statement.get("hint"),
        collation=collation,
    )


def translate_update_operators(update: dict[str, Any], meta_field: str) -> dict[str, Any]:
    """``{$op: {<m>.x: v}}`` -> ``{$op: {meta.x: v}}``; ``$rename`` targets must stay in the meta too."""
    out: dict[str, Any] = {}
    for op, fields in update.items():
        if not isinstance(fields, dict):
            out[op] = fields  # the update parser reports the malformed operator with its own code
            continue
        translated = {}
        for path, value in fields.items():
            sub = _meta_update_path(path, meta_field)
            if op == "$rename" and type(value) is str:
                value = _meta_update_path(value, meta_field)
            translated[sub] = value
        out[op] = translated
    return out


def _meta_update_path(path: str, meta_field: str) -> str:
    sub = meta_subpath(path, meta_field)
    if sub is None:
        raise MongoError(
            ErrorCode.InvalidOptions,
            "Cannot perform an update on a time-series collection which updates a field that is not the "
            f"metaField '{meta_field}'",
        )
    return sub


# --------------------------------------------------------------------------------------------------
# deletes
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DeletePlan:
    """How to run one delete statement against the buckets."""

    whole_buckets: bool  # True: remove matching bucket documents as they are
    bucket_filter: dict[str, Any]  # exact (whole_buckets) or loose (unpack path) bucket-level filter
    measurement_filter: dict[str, Any]  # the user's filter, re-applied to every unpacked measurement
    limit_one: bool
    collation: Any = None  # the statement's effective collation.Collation (None = simple) for both filters
    shown_bucket_filter: dict[str, Any] | None = None  # explain's (7.0's form, filters.BucketFilter.shown)


def plan_delete(statement: Any, time_field: str, meta_field: str | None, span: int, *,
                collation: Any = None, control_collation: Any = None) -> DeletePlan:
    """Plan one ``deletes`` entry ``{q, limit}`` (7.0 arbitrary deletes: any filter is accepted).
    ``limit`` arrives as the command layer read it (``write_statements.delete_limit``, the one rule:
    mongod's numberDouble, a non-number is 0); this layer cannot import that rule, so it only re-checks
    the number it is given is 0 or 1 (9 otherwise);
    ``span``: the collection's bucketMaxSpanSeconds (bounds bucket starts); ``collation``: the
    statement's effective collation (None = simple); ``control_collation``: the collection's default
    (the order of control min/max strings)."""
    if not isinstance(statement, dict):
        raise MongoError(ErrorCode.TypeMismatch, "Each delete statement must be an object")
    query = statement.get("q")
    if query is None:
        query = {}
    if not isinstance(query, dict):
        raise MongoError(
            ErrorCode.TypeMismatch, "BSON field 'delete.deletes.q' is the wrong type, expected type 'object'"
        )
    limit = statement.get("limit", 0)
    if limit not in (0, 1):
        raise MongoError(
            ErrorCode.FailedToParse, f"The limit field in delete objects must be 0 or 1. Got {limit}"
        )
    limit_one = limit == 1
    if not limit_one and (not query or (meta_field is not None and is_meta_only(query, meta_field))):
        translated = translate_meta_query(query, meta_field) if query else {}
        return DeletePlan(True, _open_buckets(translated), query, False, collation)
    # the bucket-level filter every bucket holding a matching measurement satisfies: the one derivation
    bucket_filter = derive(parse_filter(query), time_field, meta_field, span, collation=collation,
                           control_collation=control_collation)
    return DeletePlan(False, _open_buckets(bucket_filter.mql), query, limit_one, collation,
                      _open_buckets(bucket_filter.shown))


CLOSED_BUCKET_FILTER = {"control.closed": {"$not": {"$eq": True}}}


def _open_buckets(bucket_filter: dict[str, Any]) -> dict[str, Any]:
    """7.0's deletes leave closed buckets (``control.closed: true``, set only from outside, e.g. by
    Online Archive) alone: the closed-bucket guard leads every delete's bucket filter."""
    if not bucket_filter:
        return dict(CLOSED_BUCKET_FILTER)
    parts = bucket_filter["$and"] if list(bucket_filter) == ["$and"] else [bucket_filter]
    return {"$and": [dict(CLOSED_BUCKET_FILTER), *parts]}


def is_closed(bucket: dict[str, Any]) -> bool:
    """A bucket marked ``control.closed: true`` (from outside: 7.0 writes no such flag itself): meta
    updates skip it, as deletes do through ``CLOSED_BUCKET_FILTER`` (the same test: exactly ``true``)."""
    control = bucket.get("control")
    return isinstance(control, dict) and control.get("closed") is True


def bucket_measurement_count(bucket: dict[str, Any], time_field: str) -> int:
    """Number of measurements in a v1 bucket document."""
    return len((bucket.get("data") or {}).get(time_field) or {})


def repack(bucket: dict[str, Any], remaining: list[dict[str, Any]], time_field: str, meta_field: str | None,
           collation: Any = None) -> dict[str, Any] | None:
    """The bucket rewritten with only ``remaining`` (unpacked without meta); None when empty.

    Keeps the bucket ``_id``, ``meta`` and ``control.min.<time>`` (the rounded bucket start), and
    recomputes every other control min/max (strings under ``collation``, the collection's default)
    and the data columns from the remaining measurements.
    """
    if not remaining:
        return None
    start_ms = date_ms_of(bucket["control"]["min"][time_field])
    meta = normalize_meta(bucket["meta"]) if "meta" in bucket else MISSING
    doc = document_of_rows(remaining, time_field, meta_field, bucket["_id"], meta, start_ms // 1000, collation)
    if "meta" in bucket:
        doc["meta"] = bucket["meta"]
    return doc

"""The unpack stages: ``$_internalUnpackBucket`` (the view's own stage) and ``$_unpackBucket`` (users
querying ``system.buckets`` directly), spec §5.1.

A stage is parsed once into an ``UnpackSpec`` (validation first) and then applied to a stream of bucket
documents as a generator. ``EXTRA_STAGES`` maps the stage names to factories for the pipeline engine:
``factory(spec_value, ctx) -> fn(iterator_of_docs) -> iterator_of_docs``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query.expr_base import type_name
from tidemark.timeseries.bucketdoc import unpack_document


@dataclass(frozen=True)
class UnpackSpec:
    time_field: str
    meta_field: str | None
    bucket_max_span_seconds: int | None = None
    include: tuple[str, ...] | None = None
    exclude: tuple[str, ...] = ()
    user_facing: bool = False  # $_unpackBucket: a bucket with meta but no metaField is an error
    # the stage's own explain entries (include|exclude, timeField, metaField?, bucketMaxSpanSeconds?), made
    # once per spec (a spec is immutable and parsed once per view definition): every read on the view
    # spreads them into its explain info (``view.read_source``), which is a new dict per read; the lists
    # in it are shared and never changed (explain only encodes them)
    explained: dict[str, Any] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        out: dict[str, Any] = {}
        if self.include is not None:
            out["include"] = list(self.include)
        else:
            out["exclude"] = list(self.exclude)
        out["timeField"] = self.time_field
        if self.meta_field is not None:
            out["metaField"] = self.meta_field
        if self.bucket_max_span_seconds is not None:
            out["bucketMaxSpanSeconds"] = self.bucket_max_span_seconds
        object.__setattr__(self, "explained", out)  # (frozen: set once, here)

    def apply(self, buckets: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        fields = self.include
        for bucket in buckets:
            if self.user_facing and self.meta_field is None and "meta" in bucket:
                raise MongoError(5369601, "The $_unpackBucket stage requires metadata to be present in the "
                                          "metaField parameter if there is metadata in the bucket")
            for measurement in unpack_document(bucket, self.time_field, self.meta_field, fields):
                if self.exclude:
                    for name in self.exclude:
                        measurement.pop(name, None)
                yield measurement

# id(spec) -> (spec, its UnpackSpec): a time-series view's stage is the same object in every read while
# its resolution is reused (``core.namespace``: one per catalog generation), so it is parsed once per
# definition, not per read. The entry holds ``spec`` itself: its id cannot be reused while it is kept,
# and stage specs are never changed once decoded (resolutions are shared read-only). Bounded.
_PARSED: dict[int, tuple[Any, UnpackSpec]] = {}
_PARSED_MAX = 256


def parse_internal_unpack(spec: Any) -> UnpackSpec:
    """``$_internalUnpackBucket: {timeField, metaField?, bucketMaxSpanSeconds, include|exclude}``."""
    hit = _PARSED.get(id(spec))
    if hit is not None and hit[0] is spec:
        return hit[1]
    parsed = _parse_internal_unpack(spec)
    if len(_PARSED) >= _PARSED_MAX:
        _PARSED.clear()
    _PARSED[id(spec)] = (spec, parsed)
    return parsed


def _parse_internal_unpack(spec: Any) -> UnpackSpec:
    if not isinstance(spec, dict):
        raise MongoError(5346500, "$_internalUnpackBucket specification must be an object, got: "
                                  f"{type_name(spec)}")
    time_field = spec.get("timeField")
    if type(time_field) is not str:
        raise MongoError(40514, "timeField field must be a string")
    meta_field = spec.get("metaField")
    if meta_field is not None and type(meta_field) is not str:
        raise MongoError(5346501, "metaField field must be a string")
    include = spec.get("include")
    exclude = spec.get("exclude", [])
    if include is not None and not isinstance(include, list) or not isinstance(exclude, list):
        raise MongoError(5346502, "include or exclude field must be an array")
    span = spec.get("bucketMaxSpanSeconds")
    return UnpackSpec(time_field, meta_field, int(span) if span is not None else None,
                      tuple(include) if include is not None else None, tuple(exclude))


def parse_unpack_bucket(spec: Any) -> UnpackSpec:
    """The user-facing ``$_unpackBucket: {timeField, metaField?}`` (codes 5612400-5612405)."""
    if not isinstance(spec, dict):
        raise MongoError(5612400, "$_unpackBucket specification must be an object, got: "
                                  f"{type_name(spec)}")
    for key in spec:
        if key not in ("timeField", "metaField"):
            raise MongoError(5612404, f"$_unpackBucket stage encountered an unknown field: {key}")
    if "timeField" not in spec:
        raise MongoError(5612405, "$_unpackBucket stage requires timeField parameter")
    if type(spec["timeField"]) is not str:
        raise MongoError(5612401, "timeField field must be a string, got: " + type_name(spec["timeField"]))
    meta_field = spec.get("metaField")
    if "metaField" in spec:
        if type(meta_field) is not str:
            raise MongoError(5612402, "metaField field must be a string, got: " + type_name(meta_field))
        if "." in meta_field:
            raise MongoError(5612403, "metaField field must be a single-element field path")
    return UnpackSpec(spec["timeField"], meta_field, user_facing=True)


Stage = Callable[[Iterable[dict[str, Any]]], Iterator[dict[str, Any]]]  # documents in, documents out
StageFactory = Callable[[Any, Any], Stage]  # (stage spec, pipeline context) -> stage


def _factory(parse: Callable[[Any], UnpackSpec]) -> StageFactory:
    def make(spec: Any, ctx: Any = None) -> Stage:
        return parse(spec).apply

    return make


EXTRA_STAGES: dict[str, StageFactory] = {
    "$_internalUnpackBucket": _factory(parse_internal_unpack),
    "$_unpackBucket": _factory(parse_unpack_bucket),
}

_ = ErrorCode  # codes above are Location codes without names in the table

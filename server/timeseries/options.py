"""Time-series ``create`` options: parsing, validation, defaults and equivalence (pure).

Follows MongoDB 7.0 (spec timeseries.md §1.2-§1.4 and "Decisions for this project"):
``bucketRoundingSeconds`` exists; with ``granularity`` only the presets are accepted; without it,
``bucketMaxSpanSeconds`` and ``bucketRoundingSeconds`` come together and are equal, in 1..31536000.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from bson.decimal128 import Decimal128
from bson.int64 import Int64

from tidemark.arguments import GENERIC_ARGUMENTS
from tidemark.core.coll_mod_index import ttl_seconds
from tidemark.core.namespace import BUCKETS_PREFIX
from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query.expr_base import type_name

GRANULARITY_PRESETS: dict[str, tuple[int, int]] = {
    # granularity: (bucketRoundingSeconds, bucketMaxSpanSeconds)
    "seconds": (60, 3600),
    "minutes": (3600, 86400),
    "hours": (86400, 2592000),
}
MAX_BUCKET_SECONDS = 31536000  # 365 days
IDL_OUT_OF_RANGE = 51024  # 7.0's generic IDL range-validator code (BadValue only from 7.1)

TIMESERIES_KEYS = ("timeField", "metaField", "granularity", "bucketMaxSpanSeconds", "bucketRoundingSeconds")

# create options that may accompany `timeseries` (kAllowedCollectionCreationOptions) ...
ALLOWED_WITH_TIMESERIES = frozenset(
    {"storageEngine", "indexOptionDefaults", "collation", "timeseries", "expireAfterSeconds", "temp"}
)


def _wrong_type(field: str, value: Any, expected: str) -> MongoError:
    return MongoError(
        ErrorCode.TypeMismatch,
        f"BSON field '{field}' is the wrong type '{type_name(value)}', expected type '{expected}'",
    )


@dataclass(frozen=True)
class TimeseriesOptions:
    """Validated options. ``granularity`` is None when custom bucket seconds were given."""

    time_field: str
    meta_field: str | None
    granularity: str | None
    bucket_max_span_seconds: int
    bucket_rounding_seconds: int

    def to_document(self) -> dict[str, Any]:
        """The stored/echoed form (§1.3): rounding only when custom seconds were given."""
        doc: dict[str, Any] = {"timeField": self.time_field}
        if self.meta_field is not None:
            doc["metaField"] = self.meta_field
        if self.granularity is not None:
            doc["granularity"] = self.granularity
            doc["bucketMaxSpanSeconds"] = self.bucket_max_span_seconds
        else:
            doc["bucketRoundingSeconds"] = self.bucket_rounding_seconds
            doc["bucketMaxSpanSeconds"] = self.bucket_max_span_seconds
        return doc

    def equivalent(self, other: TimeseriesOptions) -> bool:
        """MongoDB's ``optionsAreEqual``: same fields, granularity and effective seconds."""
        return (
            self.time_field == other.time_field
            and self.meta_field == other.meta_field
            and (self.granularity or "seconds") == (other.granularity or "seconds")
            and self.bucket_max_span_seconds == other.bucket_max_span_seconds
            and self.bucket_rounding_seconds == other.bucket_rounding_seconds
        )


def from_document(doc: dict[str, Any]) -> TimeseriesOptions:
    """Options as stored (trusted: already validated when created)."""
    granularity = doc.get("granularity")
    if granularity is None and "bucketMaxSpanSeconds" not in doc:
        granularity = "seconds"
    if granularity is not None:
        rounding, span = GRANULARITY_PRESETS[granularity]
        span = int(doc.get("bucketMaxSpanSeconds", span))
    else:
        span = int(doc["bucketMaxSpanSeconds"])
        rounding = int(doc.get("bucketRoundingSeconds", span))
    return TimeseriesOptions(doc["timeField"], doc.get("metaField"), granularity, span, rounding)


def _safe_int(field: str, value: Any) -> int:
    """IDL ``safeInt``: any whole number type; fractional values truncate like mongod."""
    if isinstance(value, bool) or not isinstance(value, (int, float, Decimal128)):
        raise MongoError(
            ErrorCode.TypeMismatch,
            f"BSON field '{field}' is the wrong type '{type_name(value)}', "
            "expected types '[long, int, decimal, double]'",
        )
    number = float(value.to_decimal()) if isinstance(value, Decimal128) else value
    if isinstance(number, float):
        if math.isnan(number):
            raise MongoError(IDL_OUT_OF_RANGE, f"BSON field '{field}' value must be >= 1, actual value 'nan'")
        number = int(max(min(number, 2**62), -(2**62)))
    return int(number)


def _check_range(field: str, value: int) -> None:
    short = field.rsplit(".", 1)[-1]
    if value < 1:
        raise MongoError(IDL_OUT_OF_RANGE, f"BSON field '{short}' value must be >= 1, actual value '{value}'")
    if value > MAX_BUCKET_SECONDS:
        raise MongoError(
            IDL_OUT_OF_RANGE,
            f"BSON field '{short}' value must be <= {MAX_BUCKET_SECONDS}, actual value '{value}'",
        )


def _field_name(prefix: str, key: str, value: Any) -> str:
    if type(value) is not str:
        raise _wrong_type(f"{prefix}.{key}", value, "string")
    if "\x00" in value:
        raise MongoError(ErrorCode.BadValue, f"'{key}' cannot contain embedded null bytes")
    return value


def parse_timeseries(ns: str, spec: Any, *, command: str = "create") -> TimeseriesOptions:
    """Parse and validate a ``timeseries`` option object; raises MongoError with mongod's codes."""
    prefix = f"{command}.timeseries"
    if not isinstance(spec, dict):
        raise _wrong_type(prefix, spec, "object")
    for key in spec:
        if key not in TIMESERIES_KEYS:
            raise MongoError(ErrorCode.IDLUnknownField, f"BSON field '{prefix}.{key}' is an unknown field.")
    if "timeField" not in spec:
        raise MongoError(ErrorCode.IDLFailedToParse, f"BSON field '{prefix}.timeField' is missing but a required field")
    time_field = _field_name(prefix, "timeField", spec["timeField"])
    meta_field = None
    if "metaField" in spec:
        meta_field = _field_name(prefix, "metaField", spec["metaField"])
    granularity = spec.get("granularity")
    if granularity is not None:
        if type(granularity) is not str:
            raise _wrong_type(f"{prefix}.granularity", granularity, "string")
        if granularity not in GRANULARITY_PRESETS:
            raise MongoError(
                ErrorCode.BadValue,
                f"Enumeration value '{granularity}' for field '{prefix}.granularity' is not a valid value.",
            )
    span = rounding = None
    if "bucketMaxSpanSeconds" in spec:
        span = _safe_int(f"{prefix}.bucketMaxSpanSeconds", spec["bucketMaxSpanSeconds"])
        _check_range(f"{prefix}.bucketMaxSpanSeconds", span)
    if "bucketRoundingSeconds" in spec:
        rounding = _safe_int(f"{prefix}.bucketRoundingSeconds", spec["bucketRoundingSeconds"])
        _check_range(f"{prefix}.bucketRoundingSeconds", rounding)

    if "." in time_field:
        raise MongoError(ErrorCode.InvalidOptions, f"{ns}: 'timeField' must be a top-level field and not contain a '.'")
    if meta_field is not None:
        if "." in meta_field:
            raise MongoError(
                ErrorCode.InvalidOptions, f"{ns}: 'metaField' must be a top-level field and not contain a '.'"
            )
        if meta_field == "_id":
            raise MongoError(ErrorCode.InvalidOptions, "'metaField' cannot be \"_id\"")
        if meta_field == time_field:
            raise MongoError(ErrorCode.InvalidOptions, "'metaField' cannot be the same as 'timeField'")
    return _bucketing(time_field, meta_field, granularity, span, rounding)


def _bucketing(time_field: str, meta_field: str | None, granularity: str | None,
               span: int | None, rounding: int | None) -> TimeseriesOptions:
    """The 6.3/7.0 rules for granularity vs custom bucket seconds (all InvalidOptions 72)."""
    if granularity is None and span is None and rounding is None:
        granularity = "seconds"
    if granularity is not None:
        preset_rounding, preset_span = GRANULARITY_PRESETS[granularity]
        if span is not None and span != preset_span:
            raise MongoError(
                ErrorCode.InvalidOptions,
                "Timeseries 'bucketMaxSpanSeconds' is not configurable to a value other than the default of "
                f"{preset_span} for the provided granularity",
            )
        if rounding is not None and rounding != preset_rounding:
            raise MongoError(
                ErrorCode.InvalidOptions,
                "Timeseries 'bucketRoundingSeconds' is not configurable to a value other than the default of "
                f"{preset_rounding} for the provided granularity",
            )
        return TimeseriesOptions(time_field, meta_field, granularity, preset_span, preset_rounding)
    if span is None or rounding is None:
        raise MongoError(
            ErrorCode.InvalidOptions,
            "Timeseries 'bucketMaxSpanSeconds' and 'bucketRoundingSeconds' need to be set alongside each other",
        )
    if span != rounding:
        raise MongoError(
            ErrorCode.InvalidOptions, "Timeseries 'bucketRoundingSeconds' needs to be equal to 'bucketMaxSpanSeconds'"
        )
    return TimeseriesOptions(time_field, meta_field, None, span, rounding)


def parse_expire_after_seconds(value: Any) -> int:
    """Collection-level TTL of a time-series collection (``expireAfterSeconds``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, Decimal128)):
        raise _wrong_type("create.expireAfterSeconds", value, "long")
    return expire_seconds_of(value)


def expire_seconds_of(value: int | float | Decimal128) -> int:
    """A collection-level TTL given as a number (create and collMod): finite, then in range."""
    number = float(value.to_decimal()) if isinstance(value, Decimal128) else value
    if isinstance(number, float) and (math.isnan(number) or math.isinf(number)):
        raise MongoError(ErrorCode.InvalidOptions, "TTL index 'expireAfterSeconds' option must be a finite number")
    return ttl_seconds(int(number), clustered=True)


@dataclass(frozen=True)
class CreateRequest:
    """A validated ``create`` of a time-series collection."""

    db: str
    name: str
    timeseries: TimeseriesOptions
    extra: dict[str, Any]  # expireAfterSeconds, collation, storageEngine, indexOptionDefaults (as given)

    def buckets_options(self) -> dict[str, Any]:
        """Options of ``system.buckets.<name>`` as listCollections shows them (§1.5)."""
        options: dict[str, Any] = {
            "validator": bucket_validator(self.timeseries.time_field),
            "clusteredIndex": True,
            "timeseries": self.timeseries.to_document(),
        }
        options.update(self.extra)
        return options


def parse_create(db: str, cmd: dict[str, Any]) -> CreateRequest:
    """Validate ``create: <name>, timeseries: {...}, ...`` (every rule of spec §1.2-§1.3)."""
    name = cmd["create"]
    ns = f"{db}.{name}"
    for key, value in cmd.items():
        if key == "create" or key in GENERIC_ARGUMENTS or key in ALLOWED_WITH_TIMESERIES:
            continue
        if key == "capped" and value is False:
            continue
        if key == "encryptedFields":
            raise MongoError(6346401, "Encrypted fields cannot be used with views or timeseries collections")
        raise MongoError(ErrorCode.InvalidOptions, f"{ns}: 'timeseries' is not allowed with '{key}'")
    options = parse_timeseries(ns, cmd["timeseries"])
    extra: dict[str, Any] = {}
    if "expireAfterSeconds" in cmd:
        extra["expireAfterSeconds"] = Int64(parse_expire_after_seconds(cmd["expireAfterSeconds"]))  # stored as a long
    for key in ("collation", "storageEngine", "indexOptionDefaults"):
        if key in cmd:
            if not isinstance(cmd[key], dict):
                raise _wrong_type(f"create.{key}", cmd[key], "object")
            extra[key] = cmd[key]
    return CreateRequest(db, name, options, extra)


def bucket_validator(time_field: str) -> dict[str, Any]:
    """The ``$jsonSchema`` validator of a v1 buckets collection (§1.5)."""
    bound = {"bsonType": "object", "required": [time_field], "properties": {time_field: {"bsonType": "date"}}}
    return {
        "$jsonSchema": {
            "bsonType": "object",
            "required": ["_id", "control", "data"],
            "properties": {
                "_id": {"bsonType": "objectId"},
                "control": {
                    "bsonType": "object",
                    "required": ["version", "min", "max"],
                    "properties": {
                        "version": {"bsonType": "number"},
                        "min": bound,
                        "max": {**bound, "properties": {time_field: {"bsonType": "date"}}},
                        "closed": {"bsonType": "bool"},
                    },
                },
                "data": {"bsonType": "object"},
                "meta": {},
            },
            "additionalProperties": False,
        }
    }


def view_document(db: str, name: str, options: TimeseriesOptions, collation: dict[str, Any] | None = None) -> dict[str, Any]:
    """The ``system.views`` document of the view ``db.name`` (§1.6)."""
    stage: dict[str, Any] = {"timeField": options.time_field}
    if options.meta_field is not None:
        stage["metaField"] = options.meta_field
    stage["bucketMaxSpanSeconds"] = options.bucket_max_span_seconds
    doc: dict[str, Any] = {
        "_id": f"{db}.{name}",
        "viewOn": BUCKETS_PREFIX + name,
        "pipeline": [{"$_internalUnpackBucket": stage}],
    }
    if collation is not None:
        doc["collation"] = collation
    return doc

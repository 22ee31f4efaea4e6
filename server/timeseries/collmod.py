"""collMod on a time-series collection: validation and option transitions (pure; spec §8).

``plan_coll_mod(cmd, ts_options, expire_after_seconds)`` parses and validates the whole command
before anything is executed and returns a ``CollModPlan`` saying what to change: the stored
``timeseries`` options, the collection-level ``expireAfterSeconds``, one index's ``hidden`` flag and
the view pipeline's ``bucketMaxSpanSeconds``. Existing buckets are never rewritten: new buckets use
the new rounding because the bucket catalog reads the options of the collection when it opens one.

Stored option shape (what listCollections echoes, spec §1.3): either ``{timeField, [metaField],
granularity, bucketMaxSpanSeconds}`` (rounding implied by the preset) or ``{timeField, [metaField],
bucketMaxSpanSeconds, bucketRoundingSeconds}`` (custom, no granularity).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tidemark.arguments import check_command
from tidemark.core.coll_mod_index import parse_coll_mod_index
from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query.expr_base import type_name
from tidemark.timeseries.options import expire_seconds_of

# granularity -> (bucketRoundingSeconds, bucketMaxSpanSeconds); spec §1.3.
PRESETS: dict[str, tuple[int, int]] = {
    "seconds": (60, 3600),
    "minutes": (3600, 86400),
    "hours": (86400, 2592000),
}
IDL_OUT_OF_RANGE = 51024  # 7.0's IDL range-validator code (BadValue only from 7.1)
_GRANULARITY_RANK = {"seconds": 0, "minutes": 1, "hours": 2}
MAX_BUCKET_SECONDS = 31536000

_NOT_ON_TIMESERIES = (
    "validator",
    "validationLevel",
    "validationAction",
    "recordPreImages",
    "changeStreamPreAndPostImages",
)
_ONLY_ON_VIEWS = ("pipeline", "viewOn")
_TIMESERIES_FIELDS = ("granularity", "bucketMaxSpanSeconds", "bucketRoundingSeconds")
# (``timeseriesBucketsMayHaveMixedSchemaData``, 7.0's flag for collections whose buckets may hold a field
# of several BSON types, is typed by the field table and otherwise accepted: reads here never assume one
# type per field in a bucket — the bucket filter keeps its mixed-type guard, ``filters.derive`` — so
# setting it changes no answer.)

_TRANSITION_MESSAGE = (
    "Invalid transition for timeseries.granularity. Can only transition from 'seconds' to 'minutes' "
    "or 'minutes' to 'hours'."
)


@dataclass(frozen=True)
class IndexChange:
    """``collMod.index``: which index (name or *user* key pattern) and its new ``hidden`` flag."""

    name: str | None
    key_pattern: dict[str, Any] | None
    hidden: bool | None


@dataclass(frozen=True)
class CollModPlan:
    """What a validated collMod changes. ``None`` fields are left untouched."""

    timeseries: dict[str, Any] | None = None  # the new stored timeseries options
    expire_after_seconds: int | str | None = None  # new value, or "off" to remove it
    index: IndexChange | None = None
    new_span: int | None = None  # the view pipeline's new bucketMaxSpanSeconds

    @property
    def is_noop(self) -> bool:
        return self.timeseries is None and self.expire_after_seconds is None and self.index is None


def rounding_and_span(options: dict[str, Any]) -> tuple[int, int]:
    """Effective (bucketRoundingSeconds, bucketMaxSpanSeconds) of stored options."""
    granularity = options.get("granularity")
    if granularity is None and "bucketRoundingSeconds" in options:
        return int(options["bucketRoundingSeconds"]), int(options["bucketMaxSpanSeconds"])
    preset_rounding, preset_span = PRESETS[granularity or "seconds"]
    return preset_rounding, int(options.get("bucketMaxSpanSeconds", preset_span))


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def plan_coll_mod(cmd: dict[str, Any], ts_options: dict[str, Any], *, on_buckets_namespace: bool = False) -> CollModPlan:
    """Validate a collMod addressed to a time-series collection; raise MongoError on bad input. Its
    fields are checked against the one field table (``check_command``: 40415 unknown, 14 wrong type),
    then what the table takes but a time-series collection refuses."""
    check_command(cmd, "collMod")
    for name in cmd:
        if name in _NOT_ON_TIMESERIES:
            raise MongoError(
                ErrorCode.InvalidOptions, f"option not supported on a time-series collection: {name}"
            )
        if name in _ONLY_ON_VIEWS:
            raise MongoError(ErrorCode.InvalidOptions, f"option only supported on a view: {name}")
        if name in ("cappedSize", "cappedMax"):
            raise MongoError(ErrorCode.InvalidOptions, "Collection must be capped.")

    index = parse_index_change(cmd["index"]) if "index" in cmd else None
    expire = parse_expire_after_seconds(cmd["expireAfterSeconds"]) if "expireAfterSeconds" in cmd else None
    new_options = None
    new_span = None
    if "timeseries" in cmd:
        if on_buckets_namespace:
            raise MongoError(
                ErrorCode.InvalidNamespace,
                "Cannot use collMod to modify the time-series options of a system.buckets collection; "
                "run it against the time-series collection instead",
            )
        new_options = transition_options(ts_options, cmd["timeseries"])
        if new_options == ts_options:
            new_options = None
        else:
            new_span = int(new_options["bucketMaxSpanSeconds"])
    return CollModPlan(timeseries=new_options, expire_after_seconds=expire, index=index, new_span=new_span)


def parse_expire_after_seconds(value: Any) -> int | str:
    """A collection-level ``expireAfterSeconds``: a non-negative number of seconds or ``"off"``."""
    if type(value) is str:
        if value != "off":
            raise MongoError(
                ErrorCode.InvalidOptions,
                "Invalid string value for the 'clusteredIndex::expireAfterSeconds' option. "
                f"Got: '{value}'. Accepted value is 'off'",
            )
        return value
    if not _is_number(value):
        raise MongoError(
            ErrorCode.TypeMismatch,
            f"BSON field 'collMod.expireAfterSeconds' is the wrong type '{type_name(value)}', "
            "expected types '[string, long]'",
        )
    return expire_seconds_of(value)


def parse_index_change(spec: Any) -> IndexChange:
    """``collMod.index`` on a time-series collection: parsed as on any collection
    (``core.coll_mod_index``), then only ``hidden`` may change (TTL/unique -> 72)."""
    change = parse_coll_mod_index(spec)
    if change.expire_after_seconds is not None:
        raise MongoError(
            ErrorCode.InvalidOptions,
            "TTL indexes are not supported for time-series collections. Please refer to the documentation "
            "and use the top-level 'expireAfterSeconds' option instead",
        )
    for option, value in (("prepareUnique", change.prepare_unique), ("unique", change.unique),
                          ("forceNonUnique", change.force_non_unique)):
        if value is not None:
            raise MongoError(
                ErrorCode.InvalidOptions, f"option not supported on a time-series collection: {option}"
            )
    return IndexChange(name=change.name, key_pattern=change.key_pattern, hidden=change.hidden)


def _parse_timeseries_mod(mod: Any) -> dict[str, Any]:
    if not isinstance(mod, dict):
        raise MongoError(
            ErrorCode.TypeMismatch,
            f"BSON field 'collMod.timeseries' is the wrong type '{type_name(mod)}', expected type 'object'",
        )
    for name, value in mod.items():
        if name not in _TIMESERIES_FIELDS:
            raise MongoError(
                ErrorCode.IDLUnknownField, f"BSON field 'collMod.timeseries.{name}' is an unknown field."
            )
        if name == "granularity":
            if type(value) is not str:
                raise MongoError(
                    ErrorCode.TypeMismatch,
                    f"BSON field 'collMod.timeseries.granularity' is the wrong type '{type_name(value)}', "
                    "expected type 'string'",
                )
            if value not in PRESETS:
                raise MongoError(
                    ErrorCode.BadValue,
                    f"Enumeration value '{value}' for field 'collMod.timeseries.granularity' is not a valid value.",
                )
        else:
            if not _is_number(value):
                raise MongoError(
                    ErrorCode.TypeMismatch,
                    f"BSON field 'collMod.timeseries.{name}' is the wrong type '{type_name(value)}', "
                    "expected type 'int'",
                )
            if value < 1:
                raise MongoError(
                    IDL_OUT_OF_RANGE,
                    f"BSON field 'collMod.timeseries.{name}' value must be >= 1, actual value '{value}'",
                )
            if value > MAX_BUCKET_SECONDS:
                raise MongoError(
                    IDL_OUT_OF_RANGE,
                    f"BSON field 'collMod.timeseries.{name}' value must be <= {MAX_BUCKET_SECONDS}, actual value '{value}'",
                )
    return mod


def transition_options(current: dict[str, Any], mod: Any) -> dict[str, Any]:
    """The stored timeseries options after applying ``collMod.timeseries`` (72 on a bad transition)."""
    mod = _parse_timeseries_mod(mod)
    if not mod:
        return current
    granularity = mod.get("granularity")
    span = mod.get("bucketMaxSpanSeconds")
    rounding = mod.get("bucketRoundingSeconds")
    cur_rounding, cur_span = rounding_and_span(current)
    base = {k: v for k, v in current.items() if k not in _TIMESERIES_FIELDS}

    if granularity is not None:
        preset_rounding, preset_span = PRESETS[granularity]
        if rounding is not None:
            raise MongoError(
                ErrorCode.InvalidOptions,
                "Timeseries 'bucketRoundingSeconds' is not configurable alongside the granularity parameter",
            )
        if span is not None and int(span) != preset_span:
            raise MongoError(
                ErrorCode.InvalidOptions,
                "Timeseries 'bucketMaxSpanSeconds' is not configurable to a value other than the default for "
                "the provided granularity",
            )
        current_granularity = current.get("granularity")
        if current_granularity is not None:
            if _GRANULARITY_RANK[granularity] < _GRANULARITY_RANK[current_granularity]:
                raise MongoError(ErrorCode.InvalidOptions, _TRANSITION_MESSAGE)
        elif preset_rounding < cur_rounding or preset_span < cur_span:
            raise MongoError(ErrorCode.InvalidOptions, _TRANSITION_MESSAGE)
        if current_granularity == granularity:
            return current
        return {**base, "granularity": granularity, "bucketMaxSpanSeconds": preset_span}

    if (span is None) != (rounding is None):
        raise MongoError(
            ErrorCode.InvalidOptions,
            "Timeseries 'bucketMaxSpanSeconds' and 'bucketRoundingSeconds' need to be set alongside each other",
        )
    span, rounding = int(span), int(rounding)
    if span != rounding:
        raise MongoError(
            ErrorCode.InvalidOptions,
            "Timeseries 'bucketRoundingSeconds' needs to be equal to 'bucketMaxSpanSeconds'",
        )
    if span < cur_span:
        raise MongoError(
            ErrorCode.InvalidOptions,
            "Timeseries 'bucketMaxSpanSeconds' needs to be equal or greater to transition",
        )
    if rounding < cur_rounding:
        raise MongoError(
            ErrorCode.InvalidOptions,
            "Timeseries 'bucketRoundingSeconds' needs to be equal or greater to transition",
        )
    if span == cur_span and rounding == cur_rounding and current.get("granularity") is None:
        return current
    return {**base, "bucketRoundingSeconds": rounding, "bucketMaxSpanSeconds": span}


def with_new_span(pipeline: list[dict[str, Any]], new_span: int) -> list[dict[str, Any]]:
    """The view pipeline with ``$_internalUnpackBucket.bucketMaxSpanSeconds`` set to ``new_span``."""
    out = []
    for stage in pipeline:
        if "$_internalUnpackBucket" in stage:
            spec = dict(stage["$_internalUnpackBucket"])
            spec["bucketMaxSpanSeconds"] = new_span
            stage = {"$_internalUnpackBucket": spec}
        out.append(stage)
    return out

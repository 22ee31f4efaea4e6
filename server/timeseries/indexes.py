"""User index specs on a time-series view <-> index specs on ``system.buckets.<c>``.

Pure.

A time-series collection has no per-measurement index: every index lives on the buckets collection
and indexes whole buckets. This module is the one place that knows the translation (spec §7):

- time field ``t: 1``  -> ``{"control.min.t": 1, "control.max.t": 1}``;
  ``t: -1`` -> ``{"control.max.t": -1, "control.min.t": -1}``;
- meta field ``m[.x]`` -> ``meta[.x]`` with any index type;
- measurement field ``f: ±1`` -> the same control min/max pair as the time field;
  ``f: "2dsphere"`` -> ``{"data.f": "2dsphere_bucket"}``;
- compound specs element by element, in order;
- ``partialFilterExpression`` rewritten to a bucket-level predicate by the one derivation of query
  bucket filters (``filters.derive``, loose: a bucket is indexed when it *may* hold a matching
  measurement), under mongod's createIndex policy: a predicate on the time or a measurement field with
  no bucket-level form is refused (5916301);
- a TTL index (6.3+) is only ``{t: ±1}`` with a meta-only partial filter; its bucket key is
  ``{"control.min.t": ±1}``.

Invariant: a bucket index built from a user spec with a measurement field or a
``partialFilterExpression`` carries the user's spec as ``originalSpec`` (one on time and meta only does
not, as mongod: its key maps back); listIndexes on the view shows ``originalSpec`` (with the bucket
index's current ``hidden`` / ``expireAfterSeconds`` overlaid, since collMod changes those on the
bucket index). Bucket indexes that cannot be mapped back are omitted from the view's listIndexes.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable
from functools import partial
from typing import Any

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query.geo_keys import bucket_point, is_empty_geo
from tidemark.query.match_parse import parse_filter
from tidemark.query.paths import get_path_values
from tidemark.query.plan import check_hint_type
from tidemark.query.values import MISSING
from tidemark.timeseries.filters import BucketFilter, Ineligible, derive

_CONTROL_MIN = "control.min."
_CONTROL_MAX = "control.max."
_BUCKET_2DSPHERE = "2dsphere_bucket"

# Options of a user index spec that are carried unchanged onto the bucket index.
_PASS_THROUGH = (
    "name",
    "hidden",
    "collation",
    "sparse",
    "v",
    "expireAfterSeconds",
    "2dsphereIndexVersion",
    "bits",
    "min",
    "max",
    "wildcardProjection",
    "storageEngine",
)


def meta_subpath(path: str, meta_field: str | None) -> str | None:
    """``<meta>[.x]`` -> ``meta[.x]``; None when ``path`` is not the meta field or under it."""
    if meta_field is None:
        return None
    if path == meta_field:
        return "meta"
    if path.startswith(meta_field + "."):
        return "meta" + path[len(meta_field) :]
    return None


# --------------------------------------------------------------------------------------------------
# mongod-style rendering of specs inside error messages
# --------------------------------------------------------------------------------------------------


def mongo_repr(value: Any) -> str:
    """Render ``value`` like mongod's ``BSONObj::toString`` (``{ a: 1, b: "x" }``)."""
    if isinstance(value, dict):
        if not value:
            return "{}"
        return "{ " + ", ".join(f"{k}: {mongo_repr(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list):
        return "[ " + ", ".join(mongo_repr(v) for v in value) + " ]" if value else "[]"
    if type(value) is str:
        return '"' + value + '"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, _dt.datetime):
        return "new Date(" + str(int((value - _dt.datetime(1970, 1, 1)).total_seconds() * 1000)) + ")"
    return str(value)


def _bad_spec(user_key: dict[str, Any], detail: str) -> MongoError:
    """CannotCreateIndex carrying the BadValue status text, as mongod's createIndexes reports it."""
    return MongoError(
        ErrorCode.CannotCreateIndex,
        f"BadValue: Invalid index spec for time-series collection: {mongo_repr(user_key)}. {detail}",
    )


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) or type(v).__name__ == "Decimal128"


def _direction(v: Any) -> int:
    try:
        return -1 if float(str(v) if type(v).__name__ == "Decimal128" else v) < 0 else 1
    except (TypeError, ValueError):
        return 1


# --------------------------------------------------------------------------------------------------
# key patterns
# --------------------------------------------------------------------------------------------------


def to_bucket_key(user_key: Any, time_field: str, meta_field: str | None) -> dict[str, Any]:
    """Translate a user key pattern to the buckets key pattern (raises 67 / 72 / 2 like mongod)."""
    if not isinstance(user_key, dict):
        raise MongoError(ErrorCode.TypeMismatch, "The field 'key' must be an object")
    if not user_key:
        raise MongoError(ErrorCode.CannotCreateIndex, "BadValue: Empty object is not a valid index spec")
    out: dict[str, Any] = {}
    for field, value in user_key.items():
        elem = f"{field}: {mongo_repr(value)}"
        if field in ("$natural", "$hint") or field.startswith("$"):
            raise _bad_spec(user_key, f"Invalid index key field: {elem}")
        if value == "text":
            raise MongoError(
                ErrorCode.InvalidOptions, "Text indexes are not supported on time-series collections"
            )
        sub = meta_subpath(field, meta_field)
        if sub is not None:
            out[sub] = value
            continue
        if field == time_field:
            if not _is_number(value):
                raise _bad_spec(
                    user_key,
                    f"Indexes on the time field must be ascending or descending (numbers only): {elem}",
                )
            _add_min_max(out, field, value)
            continue
        if field.endswith(".$**"):
            # a measurement's control.min / control.max pair cannot hold a wildcard key (mongod: 67,
            # or 7246201 from its compound-wildcard check); the buckets index would index every path
            raise MongoError(ErrorCode.CannotCreateIndex, f"time-series wildcard indexes are not supported: {elem}")
        if _is_number(value):
            _add_min_max(out, field, value)
        elif value == "2dsphere":
            out["data." + field] = _BUCKET_2DSPHERE
        else:
            raise _bad_spec(
                user_key,
                "Indexes on measurement fields must be ascending or descending "
                f"(numbers only), or '2dsphere': {elem}",
            )
    return out


def _add_min_max(out: dict[str, Any], field: str, value: Any) -> None:
    if _direction(value) > 0:
        out[_CONTROL_MIN + field] = value
        out[_CONTROL_MAX + field] = value
    else:
        out[_CONTROL_MAX + field] = value
        out[_CONTROL_MIN + field] = value


def to_user_key(bucket_key: dict[str, Any], time_field: str, meta_field: str | None) -> dict[str, Any] | None:
    """Reverse of ``to_bucket_key``; None when the bucket key has no user-level meaning."""
    items = list(bucket_key.items())
    out: dict[str, Any] = {}
    i = 0
    while i < len(items):
        name, value = items[i]
        if meta_field is not None and (name == "meta" or name.startswith("meta.")):
            out[meta_field + name[4:]] = value
            i += 1
            continue
        if name.startswith("data.") and value == _BUCKET_2DSPHERE:
            out[name[5:]] = "2dsphere"
            i += 1
            continue
        for first, second in ((_CONTROL_MIN, _CONTROL_MAX), (_CONTROL_MAX, _CONTROL_MIN)):
            if not name.startswith(first) or not _is_number(value):
                continue
            field = name[len(first) :]
            ascending = first == _CONTROL_MIN
            if (_direction(value) > 0) != ascending:
                return None
            if i + 1 < len(items) and items[i + 1][0] == second + field and items[i + 1][1] == value:
                out[field] = value
                i += 2
                break
            if field == time_field and ascending and len(items) == 1:
                out[field] = value  # a TTL bucket key {"control.min.t": ±1}
                i += 1
                break
            return None
        else:
            return None
    return out


def default_index_specs(time_field: str, meta_field: str | None) -> list[dict[str, Any]]:
    """Bucket index specs ``create`` builds (spec §7.4): ``<meta>_1_<time>_1`` when there is a meta."""
    if meta_field is None:
        return []
    return [
        {
            "v": 2,
            "key": {"meta": 1, _CONTROL_MIN + time_field: 1, _CONTROL_MAX + time_field: 1},
            "name": f"{meta_field}_1_{time_field}_1",
        }
    ]


# --------------------------------------------------------------------------------------------------
# partial filters
# --------------------------------------------------------------------------------------------------

PARTIAL_REFUSED = 5916301  # mongod's IneligiblePredicatePolicy::kError


def bucket_partial_filter(expr: Any, time_field: str, meta_field: str | None, span_s: int,
                          control_collation: Any = None) -> BucketFilter:
    """The bucket filter of a ``partialFilterExpression``: ``filters.derive`` (the derivation of query
    bucket filters) with mongod's createIndex policy — a predicate on the time or a measurement field
    that has no bucket-level form is an error (5916301), and buckets whose min and max are of two
    types are not guarded for. Its ``mql`` is the buckets index's filter; ``exact``: only the meta
    field is named (what a TTL index requires). ``control_collation``: the collection's default."""
    if not isinstance(expr, dict):  # mongod reads it with BSONElement::Obj()
        raise MongoError(10065, "invalid parameter: expected an object (partialFilterExpression)")
    try:
        return derive(parse_filter(expr), time_field, meta_field, span_s, control_collation=control_collation,
                      refuse_ineligible=True, assume_no_mixed_schema=True)
    except Ineligible as refused:
        raise MongoError(PARTIAL_REFUSED,
                         "Error translating non-metadata time-series predicate to operate on buckets: "
                         f"{refused.reason}: {mongo_repr(refused.predicate)}") from None


# --------------------------------------------------------------------------------------------------
# whole specs
# --------------------------------------------------------------------------------------------------


def to_bucket_index_spec(user_spec: dict[str, Any], time_field: str, meta_field: str | None,
                         span_s: int = 3600, control_collation: Any = None) -> dict[str, Any]:
    """Validate one createIndexes entry and return the buckets index spec (with ``originalSpec``).
    ``span_s``: the collection's bucketMaxSpanSeconds, ``control_collation`` its default collation
    (``collation.Collation``; None = simple), both for a partial filter's bounds.

    Raises mongod's codes: unique/text -> 72, sparse on measurements -> 72, partial + collation -> 85,
    partial filter not on buckets -> 5916301, non-numeric time/measurement keys -> 67, TTL rules -> 72 / 67.
    """
    if not isinstance(user_spec, dict):
        raise MongoError(ErrorCode.TypeMismatch, "Each index spec must be an object")
    if "key" not in user_spec:
        raise MongoError(
            ErrorCode.FailedToParse, "The 'key' field is a required property of an index specification"
        )
    if user_spec.get("unique"):
        raise MongoError(
            ErrorCode.InvalidOptions, "Unique indexes are not supported on time-series collections"
        )
    user_key = user_spec["key"]
    bucket_key = to_bucket_key(user_key, time_field, meta_field)
    partial = user_spec.get("partialFilterExpression")
    if partial is not None and user_spec.get("collation") is not None:
        raise MongoError(
            ErrorCode.IndexOptionsConflict,
            "On a time-series collection, partialFilterExpression and collation arguments are incompatible",
        )
    if user_spec.get("sparse") and _has_measurement_field(user_key, time_field, meta_field):
        raise MongoError(
            ErrorCode.InvalidOptions, "Sparse indexes are not supported on time-series measurements"
        )
    derived: BucketFilter | None = None
    if "expireAfterSeconds" in user_spec:
        if partial is not None:
            derived = bucket_partial_filter(partial, time_field, meta_field, span_s, control_collation)
        bucket_key = _ttl_bucket_key(user_spec, user_key, time_field, derived is not None and derived.exact)
    spec: dict[str, Any] = {"v": 2, "key": bucket_key}
    for name in _PASS_THROUGH:
        if name in user_spec and name not in ("v", "key"):
            spec[name] = user_spec[name]
    if "name" not in spec:
        raise MongoError(
            ErrorCode.FailedToParse, "The 'name' field is a required property of an index specification"
        )
    if partial is not None:
        if derived is None:
            derived = bucket_partial_filter(partial, time_field, meta_field, span_s, control_collation)
        spec["partialFilterExpression"] = derived.mql
    if partial is not None or _has_measurement_field(user_key, time_field, meta_field):
        # like mongod (shouldIncludeOriginalSpec): an index on time and meta only stays one a 5.0
        # server reads, and listIndexes maps its key back
        spec["originalSpec"] = _original_spec(user_spec)
    return spec


def _original_spec(user_spec: dict[str, Any]) -> dict[str, Any]:
    original = {"v": 2, "key": user_spec["key"], "name": user_spec.get("name")}
    for name, value in user_spec.items():
        if name not in ("v", "key", "name", "ns", "originalSpec"):
            original[name] = value
    return original


def _has_measurement_field(user_key: dict[str, Any], time_field: str, meta_field: str | None) -> bool:
    return any(f != time_field and meta_subpath(f, meta_field) is None for f in user_key)


def _ttl_bucket_key(user_spec: dict[str, Any], user_key: dict[str, Any], time_field: str,
                    partial_on_meta: bool) -> dict[str, Any]:
    if not partial_on_meta:
        raise MongoError(
            ErrorCode.InvalidOptions,
            "TTL indexes on time-series collections require a partialFilterExpression on the metaField",
        )
    if len(user_key) > 1:
        raise MongoError(
            ErrorCode.CannotCreateIndex,
            "TTL indexes are single-field indexes, compound indexes do not support TTL. Index spec: "
            + mongo_repr(user_spec),
        )
    ((field, value),) = user_key.items()
    if field != time_field:
        raise MongoError(
            ErrorCode.InvalidOptions,
            "TTL indexes on non-time fields are not supported on time-series collections",
        )
    return {_CONTROL_MIN + field: value}


def to_user_index_spec(bucket_spec: dict[str, Any], time_field: str, meta_field: str | None) -> dict[str, Any] | None:
    """The spec listIndexes shows on the view for one buckets index, or None to omit it."""
    original = bucket_spec.get("originalSpec")
    if isinstance(original, dict):
        out = dict(original)
        for live in ("hidden", "expireAfterSeconds"):
            if live in bucket_spec:
                out[live] = bucket_spec[live]
            elif live == "hidden":
                out.pop(live, None)
        return out
    user_key = to_user_key(bucket_spec.get("key", {}), time_field, meta_field)
    if user_key is None:
        return None
    out = {}
    for name, value in bucket_spec.items():
        if name == "key":
            out["key"] = user_key
        elif name not in ("ns", "partialFilterExpression"):
            out[name] = value
    return out


def user_index_specs(bucket_specs: Any, time_field: str, meta_field: str | None) -> list[dict[str, Any]]:
    """The indexes of a buckets collection as the view shows them (listIndexes, ``$indexStats``), in
    creation order; those with no user form are left out."""
    out = []
    for spec in bucket_specs:
        user = to_user_index_spec(spec, time_field, meta_field)
        if user is not None:
            out.append(user)
    return out


# --------------------------------------------------------------------------------------------------
# naming an index: dropIndexes, hint, collMod index
# --------------------------------------------------------------------------------------------------


def find_bucket_index(
    bucket_specs: list[dict[str, Any]], ref: Any, time_field: str, meta_field: str | None
) -> dict[str, Any] | None:
    """The buckets index named by ``ref``: an index name, or a *user* key pattern (translated).

    A bucket key pattern matches too (hints written against the buckets collection keep working).
    """
    if type(ref) is str:
        return next((s for s in bucket_specs if s.get("name") == ref), None)
    if not isinstance(ref, dict):
        return None
    for spec in bucket_specs:
        user = to_user_index_spec(spec, time_field, meta_field)
        if user is not None and _same_key(user.get("key"), ref):
            return spec
    for spec in bucket_specs:
        if _same_key(spec.get("key"), ref):
            return spec
    return None


def same_key_pattern(a: Any, b: Any) -> bool:
    """Two key patterns are the same index key: same fields in the same order, same values."""
    return isinstance(a, dict) and isinstance(b, dict) and list(a.items()) == list(b.items())


def _same_key(a: Any, b: Any) -> bool:
    if not isinstance(a, dict) or not isinstance(b, dict) or list(a) != list(b):
        return False
    for x, y in zip(a.values(), b.values(), strict=True):
        if _is_number(x) and _is_number(y):
            if _direction(x) != _direction(y):
                return False
        elif x != y:
            return False
    return True


def translate_hint(hint: Any, bucket_specs: list[dict[str, Any]], time_field: str, meta_field: str | None) -> Any:
    """A view-level hint (name or user key pattern) as a buckets-level hint (the index name).

    ``$natural`` hints pass through. A hint neither a string nor an object -> 9 FailedToParse; unknown or
    hidden indexes -> BadValue like mongod.
    """
    check_hint_type(hint)  # before the index lookup, as the command's parse does in mongod
    if isinstance(hint, dict) and "$natural" in hint:
        return hint
    spec = find_bucket_index(bucket_specs, hint, time_field, meta_field)
    if spec is None or spec.get("hidden"):
        raise MongoError(ErrorCode.BadValue, "hint provided does not correspond to an existing index")
    return spec["name"]


# --------------------------------------------------------------------------------------------------
# what bucket indexes require of measurements (mongod: validateDocumentCommon, getS2BucketGeoKeys)
# --------------------------------------------------------------------------------------------------


class MeasurementRules:
    """What a collection's bucket indexes require of the measurements they index — checked when the
    insert is answered, because the bucket document that the indexes key is written in full later (close,
    checkpoint, restart): a refusal then could not reach the client, and every later write of the bucket
    would fail again.

    - ``array_paths``: measurement fields under an ascending/descending index (``control.min/max.<f>``,
      the time field aside): no array on the path (5930501 "Indexed measurement field contains an
      array value"), since a bucket's min/max cannot bound an array's elements;
    - ``point_paths``: measurement fields under a ``2dsphere`` index (``data.<f>: "2dsphere_bucket"``):
      a Point or a legacy pair, or no geo value (183934 / 183493, geo_keys.bucket_point);
    - every meta index's keys of a one-measurement bucket (``_probe``: the keyers of the write path itself)
      must be extractable (parallel arrays 171, geo 16755, hashed arrays 16766 ...), probed once per distinct
      meta of an insert (``meta_error``) when an index may refuse a meta at all (a special kind, or two meta
      paths). Keys have no size limit (like mongod since 4.2: storage keeps long keys, storage/longkeys.py),
      so a meta under a single ascending/descending path is never refused.

    ``measurement_error`` checks one measurement (the insert path); ``check_bucket`` a bucket document
    (index builds, updates); ``column_batch_error`` a column batch (its distinct metas; its typed columns
    hold fixed-width scalars only).
    """

    __slots__ = ("array_paths", "point_paths", "meta_specs", "meta_always", "time_field", "meta_verdicts")

    def __init__(self, array_paths: tuple[str, ...], point_paths: tuple[str, ...],
                 meta_specs: tuple[dict[str, Any], ...] = (), meta_always: bool = False, time_field: str = ""):
        self.array_paths, self.point_paths = array_paths, point_paths
        self.meta_specs = meta_specs  # bucket indexes reading ``meta``
        self.meta_always = meta_always  # one of them may refuse a meta (special kind, two meta paths)
        self.time_field = time_field
        # ``meta_verdict``'s memory: (encoding, bytes of a meta) -> its meta_error; bounded (cleared when full)
        self.meta_verdicts: dict[tuple[Any, bytes], MongoError | None] = {}

    @property
    def checks_measurements(self) -> bool:
        return bool(self.array_paths or self.point_paths)

    def measurement_error(self, doc: dict[str, Any]) -> MongoError | None:
        try:
            for path in self.array_paths:
                if _array_on_path(doc, path.split(".")):
                    return _array_error()
            for path in self.point_paths:
                for value in get_path_values(doc, path):
                    if value is not MISSING and not is_empty_geo(value):
                        bucket_point(value)
        except MongoError as e:
            return e
        return None

    @property
    def meta_needs_check(self) -> bool:
        """Whether a meta may break an index: else ``meta_error`` is skipped."""
        return bool(self.meta_specs) and self.meta_always

    def meta_error(self, meta: Any) -> MongoError | None:
        """The keys of every index reading ``meta`` for a bucket of that meta (see the class)."""
        bounds = {self.time_field: _PROBE_TIME}
        try:
            self._probe(self.meta_specs, {"control": {"min": bounds, "max": bounds}, "meta": meta})
        except MongoError as e:
            return e
        return None

    def meta_verdict(self, encoding: Any, raw: bytes, meta: Callable[[], Any]) -> MongoError | None:
        """``meta_error`` of the meta ``raw`` encodes (``encoding`` names how: a raw value's BSON type, or None
        for ``encode({"": meta})``), remembered per distinct meta: a workload's metas recur (a TSBS load
        sends its 100 hosts' tags in every insert) and each probe builds every meta index's keys (measured:
        probing every distinct meta of every insert was ~25 % of a TSBS load's server CPU). The rules
        object lives as long as the collection's index list, so a new index starts a new memory."""
        verdicts = self.meta_verdicts
        key = (encoding, raw)
        if key in verdicts:
            return verdicts[key]
        error = self.meta_error(meta())
        if len(verdicts) >= _META_VERDICTS_MAX:
            verdicts.clear()
        verdicts[key] = error
        return error

    def column_batch_error(self, metas: list[bytes] | None, meta_kind: int | None) -> bool:
        """Whether a column batch holds a value the checks must see one document at a time (the per-document
        parse then reports it): a distinct raw meta value that breaks an index."""
        if metas is not None and self.meta_needs_check:
            for raw in metas:
                if self.meta_verdict(meta_kind, raw, partial(_raw_value, meta_kind, raw)) is not None:
                    return True
        return False

    @staticmethod
    def _probe(specs: tuple[dict[str, Any], ...], bucket: dict[str, Any]) -> None:
        """Compute ``specs``' keys of ``bucket``: a key that cannot be extracted raises its MongoError."""
        from tidemark.query.index_keys import keyer_for

        for spec in specs:
            keyer_for(spec).entries_multikey(bucket)

    def check_bucket(self, bucket: dict[str, Any]) -> None:
        data = bucket.get("data")
        if not isinstance(data, dict):
            return
        for path in self.array_paths:
            first, *rest = path.split(".")
            column = data.get(first)
            if isinstance(column, dict) and any(_array_on_path(v, rest) for v in column.values()):
                raise _array_error()
        # the 2dsphere_bucket keys refuse what is not a point (index_kinds.bucket_values): checked
        # there for every write that computes them


_PROBE_TIME = _dt.datetime(1970, 1, 1)
_META_VERDICTS_MAX = 16_384  # distinct metas remembered per index list (a series explosion clears it often)


def _raw_value(kind: int | None, raw: bytes) -> Any:
    from tidemark.protocol.codec import decode

    element = bytes((kind or 0,)) + b"\x00" + raw
    return decode((len(element) + 5).to_bytes(4, "little") + element + b"\x00")[""]


def _array_error() -> MongoError:
    return MongoError(5930501, "Indexed measurement field contains an array value")


def _array_on_path(value: Any, parts: list[str]) -> bool:
    """An array at ``value`` or anywhere down ``parts``."""
    while True:
        if isinstance(value, list):
            return True
        if not parts or not isinstance(value, dict) or parts[0] not in value:
            return False
        value, parts = value[parts[0]], parts[1:]


_RULES_CACHE: dict[int, tuple[Any, MeasurementRules | None]] = {}


def measurement_rules(bucket_specs: Any, time_field: str) -> MeasurementRules | None:
    """The rules of a buckets collection's indexes (None when no index constrains measurements);
    cached by the identity of the catalog's index tuple."""
    hit = _RULES_CACHE.get(id(bucket_specs))
    if hit is not None and hit[0] is bucket_specs:
        return hit[1]
    arrays: list[str] = []
    points: list[str] = []
    meta_specs: list[dict[str, Any]] = []
    meta_always = False
    for spec in bucket_specs:
        key = spec.get("key", {})
        meta_paths = [name for name in key if name == "meta" or name.startswith("meta.")]
        if meta_paths:
            meta_specs.append(spec)
            meta_always = meta_always or len(meta_paths) > 1 or any(type(key[p]) is str for p in meta_paths)
        for name, value in key.items():
            if value == _BUCKET_2DSPHERE and name.startswith("data."):
                points.append(name[len("data."):])
            elif _is_number(value):
                for prefix in (_CONTROL_MIN, _CONTROL_MAX):
                    field = name[len(prefix):] if name.startswith(prefix) else None
                    if field is not None and field != time_field and field not in arrays:
                        arrays.append(field)
    rules = MeasurementRules(tuple(arrays), tuple(dict.fromkeys(points)), tuple(meta_specs), meta_always,
                             time_field) if arrays or points or meta_always else None
    if isinstance(bucket_specs, tuple):
        if len(_RULES_CACHE) > 1024:
            _RULES_CACHE.clear()
        _RULES_CACHE[id(bucket_specs)] = (bucket_specs, rules)
    return rules

"""Collation: THE one place that compares strings under a collation (ICU, via PyICU).

- ``parse_collation(spec, field="collation") -> Collation | None`` validates a user collation document
  like mongod 7.0 and returns ``None`` for the simple (binary) collation, so callers choose their
  comparison once per command: ``None`` means the plain ``values`` functions, at no extra cost.
- ``Collation.spec`` is the fully expanded spec mongod prints (``locale, caseLevel, caseFirst,
  strength, numericOrdering, alternate, maxVariable, normalization, backwards, version``).
- ``Collation.string_key(s)`` is the ICU sort key (bytes): ``a < b`` under the collation exactly when
  ``string_key(a) < string_key(b)``, and equal keys mean collation-equal strings.
- ``Collation.sort_key(v)`` / ``compare`` / ``equal``: BSON order (``values.sort_key_with``) with every
  string inside ``v`` (also in sub-documents and arrays; never field names) compared by its key.
- ``sort_key_for(c)``, ``compare_for(c)``, ``equal_for(c)``: the function to use for a collation
  (the ``values`` function when ``c`` is None).

Collations are immutable and shared (a small cache by spec): ICU collators are safe for concurrent
const use. The reported ``version`` is "57.1", the ICU version mongod 7.0 reports, so specs copied
from mongod (and back) are accepted; the ordering itself is that of the bundled ICU.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Mapping
from typing import Any

import icu

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query.value_repr import bson_repr
from tidemark.query.values import bson_type_name, sort_key_with
from tidemark.query.values import compare as simple_compare
from tidemark.query.values import equal as simple_equal
from tidemark.query.values import sort_key as simple_sort_key

__all__ = ["Collation", "parse_collation", "sort_key_for", "compare_for", "equal_for", "VERSION", "same"]

VERSION = "57.1"
_FIELDS = ("locale", "caseLevel", "caseFirst", "strength", "numericOrdering", "alternate", "maxVariable",
           "normalization", "backwards", "version")
_BOOL_FIELDS = ("caseLevel", "numericOrdering", "normalization", "backwards")
_ENUMS = {
    "caseFirst": ("upper", "lower", "off"),
    "alternate": ("non-ignorable", "shifted"),
    "maxVariable": ("punct", "space"),
}
_A = icu.UCollAttribute
_V = icu.UCollAttributeValue
_BOOL_ATTRS = {"caseLevel": _A.CASE_LEVEL, "numericOrdering": _A.NUMERIC_COLLATION,
               "normalization": _A.NORMALIZATION_MODE, "backwards": _A.FRENCH_COLLATION}
_STRENGTHS = {1: _V.PRIMARY, 2: _V.SECONDARY, 3: _V.TERTIARY, 4: _V.QUATERNARY, 5: _V.IDENTICAL}
_CASE_FIRST = {"upper": _V.UPPER_FIRST, "lower": _V.LOWER_FIRST, "off": _V.OFF}
_KEY_CACHE_LIMIT = 100_000  # strings whose ICU key one collation remembers


class Collation:
    """A non-simple collation: its expanded spec and its comparison functions."""

    __slots__ = ("spec", "_collator", "_keys", "sort_key", "__weakref__")

    def __init__(self, spec: dict, collator: Any):
        self.spec = spec
        self._collator = collator
        self._keys: dict[str, bytes] = {}
        self.sort_key: Callable[[Any], tuple] = functools.partial(sort_key_with, skey=self.string_key)

    def string_key(self, s: str) -> bytes:
        key = self._keys.get(s)
        if key is None:
            key = self._collator.getSortKey(s)
            if len(self._keys) < _KEY_CACHE_LIMIT:
                self._keys[s] = key
        return key

    def compare(self, a: Any, b: Any) -> int:
        ka, kb = self.sort_key(a), self.sort_key(b)
        return (ka > kb) - (ka < kb)

    def equal(self, a: Any, b: Any) -> bool:
        return self.sort_key(a) == self.sort_key(b)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Collation) and other.spec == self.spec

    def __hash__(self) -> int:
        return hash(tuple(self.spec.items()))

    def __repr__(self) -> str:
        return f"Collation({bson_repr(self.spec)})"


def sort_key_for(c: Collation | None) -> Callable[[Any], tuple]:
    return simple_sort_key if c is None else c.sort_key


def compare_for(c: Collation | None) -> Callable[[Any, Any], int]:
    return simple_compare if c is None else c.compare


def equal_for(c: Collation | None) -> Callable[[Any, Any], bool]:
    return simple_equal if c is None else c.equal


def same(a: Collation | None, b: Collation | None) -> bool:
    """True when two collations (None = simple) order every string alike."""
    if a is None or b is None:
        return a is b
    return a.spec == b.spec


_cache: dict[tuple, Collation | None] = {}
_cache_lock = threading.Lock()


def parse_collation(spec: Any, field: str = "collation") -> Collation | None:
    """Validate ``spec`` like mongod; None for the simple collation. ``field`` names it in errors."""
    if not isinstance(spec, Mapping):
        raise MongoError(ErrorCode.TypeMismatch,
                         f"BSON field '{field}' is the wrong type '{bson_type_name(spec)}', expected type 'object'")
    try:
        cache_key = tuple((k, type(v), v) for k, v in spec.items())
        hash(cache_key)
    except TypeError:
        cache_key = None
    if cache_key is not None:
        hit = _cache.get(cache_key, _cache)
        if hit is not _cache:
            return hit  # type: ignore[return-value]
    result = _build(dict(spec))
    if cache_key is not None:
        with _cache_lock:
            if len(_cache) > 256:
                _cache.clear()
            _cache[cache_key] = result
    return result


def _build(spec: dict) -> Collation | None:
    shown = bson_repr(spec)
    # mongod parses the spec with its IDL parser first: field by field in the document's order (an
    # unknown field, a wrong type, an enum or range violation: the first one met fails), and only then
    # the required locale; the checks below (null byte, simple, ICU locale, version) come after.
    values = _typed_values(spec)
    if "locale" not in spec:
        raise MongoError(ErrorCode.IDLFailedToParse, "BSON field 'collation.locale' is missing but a required field")
    locale = spec["locale"]
    if "\0" in locale:
        raise MongoError(ErrorCode.BadValue, f"Field 'locale' cannot contain null byte. Collation spec: {shown}")
    if locale == "simple":
        if len(spec) > 1:
            raise MongoError(ErrorCode.FailedToParse,
                             f"If locale=simple, no other fields should be present in: {shown}")
        return None
    if locale == "":
        raise MongoError(ErrorCode.BadValue, f"Field 'locale' cannot be the empty string in: {shown}")
    user_locale = icu.Locale.createFromName(locale)
    if user_locale.isBogus():
        raise MongoError(ErrorCode.BadValue, f"Field 'locale' is not valid in: {shown}")
    _validate_locale(locale, user_locale, shown)
    strength = values.get("strength")
    if strength is not None and strength not in _STRENGTHS:
        raise MongoError(ErrorCode.FailedToParse, f"Field 'strength' must be an integer 1 through 5. Got: {strength}")
    version = values.get("version")
    if version is not None and version != VERSION:
        raise MongoError(ErrorCode.IncompatibleCollationVersion,
                         f"Requested collation version {version} but the only available collator version was "
                         f"{VERSION}. Requested collation spec: {shown}")
    name = user_locale.getName()
    icu_name = name
    if values.get("maxVariable") == "space":
        # PyICU has no setMaxVariable; ICU reads the same setting from the "kv" locale keyword.
        icu_name = name + (";" if "@" in name else "@") + "kv=space"
    collator = icu.Collator.createInstance(icu.Locale.createFromName(icu_name))
    for field, attr in _BOOL_ATTRS.items():
        if field in values:
            collator.setAttribute(attr, _V.ON if values[field] else _V.OFF)
    if "caseFirst" in values:
        collator.setAttribute(_A.CASE_FIRST, _CASE_FIRST[values["caseFirst"]])
    if strength is not None:
        collator.setAttribute(_A.STRENGTH, _STRENGTHS[strength])
    if "alternate" in values:
        collator.setAttribute(_A.ALTERNATE_HANDLING,
                              _V.SHIFTED if values["alternate"] == "shifted" else _V.NON_IGNORABLE)
    return Collation(_expanded(name, collator, values), collator)


def _typed_values(spec: dict) -> dict:
    """The IDL pass over ``spec`` in field order: each field known and of its type (enums and the
    strength range checked as they are met); the typed values but the locale."""
    out: dict = {}
    for name, v in spec.items():
        if name not in _FIELDS:
            raise MongoError(ErrorCode.IDLUnknownField, f"BSON field 'collation.{name}' is an unknown field.")
        if name == "locale":
            if type(v) is not str:
                raise _wrong_type("locale", v, "string")
            continue
        if name in _BOOL_FIELDS:
            if type(v) is not bool:
                raise _wrong_type(name, v, "bool")
            out[name] = v
        elif name in _ENUMS:
            if type(v) is not str:
                raise _wrong_type(name, v, "string")
            if v not in _ENUMS[name]:
                raise MongoError(ErrorCode.BadValue,
                                 f"Enumeration value '{v}' for field 'collation.{name}' is not a valid value.")
            out[name] = v
        elif name == "strength":
            out[name] = _strength(v)
        elif name == "version":
            if type(v) is not str:
                raise _wrong_type(name, v, "string")
            out[name] = v
    return out


def _strength(v: Any) -> int:
    """The strength as mongod's IDL reads a ``safeInt`` (``BSONElement::safeNumberInt``): any number;
    NaN is 0, a double truncates toward zero, a decimal rounds half to even, and out-of-range values
    clamp to the int64 and then the int32 range; then the IDL validator (0 <= strength <= 5)."""
    from decimal import ROUND_HALF_EVEN

    from bson.decimal128 import Decimal128
    from bson.int64 import Int64

    if type(v) is bool or not isinstance(v, (int, float, Int64, Decimal128)):
        raise MongoError(ErrorCode.TypeMismatch,
                         f"BSON field 'collation.strength' is the wrong type '{bson_type_name(v)}', "
                         "expected types '[long, int, decimal, double]'")
    if isinstance(v, Decimal128):
        d = v.to_decimal()
        n = 0 if d.is_nan() else _INT64_MAX if d > _INT64_MAX else _INT64_MIN if d < _INT64_MIN \
            else int(d.to_integral_value(rounding=ROUND_HALF_EVEN))
    elif isinstance(v, float):
        n = 0 if v != v else _INT64_MAX if v >= 2.0**63 else _INT64_MIN if v < -(2.0**63) else int(v)
    else:
        n = int(v)
    n = min(max(n, -(2**31)), 2**31 - 1)
    if n > 5:
        raise MongoError(51024, f"BSON field 'strength' value must be <= 5, actual value '{n}'")
    if n < 0:
        raise MongoError(51024, f"BSON field 'strength' value must be >= 0, actual value '{n}'")
    return n


_INT64_MAX, _INT64_MIN = 2**63 - 1, -(2**63)


def _wrong_type(name: str, v: Any, expected: str) -> MongoError:
    return MongoError(ErrorCode.TypeMismatch,
                      f"BSON field 'collation.{name}' is the wrong type '{bson_type_name(v)}', "
                      f"expected type '{expected}'")


def _validate_locale(original: str, user_locale: Any, shown: str) -> None:
    """mongod accepts a locale only when ICU has data for every part of it, spelled canonically
    (ICU's "valid locale" of the collator equals the name given).

    ICU's own answer (``Collator.getLocale(VALID_LOCALE)``) cannot be asked: ICU caches collators by
    the data they load and keeps the valid locale of the first request, so after ``zh_Hant`` (whose
    default collation is stroke) ``zh@collation=stroke`` reports ``zh_Hant`` and would be refused,
    depending on what ran before. The same rule is computed from the data ICU lists instead: the base
    name is a locale with collation data, the only keyword is ``collation`` and names a collation type
    of that locale (the locale's default type included, which ICU drops from the valid name).
    """
    keywords = set(user_locale.createKeywords() or ())
    base = user_locale.getBaseName()
    keyword = user_locale.getKeywordValue("collation")
    if original == user_locale.getName() and base in _collation_locales() and keywords <= {"collation"} \
            and (not keyword or keyword in _collation_types(base)):
        return
    # (the suggestion, like mongod's, is the locale ICU falls back to)
    valid = icu.Collator.createInstance(user_locale).getLocale(icu.ULocDataLocaleType.VALID_LOCALE).getName()
    message = f"Field 'locale' is invalid in: {shown}"
    if valid and valid != "root":
        message += f". Did you mean '{valid}'?"
    raise MongoError(ErrorCode.BadValue, message)


@functools.cache
def _collation_locales() -> frozenset[str]:
    """The locales ICU has collation data for (``en_US``, ``fr_CA``, ``zh_Hant`` ...)."""
    return frozenset(loc.getName() for loc in icu.Collator.getAvailableLocales().values())


@functools.lru_cache(maxsize=512)
def _collation_types(base: str) -> frozenset[str]:
    """The collation types (``phonebook``, ``stroke``, ``search`` ...) ICU has for a locale."""
    return frozenset(icu.Collator.getKeywordValuesForLocale("collation", icu.Locale(base), False))


def _expanded(name: str, collator: Any, values: dict) -> dict:
    def flag(attr: Any) -> bool:
        return collator.getAttribute(attr) == _V.ON

    case_first = collator.getAttribute(_A.CASE_FIRST)
    strength = collator.getAttribute(_A.STRENGTH)
    return {
        "locale": name,
        "caseLevel": flag(_A.CASE_LEVEL),
        "caseFirst": {_V.UPPER_FIRST: "upper", _V.LOWER_FIRST: "lower"}.get(case_first, "off"),
        "strength": {v: k for k, v in _STRENGTHS.items()}.get(strength, 3),
        "numericOrdering": flag(_A.NUMERIC_COLLATION),
        "alternate": "shifted" if collator.getAttribute(_A.ALTERNATE_HANDLING) == _V.SHIFTED else "non-ignorable",
        "maxVariable": values.get("maxVariable", "punct"),
        "normalization": flag(_A.NORMALIZATION_MODE),
        "backwards": flag(_A.FRENCH_COLLATION),
        "version": VERSION,
    }

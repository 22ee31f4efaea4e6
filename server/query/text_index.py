"""Text indexes: the stored spec (mongod's ``fixSpec``), the text of a document, its index terms and
their scores (pure).

A user key ``{title: "text", body: "text"}`` (optionally with ascending/descending fields before and
after the text fields) is stored as ``{_fts: "text", _ftsx: 1}`` in place of the text fields, with
``weights`` ({field: weight}, ``$**`` for every string field), ``default_language`` ("english"),
``language_override`` ("language") and ``textIndexVersion: 3`` — what listIndexes shows on mongod.
``textIndexVersion: 2`` (mongod 7.0 still builds it) runs mongod's older ASCII tokenizer, see ``text_lang``;
version 1 is refused (not implemented).
A document's language is its ``language_override`` field, and a sub-document's own override field
sets the language of the strings below it.

Scores follow mongod's ``FTSSpec::_scoreStringV2``: per field, a term occurring ``n`` times among
``N`` tokens scores ``weight * freq * (0.5 * n / N + 0.5)`` (``freq`` = 1 + 1/2 + ... + 1/2**(n-1) in
doubles: a power of two past 2**1023 is inf, whose reciprocal adds nothing),
x1.1 when the term is the whole field value; scores of one term add up across fields.
"""

from __future__ import annotations

import decimal
import math
from collections.abc import Iterator
from typing import Any

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query.text_lang import language, lower, require_language, tokens
from tidemark.query.value_repr import bson_repr

TEXT_INDEX_VERSION = 3
WILDCARD = "$**"
MAX_WORD_WEIGHT = 1_000_000_000 / 10_000


INT32_MIN = -(2 ** 31)


def _number_int(v: Any) -> int:
    """mongod's ``BSONElement::numberInt``: a number as a C ``int`` (doubles truncate, longs wrap,
    decimals round half to even; a double or decimal out of range or NaN is INT_MIN, as the x86
    conversion gives), 0 for anything that is not a number (strings, booleans included)."""
    if isinstance(v, bool) or not isinstance(v, int | float) and type(v).__name__ != "Decimal128":
        return 0
    if isinstance(v, int):  # int32 / int64 (bson.Int64 is an int): keep the low 32 bits
        return (v + 2 ** 31) % 2 ** 32 - 2 ** 31
    if isinstance(v, float):
        if not math.isfinite(v) or not -(2 ** 31) <= math.trunc(v) < 2 ** 31:
            return INT32_MIN
        return math.trunc(v)
    d = v.to_decimal()
    if not d.is_finite():
        return INT32_MIN
    n = int(d.to_integral_value(rounding=decimal.ROUND_HALF_EVEN))
    return n if -(2 ** 31) <= n < 2 ** 31 else INT32_MIN


def _is_number(v: Any) -> bool:
    """mongod's isNumber: int, long, double, decimal (not bool, not a string that spells a number)."""
    return not isinstance(v, bool) and (isinstance(v, int | float) or type(v).__name__ == "Decimal128")


def _bad(message: str) -> MongoError:
    """mongod 7.0's ``FTSSpec::fixSpec`` answers every invalid text index spec with 67."""
    return MongoError(ErrorCode.CannotCreateIndex, message)


def _check_key(key: dict) -> None:
    """The text key's layout: prefix fields, then the text fields (or ``_fts``, ``_ftsx``), then
    suffix fields; ``_fts`` / ``_ftsx`` are reserved names elsewhere (fixSpec's second pass)."""
    items = list(key.items())
    i, n = 0, len(items)
    while i < n and type(items[i][1]) is not str:
        if items[i][0] in ("_fts", "_ftsx"):
            raise _bad("text index with reserved fields _fts/_ftsx not allowed")
        i += 1
    if i == n:
        raise _bad("expected additional fields in text index key pattern")
    if items[i][0] == "_fts":
        if i + 1 >= n or items[i + 1][0] != "_ftsx":
            raise _bad("expected _ftsx after _fts")
        i += 2
    else:
        while i < n and type(items[i][1]) is str:
            if items[i][0] in ("_fts", "_ftsx"):
                raise _bad("text index with reserved fields _fts/_ftsx not allowed")
            i += 1
    for field, value in items[i:]:
        if type(value) is str:
            raise _bad("'text' fields in index must all be adjacent")
        if field in ("_fts", "_ftsx"):
            raise _bad("text index with reserved fields _fts/_ftsx not allowed")


def normalize_text_spec(raw: dict, key: dict) -> dict:
    """The stored spec of a text index (mongod 7.0's ``FTSSpec::fixSpec``: 67 CannotCreateIndex
    with its message for every invalid option). Weights are stored as mongod's ``numberInt`` of
    the given numbers (``2.5`` is stored as ``2``)."""
    fixed: dict = {}
    weights: dict[str, int] = {}
    added = False
    for field, value in key.items():
        if field == "_fts":
            if value != "text":
                raise _bad('expecting _fts:"text"')
            fixed[field] = value
            added = True
        elif field == "_ftsx":
            if _number_int(value) != 1:
                raise _bad("expecting _ftsx:1")
            fixed[field] = value
        elif value == "text":
            if not added:
                fixed["_fts"], fixed["_ftsx"] = "text", 1
                added = True
            weights[field] = 1
        else:
            if _number_int(value) not in (1, -1):
                raise _bad("expected value 1 or -1 for non-text key in compound index")
            fixed[field] = value
    _check_key(key)
    raw_weights = raw.get("weights")
    if isinstance(raw_weights, dict):
        for field, w in raw_weights.items():
            if not _is_number(w):
                raise _bad("weight for text index needs numeric type")
            weights[field] = _number_int(w)
    elif raw_weights == WILDCARD:
        weights[WILDCARD] = 1
    elif raw_weights is not None:
        raise _bad("text index option 'weights' must be an object")
    if not weights:
        raise _bad("text index option 'weights' must specify fields or the wildcard")
    for field, w in sorted(weights.items()):
        if not 0 < w < MAX_WORD_WEIGHT:
            raise _bad(f"text index weight must be in the exclusive interval (0,{MAX_WORD_WEIGHT:g}) but found: {w}")
        if field != WILDCARD:
            parts = field.split(".")
            if any(p == "" for p in parts):
                raise _bad("weight cannot have empty path component")
            if any(p.startswith("$") for p in parts):
                raise _bad("weight cannot have path component with $ prefix")
    default_language = raw.get("default_language", "english")
    if type(default_language) is not str:
        raise _bad("default_language needs a string type")
    if language(default_language) is None:
        raise _bad("default_language is not valid")
    override = raw.get("language_override", "language")
    if type(override) is not str:
        raise _bad("language_override must be a string")
    if not override or override.startswith("$") or "." in override:
        raise _bad("language_override is not valid")
    version = raw.get("textIndexVersion", TEXT_INDEX_VERSION)
    if not _is_number(version):
        raise _bad("text index option 'textIndexVersion' must be a number")
    if _number_int(version) not in (1, 2, TEXT_INDEX_VERSION):
        raise _bad(f"bad textIndexVersion: {_number_int(version)}")
    if _number_int(version) == 1:
        # Valid for mongod (its legacy tokenizer, language aliases, no sub-document languages), not
        # implemented here. Version 2 is: text_lang's ASCII tokenizer, selected by TextSpec.version (and
        # index_keys.keyer_for's cache key tells a version-2 index from a version-3 one).
        raise MongoError(ErrorCode.CannotCreateIndex, "Currently only textIndexVersion 2 and 3 are supported, not 1")
    return {
        "key": fixed,
        "weights": dict(sorted(weights.items())),
        "default_language": default_language,
        "language_override": override,
        "textIndexVersion": _number_int(version),
    }


def default_name(key: dict) -> str:
    """mongod names a text index after the user's key pattern (``title_text_body_text``)."""
    return "_".join(f"{k}_{v}" for k, v in key.items())


class TextSpec:
    """A stored text index spec, compiled: which strings of a document are text, in which language.

    The strings and their languages follow mongod's ``FTSElementIterator``: a sub-document's own
    ``language_override`` field sets the language of the strings below it (17261 when it is not a
    string, 17262 when the language is unknown); a wildcard index skips that field at every level;
    field names holding a dot or starting with ``$`` are never text (SERVER-78238)."""

    def __init__(self, spec: dict):
        self.weights: dict[str, float] = dict(spec.get("weights") or {})
        self.wildcard = WILDCARD in self.weights
        self.default_language = language(spec.get("default_language", "english")) or "english"
        self.override = spec.get("language_override", "language")
        self.version = int(spec.get("textIndexVersion", TEXT_INDEX_VERSION))  # 2: the ASCII tokenizer
        fields = list(spec["key"])
        i = fields.index("_fts")
        self.before = fields[:i]
        self.after = fields[i + 2:]
        # Parsed once: the weighted paths and the prefix / suffix paths that must not hold arrays.
        self._paths = [(p.split("."), w) for p, w in self.weights.items() if p != WILDCARD]
        self._scalar_paths = [(f, f.split(".")) for f in self.before + self.after]

    def _language_of(self, obj: dict, current: str) -> str:
        """The language of the strings of ``obj`` (mongod's ``_getLanguageToUseV2``)."""
        value = obj.get(self.override, _ABSENT)
        if value is _ABSENT:
            return current
        if type(value) is not str:
            raise MongoError(17261, "found language override field in document with non-string type")
        return require_language(value)

    def doc_language(self, doc: dict) -> str:
        return self._language_of(doc, self.default_language)

    def check_scalar_fields(self, doc: dict) -> None:
        """201 when a prefix or suffix field of a compound text index holds an array (mongod's
        ``FTSIndexFormat::getKeys``: an array along the path, except through a positional part)."""
        for path, parts in self._scalar_paths:
            if _array_along(doc, parts):
                raise MongoError(ErrorCode.CannotBuildIndexKeys,
                                 f"Field '{path}' of text index contains an array in document: {bson_repr(doc)}")

    def texts(self, doc: dict) -> Iterator[tuple[str, float, str]]:
        """(string, weight, language) for every indexed string of ``doc``."""
        lang = self.doc_language(doc)
        if self.wildcard:
            yield from self._all_strings(doc, "", lang)
            return
        for parts, weight in self._paths:
            for value, value_lang in self._strings_at(doc, parts, lang):
                yield value, weight, value_lang

    def scores(self, doc: dict) -> dict[str, float]:
        """{term: score} of a document (the index keys mongod would write, with their scores)."""
        out: dict[str, float] = {}
        for text, weight, lang in self.texts(doc):
            score_string(text, lang, weight, out, self.version)
        return out

    def _strings_at(self, value: Any, parts: list[str], lang: str) -> Iterator[tuple[str, str]]:
        """The strings at a weighted path: arrays are entered from non-array parents only, and a
        sub-document entered on the way may change the language."""
        if not parts:
            if type(value) is str:
                yield value, lang
            elif isinstance(value, list):
                for v in value:
                    if type(v) is str:
                        yield v, lang
            return
        if isinstance(value, dict):
            if parts[0] in value:
                child = value[parts[0]]
                if isinstance(child, dict):
                    yield from self._strings_at(child, parts[1:], self._language_of(child, lang))
                else:
                    yield from self._strings_at(child, parts[1:], lang)
        elif isinstance(value, list):
            for v in value:
                if isinstance(v, dict):
                    yield from self._strings_at(v, parts, self._language_of(v, lang))

    def _all_strings(self, value: Any, prefix: str, lang: str) -> Iterator[tuple[str, float, str]]:
        if isinstance(value, dict):
            for k, v in value.items():
                if k == self.override or "." in k or k.startswith("$"):
                    continue
                path = f"{prefix}.{k}" if prefix else k
                if isinstance(v, dict):
                    yield from self._all_strings(v, path, self._language_of(v, lang))
                else:
                    yield from self._all_strings(v, path, lang)
        elif isinstance(value, list):
            for v in value:
                if isinstance(v, dict):
                    yield from self._all_strings(v, prefix, self._language_of(v, lang))
                else:
                    yield from self._all_strings(v, prefix, lang)
        elif type(value) is str:
            # Only an exact path match carries a weight: mongod looks fields up in its weight map by
            # name, where "$**" (sorted before every field name) is never found (DEFAULT_WEIGHT 1).
            yield value, self.weights.get(prefix, 1.0), lang


_ABSENT = object()


def _array_along(value: Any, parts: list[str]) -> bool:
    """Whether mongod's ``extractAllElementsAlongPath`` meets an array on ``parts`` (a numeric part
    indexes into an array without counting as one; the array found at the end counts)."""
    for part in parts:
        if isinstance(value, dict):
            if part not in value:
                return False
            value = value[part]
        elif isinstance(value, list):
            if part.isdigit():
                idx = int(part)
                if idx >= len(value):
                    return False
                value = value[idx]
            else:
                return True
        else:
            return False
    return isinstance(value, list)


def score_string(raw: str, lang: str, weight: float, out: dict[str, float], version: int = TEXT_INDEX_VERSION) -> None:
    """Add the scores of one string's terms to ``out`` (mongod's ``_scoreStringV2``)."""
    counts: dict[str, int] = {}
    freqs: dict[str, float] = {}
    # The n-th repeat adds 1/exp with exp a double doubled each time (ScoreHelperStruct.exp), as in
    # mongod: past 1,023 repeats exp is inf and adds 0.0; an int 2**n overflowed the division there.
    exps: dict[str, float] = {}
    n_tokens = 0
    for term in tokens(raw, lang, version=version):
        counts[term] = counts.get(term, 0) + 1
        exp = exps[term] = exps.get(term, 0.5) * 2.0
        freqs[term] = freqs.get(term, 0.0) + 1.0 / exp
        n_tokens += 1
    for term, count in counts.items():
        coeff = 0.5 * count / n_tokens + 0.5
        adjustment = 1.1 if len(raw) == len(term) and lower(raw, lang, version) == lower(term, lang, version) else 1.0
        out[term] = out.get(term, 0.0) + weight * freqs[term] * coeff * adjustment


def index_term(term: str) -> str:
    """The key form of a term: long terms keep a 32-byte prefix plus a digest of the whole term (as
    mongod's text index format does), so keys stay small; the exact match re-checks documents."""
    raw = term.encode()
    if len(raw) <= 64:
        return term
    import hashlib

    return raw[:32].decode("utf-8", "ignore") + hashlib.md5(raw).hexdigest()


_SPECS: dict[tuple, TextSpec] = {}


def text_spec(spec: dict) -> TextSpec:
    """A cached TextSpec for a stored index spec."""
    key = (spec.get("name"), repr(spec["key"]), repr(spec.get("weights")), spec.get("default_language"),
           spec.get("language_override"), spec.get("textIndexVersion"))
    found = _SPECS.get(key)
    if found is None:
        if len(_SPECS) > 256:
            _SPECS.clear()
        found = _SPECS[key] = TextSpec(spec)
    return found


def text_terms(spec: dict, doc: dict) -> list[str]:
    """The distinct index terms a document contributes to a text index (201 when a prefix or suffix
    field holds an array, whatever the text)."""
    compiled = text_spec(spec)
    compiled.check_scalar_fields(doc)
    return sorted({index_term(t) for t in compiled.scores(doc)})

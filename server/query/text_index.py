"""Text indexes: the stored spec (mongod's ``fixSpec``), the text of a document, its index terms and
their scores (pure).

A user key ``{title: "text", body: "text"}`` (optionally with ascending/descending fields before and
after the text fields) is stored as ``{_fts: "text", _ftsx: 1}`` in place of the text fields, with
``weights`` ({field: weight}, ``$**`` for every string field), ``default_language`` ("english"),
``language_override`` ("language") and ``textIndexVersion: 3`` — what listIndexes shows on mongod.
A document's language is its ``language_override`` field when that holds a string.

Scores follow mongod's ``FTSSpec::_scoreStringV2``: per field, a term occurring ``n`` times among
``N`` tokens scores ``weight * freq * (0.5 * n / N + 0.5)`` (``freq`` = 1 + 1/2 + ... + 1/2**(n-1)),
x1.1 when the term is the whole field value; scores of one term add up across fields.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query.text_lang import language, lower, require_language, tokens

TEXT_INDEX_VERSION = 3
WILDCARD = "$**"
MAX_WORD_WEIGHT = 1_000_000_000 / 10_000


def _number(v: Any) -> float | None:
    """A BSON number's value (mongod's isNumber: int, long, double, decimal); None for anything else,
    strings that spell a number included."""
    if isinstance(v, bool):
        return None
    if isinstance(v, int | float):
        return float(v)
    return float(str(v)) if type(v).__name__ == "Decimal128" else None


def normalize_text_spec(raw: dict, key: dict) -> dict:
    """The stored spec of a text index (raises mongod's codes for bad options)."""
    fixed: dict = {}
    weights: dict[str, float] = {}
    added = False
    seen_text = seen_after = False
    for field, value in key.items():
        if field in ("_fts", "_ftsx"):
            if field == "_fts" and value != "text":
                raise MongoError(17271, 'expecting _fts:"text"')
            if field == "_ftsx" and _number(value) != 1:
                raise MongoError(17272, "expecting _ftsx:1")
            fixed[field] = value
            seen_text = added = True
            continue
        if value == "text":
            if seen_after:
                raise MongoError(17389, "'text' fields in index must all be adjacent")
            if not added:
                fixed["_fts"], fixed["_ftsx"] = "text", 1
                added = True
            seen_text = True
            weights[field] = 1
            continue
        if _number(value) not in (1.0, -1.0):
            raise MongoError(17273, "expected value 1 or -1 for non-text key in compound index")
        if seen_text:
            seen_after = True
        fixed[field] = value
    raw_weights = raw.get("weights")
    if isinstance(raw_weights, dict):
        for field, w in raw_weights.items():
            n = _number(w)
            if n is None:
                raise MongoError(17283, "weight for text index needs numeric type")
            weights[field] = n
    elif raw_weights == WILDCARD:
        weights[WILDCARD] = 1
    elif raw_weights is not None:
        raise MongoError(17284, "text index option 'weights' must be an object")
    for field, w in weights.items():
        if not 0 < w < MAX_WORD_WEIGHT:
            raise MongoError(16674, "score for word too high")
        if field != WILDCARD:
            parts = field.split(".")
            if any(p == "" for p in parts):
                raise MongoError(17291, "weight cannot have empty path component")
            if any(p.startswith("$") for p in parts):
                raise MongoError(17292, "weight cannot have path component with $ prefix")
    default_language = raw.get("default_language", "english")
    if not isinstance(default_language, str):
        raise MongoError(17263, "default_language needs a string type")
    if language(default_language) is None:
        raise MongoError(17264, "default_language is not valid")
    override = raw.get("language_override", "language")
    if not isinstance(override, str) or not override or override.startswith("$") or "." in override:
        raise MongoError(17136, "language_override is not valid")
    version = raw.get("textIndexVersion", TEXT_INDEX_VERSION)
    if _number(version) != TEXT_INDEX_VERSION:
        raise MongoError(ErrorCode.CannotCreateIndex, f"Currently only textIndexVersion {TEXT_INDEX_VERSION} "
                                                      f"is supported, not {version}")
    return {
        "key": fixed,
        "weights": {f: (int(w) if float(w).is_integer() else w) for f, w in sorted(weights.items())},
        "default_language": default_language,
        "language_override": override,
        "textIndexVersion": TEXT_INDEX_VERSION,
    }


def default_name(key: dict) -> str:
    """mongod names a text index after the user's key pattern (``title_text_body_text``)."""
    return "_".join(f"{k}_{v}" for k, v in key.items())


class TextSpec:
    """A stored text index spec, compiled: which strings of a document are text, in which language."""

    def __init__(self, spec: dict):
        self.weights: dict[str, float] = dict(spec.get("weights") or {})
        self.wildcard = WILDCARD in self.weights
        self.default_language = language(spec.get("default_language", "english")) or "english"
        self.override = spec.get("language_override", "language")
        fields = list(spec["key"])
        i = fields.index("_fts")
        self.before = fields[:i]
        self.after = fields[i + 2:]

    def doc_language(self, doc: dict) -> str:
        value = doc.get(self.override)
        if value is None:
            return self.default_language
        if not isinstance(value, str):
            raise MongoError(17261, "found language override field in document with non-string type")
        return require_language(value)

    def texts(self, doc: dict) -> Iterator[tuple[str, float]]:
        """(string, weight) for every indexed string of ``doc``."""
        if self.wildcard:
            yield from _all_strings(doc, "", self.weights, self.override)
            return
        for path, weight in self.weights.items():
            for value in _strings_at(doc, path.split(".")):
                yield value, weight

    def scores(self, doc: dict, lang: str | None = None) -> dict[str, float]:
        """{term: score} of a document (the index keys mongod would write, with their scores)."""
        lang = lang or self.doc_language(doc)
        out: dict[str, float] = {}
        for text, weight in self.texts(doc):
            _score_string(text, lang, weight, out)
        return out


def _strings_at(value: Any, parts: list[str]) -> Iterator[str]:
    if not parts:
        if isinstance(value, str):
            yield value
        elif isinstance(value, list):
            for v in value:
                if isinstance(v, str):
                    yield v
        return
    if isinstance(value, dict):
        if parts[0] in value:
            yield from _strings_at(value[parts[0]], parts[1:])
    elif isinstance(value, list):
        for v in value:
            if isinstance(v, dict):
                yield from _strings_at(v, parts)


def _all_strings(value: Any, prefix: str, weights: dict, override: str) -> Iterator[tuple[str, float]]:
    if isinstance(value, dict):
        for k, v in value.items():
            if not prefix and k == override:
                continue
            yield from _all_strings(v, f"{prefix}.{k}" if prefix else k, weights, override)
    elif isinstance(value, list):
        for v in value:
            yield from _all_strings(v, prefix, weights, override)
    elif isinstance(value, str):
        yield value, weights.get(prefix, weights[WILDCARD])


def _score_string(raw: str, lang: str, weight: float, out: dict[str, float]) -> None:
    counts: dict[str, int] = {}
    freqs: dict[str, float] = {}
    n_tokens = 0
    for term in tokens(raw, lang):
        count = counts.get(term, 0)
        counts[term] = count + 1
        freqs[term] = freqs.get(term, 0.0) + 1.0 / (2 ** count)
        n_tokens += 1
    for term, count in counts.items():
        coeff = 0.5 * count / n_tokens + 0.5
        adjustment = 1.1 if len(raw) == len(term) and lower(raw, lang) == lower(term, lang) else 1.0
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
           spec.get("language_override"))
    found = _SPECS.get(key)
    if found is None:
        if len(_SPECS) > 256:
            _SPECS.clear()
        found = _SPECS[key] = TextSpec(spec)
    return found


def text_terms(spec: dict, doc: dict) -> list[str]:
    """The distinct index terms a document contributes to a text index."""
    return sorted({index_term(t) for t in text_spec(spec).scores(doc)})

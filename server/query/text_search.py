"""``$text``: the operand, its terms and phrases, and the exact match and score of a document (pure).

The search string is read like mongod's FTSQueryParser: words, ``"quoted phrases"`` and ``-negations``
(a ``-`` right after whitespace negates the next word or phrase). Positive words become terms through
the language's tokenizer (stop words dropped, stemmed); a document matches when it holds at least one
positive term, every positive phrase (a case/diacritic-folded substring), no negated term and no
negated phrase. Its ``textScore`` is the sum of its index scores of the positive terms. A search of
only negations matches nothing (there is no term to look up).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query.text_index import TextSpec, score_string
from tidemark.query.text_lang import fold, language, tokens

_FIELDS = ("$search", "$language", "$caseSensitive", "$diacriticSensitive")


@dataclass(eq=False)
class TextQuery:
    search: str
    language: str | None = None  # as given; None: the index's default language
    case_sensitive: bool = False
    diacritic_sensitive: bool = False
    spec: dict = field(default_factory=dict)  # the operand as given (explain)


def parse_text(arg: Any) -> TextQuery:
    """``{$search, $language?, $caseSensitive?, $diacriticSensitive?}`` (mongod's ``parseText``: each
    known field's type first, then 2 "extra fields in $text" when any other field is present)."""
    if not isinstance(arg, dict):
        raise MongoError(ErrorCode.BadValue, "$text expects an object")
    search = arg.get("$search")
    if type(search) is not str:
        raise MongoError(ErrorCode.TypeMismatch, "$search requires a string value")
    query = TextQuery(search, spec=dict(arg))
    lang = arg.get("$language", _ABSENT)
    if lang is not _ABSENT:
        if type(lang) is not str:
            raise MongoError(ErrorCode.TypeMismatch, "$language requires a string value")
        query.language = lang  # checked against the index's text version once the index is found
    for name in ("$caseSensitive", "$diacriticSensitive"):
        if name in arg:
            if not isinstance(arg[name], bool):
                raise MongoError(ErrorCode.TypeMismatch, f"{name} requires a boolean value")
            setattr(query, "case_sensitive" if name == "$caseSensitive" else "diacritic_sensitive", arg[name])
    if any(k not in _FIELDS for k in arg):
        raise MongoError(ErrorCode.BadValue, "extra fields in $text")
    return query


_ABSENT = object()


def _split(search: str) -> tuple[list[str], list[str], list[str], list[str]]:
    """(positive words, negated words, positive phrases, negated phrases) of a search string."""
    pos: list[str] = []
    neg: list[str] = []
    phrases: list[str] = []
    neg_phrases: list[str] = []
    in_phrase = in_negation = False
    quote = 0
    i, n = 0, len(search)
    prev_space = True
    while i < n and search[i] in " \t\n\r\f\v":
        i += 1
    while i < n:
        start = i
        c = search[i]
        if c in '-"':
            i += 1
        else:
            while i < n and search[i] not in ' \t\n\r\f\v-"':
                i += 1
        token = search[start:i]
        space_before = prev_space
        j = i
        while j < n and search[j] in " \t\n\r\f\v":
            j += 1
        prev_space = j > i
        i = j
        if token == "-":
            if not in_phrase and space_before:
                in_negation = True
        elif token == '"':
            if in_phrase:
                (neg_phrases if in_negation else phrases).append(search[quote + 1:start])
                in_phrase = False
            else:
                in_phrase = True
                if in_negation and space_before:
                    in_negation = False
                quote = start
        elif not (in_phrase and in_negation):
            if in_negation and space_before:
                in_negation = False
            (neg if in_negation else pos).append(token)
    return pos, neg, phrases, neg_phrases


class TextMatcher:
    """A parsed ``$text`` bound to a text index: terms to look up, exact match and score."""

    def __init__(self, query: TextQuery, index_spec: dict):
        self.query = query
        self.spec = TextSpec(index_spec)
        self.lang = self.spec.default_language
        version = self.spec.version
        if query.language is not None:  # mongod validates it after finding the text index (27 first)
            lang = language(query.language)
            if lang is None:
                raise MongoError(ErrorCode.BadValue,
                                 f'unsupported language: "{query.language}" for text index version {version}')
            self.lang = lang
        if query.diacritic_sensitive and version < 3:
            raise MongoError(ErrorCode.BadValue, "$diacriticSensitive requires a version 3 text index or higher")
        pos, neg, self.phrases, self.neg_phrases = _split(query.search)
        self.bound_terms = sorted(set(tokens(" ".join(pos), self.lang, version=version)))
        self.positive = set(self._tokens(" ".join(pos), self.lang))
        self.negative = set(self._tokens(" ".join(neg), self.lang))

    def _tokens(self, text: str, lang: str, stop_words: bool = True) -> Iterator[str]:
        """The terms of ``text`` with the query's case / diacritic sensitivity and the index's version."""
        return tokens(text, lang, stop_words=stop_words, case_sensitive=self.query.case_sensitive,
                      diacritic_sensitive=self.query.diacritic_sensitive, version=self.spec.version)

    def _fold(self, text: str, lang: str) -> str:
        return fold(text, lang, case_sensitive=self.query.case_sensitive,
                    diacritic_sensitive=self.query.diacritic_sensitive, version=self.spec.version)

    def evaluate(self, doc: dict, *, want_score: bool = True) -> float | None:
        """The document's textScore when it matches, else None (one tokenization when the query is
        case and diacritic insensitive: the scored terms are then also the matched ones)."""
        if self.query.case_sensitive or self.query.diacritic_sensitive:
            if not self.matches(doc):
                return None
            return self.score(doc) if want_score else 0.0
        texts = list(self.spec.texts(doc))
        scores: dict[str, float] = {}
        for text, weight, lang in texts:
            score_string(text, lang, weight, scores, self.spec.version)
        if not self._terms_and_phrases(texts, set(scores)):
            return None
        return sum(scores.get(t, 0.0) for t in self.bound_terms)

    def matches(self, doc: dict) -> bool:
        texts = list(self.spec.texts(doc))
        doc_terms: set[str] = set()
        for text, _w, lang in texts:
            doc_terms.update(self._tokens(text, lang, stop_words=False))
        return self._terms_and_phrases(texts, doc_terms)

    def _terms_and_phrases(self, texts: list[tuple[str, float, str]], doc_terms: set[str]) -> bool:
        """Positive terms, negated terms, then phrases: a phrase is folded in the query's language
        and each string in its own (the folding differs only for Turkish)."""
        if not doc_terms & self.positive:
            return False
        if doc_terms & self.negative:
            return False
        if not self.phrases and not self.neg_phrases:
            return True
        folded = [self._fold(t, lang) for t, _w, lang in texts]
        for phrase in self.phrases:
            p = self._fold(phrase, self.lang)
            if not any(p in t for t in folded):
                return False
        for phrase in self.neg_phrases:
            p = self._fold(phrase, self.lang)
            if any(p in t for t in folded):
                return False
        return True

    def score(self, doc: dict) -> float:
        scores = self.spec.scores(doc)
        return sum(scores.get(t, 0.0) for t in self.bound_terms)

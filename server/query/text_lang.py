"""Text search languages and mongod's text-index-version-3 tokenizer (pure).

A token is a maximal run of non-delimiters; delimiters are the Unicode White_Space, Dash, Hyphen,
Quotation_Mark, Terminal_Punctuation, Pattern_Syntax and Sentence_Terminal characters, except that
the apostrophe is not one in English (``don't`` is one token). Each token is lower-cased (Turkish
dotted/dotless i in Turkish), dropped when it is a stop word, stemmed by the language's Snowball
stemmer (``snowballstemmer``, the algorithms mongod's libstemmer runs), and stripped of diacritics.
The query options ``$caseSensitive`` / ``$diacriticSensitive`` keep case / diacritics instead.
Language "none" neither stems nor drops stop words.
"""

from __future__ import annotations

import functools
import unicodedata
from collections.abc import Iterator

import regex
import snowballstemmer

from tidemark.protocol.errors import MongoError
from tidemark.query.text_stopwords import STOP_WORDS

LANGUAGES = {
    "danish": "danish", "da": "danish", "dutch": "dutch", "nl": "dutch", "english": "english", "en": "english",
    "finnish": "finnish", "fi": "finnish", "french": "french", "fr": "french", "german": "german",
    "de": "german", "hungarian": "hungarian", "hu": "hungarian", "italian": "italian", "it": "italian",
    "norwegian": "norwegian", "nb": "norwegian", "portuguese": "portuguese", "pt": "portuguese",
    "romanian": "romanian", "ro": "romanian", "russian": "russian", "ru": "russian", "spanish": "spanish",
    "es": "spanish", "swedish": "swedish", "sv": "swedish", "turkish": "turkish", "tr": "turkish",
    "none": "none",
}

_DELIMS = (r"\p{White_Space}\p{Dash}\p{Hyphen}\p{Quotation_Mark}\p{Terminal_Punctuation}"
           r"\p{Pattern_Syntax}\p{Sentence_Terminal}")
_TOKEN_EN = regex.compile(rf"(?:[^{_DELIMS}]|')+")
_TOKEN = regex.compile(rf"[^{_DELIMS}]+")


def language(name: str) -> str | None:
    """The canonical language name for a name or code (case-insensitive); None when unsupported."""
    return LANGUAGES.get(name.lower()) if isinstance(name, str) else None


def require_language(name: str) -> str:
    lang = language(name)
    if lang is None:
        raise MongoError(17262, f"language override unsupported: {name}")
    return lang


@functools.lru_cache(maxsize=32)
def _stemmer(lang: str):
    """The Snowball stemmer (PyStemmer's C implementation when installed). Dutch is the classic
    Snowball algorithm mongod's libstemmer runs ("dutch_porter" in Snowball 3)."""
    if lang in ("none",):
        return None
    if lang == "dutch" and "dutch_porter" in snowballstemmer.algorithms():
        return snowballstemmer.stemmer("dutch_porter")
    return snowballstemmer.stemmer(lang)


def lower(word: str, lang: str) -> str:
    if lang == "turkish":
        word = word.replace("I", "ı").replace("İ", "i")
    return word.lower()


def strip_diacritics(word: str) -> str:
    if word.isascii():
        return word
    decomposed = unicodedata.normalize("NFD", word)
    return unicodedata.normalize("NFC", "".join(c for c in decomposed if not unicodedata.combining(c)))


def words(text: str, lang: str) -> list[str]:
    """The raw tokens of ``text`` (no case folding, no stemming)."""
    return (_TOKEN_EN if lang == "english" else _TOKEN).findall(text)


def tokens(text: str, lang: str, *, stop_words: bool = True, case_sensitive: bool = False,
           diacritic_sensitive: bool = False) -> Iterator[str]:
    """The terms of ``text`` (mongod's UnicodeFTSTokenizer::moveNext)."""
    stops = STOP_WORDS.get(lang, frozenset()) if stop_words and lang != "none" else frozenset()
    stem = _stemmer(lang)
    for raw in words(text, lang):
        word = lower(raw, lang)
        if word in stops:
            continue
        if case_sensitive:
            word = raw
        if stem is not None:
            word = stem.stemWord(word)
        if not diacritic_sensitive:
            word = strip_diacritics(word)
        yield word


def fold(text: str, lang: str, *, case_sensitive: bool, diacritic_sensitive: bool) -> str:
    """``text`` as phrase matching compares it (case and diacritics folded unless asked not to)."""
    if not case_sensitive:
        text = lower(text, lang)
    if not diacritic_sensitive:
        text = strip_diacritics(text)
    return text

"""Text search languages and mongod's text-index-version-3 tokenizer (pure).

A token is a maximal run of non-delimiters; delimiters are the Unicode White_Space, Dash, Hyphen,
Quotation_Mark, Terminal_Punctuation, Pattern_Syntax and Sentence_Terminal characters, except that
the apostrophe is not one in English (``don't`` is one token). Each token is lower-cased code point
by code point like mongod (no Final_Sigma context; Turkish dotted/dotless i in Turkish), dropped when
it is a stop word, stemmed by the language's Snowball
stemmer (``snowballstemmer``, the algorithms mongod's libstemmer runs), and stripped of diacritics.
The query options ``$caseSensitive`` / ``$diacriticSensitive`` keep case / diacritics instead.
Language "none" neither stems nor drops stop words. Phrases compare case-folded (``fold``: lower
case plus the simple folds of the Greek letter variants, long s, ...).

Text index version 2 (``version=2``) runs mongod's older ``BasicFTSTokenizer``: a token is a run of
bytes that are not ASCII whitespace or ASCII punctuation (the apostrophe is text in English and a
separator otherwise), lower-casing is ASCII only and diacritics are always kept.
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
# Version 2: mongod's Tokenizer::_type (ASCII whitespace and punctuation delimit; nothing else does).
_V2_DELIMS = r" \f\v\t\r\n~`!@#$%^&*()\-=+\[\]{}|\\;:\",.<>/?"
_TOKEN_V2_EN = regex.compile(rf"[^{_V2_DELIMS}]+")
_TOKEN_V2 = regex.compile(rf"[^{_V2_DELIMS}']+")
# Simple case folding beyond simple lower-casing (CaseFolding.txt's C mappings of lower-case letters):
# phrase matching folds case, so "ΟΔΟΣ", "οδοσ" and "οδος" all compare equal there.
_FOLD_LOWER = str.maketrans({"ς": "σ", "ϐ": "β", "ϑ": "θ", "ϕ": "φ", "ϖ": "π", "ϰ": "κ", "ϱ": "ρ", "ϵ": "ε",
                             "ſ": "s", "ẛ": "ṡ", "\u1fbe": "ι"})
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def language(name: str) -> str | None:
    """The canonical language name for a name or code (case-insensitive); None when unsupported."""
    return LANGUAGES.get(name.lower()) if type(name) is str else None


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


def lower(word: str, lang: str, version: int = 3) -> str:
    if version < 3:  # mongod's tolowerString: ASCII letters only
        return word.translate(_ASCII_LOWER)
    if word.isascii() and lang != "turkish":
        return word.lower()
    if lang == "turkish":
        word = word.replace("I", "ı").replace("İ", "i")
    low = word.lower()
    if "ς" in low or "\u0307" in low:
        # mongod lower-cases code point by code point (simple mapping): no Final_Sigma context
        # ("ΟΔΟΣ" -> "οδοσ") and İ -> i (str.lower() gives ς and i + U+0307 there).
        return "".join("i" if c == "İ" else c.lower() for c in word)
    return low


def strip_diacritics(word: str) -> str:
    if word.isascii():
        return word
    decomposed = unicodedata.normalize("NFD", word)
    return unicodedata.normalize("NFC", "".join(c for c in decomposed if not unicodedata.combining(c)))


def words(text: str, lang: str, version: int = 3) -> list[str]:
    """The raw tokens of ``text`` (no case folding, no stemming)."""
    if version < 3:
        return (_TOKEN_V2_EN if lang == "english" else _TOKEN_V2).findall(text)
    return (_TOKEN_EN if lang == "english" else _TOKEN).findall(text)


def tokens(text: str, lang: str, *, stop_words: bool = True, case_sensitive: bool = False,
           diacritic_sensitive: bool = False, version: int = 3) -> Iterator[str]:
    """The terms of ``text`` (mongod's UnicodeFTSTokenizer::moveNext; BasicFTSTokenizer for version 2,
    which never strips diacritics)."""
    stops = STOP_WORDS.get(lang, frozenset()) if stop_words and lang != "none" else frozenset()
    stem = _stemmer(lang)
    keep_diacritics = diacritic_sensitive or version < 3
    for raw in words(text, lang, version):
        word = lower(raw, lang, version)
        if word in stops:
            continue
        if case_sensitive:
            word = raw
        if stem is not None:
            word = stem.stemWord(word)
        if not keep_diacritics:
            word = strip_diacritics(word)
        yield word


def fold(text: str, lang: str, *, case_sensitive: bool, diacritic_sensitive: bool, version: int = 3) -> str:
    """``text`` as phrase matching compares it (case and diacritics folded unless asked not to;
    version 2 folds ASCII case only, like mongod's strcasestr there)."""
    if not case_sensitive:
        text = lower(text, lang, version)
        if version >= 3 and not text.isascii():
            text = text.translate(_FOLD_LOWER)
    if not diacritic_sensitive and version >= 3:
        text = strip_diacritics(text)
    return text

"""PCRE2's own properties ``\\p{Xan}`` ``\\p{Xwd}`` ``\\p{Xps}`` ``\\p{Xsp}`` ``\\p{Xuc}``, which the regex
engine does not know, match what PCRE2 defines them as (pcre2pattern "PCRE2's additional
properties"): Xan letters and numbers, Xwd those and ``_``, Xps/Xsp separators and tab, LF, VT, FF, CR,
Xuc ``$ @ ``` and every code point from U+00A0 but the surrogates. Checked for any character, negated
(``\\P{..}``, ``\\p{^..}``), inside a class and with the name spelled loosely; a negated one inside a
class is refused as not supported."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tidemark.protocol.errors import MongoError
from tidemark.query.match_regex import compile_regex, search

DEFINITIONS = {
    "Xan": lambda c: unicodedata.category(c)[0] in "LN",
    "Xwd": lambda c: unicodedata.category(c)[0] in "LN" or c == "_",
    "Xps": lambda c: unicodedata.category(c)[0] == "Z" or c in "\t\n\x0b\f\r",
    "Xsp": lambda c: unicodedata.category(c)[0] == "Z" or c in "\t\n\x0b\f\r",
    "Xuc": lambda c: c in "$@`" or (ord(c) >= 0xA0 and not 0xD800 <= ord(c) <= 0xDFFF),
}
# (unassigned code points left out: Python's Unicode tables and the engine's may differ in version)
CHARS = st.characters(exclude_categories=("Cs", "Cn")) | st.sampled_from("$@`_\t\n\x0b\f\r \xa0\u2028a1٣_")
SPELLINGS = {"Xan": ["Xan", "xan", "X_an", "X an"], "Xwd": ["Xwd"], "Xps": ["Xps"], "Xsp": ["xSP"], "Xuc": ["Xuc"]}


@given(name=st.sampled_from(sorted(DEFINITIONS)), ch=CHARS, form=st.integers(0, 4), spelling=st.integers(0, 3))
def test_pcre_property_matches_its_definition(name, ch, form, spelling):
    spelled = SPELLINGS[name][spelling % len(SPELLINGS[name])]
    pattern, negated = [
        (rf"^\p{{{spelled}}}$", False),
        (rf"^\P{{{spelled}}}$", True),
        (rf"^\p{{^{spelled}}}$", True),
        (rf"^[\p{{{spelled}}}]$", False),
        (rf"^[^\p{{{spelled}}}]$", True),
    ][form]
    assert (search(compile_regex(pattern), ch) is not None) == (DEFINITIONS[name](ch) != negated), (pattern, ch)


def test_a_negated_pcre_property_inside_a_class_is_not_supported():
    with pytest.raises(MongoError) as e:
        compile_regex(r"[\P{Xan}_]")
    assert e.value.code == 51091 and "not supported" in str(e.value)

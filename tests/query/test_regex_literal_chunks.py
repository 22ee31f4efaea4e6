"""Long literal runs reach the engine broken into chunks (regex_limits.LITERAL_CHUNK): the ``regex``
engine joins adjacent literal characters into one string, and its first search with a long periodic
string built tables in time cubic in its length with the GIL held and no timeout (``c`` * 3,000: 5 s,
every other client frozen; ``c`` * 16,384: hours). The breaks must change no match: a property over
structured patterns compares the engine's answers with a break before every consumed character and
with none, on subjects made of the pattern's own characters."""

from __future__ import annotations

import time

import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tidemark.query import regex_limits
from tidemark.query.match_regex import _compile, search
from tidemark.query.regex_limits import PatternRefused, scan

ATOMS = st.one_of(
    st.sampled_from(["a", "b", "ab", "ba", ".", r"\.", r"\d", r"\w", r"\s", r"\b", r"\B", "^", "$", r"\A", r"\z",
                     r"\Z", "[ab]", "[^a]", r"\{", "{", "}", "]", r"\Qa.b\E", r"\Q\E", r"\E", r"\x61", r"\n"]),
    st.text(alphabet="ab.", min_size=1, max_size=5),
)


@st.composite
def _quantified(draw, inner):
    text = draw(inner)
    return text + draw(st.sampled_from(["", "", "", "?", "*", "+", "{0}", "{0,2}", "{1,2}", "{2}", "*?", "+?", "??"]))


def _combine(children):
    group = st.sampled_from(["(", "(?:", "(?>", "(?=", "(?!", "(?<=", "(?i:", "(?x:"])
    return st.one_of(
        st.lists(children, min_size=1, max_size=5).map("".join),
        st.lists(children, min_size=2, max_size=3).map("|".join),
        st.tuples(group, children).map(lambda t: t[0] + t[1] + ")"),
        st.tuples(st.sampled_from(["(", "(?:", "(?>"]), children, st.sampled_from([")?", ")*", "){0,2}"])).map(
            "".join),
    )


PATTERNS = st.recursive(_quantified(ATOMS), _combine, max_leaves=14)
SUBJECTS = st.text(alphabet="ab.\n{}] ", max_size=14)


def _engine_pattern(pattern: str, extended: bool, chunk: int) -> str:
    saved = regex_limits.LITERAL_CHUNK
    regex_limits.LITERAL_CHUNK = chunk
    try:
        return scan(pattern, extended=extended).pattern
    finally:
        regex_limits.LITERAL_CHUNK = saved


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pattern=PATTERNS, subjects=st.lists(SUBJECTS, min_size=1, max_size=4), extended=st.booleans(),
       chunk=st.sampled_from([1, 2, 3]))
def test_breaks_change_no_match(pattern, subjects, extended, chunk):
    try:
        unbroken = _engine_pattern(pattern, extended, 10**9)
        broken = _engine_pattern(pattern, extended, chunk)
    except PatternRefused:
        return
    flags = regex.VERBOSE if extended else 0
    try:
        plain = regex.compile(unbroken, flags)
    except regex.error:
        return
    chunked = regex.compile(broken, flags)
    for subject in subjects:
        for pos in range(len(subject) + 1):
            a, b = plain.search(subject, pos), chunked.search(subject, pos)
            assert (a and (a.span(), a.groups())) == (b and (b.span(), b.groups())), (pattern, broken, subject, pos)


def test_no_break_before_an_item_that_may_match_nothing():
    assert _engine_pattern("abc*d?e{0,3}f{0}", False, 1) == "a(?=[\\s\\S])bc*d?e{0,3}f{0}"
    assert _engine_pattern("a b c *", True, 1) == "a (?=[\\s\\S])b c *"
    assert _engine_pattern(r"a\bb\1", False, 1) == r"a\b(?=[\s\S])b\1"
    # a quantifier after an empty \Q\E applies to the item before it (PCRE): found by the family below,
    # which failed on "a|a?a\Q\E?" against "" (the break made the optional "a" required)
    assert _engine_pattern("a|a?a\\Q\\E?", False, 1) == "a|a?a?"
    assert _engine_pattern("ab\\Q\\E\\Q\\E*", True, 1) == "ab*"


@pytest.mark.parametrize("pattern, subject", [
    ("c" * 16384, "x" + "c" * 16384),
    ("\\." * 8000, "x" + "." * 8000),
    ("ab" * 8000, "x" + "ab" * 8000),
    ("\\Q" + "ab" * 8000 + "\\E", "x" + "ab" * 8000),
    ("[a]" * 4000, "x" + "a" * 4000),
])
def test_a_long_periodic_literal_compiles_and_searches_at_once(pattern, subject):
    """Before the breaks, each first search took from seconds to hours with the GIL held. A CPU-time
    bound, not a clock: 5 s of process time is ~100x what it takes now and far below what it took."""
    started = time.process_time()
    compiled, _ = _compile(pattern, "", None)
    assert search(compiled, subject) is not None
    assert time.process_time() - started < 5

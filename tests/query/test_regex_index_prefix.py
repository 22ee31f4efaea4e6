"""The literal prefix of a regex bounds an index scan (index_bounds.simple_regex_prefix, mongod's
IndexBoundsBuilder::simpleRegex): every string the regex matches lies in ``[prefix, prefix end)``.

A family of patterns built from literal characters (ASCII, non-ASCII, the last code points before the
surrogates and of Unicode), metacharacters, escapes, ``\\Q…\\E`` quotes, inline groups and quantifiers,
with every flag mongod knows, against strings made of the same characters and of prefixes of the
pattern itself (so that matches are frequent): no matched string may fall outside the bounds."""

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.protocol.errors import MongoError
from tidemark.query.index_bounds import _prefix_end, _union, regex_ranges, simple_regex_prefix
from tidemark.query.match_regex import compile_regex, matches

_LITERALS = ["a", "b", "A", "é", "\ud7ff", "\U0010ffff", "\uffff", " ", "#", "\n", "]", "}", "-", "_"]
_PIECES = _LITERALS + ["^", "$", ".", "*", "+", "?", "{0}", "{1,2}", "{", "|", "(", ")", "(?i)", "(?:", "[ab]",
                       "\\", "\\.", "\\*", "\\|", "\\d", "\\w", "\\b", "\\Qa.b", "\\E", "\\Q*\\E", "\\A", "\\Z",
                       "\\Qx|y\\E", "\\ "]
_FLAGS = st.one_of(st.just(""), st.sampled_from("imsxu"), st.text(alphabet="imsxu", max_size=3)).map(
    lambda f: "".join(sorted(set(f))))
_PY_FLAGS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "x": re.VERBOSE, "u": 0}


@st.composite
def _pattern_and_strings(draw):
    head = draw(st.sampled_from(["^", "\\A", "", "^", "^"]))
    pattern = head + "".join(draw(st.lists(st.sampled_from(_PIECES), max_size=8)))
    literal_chars = [c for c in pattern if c not in "^$\\()[]{}*+?|.#"]
    strings = draw(st.lists(st.text(alphabet=_LITERALS + literal_chars, max_size=8), max_size=12))
    # strings that follow the pattern's literal characters, so that some of them match
    strings += ["".join(literal_chars[:k]) + tail for k in range(len(literal_chars) + 1)
                for tail in ("", "a", "\n")]
    flags = draw(_FLAGS)
    try:  # and strings Python's engine says match it (most patterns here mean the same to both)
        python_pattern = re.compile(pattern, sum(_PY_FLAGS[f] for f in flags))
    except (re.error, OverflowError):
        python_pattern = None
    if python_pattern is not None:
        strings += draw(st.lists(st.from_regex(python_pattern), max_size=6))
    return pattern, flags, strings


@settings(max_examples=400, deadline=None)
@given(_pattern_and_strings())
def test_every_matched_string_is_inside_the_prefix_bounds(case):
    pattern, flags, strings = case
    try:
        compiled = compile_regex(pattern, flags)
    except MongoError:
        return  # refused patterns never reach the planner
    prefix = simple_regex_prefix(pattern, flags)
    (lo, hi, lo_incl, hi_incl), _regex_point = regex_ranges(pattern, flags, None)
    assert lo == prefix and lo_incl and not hi_incl
    for s in strings:
        if matches(compiled, s):
            assert s.startswith(prefix), (pattern, flags, s, prefix)
            assert lo <= s and (hi == {} or s < hi), (pattern, flags, s, lo, hi)


@given(st.text(min_size=1, max_size=6), st.text(max_size=6))
def test_the_prefix_end_is_above_every_extension_and_below_the_next_prefix(prefix, rest):
    end = _prefix_end(prefix)
    if end is None:  # only U+10FFFF characters: no string bounds them from above
        assert set(prefix) == {"\U0010ffff"}
        return
    assert prefix + rest < end
    assert not end.startswith(prefix)
    "".join(end).encode("utf-8")  # no lone surrogate: the end is a storable string


def test_what_the_prefix_reads():
    cases = {
        ("^abc", ""): "abc", ("^ab*", ""): "a", ("^ab?c", ""): "a", ("^ab{0}c", ""): "a", ("^ab+", ""): "ab",
        ("^a.c", ""): "a", ("^abc$", ""): "abc", ("\\Aabc", "m"): "abc", ("^abc", "m"): "", ("^abc", "i"): "",
        ("^abc", "s"): "abc", ("^abc", "u"): "abc", ("^a b#c", "x"): "ab", ("^a b#c", ""): "a b#c",
        ("^a\\Qb.c\\Ed", ""): "ab.cd", ("^a\\Qbc\\E*", ""): "ab", ("^a|b", ""): "", ("^a\\|b", ""): "a|b",
        ("^a\\\\|b", ""): "", ("abc", ""): "", ("^\\.x", ""): ".x", ("^a\\dx", ""): "a", ("^(?i)a", ""): "",
    }
    for (pattern, flags), prefix in cases.items():
        assert simple_regex_prefix(pattern, flags) == prefix, (pattern, flags)


def test_in_ranges_are_merged_in_index_order():
    ranges = _union([("x", "y", True, False), ("q", "q", True, True), ("xy", "xz", True, False),
                     ("y", "y", True, True), (5, 5, True, True)])
    assert ranges == [(5, 5, True, True), ("q", "q", True, True), ("x", "y", True, True)]

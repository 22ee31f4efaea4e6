"""PCRE2's backtracking control verbs in MongoDB regexes (jstests/core/query/regex/regex_verbs.js):
the scan writes each verb for the engine where its meaning is the same for every subject, refuses
the rest as not supported, and an unknown verb with PCRE2's message."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.protocol.errors import MongoError
from tidemark.query import match_regex


def matches(pattern: str, subject: str) -> bool:
    return match_regex.matches(match_regex.compile_regex(pattern), subject)


@pytest.mark.parametrize("pattern, a, b", [
    ("(*FAIL)", False, False), ("a(*FAIL)", False, False), ("(*FAIL)b", False, False), ("(*F)", False, False),
    ("(*ACCEPT)", True, True), ("(*ACCEPT)a", True, True), ("(*ACCEPT)c", True, True), ("b(*ACCEPT)", False, True),
    ("(*COMMIT)", True, True), ("(*PRUNE)", True, True), ("(*PRUNE:FOO)", True, True), ("(*SKIP)", True, True),
    ("(*SKIP:BAR)", True, True), ("(*THEN)", True, True), ("(*THEN:BAZ)", True, True),
    ("(*PRUNE)a", True, False), ("(*PRUNE:FOO)a", True, False), ("(*SKIP)a", True, False),
    ("(*SKIP:BAR)a", True, False), ("(*THEN)a", True, False), ("(*THEN:BAZ)a", True, False),
    ("(*PRUNE)[Bb]", False, True), ("(*SKIP:BAR)[Bb]", False, True), ("(*THEN:BAZ)[Bb]", False, True),
    ("(*MARK:m)a", True, False), ("(*:m)b", False, True),
    ("x(*ACCEPT)y|b", False, True), ("a(*ACCEPT)(b)|c", True, False),
])
def test_verbs_match_as_in_pcre(pattern, a, b):
    assert (matches(pattern, "a"), matches(pattern, "b")) == (a, b)


@pytest.mark.parametrize("pattern, message", [
    ("(*FOO)", "(*VERB) not recognized or malformed"),
    ("a(*UCP)", "(*VERB) not recognized or malformed"),  # a start-of-pattern item elsewhere
    ("(*MARK)", "(*MARK) must have an argument"),
    ("(*:)", "(*MARK) must have an argument"),
    ("(*COMMIT)a", "(*COMMIT) is not supported by Tidemark"),
    ("(a(*ACCEPT))b", "(*ACCEPT) inside a group is not supported by Tidemark"),
    ("(*ACCEPT)?a", "a quantified (*ACCEPT) is not supported by Tidemark"),
    ("a(*THEN)b|c", "(*THEN) inside an alternation is not supported by Tidemark"),
    ("(*MARK:A)a(*SKIP:A)b", "(*SKIP:NAME) after a (*MARK:NAME) is not supported by Tidemark"),
])
def test_verbs_without_the_same_meaning_are_refused(pattern, message):
    with pytest.raises(MongoError) as err:
        match_regex.compile_regex(pattern)
    assert err.value.code == 51091
    assert f"Regular expression is invalid: {message}" in str(err.value)


def test_verbs_in_the_aggregation_operators():
    with pytest.raises(MongoError) as err:
        match_regex.compile_regex("(*FOO)", "", "$regexMatch")
    assert err.value.code == 51111
    assert "Invalid Regex in $regexMatch: (*VERB) not recognized or malformed" in str(err.value)


_piece = st.text(alphabet="ab.", min_size=0, max_size=3).map(lambda s: s.replace("..", "."))
_subjects = st.text(alphabet="abc", max_size=6)


@settings(max_examples=200, deadline=None)
@given(x=_piece, y=_piece, z=_piece, subject=_subjects)
def test_top_level_accept_ends_its_alternative(x, y, z, subject):
    # X(*ACCEPT)Y|Z matches exactly where X|Z does: the match ends at ACCEPT, Y is never tried
    assert matches(f"{x}(*ACCEPT){y}|{z}", subject) == matches(f"(?:{x})|{z}", subject)
    assert matches(f"{x}(*ACCEPT){y}", subject) == matches(x, subject)


@settings(max_examples=200, deadline=None)
@given(x=_piece, y=_piece, subject=_subjects,
       verb=st.sampled_from(["(*MARK:n)", "(*:n)", "(*SKIP:n)"]))
def test_marks_and_unmarked_skips_change_no_match(x, y, verb, subject):
    assert matches(f"{x}{verb}{y}", subject) == matches(f"{x}{y}", subject)


@settings(max_examples=200, deadline=None)
@given(x=_piece, y=_piece, subject=_subjects, verb=st.sampled_from(["(*PRUNE:n)", "(*THEN)", "(*THEN:n)"]))
def test_named_prune_and_then_without_alternation_are_prune(x, y, verb, subject):
    assert matches(f"{x}{verb}{y}", subject) == matches(f"{x}(*PRUNE){y}", subject)


@settings(max_examples=100, deadline=None)
@given(x=_piece, subject=_subjects, verb=st.sampled_from(["(*COMMIT)", "(*THEN)", "(*PRUNE)", "(*SKIP)"]))
def test_a_verb_ending_the_pattern_changes_nothing(x, verb, subject):
    assert matches(f"{x}{verb}", subject) == matches(x, subject)


@pytest.mark.parametrize("pattern, options, a, b", [
    ("a(*ACCEPT)b # a comment", "x", True, False),
    ("(?x) b(*ACCEPT)c # a comment", "", False, True),
    ("x(*ACCEPT)y | b # a comment", "x", False, True),
])
def test_accept_under_extended_mode_ending_in_a_comment(pattern, options, a, b):
    compiled = match_regex.compile_regex(pattern, options)
    assert (match_regex.matches(compiled, "a"), match_regex.matches(compiled, "b")) == (a, b)

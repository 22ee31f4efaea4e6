"""A pattern the engine refuses gets PCRE2's message (mongod's errmsg carries PCRE's text, without a
position): 51091 "Regular expression is invalid: <PCRE>" in filters, 51111 in the operators."""

from __future__ import annotations

import re

import pytest

from tidemark.protocol.errors import MongoError
from tidemark.query import match_regex


@pytest.mark.parametrize("pattern, message", [
    ("(", "missing closing parenthesis"),
    ("a(b|c", "missing closing parenthesis"),
    ("(?#abc", "missing ) at end of (?# comment"),
    ("[a", "missing terminating ] for character class"),
    ("*a", "quantifier does not follow a repeatable item"),
    ("a**", "quantifier does not follow a repeatable item"),
    ("(*)", "quantifier does not follow a repeatable item"),
    ("a)", "unmatched closing parenthesis"),
    ("\\", "\\ at end of pattern"),
    ("a{2,1}", "numbers out of order in {} quantifier"),
    ("[b-a]", "range out of order in character class"),
    ("(?P=zz)", "reference to non-existent subpattern"),
    ("\\2(a)", "reference to non-existent subpattern"),
])
@pytest.mark.parametrize("operator", [None, "$regexMatch"])
def test_engine_refusals_carry_pcres_message(pattern, message, operator):
    with pytest.raises(MongoError) as err:
        match_regex.compile_regex(pattern, "", operator)
    prefix = "Regular expression is invalid: " if operator is None else f"Invalid Regex in {operator}: "
    assert err.value.code == (51091 if operator is None else 51111)
    assert str(err.value).endswith(prefix + message)


@pytest.mark.parametrize("pattern", ["\\p{Foo}", "\\k<zz>", "(?<n>a)\\g<9>", "a[[:foo:]]", "((a)"])
def test_no_refusal_shows_the_engines_position(pattern):
    with pytest.raises(MongoError) as err:
        match_regex.compile_regex(pattern)
    assert not re.search(r"at position \d", str(err.value))

"""server/query/regex_limits.py: the pre-compile scan refuses what PCRE2 10.42 (mongod 7.0) refuses —
counts above 65,535, nesting above 250, an expanded size above the weight limit — reads braces,
classes, escapes, \\Q...\\E, comments and the x option as PCRE does, and hands the engine a pattern
that means what PCRE means. compile_regex turns each refusal into mongod's code (51091 / 51111)."""

from __future__ import annotations

import pytest

from tidemark.protocol.errors import MongoError
from tidemark.query import match_regex
from tidemark.query.regex_limits import (
    BAD_OPTION,
    MAX_GROUPS,
    MAX_NESTING,
    MAX_WEIGHT,
    OUT_OF_ORDER,
    TOO_BIG,
    TOO_DEEP,
    TOO_LARGE,
    PatternRefused,
    scan,
)


def refusal(pattern: str, extended: bool = False) -> str | None:
    try:
        scan(pattern, extended)
    except PatternRefused as exc:
        return exc.reason
    return None


@pytest.mark.parametrize("pattern", [
    "a{65536}", "a{99999999}", "a{1,65536}", "a{65536,}", "a{0,99999999}", "[a]{65536}", r"\d{65536}",
    "(ab){65536}", "a{" + "9" * 5000 + "}", "a{00000000000000065536}", r"\\{65536}", "a(?#c){65536}",
])
def test_a_count_above_65535_is_number_too_big(pattern):
    assert refusal(pattern) == TOO_BIG


@pytest.mark.parametrize("pattern", ["a{65535}", "a{0,65535}", "a{65535,}", "^a{65535}$", "a{0065535}",
                                     r"\p{L}{65535}", "[a-z]{1,65535}",
                                     "[^a-z]{65535}", "(?:ab){1,17000}"])
def test_a_single_count_of_65535_is_accepted(pattern):
    assert refusal(pattern) is None


@pytest.mark.parametrize("pattern", [
    "(a{60000}){60000}", "((a{1000}){1000}){1000}", "(?:a{300}){300}", "(a{60000}){2}", "a{60000}b{60000}",
    "(?:(?:(?:(?:a{10}){10}){10}){10}){10}", "(a|b{40000}|c{40000})", "(?:a{40000}){0}b{40000}", "(?:a{2}){65535}",
])
def test_nested_and_summed_repetitions_are_too_large(pattern):
    assert refusal(pattern) == TOO_LARGE


def test_weights_follow_the_documented_model():
    assert scan("abc").weight == 3
    assert scan("a|b").weight == 3  # 1 + 1 + one for the |
    assert scan("(a)").weight == 3  # a group is 2 + its content
    assert scan("a{3}").weight == 6  # w x (n + 1) + 2
    assert scan("a{2,5}").weight == 8
    assert scan("a{4,}").weight == 8  # open-ended: n = min + 1
    assert scan("a+").weight == 5 and scan("a*").weight == 4 and scan("a?").weight == 4
    assert scan("[abc]").weight == 3  # its members
    assert scan("[a-z]").weight == 1 and scan("[a-zA-Z0-9_]").weight == 4  # a range is one member
    assert scan("[a-]").weight == 2 and scan("[]-a]").weight == 1
    assert scan(r"\R").weight == 6
    assert scan("(?:a{10}){10}").weight == (11 + 2 + 2) * 11 + 2
    assert scan("x" * 32764).weight == 32764  # any literal pattern mongod accepts fits


@pytest.mark.parametrize("pattern, engine_pattern", [
    ("a{,99999999}", r"a\{,99999999}"),  # {,n} is a literal in PCRE2 10.42
    ("a{ 99999999}", r"a\{ 99999999}"),
    ("x{a}", r"x\{a}"),
    ("a{e<=2}", r"a\{e<=2}"),  # the regex package's fuzzy matching: a literal, as in PCRE
    ("{", r"\{"),
    ("a{5", r"a\{5"),
    (r"\{99999999}", r"\{99999999}"),
    ("[{60000}]", "[{60000}]"),
    ("[]{60000}]", "[]{60000}]"),  # a leading ] is a member
    ("[^]{60000}]", "[^]{60000}]"),
    ("[[:alpha:]{60000}]", "[[:alpha:]{60000}]"),
    ("(?#{60000})b", "(?#{60000})b"),
    (r"\Q{99999999}\E", r"\{99999999\}"),
    (r"\Qa.b\E+", r"a\.b+"),
    (r"[\Q]{\E]", r"[\]\{]"),
    (r"\p{L}{3}", r"\p{L}{3}"),
    (r"\x{41}{3}", r"\x{41}{3}"),
])
def test_literal_braces_are_literal_for_the_engine_too(pattern, engine_pattern):
    result = scan(pattern)
    assert result.pattern == engine_pattern
    assert result.weight < 100


def test_the_x_option_skips_whitespace_and_comments_in_its_scope():
    assert scan("a # {60000}\n b", extended=True).weight == 2
    assert scan("(?x)a # {60000}\n b").weight == 2
    assert scan("(?x:a # {60000}\n) b").weight < 10
    assert refusal("(?x:a)# {99999999}") == TOO_BIG  # the option ended with its group
    assert refusal("(?:(?x))# {99999999}") == TOO_BIG
    assert refusal("(?x)(?-x)# {99999999}") == TOO_BIG
    assert refusal("a # {99999999}") == TOO_BIG  # without x, # is a literal
    assert refusal("(?x)a {65536}") == TOO_BIG  # whitespace before a quantifier


@pytest.mark.parametrize("pattern", ["[{99999999}]", "(?#{99999999})", "(?x)# {99999999}\n", "[[:alpha:]{65536}]",
                                     r"x\\\\{99999999}"])
def test_a_big_count_is_refused_wherever_the_engine_might_read_it_as_a_quantifier(pattern):
    # the net under the scan: no context (class, comment) lets a count above 65,535 reach the engine
    assert refusal(pattern) == TOO_BIG


@pytest.mark.parametrize("pattern", [r"\{99999999}", r"\Q{99999999}\E", "a{,99999999}", r"\\\{99999999}"])
def test_an_escaped_big_count_is_a_literal(pattern):
    assert refusal(pattern) is None


@pytest.mark.parametrize("pattern, weight", [
    (r"[\p]{3}]", 7),  # \p before ] is a literal p for the engine: the class ends, {3} repeats it
    (r"x\g'{3}'", 9),  # the engine reads g, ', {3} and '
    (r"x\g<{3}>", 9),
    (r"x\p{{3}}", None),
])
def test_escapes_the_engine_reads_differently_are_scanned_as_it_reads_them(pattern, weight):
    result = scan(pattern)
    if weight is not None:
        assert result.weight == weight
    big = pattern.replace("{3}", "{99999999}")
    assert refusal(big) == TOO_BIG


# PCRE2 10.42's verdicts (pcre2test, Debian's pcre2-utils): a quantifier after an option setting, a simple
# assertion or a backtracking verb is error 109; comments, empty quotes, a stray \E and x-mode whitespace
# between leave the item before them quantified. The engine alone repeated that item instead: /^a(?i)*/
# matched "b" while its index bounds, read from the literal prefix "a", left "b" out.
_NOT_REPEATABLE = ["a(?i)*", "(?i)*a", "a(?i)?", "a(?i){2}", "a(?-i)+", "a(?im)*", "a(?x)*",
                   "^*a", "$*a", "a^*", "a$?", "[a]^*", "a{0}^*", "\\b*a", "\\A*a", "a\\B*", "a\\z*", "a\\G*",
                   "a\\K*", "a\\Z*", "a\\b{2}", "a\\b+?", "a\\A{0}", "a(?i)(?#c)*", "a(?i)\\Q\\E*", "a(?i)\\E*"]
_REPEATABLE = ["a(?:)*", "a(?#c)*", "a(?=b)*", "a*+", "a++", "a\\Q\\E*", "(?i:a)*", "a\\E*", "a(?i:b)*",
               "a\\bc*", "^a*", "(?i)a*", "a(?i)b*"]


def test_a_quantifier_after_an_unrepeatable_item_is_refused_as_pcre2_refuses_it():
    for pattern in _NOT_REPEATABLE:
        assert refusal(pattern) == "quantifier does not follow a repeatable item", pattern
    for pattern in _REPEATABLE:
        assert refusal(pattern) is None, pattern
    assert refusal("a(?i) *", extended=True) == "quantifier does not follow a repeatable item"
    # the counts are read first, as PCRE2 reads them
    assert refusal("a(?#c)(?i){65536}") == TOO_BIG
    assert refusal("a(?i){5,3}") == "numbers out of order in {} quantifier"
    assert refusal("(?:a{60000}(?-x){60000})") == "quantifier does not follow a repeatable item"


def test_a_stray_quote_end_is_nothing_to_the_engine():
    compiled = match_regex.compile_regex("^a\\E*$")
    assert [s for s in ["", "a", "aa", "aE", "aEE"] if match_regex.matches(compiled, s)] == ["", "a", "aa"]
    assert match_regex.matches(match_regex.compile_regex("^a\\Eb$"), "ab")


def test_g_braced_back_references_are_spelled_for_the_engine():
    assert scan(r"(a)(b)\g{2}\g{-1}").pattern == r"(a)(b)(?:\2)(?:\2)"
    assert scan(r"(?<n>x)\g{n}").pattern == "(?<n>x)(?P=n)"
    assert refusal(r"\g{-1}") == "reference to non-existent subpattern"
    assert refusal(r"x\g{99999999}") == "reference to non-existent subpattern"
    assert refusal(r"\g{{3}}") is not None
    assert match_regex.matches(match_regex.compile_regex(r"^(a)\g{1}$"), "aa")
    assert not match_regex.matches(match_regex.compile_regex(r"^(a)\g{1}$"), "ag")


def test_posix_collating_elements_are_refused_as_pcre_does():
    assert refusal("[[.a.]{3}]") == "POSIX collating elements are not supported"
    assert refusal("[[=a=]]") == "POSIX collating elements are not supported"


def test_nesting_is_bounded_at_250():
    assert refusal("(" * MAX_NESTING + "a" + ")" * MAX_NESTING) is None
    assert refusal("(" * (MAX_NESTING + 1) + "a" + ")" * (MAX_NESTING + 1)) == TOO_DEEP
    assert refusal("(?:" * (MAX_NESTING + 1)) == TOO_DEEP
    assert refusal("(" * 30000) == TOO_DEEP  # unbalanced: still refused, early
    assert refusal("()" * 1000) is None  # many groups side by side are not nesting


def test_more_than_1000_groups_are_too_large_for_the_engines_parser():
    assert refusal("(a)" * MAX_GROUPS) is None
    assert refusal("(a)" * (MAX_GROUPS + 1)) == TOO_LARGE
    assert refusal("(?:a)" * 16382) == TOO_LARGE  # 10 s in the engine's parser
    assert refusal("(?#c)(?i)" * 3000) is None  # comments and option settings are not groups


def test_out_of_order_counts_and_unknown_option_letters_are_refused_as_pcre_does():
    assert refusal("a{5,3}") == OUT_OF_ORDER
    for pattern in ("(?V1)a", "(?f)a", "(?r)a", "(?a)a", "(?L)a", "(?w:a)"):
        assert refusal(pattern) == BAD_OPTION, pattern
    for pattern in ("(?i)a", "(?imsx)a", "(?-i)a", "(?i-sm:a)", "(?R)", "(?1)(a)", "(?P<n>a)(?P=n)", "(?|a|b)"):
        assert refusal(pattern) is None, pattern


def test_unbalanced_or_truncated_patterns_still_weigh_and_never_crash():
    for pattern in ("(a{60000}", "a{60000}(b{60000}", "[a{99999999}", "\\", "(?", "(?#", r"\Q", "a{", "[]", "[^]"):
        try:
            scan(pattern)
        except PatternRefused:
            pass
    assert refusal("(a{60000}|b{20000}") == TOO_LARGE


def test_the_weight_is_checked_as_it_grows_not_only_at_the_end():
    # a product that would be astronomically large is refused long before it is computed
    pattern = "(" * 200 + "a" + "){65535}" * 200
    assert refusal(pattern) == TOO_LARGE
    assert MAX_WEIGHT < 65535 * 2


@pytest.mark.parametrize("pattern, operator, code, message", [
    ("a{99999999}", None, 51091, "Regular expression is invalid: number too big in {} quantifier"),
    ("a{65536}", "$regexMatch", 51111, "Invalid Regex in $regexMatch: number too big in {} quantifier"),
    ("(a{60000}){60000}", None, 51091, "Regular expression is invalid: regular expression is too large"),
    ("((a{1000}){1000}){1000}", "$regexFindAll", 51111,
     "Invalid Regex in $regexFindAll: regular expression is too large"),
    ("(" * 251 + ")" * 251, None, 51091, "Regular expression is invalid: parentheses are too deeply nested"),
    ("a" * 32765, None, 51091,
     "Regular expression is invalid: pattern string is longer than the limit set by the application"),
    ("a\x00" + "a" * 32765, None, 2, "Regular expression cannot contain an embedded null byte"),
    ("a" * 32765, "$regexFind", 51111,
     "Invalid Regex in $regexFind: pattern string is longer than the limit set by the application"),
    ("(?V1)a", None, 51091, "Regular expression is invalid: unrecognized character after (? or (?-"),
])
def test_compile_regex_answers_mongods_codes(pattern, operator, code, message):
    with pytest.raises(MongoError) as err:
        match_regex.compile_regex(pattern, "", operator)
    assert err.value.code == code
    assert str(err.value.args[-1] if err.value.args else err.value).endswith(message) or message in str(err.value)


def test_compile_regex_matches_with_pcre_meaning():
    assert match_regex.matches(match_regex.compile_regex("^a{,3}$"), "a{,3}")
    assert not match_regex.matches(match_regex.compile_regex("^a{,3}$"), "aa")
    assert match_regex.matches(match_regex.compile_regex(r"^\Qa.b{2}\E$"), "a.b{2}")
    assert not match_regex.matches(match_regex.compile_regex(r"^\Qa.b\E$"), "axb")
    assert match_regex.matches(match_regex.compile_regex("^a{3}$"), "aaa")
    assert match_regex.matches(match_regex.compile_regex("^a # c\n{2}$", "x"), "aa")
    assert match_regex.matches(match_regex.compile_regex("^a{65535}$"), "a" * 65535)


def test_the_cache_is_bounded_by_weight_not_entries():
    cache = match_regex.CompiledCache(budget=1000)
    for i in range(10):
        cache.put(("p", str(i), None), object(), 300)  # type: ignore[arg-type]
        assert cache.used <= 1000
    assert len(cache.entries) == 3
    assert cache.get(("p", "9", None)) is not None and cache.get(("p", "0", None)) is None
    cache.get(("p", "7", None))  # recently used: survives the next eviction
    cache.put(("p", "x", None), object(), 300)  # type: ignore[arg-type]
    assert cache.get(("p", "7", None)) is not None and cache.get(("p", "8", None)) is None
    cache.put(("big", "", None), object(), 5000)  # type: ignore[arg-type]  # over the budget: not held
    assert cache.get(("big", "", None)) is None and cache.used <= 1000


def test_distinct_large_patterns_do_not_pile_up_in_the_shared_cache():
    match_regex.CACHE.clear()
    for i in range(8):
        match_regex.compile_regex(f"a{{60000}}b{i}")
    assert match_regex.CACHE.used <= match_regex.CACHE_BUDGET_WEIGHT
    held = sum(1 for key in match_regex.CACHE.entries if key[0].startswith("a{60000}b"))
    assert held <= match_regex.CACHE_BUDGET_WEIGHT // 60000 < 8
    match_regex.CACHE.clear()

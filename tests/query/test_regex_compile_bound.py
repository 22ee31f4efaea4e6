"""Property (Hypothesis): for every structured pattern — nested groups of every kind, alternations,
classes, escapes, literal braces, \\Q...\\E, comments, counted quantifiers with small and huge counts
— compile_regex either refuses it with mongod's code (51091, or 2 for a too-long pattern), or
compiles it within the memory the scan's weight promises: the engine's peak allocation (tracemalloc,
a count of bytes: deterministic, not a clock) is at most PEAK_BYTES_PER_WEIGHT per weight unit plus
a constant, and the weight is at most MAX_WEIGHT — so no accepted pattern peaks above ~23 MB.
Before issue 21 the first ``a{99999999}`` Hypothesis drew would have allocated until the kernel
killed the test run."""

from __future__ import annotations

import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tidemark.protocol.errors import MongoError
from tidemark.query import match_regex
from tidemark.query.regex_limits import MAX_WEIGHT, PatternRefused, scan

# Measured worst case ~276 bytes of peak per unit (a{65535}, \R{11665}); the margin absorbs
# allocator and interpreter differences. (This property found (a{4096}){2} at 383 B/unit when a
# quantifier weighed w x n: the scan now counts the item beside its copies, w x (n + 1).)
PEAK_BYTES_PER_WEIGHT = 320
PEAK_CONSTANT = 512 * 1024

COUNTS = st.one_of(
    st.integers(0, 5),
    st.sampled_from([10, 99, 255, 1000, 4096, 30000, 65535, 65536, 100000, 99999999]),
    st.integers(0, 70000),
)

ATOMS = st.one_of(
    st.sampled_from(list("ab.^$") + [r"\d", r"\w", r"\s", r"\b", r"\R", r"\X", r"\p{L}", r"\{", r"\(", r"\\",
                                      r"\.", r"\x41", r"\1"]),
    st.sampled_from(["[a-z]", "[]a]", "[^]{]", r"[\p{L}\p{N}_]", "[a-zA-Z0-9_]", "[[:alpha:]]", "[{9999999}]",
                     r"[\Q]{\E]", "[^a]"]),
    st.sampled_from(["{", "}", "{,5}", "x{a}", "{ 3}", "a{e<=1}", r"\Q{99999999}\E", r"\Qa.b\E",
                     "(?#{99999999})", "(?#c)", "(?i)", "(?x)", "(?-x)", "# {99999999}\n", " "]),
    st.text(alphabet="abcß", min_size=1, max_size=4),
)


@st.composite
def quantified(draw, inner):
    item = draw(inner)
    kind = draw(st.sampled_from(["", "", "?", "*", "+", "n", "n,", "n,m", "lazy", "possessive"]))
    if kind in ("?", "*", "+"):
        return item + kind
    if kind.startswith("n"):
        low = draw(COUNTS)
        text = str(low)
        if kind == "n,":
            text += ","
        elif kind == "n,m":
            text += "," + str(draw(COUNTS) if draw(st.booleans()) else low + draw(st.integers(0, 10)))
        return item + "{" + text + "}"
    if kind == "lazy":
        return item + "{" + str(draw(COUNTS)) + "}?"
    if kind == "possessive":
        return item + "++"
    return item


def _combine(children):
    group = st.sampled_from(["(", "(?:", "(?>", "(?=", "(?!", "(?<=", "(?i:", "(?x:", "(?|"])
    return st.one_of(
        st.lists(children, min_size=1, max_size=4).map("".join),
        st.lists(children, min_size=2, max_size=3).map("|".join),
        st.tuples(group, children).map(lambda t: t[0] + t[1] + ")"),
        quantified(children),
    )


PATTERNS = st.recursive(quantified(ATOMS), _combine, max_leaves=12)


def _peak_of_compile(pattern: str, options: str) -> tuple[int | None, int]:
    """(MongoError code or None, peak traced bytes) of an uncached compile."""
    match_regex.CACHE.clear()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        try:
            match_regex.compile_regex(pattern, options)
            code = None
        except MongoError as exc:
            code = exc.code
        return code, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        match_regex.CACHE.clear()


@pytest.mark.slow  # tracemalloc slows the large compiles ~30x: ~20-60 s
# derandomize: the same 300 examples on every run (make test stays reproducible); explore with a
# random seed locally (800 random examples at the time of writing: worst 272 B/unit).
@settings(max_examples=300, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(pattern=PATTERNS, options=st.sampled_from(["", "i", "x", "ix", "s"]))
def test_every_pattern_is_refused_with_a_mongodb_code_or_compiles_within_its_weight(pattern, options):
    try:
        weight = scan(pattern, extended="x" in options).weight
    except PatternRefused:
        with pytest.raises(MongoError) as err:
            match_regex.compile_regex(pattern, options)
        assert err.value.code == 51091
        return
    assert weight <= MAX_WEIGHT
    code, peak = _peak_of_compile(pattern, options)
    assert code in (None, 51091, 2), (code, pattern)  # 51091 here: a syntax error the engine found
    assert peak <= PEAK_BYTES_PER_WEIGHT * weight + PEAK_CONSTANT, (pattern, weight, peak)


@pytest.mark.parametrize("pattern", [
    "a{65535}", "(a){23331}", r"\R{11665}", "(?=a){17498}", r"[\p{L}\p{N}_]{17498}", "(?:a{2}){9998}",
    r"(a)\1{65535}", "(?i)ß{65535}", "(?:a+){9998}", "(a{23327}){2}", "((a{7771}){2}){2}",
    "((((((a{89}){2}){2}){2}){2}){2}){2}", "(?:a{11661}|b{11661}){2}", "(?<=(a{23327}){2})",
])
@pytest.mark.slow
def test_the_costliest_accepted_shapes_stay_within_the_bound(pattern):
    weight = scan(pattern).weight
    code, peak = _peak_of_compile(pattern, "")
    assert code is None
    assert peak <= PEAK_BYTES_PER_WEIGHT * weight + PEAK_CONSTANT
    assert peak <= PEAK_BYTES_PER_WEIGHT * MAX_WEIGHT + PEAK_CONSTANT  # ~23 MB, whatever the pattern


# Token soup: characters where the scan and the engine could disagree on where a token ends
# (escapes with arguments, classes, POSIX names, comments, quotes, braces). One count of 20,000
# and otherwise 2 and 3: a token the scan misread would hide 20,000 copies (~5 MB, far over the
# bound for the small weight the scan would report) — yet never enough to hurt the test run.
# (Found this way: a quantifier after an option setting, "a(?-x){20000}", repeats the a.)
SOUP = st.lists(st.sampled_from([
    "\\", "\\p", "\\P", "\\g", "\\k", "\\N", "\\x", "\\c", "\\Q", "\\E", "\\0", "\\1", "[", "]", "[:", ":]", "[.",
    "^", "-", "(", ")", "(?", "(?#", "(?x)", "#", "\n", " ", "'", "<", ">", "{", "}", ",", "a", "L", "{2}", "{3}",
    "{2,3}", "{20000}", "|", "*", "+", "?", "\\g{", "\\p{", "\\N{", "\\x{", "\\k<", "\\g<", "\\g'", "\\o{", "[[:",
    "[\\", "(?<", "(?P<", "(?'", "(?P=", "(?&", "(?(", "(?-x)", "(?x:", "(?i)", "\\b", "\\u", "\\L<", "1", ":",
]), min_size=1, max_size=14).map("".join).filter(lambda p: p.count("{20000}") <= 1)


@pytest.mark.slow
@settings(max_examples=400, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(pattern=SOUP, options=st.sampled_from(["", "x"]))
def test_the_scan_and_the_engine_agree_on_where_tokens_end(pattern, options):
    try:
        weight = scan(pattern, extended="x" in options).weight
    except PatternRefused:
        return
    code, peak = _peak_of_compile(pattern, options)
    assert peak <= PEAK_BYTES_PER_WEIGHT * weight + PEAK_CONSTANT, (pattern, options, weight, peak)

"""Units behind the string, regex, array and variable expression fixes found by porting MongoDB's
jstests (tests/e2e/test_jstests_expressions_strings.py): PCRE2's start-of-pattern items and ASCII
classes (shared by ``$regex`` filters and the ``$regex*`` expressions), ``$regexFindAll``'s last
match, mongod's per-operator parse codes and its order of argument checks."""

from __future__ import annotations

import bson
import pytest
from bson.int64 import Int64
from bson.regex import Regex

from tidemark.protocol import codec
from tidemark.protocol.errors import MongoError
from tidemark.query.expressions import compile_expression, evaluate
from tidemark.query.match import compile_filter
from tidemark.query.match_regex import (
    MatchLimitExceeded,
    compile_regex,
    find_all,
    pattern_and_options,
    search,
    start_items,
)
from tidemark.query.regex_limits import Dialect, PatternRefused, scan


def code_of(expr, doc=None) -> int:
    with pytest.raises(MongoError) as err:
        evaluate(expr, doc if doc is not None else {})
    return err.value.code


def compile_code(expr) -> int:
    with pytest.raises(MongoError) as err:
        compile_expression(expr)
    return err.value.code


def first(pattern: str, text: str, options: str = "") -> str | None:
    m = search(compile_regex(pattern, options, "$regexFind"), text)
    return None if m is None else m.group()


# --------------------------------------------------------------------------------------------------
# PCRE2 start-of-pattern items


def test_start_items_are_read_in_a_row_at_the_start_only():
    items = start_items("(*LIMIT_MATCH=5)(*UCP)(*CR)^x")
    assert (items.length, items.limit_match, items.ucp, items.newline) == (len("(*LIMIT_MATCH=5)(*UCP)(*CR)"), 5,
                                                                             True, "CR")
    assert start_items("(*UTF8)(*UTF)(*NO_JIT)x").length == len("(*UTF8)(*UTF)(*NO_JIT)")
    assert start_items("x(*UCP)").length == 0
    assert start_items("(*FAIL)x").length == 0  # not a start item: a backtracking verb, left to the engine
    assert start_items("(*LIMIT_MATCH=9)(*LIMIT_MATCH=3)x").limit_match == 3  # the later one wins
    assert start_items("(*BSR_ANYCRLF)").bsr_anycrlf


@pytest.mark.parametrize("pattern", ["(*LIMIT_MATCH=)x", "(*LIMIT_MATCH=1x)", "(*LIMIT_DEPTH=a)",
                                     "(*LIMIT_MATCH=4294967290)x", "(*LIMIT_HEAP=99999999999)"])
def test_a_malformed_limit_is_pcres_verb_error(pattern):
    with pytest.raises(PatternRefused) as err:
        start_items(pattern)
    assert err.value.reason == "(*VERB) not recognized or malformed"
    with pytest.raises(MongoError) as err2:
        compile_regex(pattern, "", "$regexMatch")
    assert err2.value.code == 51111


def test_the_largest_limit_pcre2_reads_is_accepted():
    assert start_items("(*LIMIT_MATCH=4294967289)x").limit_match == 4294967289
    assert start_items("(*LIMIT_MATCH=0004)x").limit_match == 4


@pytest.mark.parametrize("pattern,text,expected", [
    ("(*UTF8)(44)", "123444", "44"), ("(*UTF)༤", "༢༣༤", "༤"),
    ("(*LF)ab.cd", "ab\ncd", None), ("(*CR)ab.cd", "ab\ncd", "ab\ncd"), ("(*CR)ab.cd", "ab\rcd", None),
    ("(*CRLF)a.b", "a\rb", "a\rb"), ("(*CRLF)a.+", "a\r\nb", None), ("(*ANYCRLF)a.b", "a\rb", None),
    ("(*NUL)a.b", "a\nb", "a\nb"), ("(*CR)a$", "a\r", "a"), ("(*CR)a$", "a\n", None), ("(*CR)a\\Z", "a\r", "a"),
    ("(*UCP)^\\w+", "cafétéria", "cafétéria"), ("^\\w+", "cafétéria", "caf"),
    ("(*UCP)^[[:digit:]]+", "༢༣12", "༢༣12"), ("^[[:digit:]]+", "12༢", "12"),
    ("(*UCP)^[[:alpha:]]+", "박정수AB", "박정수AB"), ("^[[:alpha:]]+", "éA", None),
    ("(*BSR_ANYCRLF)a\\R", "a\x85", None), ("a\\R", "a\x85", "a\x85"),
])
def test_start_items_change_what_matches_as_in_pcre2(pattern, text, expected):
    assert first(pattern, text) == expected


def test_newline_conventions_under_the_m_and_s_options():
    assert [m.start() for m in find_all(compile_regex("(*CR)^a", "m"), "a\ra\na")] == [0, 2]
    assert first("(*CR)a$", "a\rb", "m") == "a"
    assert first("(*CR)a.b", "a\rb", "s") == "a\rb"
    assert first("(*CR)(?s)a.b", "a\rb") == "a\rb"
    assert [m.start() for m in find_all(compile_regex("(*CR)^", "m"), "a\r")] == [0]  # not after the last


def test_a_match_limit_under_two_is_exceeded_by_any_match():
    for pattern in ("(*LIMIT_MATCH=1)fé", "(*LIMIT_MATCH=0)fé", "(*LIMIT_DEPTH=1)fé"):
        with pytest.raises(MatchLimitExceeded):
            search(compile_regex(pattern, "", "$regexFind"), "cafétéria")
        assert search(compile_regex(pattern, "", "$regexFind"), "nothing") is None
    assert first("(*LIMIT_MATCH=3)(fé)", "cafétéria") == "fé"


def test_a_filter_treats_an_exceeded_match_limit_as_no_match():
    assert not compile_filter({"s": {"$regex": "(*LIMIT_MATCH=1)a"}})({"s": "a"})
    assert compile_filter({"s": {"$regex": "(*LIMIT_MATCH=100)a"}})({"s": "a"})


def test_unsupported_start_items_are_refused_with_the_invalid_regex_code():
    with pytest.raises(MongoError) as err:
        compile_regex("(*NOTEMPTY)a", "", "$regexMatch")
    assert err.value.code == 51111 and "not supported" in str(err.value)


def test_a_start_item_elsewhere_is_invalid():
    for pattern in ("^(*UCP)a", "((*UCP)a)"):
        with pytest.raises(MongoError) as err:
            compile_regex(pattern, "", "$regexMatch")
        assert err.value.code == 51111


# --------------------------------------------------------------------------------------------------
# ASCII classes, shared with $regex filters


@pytest.mark.parametrize("pattern,text,expected", [
    (r"^\w+$", "café", False), (r"^\w+$", "cafe_1", True), (r"^\d+$", "༢", False), (r"\s", "\u2000", False),
    (r"a\Bé", "aé", False), (r"^[\w]+$", "café", False), (r"^[^\w]$", "é", True), ("^[[:alpha:]]+$", "café", False),
    ("^[[:^alpha:]]$", "é", True), ("^[[:punct:]]$", "«", False), ("^[[:space:]]$", "\x0b", True),
    (r"(*UCP)^\w+$", "café", True), ("(*UCP)^[[:^alpha:]]$", "é", False),
])
def test_filter_classes_are_ascii_unless_ucp(pattern, text, expected):
    assert compile_filter({"s": {"$regex": pattern}})({"s": text}) is expected


def test_case_insensitive_matching_stays_unicode():
    assert compile_filter({"s": {"$regex": "^é$", "$options": "i"}})({"s": "É"})
    assert compile_filter({"s": {"$regex": "^[é]$", "$options": "i"}})({"s": "É"})
    assert not compile_filter({"s": {"$regex": r"^\w$", "$options": "i"}})({"s": "\u212a"})  # Kelvin sign


def test_the_scan_writes_pcre2_classes_for_the_engine_and_weighs_them_alike():
    d = Dialect()
    assert scan(r"\w+", dialect=d).pattern == r"(?a:\w)+"
    assert scan(r"[\d-]", dialect=d).pattern == r"(?a:[\d-])"
    assert scan("[[:digit:]]", dialect=d).pattern == r"[\x30-\x39]"
    assert scan("[[:digit:]]", dialect=Dialect(ucp=True)).pattern == r"[\p{Nd}]"
    assert scan(r"\w+", dialect=Dialect(ucp=True)).pattern == r"\w+"
    for pattern in ("[[:alpha:]]{100}", r"\w{100}", "[[:punct:]x]", "a\\Z"):
        assert scan(pattern).weight == scan(pattern, dialect=d).weight  # measuring needs no dialect
    assert scan("[[:punct:]]").weight == 4  # its ASCII ranges


# --------------------------------------------------------------------------------------------------
# $regexFind / $regexFindAll / $regexMatch


def test_regex_find_all_reports_no_empty_match_at_the_end():
    assert [m["idx"] for m in evaluate({"$regexFindAll": {"input": "aaa aa", "regex": "(a*?)"}}, {})] == [0, 1, 2, 3, 4, 5]
    assert [m["idx"] for m in evaluate({"$regexFindAll": {"input": "ab", "regex": "b*"}}, {})] == [0, 1]
    assert evaluate({"$regexFindAll": {"input": "", "regex": ""}}, {}) == [{"match": "", "idx": 0, "captures": []}]


def test_a_bson_regex_brings_its_flags():
    doc = codec.decode(bson.encode({"r": Regex("camel", "i"), "t": "A Camel"}))
    assert evaluate({"$regexMatch": {"input": "$t", "regex": "$r"}}, doc) is True
    assert evaluate({"$regexFind": {"input": "$t", "regex": Regex("camel", "i")}}, doc)["idx"] == 2
    assert code_of({"$regexMatch": {"input": "$t", "regex": "$r", "options": ""}}, doc) == 51107


def test_decoded_regex_flags_keep_their_letters():
    value = codec.decode(bson.encode({"r": Regex("x", "uxmsi")}))["r"]
    assert pattern_and_options(value) == ("x", "imsux")


@pytest.mark.parametrize("spec,code", [
    ({"input": {"$literal": {"a": 1}}, "regex": None}, 51104),
    ({"input": None, "regex": None, "options": "I"}, 51108),
    ({"input": "x", "regex": None, "options": "i\x00"}, 51110),
    ({"input": 1, "regex": "[", "options": 5}, 51106),  # a constant regex is checked when compiled
    ({"input": "x", "regex": Regex("a", "i"), "options": 5}, 51106),
])
def test_regex_checks_run_in_mongods_order_even_without_a_pattern(spec, code):
    assert code_of({"$regexMatch": spec}) == code


def test_a_constant_regex_is_checked_when_the_expression_is_compiled():
    assert compile_code({"$regexFind": {"input": "$a", "regex": "[0-9"}}) == 51111
    assert compile_code({"$regexFind": {"input": "$a", "regex": "a", "options": "q"}}) == 51108
    fn = compile_expression({"$regexFind": {"input": "$a", "regex": "$r"}})  # a field: per document
    with pytest.raises(MongoError) as err:
        fn({"a": "x", "r": "[0-9"}, {})
    assert err.value.code == 51111


@pytest.mark.parametrize("arg,code", [(None, 51103), ("s", 51103), ({}, 31022), ({"regex": "a"}, 31022),
                                      ({"input": "a"}, 31023), ({"input": "a", "regex": "a", "x": 1}, 31024)])
def test_regex_parse_codes(arg, code):
    for op in ("$regexFind", "$regexFindAll", "$regexMatch"):
        assert compile_code({op: arg}) == code


# --------------------------------------------------------------------------------------------------
# parse codes of the other named-argument operators


@pytest.mark.parametrize("expr,code", [
    ({"$filter": "x"}, 28646), ({"$filter": {"input": [], "cond": True, "x": 1}}, 28647),
    ({"$filter": {"cond": True}}, 28648), ({"$filter": {"input": []}}, 28650),
    ({"$filter": {"input": [], "as": 5, "cond": True}}, 16866),
    ({"$map": "x"}, 16878), ({"$map": {"input": [], "in": 1, "x": 1}}, 16879), ({"$map": {"in": 1}}, 16880),
    ({"$map": {"input": []}}, 16882), ({"$map": {"input": [], "as": "", "in": 1}}, 16866),
    ({"$reduce": 1}, 40075), ({"$reduce": {"input": [], "initialValue": 0, "in": 1, "x": 1}}, 40076),
    ({"$reduce": {"initialValue": 0, "in": 1}}, 40077), ({"$reduce": {"input": [], "in": 1}}, 40078),
    ({"$reduce": {"input": [], "initialValue": 0}}, 40079),
    ({"$trim": " x "}, 50696), ({"$ltrim": {"input": "x", "x": 1}}, 50694), ({"$rtrim": {"chars": "x"}}, 50695),
    ({"$replaceOne": "x"}, 51751), ({"$replaceAll": {"input": "", "find": "", "replacement": "", "x": 1}}, 51750),
    ({"$replaceOne": {"find": "", "replacement": ""}}, 51749), ({"$replaceOne": {"input": "", "replacement": ""}}, 51748),
    ({"$replaceAll": {"input": "", "find": ""}}, 51747),
    ({"$zip": 1}, 34460), ({"$zip": {"inputs": 1}}, 34461), ({"$zip": {"inputs": [], "defaults": 1}}, 34462),
    ({"$zip": {"inputs": [], "useLongestLength": 1}}, 34463), ({"$zip": {"x": 1}}, 34464), ({"$zip": {"inputs": []}}, 34465),
    ({"$sortArray": 1}, 2942500), ({"$sortArray": {"input": [], "sortBy": 1, "x": 1}}, 2942501),
    ({"$sortArray": {"sortBy": 1}}, 2942502), ({"$sortArray": {"input": []}}, 2942503),
    ({"$let": {"in": 1, "x": 1, "a": 2}}, 16875), ({"$let": {"vars": 1, "in": 1}}, 10065),
])
def test_each_operator_has_its_own_parse_codes(expr, code):
    assert compile_code(expr) == code


def test_zip_accepts_empty_defaults_without_use_longest_length():
    assert evaluate({"$zip": {"inputs": [[1, 2], [3]], "defaults": []}}, {}) == [[1, 3]]


# --------------------------------------------------------------------------------------------------
# $indexOfBytes / $indexOfCP / $indexOfArray, $substrCP, $trim, $replace*


@pytest.mark.parametrize("expr,code", [
    ({"$indexOfCP": [3, "s"]}, 40093), ({"$indexOfCP": ["s", 3]}, 40094), ({"$indexOfCP": ["s", None]}, 40094),
    ({"$indexOfBytes": [3, "s"]}, 40091), ({"$indexOfBytes": ["s", None]}, 40092),
    ({"$indexOfBytes": ["abc", "b", -1]}, 40097), ({"$indexOfCP": ["abc", "b", 0, "x"]}, 40096),
    ({"$indexOfCP": ["abc", "b", 1.5]}, 40096), ({"$indexOfBytes": ["abc", "b", Int64(2**31)]}, 40096),
    ({"$indexOfArray": [[1], 1, -1]}, 40097), ({"$indexOfArray": [[1], 1, 0, "x"]}, 40096),
    ({"$indexOfArray": [[1], {"$divide": [1, 0]}, -1]}, 40097),  # the bounds before the value searched for
])
def test_index_of_codes(expr, code):
    assert code_of(expr) == code


def test_index_of_cp_searches_start_positions_before_its_end():
    assert evaluate({"$indexOfCP": ["abc", "", 3]}, {}) == -1  # no start position left
    assert evaluate({"$indexOfBytes": ["abc", "", 3]}, {}) == 3
    assert evaluate({"$indexOfCP": ["abcde", "cd", 0, 3]}, {}) == 2  # the token may run past the end
    assert evaluate({"$indexOfBytes": ["abcde", "cd", 0, 3]}, {}) == -1
    assert evaluate({"$indexOfCP": ["", "", 0]}, {}) == 0
    assert evaluate({"$indexOfCP": ["a∫b", "b", 0, 10]}, {}) == 2


@pytest.mark.parametrize("args,code", [
    (["abc", Int64(2**32 + 1), 1], 34451), (["abc", 0, Int64(2**32)], 34453), (["abc", -1, -1], 34454),
    (["abc", -1, 1], 34455), (["abc", "x", -1], 34450), (["abc", 2.5, "x"], 34451),
])
def test_substr_cp_checks_in_mongods_order(args, code):
    assert code_of({"$substrCP": args}) == code


def test_trim_checks_its_input_before_reading_chars():
    assert code_of({"$trim": {"input": 4, "chars": None}}) == 50699
    assert evaluate({"$trim": {"input": None, "chars": 4}}, {}) is None
    assert code_of({"$trim": {"input": "x", "chars": 4}}) == 50700


@pytest.mark.parametrize("spec,code", [
    ({"input": 1, "find": 1, "replacement": 1}, 51746), ({"input": None, "find": 1, "replacement": 1}, 51745),
    ({"input": "a", "find": None, "replacement": 1}, 51744), ({"input": "$missing", "find": "a", "replacement": [1]}, 51744),
])
def test_replace_codes_name_the_argument_and_win_over_nulls(spec, code):
    for op in ("$replaceOne", "$replaceAll"):
        assert code_of({op: spec}) == code


def test_filter_limit_codes():
    assert code_of({"$filter": {"input": [1], "cond": True, "limit": 1.5}}) == 327391
    assert code_of({"$filter": {"input": [1], "cond": True, "limit": 0}}) == 327392


# --------------------------------------------------------------------------------------------------
# variables


def test_map_and_filter_can_rebind_current():
    doc = {"a": [{"x": 1}, {"x": 2}], "k": 5}
    assert evaluate({"$map": {"input": "$a", "as": "CURRENT", "in": {"$add": ["$x", "$$ROOT.k"]}}}, doc) == [6, 7]
    assert evaluate({"$filter": {"input": "$a", "as": "CURRENT", "cond": {"$eq": ["$x", 2]}}}, doc) == [{"x": 2}]
    assert evaluate({"$map": {"input": "$a", "as": "CURRENT", "in": "$$CURRENT"}}, doc) == doc["a"]


@pytest.mark.parametrize("path,code", [("$$_underbar", 16867), ("$$with spaces", 16868), ("$$1a", 16867),
                                       ("$$", 16866), ("$$a-b", 16868), ("$$FOO", 17276)])
def test_a_referenced_variable_name_is_checked_when_compiled(path, code):
    assert compile_code(path) == code


def test_an_undefined_user_variable_fails_when_read():
    assert code_of("$$undefinedName") == 17276


def test_valid_variable_references_still_compile():
    assert evaluate({"$let": {"vars": {"日本語": 1, "a_B9": 2}, "in": {"$add": ["$$日本語", "$$a_B9"]}}}, {}) == 3
    assert evaluate("$$CURRENT.a", {"a": 1}) == 1

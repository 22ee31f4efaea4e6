"""Ports of MongoDB's aggregation-expression jstests (group H, string, array and variable part:
$concat, $indexOf*, $split, $substrCP, $strLen*, $trim, $regex*, $replace*, $in, $filter, $map, $let, ``jstests/aggregation/expressions/``) to pymongo, run against a real
Tidemark server.

Each test names the jstest it ports. Values are compared with their BSON types (int32, long, double
and decimal are told apart, decimals by their exact string) and, for documents, in field order (the
jstests' ``assert.eq`` compares ``tojson`` output). Numbers the shell writes as plain JavaScript
numbers are sent as doubles. Where a jstest loads ``sbe_assert_error_override.js`` an error may carry
the classic code or its SBE equivalent; both are accepted. Behaviour is MongoDB 7.0's: cases for
8.0+ features, feature flags, failpoints, SBE-only checks and explain shapes are left out: not
ported are convert_with_base.js (featureFlagMqlJsEngineGap, FCV 8.3), replace_all.js's regex ``find``
(same flag) and filter.js's '$POISON' cases (failOnPoisonedFieldLookup failpoint).
"""

from __future__ import annotations

import datetime as dt
import itertools

import pytest
from bson.regex import Regex
from harness import expr_jstests
from harness.expr_jstests import (
    FAILED_TO_PARSE,
    NAN,
    VAR_NAME_CODES,
    D,
    L,
    assert_same,
    jsnum,
    on_doc,
    run_agg,
    value_of,
)
from harness.jstests import MISSING, UNDEFINED, aggregate_fails, raw, rows

# the shared module-scoped collections, as this module's fixtures
xdb, one, docs = expr_jstests.xdb, expr_jstests.one, expr_jstests.docs

pytestmark = pytest.mark.commands("insert", "aggregate", "find", "create", "createIndexes")

# concat.js


def test_concat_of_empty_strings(one):
    """concat.js: in a find projection, ``$concat`` of ``$toLower`` of a missing field, and ``$concat``
    of no arguments, are the empty string."""
    assert_same(one.find_one({}, {"_id": False, "a": {"$concat": [{"$toLower": "$b"}]}}), {"a": ""})
    assert_same(one.find_one({}, {"_id": False, "a": {"$concat": []}}), {"a": ""})


# ==================================================================================================
# indexof_bytes.js / indexof_codepoints.js

# (args, result, the $substrBytes equivalence also holds)
INDEX_OF_BYTES = [
    (["abc", "b"], 1, True), (["abcba", "b"], 1, True), (["abc", "d"], -1, True), (["abcba", "b", 2], 3, True),
    (["abcde", "d", 0, 2], -1, True), (["abc", "b", 1], 1, True), (["abc", "b", 0, 10], 1, True),
    (["abcbabc", "b", 2, 4], 3, True), ([None, "b"], None, False), (["abc", "b", 3], -1, True),
    (["abc", "b", 3, 1], -1, False), (["abc", "b", 3, 5], -1, True), (["", " "], -1, True), ([" ", ""], 0, True),
    (["", ""], 0, True), (["abc", "", 3], 3, True), (["abc", "", 1], 1, True),
    (["abcde", "de"], 3, True), (["abcde", "def"], -1, True),
    (["a∫∫b", "b"], 7, True), (["a∫∫b", "b", 6], 7, False), (["abc∫ba", "∫"], 3, True), (["∫∫∫", "a"], -1, True),
    (["ab∫c", "c", 0, 3], -1, False), (["abc∫b∫", "b∫"], 6, True),
    (["abc\0d", "d"], 4, True), (["abc\0", "\0"], 3, True), (["abc\0d\0", "d", 5, 6], -1, True),
]

INDEX_OF_CP = [
    (["∫aƒ", "ƒ"], 2, True), (["a∫c", "d"], -1, True), (["∫b∫ba", "b", 2], 3, True), (["ab∫de", "d", 0, 3], -1, True),
    (["ab∫de", "d", 0, 4], 3, True), (["øøc", "ø", 1], 1, True), (["øƒc", "ƒ", 0, 10], 1, True),
    (["abcbabc", "b", 2, 4], 3, True), ([None, "√"], None, False), (["abc", "b", 3], -1, True),
    (["a√cb", "b", 3, 1], -1, False), (["a∫b", "b", 3, 5], -1, True), (["", "∫"], -1, True), ([" ", ""], 0, True),
    (["", ""], 0, True), (["abc", "", 1], 1, True), (["abcƒe", "ƒe"], 3, True), (["∫aeøø", "øøø"], -1, True),
    (["ab∫\0d", "d"], 4, True), (["øbc\0", "\0"], 3, True), (["πbƒ\0d\0", "d", 5, 6], -1, True),
]


def _index_of_cases(op, substr, strlen, table):
    for args, result, equivalent in table:
        yield pytest.param(op, args, result, id=f"{op}{args}")
        if equivalent:
            start = args[2] if len(args) > 2 else 0
            end = args[3] if len(args) > 3 else {strlen: args[0]}
            expr_args = [{substr: [args[0], start, {"$subtract": [end, start]}]}, args[1]]
            yield pytest.param(op, expr_args, -1 if result == -1 else result - start, id=f"{op}{args}-via-{substr}")


INDEX_OF = list(_index_of_cases("$indexOfBytes", "$substrBytes", "$strLenBytes", INDEX_OF_BYTES))
INDEX_OF += list(_index_of_cases("$indexOfCP", "$substrCP", "$strLenCP", INDEX_OF_CP))


@pytest.mark.parametrize("op,args,expected", INDEX_OF)
def test_index_of_string(one, op, args, expected):
    """indexof_bytes.js / indexof_codepoints.js: ``$indexOfBytes`` counts UTF-8 bytes and
    ``$indexOfCP`` code points, with optional start/end, multi-byte tokens and embedded NULs; the
    result is an int (null for a null string), and searching a ``$substrBytes``/``$substrCP`` slice
    gives the same index shifted by the start."""
    assert_same(value_of(one, {op: jsnum(args)}), expected)


def test_index_of_cp_empty_token_past_end(docs):
    """indexof_codepoints.js (SERVER-56819): searching '' for a field holding '' with start 3 (and
    end 1) is -1."""
    doc = {"item": "foobar foobar", "emptyStr": ""}
    assert_same(on_doc(docs, doc, {"$indexOfCP": ["", "$emptyStr", 3.0]}), -1)
    assert_same(on_doc(docs, doc, {"$indexOfCP": ["", "$emptyStr", 3.0, 1.0]}), -1)


INDEX_OF_ERRORS = [
    ({"$indexOfBytes": [3.0, "s"]}, (40091, 5075300, 7158007)),
    ({"$indexOfBytes": ["s", 3.0]}, (40092, 5075301, 5075302, 7158008, 7158009)),
    ({"$indexOfCP": [3.0, "s"]}, (40093, 5075300, 7158007)),
    ({"$indexOfCP": ["s", 3.0]}, (40094, 5075301, 5075302, 7158008, 7158009)),
]
for _op in ("$indexOfBytes", "$indexOfCP", "$indexOfArray"):
    _arr = [1.0, 2.0, 3.0] if _op == "$indexOfArray" else "abc"
    _tok = 2.0 if _op == "$indexOfArray" else "b"
    INDEX_OF_ERRORS += [
        ({_op: [_arr, _tok, "bad"]}, (40096, 5075303, 5075305, 7158003, 7158005)),
        ({_op: [_arr, _tok, 0.0, "bad"]}, (40096, 5075303, 5075305, 7158003, 7158005)),
        ({_op: [_arr, _tok, -1.0]}, (40097, 5075304, 5075306, 7158004, 7158006)),
        ({_op: [_arr, _tok, 1.0, -1.0]}, (40097, 5075304, 5075306, 7158004, 7158006)),
    ]
INDEX_OF_ERRORS += [({"$indexOfArray": ["string", "s"]}, (40090,))]


@pytest.mark.parametrize("expr,codes", INDEX_OF_ERRORS, ids=[str(e) for e, _ in rows(INDEX_OF_ERRORS)])
def test_index_of_errors(one, expr, codes):
    """indexof_bytes.js / indexof_codepoints.js / indexof_array.js: a non-string string (40091/40093)
    or token (40092/40094), a non-array (40090), a non-integral start/end (40096) or a negative
    start/end (40097) fail."""
    aggregate_fails(one, [{"$project": {"output": expr}}], *codes)


# ==================================================================================================
# indexof_array.js

INDEX_OF_ARRAY = [
    ([[1, 2, 3], 2], 1), ([[1, 2, 3], 4], -1), ([[1, 2, 3, 2, 1], 2, 2], 3), ([[1, 2, 3, 4, 5], 4, 0, 3], -1),
    ([[1, 2, 3], 2, 1], 1), ([[1, 2, 3], 2, 0, 10], 1), ([[1, 2, 3, 2, 1, 2, 3], 2, 2, 4], 3), ([None, 2], None),
    ([[1, 2, 3], 2, 3], -1), ([[1, 2, 3], 2, 3, 1], -1), ([[1, 2, 3], 2, 3, 3], -1), ([[1, 2, 3], 2, 3, 5], -1),
    ([[], 1], -1),
]


@pytest.mark.parametrize("args,expected", INDEX_OF_ARRAY, ids=[str(a) for a, _ in INDEX_OF_ARRAY])
def test_index_of_array(one, args, expected):
    """indexof_array.js: ``$indexOfArray`` with optional start/end gives the int index, -1 when absent
    or the range is empty, null for a null array."""
    assert_same(value_of(one, {"$indexOfArray": jsnum(args)}), expected)


# ==================================================================================================
# split.js

SPLIT = [
    (["abc", "b"], ["a", "c"]), (["aaa", "b"], ["aaa"]), (["a b a", "b"], ["a ", " a"]), (["a", "a"], ["", ""]),
    (["aa", "a"], ["", "", ""]), (["aaa", "a"], ["", "", "", ""]), (["", "a"], [""]),
    (["abc abc cba abc", "abc"], ["", " ", " cba ", ""]),
    (["a\0b\0c", "\0"], ["a", "b", "c"]), (["\0a\0", "a"], ["\0", "\0"]), (["\0\0\0", "a"], ["\0\0\0"]),
    (["∫a∫", "a"], ["∫", "∫"]), (["a∫∫a", "∫"], ["a", "", "a"]),
    (["abc", None], None), ([None, "abc"], None), (["$a", "a"], None), (["a", "$a"], None),
]


@pytest.mark.parametrize("args,expected", SPLIT, ids=[str(a) for a, _ in SPLIT])
def test_split(one, args, expected):
    """split.js: ``$split`` on a byte-wise separator (embedded NULs and multi-byte characters
    included); null or missing arguments give null."""
    assert_same(value_of(one, {"$split": args}), expected)


SPLIT_ERRORS = [
    ([], (16020,)), (["a"], (16020,)), (["a", "b", "c"], (16020,)),
    ([1.0, "abc"], (40085, 5155402, 7158202)), (["abc", 1.0], (40086, 5155400, 7158203)),
    (["abc", ""], (40087, 5155401, 7158204)),
]


@pytest.mark.parametrize("args,codes", SPLIT_ERRORS, ids=[str(a) for a, _ in SPLIT_ERRORS])
def test_split_errors(one, args, codes):
    """split.js: a wrong argument count (16020), a non-string input (40085) or separator (40086), and
    an empty separator (40087) fail."""
    aggregate_fails(one, [{"$project": {"split": {"$split": args}}}], *codes)


# ==================================================================================================
# substrCP.js

SUBSTR_DOC = {
    "t": "寿司sushi", "u": "éclair", "v": "Å", "w": "◢◢◢", "x": "a", "y": "abc", "z": "abcde",
    "a": 0.0, "b": 1.0, "c": 2.0, "d": 3.0, "e": 4.0, "f": 5.0, "neg": -4.0, "invalidStr": {},
    "bigNum": L(4294967297),
}


@pytest.fixture(scope="module")
def substr_coll(xdb):
    coll = xdb["substr"]
    coll.insert_one({"_id": 0, **SUBSTR_DOC})
    return coll


SUBSTR_CP_CONST_ERRORS = [
    (["$a", 0.0, "a"], (34452, 5155702)), (["$a", 0.0, NAN], (34453, 5155702, 5155703)),
    (["$a", "abc", 3.0], (34450, 5155700)), (["$a", 2.2, 3.0], (34451, 5155700)),
    (["$a", -1.0, 3.0], (34455, 5155701)), (["$a", 1.0, -3.0], (34454, 5155703)),
]


@pytest.mark.parametrize("args,codes", SUBSTR_CP_CONST_ERRORS, ids=[str(a) for a, _ in SUBSTR_CP_CONST_ERRORS])
def test_substr_cp_argument_errors(db, args, codes):
    """substrCP.js: a non-numeric length (34452) or NaN length (34453), a non-numeric (34450) or
    non-integral (34451) start, a negative start (34455) or length (34454) fail."""
    db.c.insert_one({"a": "abc"})
    aggregate_fails(db.c, [{"$project": {"a": {"$substrCP": args}}}], *codes)


SUBSTR_CP_DOC_ERRORS = [
    ([], (16020,)), (["$x"], (16020,)), (["$x", 1.0, 2.0, 3.0], (16020,)),
    (["a", "$invalidStr", 7.0], (34450, 5155700)), (["a", "$bigNum", 7.0], (34451, 5155700)),
    (["a", 0.0, "$t"], (34452, 5155702)), (["a", "$neg", 2.0], (34455, 5155701)),
    (["a", 0.0, "$neg"], (34454, 5155703)), (["$invalidStr", "$a", "$b"], (16007, 5066300, 7158200)),
]


@pytest.mark.parametrize("args,codes", SUBSTR_CP_DOC_ERRORS, ids=[str(a) for a, _ in rows(SUBSTR_CP_DOC_ERRORS)])
def test_substr_cp_errors_from_document_values(substr_coll, args, codes):
    """substrCP.js: a wrong argument count (16020); start/length read from the document that are not
    numbers, not 32-bit integers (a long of 2^32+1) or negative fail; an object input cannot be
    coerced to a string (16007)."""
    aggregate_fails(substr_coll, [{"$project": {"a": {"$substrCP": args}}}], *codes)


SUBSTR_CP = [
    ("$substrCP", ["$x", 999.0, 0.0], ""), ("$substrCP", ["$x", 999.0, 1.0], ""),
    ("$substrCP", ["$v", "$a", "$b"], "Å"), ("$substrCP", ["$x", "$a", "$b"], "a"),
    ("$substrCP", ["$w", "$b", "$c"], "◢◢"), ("$substrCP", ["$z", "$c", "$d"], "cde"),
    ("$substrCP", ["$z", {"$add": ["$b", "$b"]}, {"$add": ["$c", "$d"]}], "cde"),
    ("$substrCP", ["$z", {"$add": ["$b", 1.0]}, {"$add": [2.0, "$d"]}], "cde"),
    ("$substrCP", [{"$substrCP": [{"$substrCP": [{"$substrCP": ["abcdefghij", "$b", 6.0]}, "$c", 5.0]}, 0.0, 3.0]},
                   1.0, 1.0], "e"),
    ("$substrCP", ["$u", "$a", "$e"], "écla"), ("$substrBytes", ["$u", "$a", "$e"], "écl"),
    ("$substrCP", ["$t", "$a", 6.0], "寿司sush"), ("$substrBytes", ["$t", "$a", 6.0], "寿司"),
]


@pytest.mark.parametrize("op,args,expected", SUBSTR_CP, ids=[f"{o}{a}" for o, a, _ in SUBSTR_CP])
def test_substr_cp(substr_coll, op, args, expected):
    """substrCP.js: ``$substrCP`` counts code points (start past the end gives ''), with computed and
    nested operands; ``$substrBytes`` of the same string counts bytes."""
    assert_same(value_of(substr_coll, {op: args}, field="a"), expected)


# ==================================================================================================
# strlen.js

STRLEN_DOC = {"strField": "MyString", "intField": 1.0, "nullField": None, "specialCharField": "é",
              "specialCharField2": "匣6卜十戈大中金", "specialCharField3": "i ♥ u"}

STRLEN_ERRORS = [
    ({"$strLenCP": 1.0}, (34471, 5155900)), ({"$strLenCP": "$intField"}, (34471, 5155900)),
    ({"$strLenCP": "$nullField"}, (34471, 5155900)), ({"$strLenCP": "$b"}, (34471, 5155900)),
    ({"$strLenCP": None}, ()), ({"$strLenCP": ["hello", "hello"]}, (16020,)),
    ({"$strLenBytes": "$intField"}, (34473, 5155800)), ({"$strLenBytes": "$nullField"}, (34473, 5155800)),
    ({"$strLenBytes": "$b"}, (34473, 5155800)), ({"$strLenBytes": None}, ()),
    ({"$strLenBytes": ["hello", "hello"]}, (16020,)),
]


@pytest.mark.parametrize("expr,codes", STRLEN_ERRORS, ids=[str(e) for e, _ in STRLEN_ERRORS])
def test_strlen_errors(db, expr, codes):
    """strlen.js: ``$strLenCP`` (34471) and ``$strLenBytes`` (34473) of a number, null or missing
    value fail, as does a null literal; two arguments fail with 16020."""
    db.c.insert_one(STRLEN_DOC)
    aggregate_fails(db.c, [{"$project": {"strLen": expr}}], *codes)


STRLEN = [
    ("$specialCharField", "$specialCharField", 2, 1), ("$specialCharField2", "$specialCharField2", 22, 8),
    ("i ♥ u", "$specialCharField3", 7, 5), ("🧐🤓😎🥸🤩", "🧐🤓😎🥸🤩", 20, 5),
    ("十🤳🕺十十💃ahk", "十🤳🕺十十💃ahk", 24, 9), ("$strField", "$strField", 8, 8),
]


@pytest.mark.parametrize("bytes_arg,cp_arg,nbytes,ncp", STRLEN, ids=[c[1] for c in STRLEN])
def test_strlen(db, bytes_arg, cp_arg, nbytes, ncp):
    """strlen.js: ``$strLenBytes`` counts UTF-8 bytes and ``$strLenCP`` code points (they differ for
    multi-byte characters, agree for ASCII); both are ints."""
    db.c.insert_one(STRLEN_DOC)
    out = run_agg(db.c, [{"$project": {"_id": 0, "strLenBytes": {"$strLenBytes": bytes_arg},
                                             "strLenCP": {"$strLenCP": cp_arg}}}])
    assert_same(out, [{"strLenBytes": nbytes, "strLenCP": ncp}])


# ==================================================================================================
# trim.js

TRIM = [
    ({"$trim": {"input": " abc "}}, "abc"),
    ({"$trim": {"input": " a b\nc "}}, "a b\nc"),
    ({"$ltrim": {"input": "\t abc "}}, "abc "),
    ({"$rtrim": {"input": "\t abc "}}, "\t abc"),
    ({"$map": {"input": {"$split": ["4, 5, 6, 7,8,9, 10", ","]}, "in": {"$trim": {"input": "$$this"}}}},
     ["4", "5", "6", "7", "8", "9", "10"]),
]


@pytest.mark.parametrize("expr,expected", TRIM, ids=[str(e)[:50] for e, _ in TRIM])
def test_trim(one, expr, expected):
    """trim.js: ``$trim``/``$ltrim``/``$rtrim`` strip whitespace (newlines inside are kept)."""
    assert_same(value_of(one, expr), expected)


@pytest.mark.parametrize("op,expected", [("$trim", "X"), ("$rtrim", "xX"), ("$ltrim", "Xx")])
def test_trim_ignores_collation(one, op, expected):
    """trim.js: trimming ``chars: "x"`` from "xXx" under a case-insensitive collation strips only the
    lower-case x's (the trim expressions do not use the collation)."""
    out = run_agg(one, [{"$project": {"_id": 0, "r": {op: {"input": "xXx", "chars": "x"}}}}],
                             collation={"locale": "en_US", "strength": 2})
    assert_same(out, [{"r": expected}])


TRIM_DOCS = [
    ([{"_id": 0, "name": ", Charlie"}, {"_id": 1, "name": "Obama\t,  Barack"}, {"_id": 2, "name": " Ride,  Sally   "}],
     {"firstName": {"$trim": {"input": {"$arrayElemAt": [{"$split": ["$name", ","]}, 1]}}}},
     ["Charlie", "Barack", "Sally"]),
    ([{"_id": 0, "t": "The title of my document"}, {"_id": 1, "t": "\u2001\u2002 Odd unicode indentation"},
      {"_id": 2, "t": "\u2001\u2002 Odd unicode indentation\u200a"}],
     {"title": {"$ltrim": {"input": "$t"}}},
     ["The title of my document", "Odd unicode indentation", "Odd unicode indentation\u200a"]),
    ([{"_id": 0, "p": "Left as an exercise for the reader∎"}, {"_id": 1, "p": "∎∃ proof∎"},
      {"_id": 2, "p": "Just view the problem as a continuous DAG whose elements are taylor series∎"},
      {"_id": 3, "p": None}, {"_id": 4}],
     {"proof": {"$rtrim": {"input": "$p", "chars": "∎"}}},
     ["Left as an exercise for the reader", "∎∃ proof",
      "Just view the problem as a continuous DAG whose elements are taylor series", None, None]),
]


@pytest.mark.parametrize("rows,projection,expected", TRIM_DOCS, ids=["split-names", "unicode-spaces", "chars"])
def test_trim_document_values(db, rows, projection, expected):
    """trim.js: trimming values from documents: the second part of split names, leading Unicode
    whitespace (U+2001, U+2002; a trailing U+200A stays with ``$ltrim``), a custom multi-byte
    ``chars``; null and missing inputs give null."""
    db.c.insert_many(rows)
    (field,) = projection
    out = run_agg(db.c, [{"$sort": {"_id": 1}}, {"$project": projection}])
    assert_same(out, [{"_id": i, field: v} for i, v in enumerate(expected)])


TRIM_ERRORS = [
    ({"$trim": " x "}, (50696,)), ({"$trim": {"input": 4.0}}, (50699, 5156302)),
    ({"$trim": {"input": {"$add": [4.0, 2.0]}}}, (50699, 5156302)), ({"$trim": {"input": "$_id"}}, (50699, 5156302)),
    ({"$trim": {"input": " x ", "chars": "$_id"}}, (50700, 5156303)),
]


@pytest.mark.parametrize("expr,codes", TRIM_ERRORS, ids=[str(e) for e, _ in rows(TRIM_ERRORS)])
def test_trim_errors(db, expr, codes):
    """trim.js: a non-object argument (50696), a non-string input (50699) or non-string chars (50700)
    fail."""
    db.c.insert_one({"_id": 0})
    aggregate_fails(db.c, [{"$project": {"x": expr}}], *codes)


# ==================================================================================================
# regex.js (the stored version predates 4.2; where 7.0 parses differently, a missing 'input' or
# 'regex' is an error (31022/31023, ExpressionRegex::parse), those cases follow 7.0 and the
# error-case arguments carry an explicit null 'input'/'regex' so the original check is still reached)


def _m(match: str, idx: int, captures: list) -> dict:
    return {"match": match, "idx": idx, "captures": captures}


REGEX_TEXTS = {
    "simple": "Simple Example ", "a5a4": "aaaaa aaaa", "a3a2": "aaa aa",
    "email": "Some field text with email mongo@mongodb.com", "digits": "Text with 02 digits",
    "csv": "1,2,3,4,5,6,7,8,9,10", "quant": "abc12defgh345jklm", "camel": "This Is Camel Case",
    "lines": "Foo line1\nFoo line2\nFoo line3", "cafe": "cafétéria", "abcd": "ab\ncd",
    "devanagari": "मा०गो डीबि", "tibetan": "༢༣༤༤༤༥12༥A", "digits6": "123444", "hangul": "박정수AB",
}

_FOO3 = [_m("Foo", 0, []), _m("Foo", 10, []), _m("Foo", 20, [])]
_TIB3 = [_m("༤", 2, []), _m("༤", 3, []), _m("༤", 4, [])]
REGEX_CASES = [
    ("simple", {"regex": "(m(p))"}, [_m("mp", 2, ["mp", "p"]), _m("mp", 10, ["mp", "p"])]),
    ("simple", {"regex": Regex("(m(p))")}, [_m("mp", 2, ["mp", "p"]), _m("mp", 10, ["mp", "p"])]),
    ("a5a4", {"regex": Regex("(aa)")}, [_m("aa", 0, ["aa"]), _m("aa", 2, ["aa"]), _m("aa", 6, ["aa"]),
                                        _m("aa", 8, ["aa"])]),
    ("a5a4", {"regex": Regex("(aa)+")}, [_m("aaaa", 0, ["aa"]), _m("aaaa", 6, ["aa"])]),
    ("a5a4", {"regex": Regex("(a+)")}, [_m("aaaaa", 0, ["aaaaa"]), _m("aaaa", 6, ["aaaa"])]),
    ("a5a4", {"regex": Regex("(a)+")}, [_m("aaaaa", 0, ["a"]), _m("aaaa", 6, ["a"])]),
    ("a3a2", {"regex": Regex("(a+?)")}, [_m("a", i, ["a"]) for i in (0, 1, 2, 4, 5)]),
    ("a3a2", {"regex": Regex("(a*?)")}, [_m("", i, [""]) for i in range(6)]),
    ("simple", {"regex": "((S)(i)(m)(p)(l)(e))"}, [_m("Simple", 0, ["Simple", "S", "i", "m", "p", "l", "e"])]),
    ("simple", {"regex": "(S)(i)(m)((p)(l)(e))"}, [_m("Simple", 0, ["S", "i", "m", "ple", "p", "l", "e"])]),
    ("email", {"regex": "([a-zA-Z0-9._-]+)@[a-zA-Z0-9._-]+.[a-zA-Z0-9._-]+"},
     [_m("mongo@mongodb.com", 27, ["mongo"])]),
    ("digits", {"regex": Regex("[0-9]+")}, [_m("02", 10, [])]),
    ("digits", {"regex": Regex(r"(\d+)")}, [_m("02", 10, ["02"])]),
    ("csv", {"regex": Regex(r"^(?:1|a)\,([0-9]+)")}, [_m("1,2", 0, ["2"])]),
    ("quant", {"regex": Regex("[0-9]{3}")}, [_m("345", 10, [])]),
    ("camel", {"regex": Regex("camel")}, []),
    ("camel", {"regex": Regex("camel", "i")}, [_m("Camel", 8, [])]),
    ("camel", {"regex": Regex("camel"), "options": "i"}, [_m("Camel", 8, [])]),
    ("camel", {"regex": "camel", "options": "i"}, [_m("Camel", 8, [])]),
    ("lines", {"regex": Regex(r"^Foo line\d$")}, []),
    ("lines", {"regex": Regex(r"(^Foo line\d$)", "m")},
     [_m(f"Foo line{i + 1}", 10 * i, [f"Foo line{i + 1}"]) for i in range(3)]),
    ("lines", {"regex": "Foo.*line"}, [_m("Foo line", 0, []), _m("Foo line", 10, []), _m("Foo line", 20, [])]),
    ("lines", {"regex": "Foo.*line", "options": "s"}, [_m("Foo line1\nFoo line2\nFoo line", 0, [])]),
    ("lines", {"regex": "F o o # a comment"}, []),
    ("lines", {"regex": "F o o # a comment", "options": "x"}, _FOO3),
    ("lines", {"regex": "F o o # a comment \n\n# ignored", "options": "x"}, _FOO3),
    ("lines", {"regex": "(F o o) # a comment", "options": "x"},
     [_m("Foo", 0, ["Foo"]), _m("Foo", 10, ["Foo"]), _m("Foo", 20, ["Foo"])]),
    ("simple", {"input": "", "regex": ""}, [_m("", 0, [])]),
    ("simple", {"input": "bbbb", "regex": "()"}, [_m("", i, [""]) for i in range(4)]),
    ("simple", {"regex": Regex("foo")}, []),
    ("simple", {"regex": None}, []),
    ("simple", {"input": None, "regex": Regex("valid")}, []),
    # PCRE start-of-pattern options
    ("cafe", {"regex": "(*LIMIT_MATCH=3)(fé)"}, [_m("fé", 2, ["fé"])]),
    ("abcd", {"regex": "(*LF)ab.cd"}, []),
    ("abcd", {"regex": "(*CR)ab.cd"}, [_m("ab\ncd", 0, [])]),
    ("cafe", {"regex": r"(*LIMIT_MATCH=5)(*UCP)^(\w+)"}, [_m("cafétéria", 0, ["cafétéria"])]),
    # Unicode: indexes count code points; Unicode properties; (*UTF)/(*UTF8)/(*UCP)
    ("cafe", {"regex": "té"}, [_m("té", 4, [])]),
    ("devanagari", {"regex": Regex("म")}, [_m("म", 0, [])]),
    ("devanagari", {"regex": Regex("(गो )")}, [_m("गो ", 3, ["गो "])]),
    ("cafe", {"regex": r"\p{Hangul}"}, []),
    ("cafe", {"regex": r"\p{Latin}+$"}, [_m("cafétéria", 0, [])]),
    ("tibetan", {"regex": "(*UTF8)༤"}, _TIB3),
    ("tibetan", {"regex": "(*UTF)༤"}, _TIB3),
    ("digits6", {"regex": "(*UTF8)(44)"}, [_m("44", 3, ["44"])]),
    ("digits6", {"regex": "(*UTF)(44)"}, [_m("44", 3, ["44"])]),
    ("tibetan", {"regex": r"(*UCP)^(\w+)"}, [_m("༢༣༤༤༤༥12༥A", 0, ["༢༣༤༤༤༥12༥A"])]),
    ("tibetan", {"regex": "(*UCP)^[[:digit:]]+"}, [_m("༢༣༤༤༤༥12༥", 0, [])]),
    ("tibetan", {"regex": "(*UCP)[[:digit:]]+$"}, []),
    ("hangul", {"regex": "(*UCP)^[[:alpha:]]+"}, [_m("박정수AB", 0, [])]),
    ("tibetan", {"regex": r"^(\w+)"}, []),
    ("tibetan", {"regex": "^[[:digit:]]"}, []),
    ("cafe", {"regex": "^[[:alpha:]]+$"}, []),
    # the pattern read from a field (a string or a BSON regex)
    ("pattern1", {"regex": "$pattern"}, [_m("mp", 2, ["mp", "p"]), _m("mp", 16, ["mp", "p"])]),
    ("pattern2", {"regex": "$pattern"}, [_m("Text", 5, ["Te", "e"])]),
]


@pytest.fixture(scope="module")
def regex_coll(xdb):
    coll = xdb["regex"]
    coll.insert_many([{"_id": k, "text": v} for k, v in REGEX_TEXTS.items()]
                     + [{"_id": "pattern1", "text": "Simple Value Example", "pattern": "(m(p))"},
                        {"_id": "pattern2", "text": "OtherText", "pattern": Regex("(T(e))xt$")}])
    return coll


@pytest.mark.parametrize("key,spec,expected", REGEX_CASES,
                         ids=[f"{k}-{s.get('regex')!r}-{s.get('options', '')}" for k, s, _ in rows(REGEX_CASES)])
def test_regex_find_find_all_match(regex_coll, key, spec, expected):
    """regex.js: ``$regexFindAll`` gives every non-overlapping match as {match, idx (code points),
    captures}; ``$regexFind`` the first (or null) and ``$regexMatch`` whether there is one. Covers
    string and BSON-regex patterns, captures, greedy/lazy quantifiers, options i/m/s/x (in the regex
    or in ``options``), patterns from fields, empty matches, a null input or regex, PCRE start
    options ((*LIMIT_MATCH=n), (*LF), (*CR), (*UCP), (*UTF), (*UTF8)) and Unicode text."""
    spec = {"input": "$text", **spec}
    out = run_agg(regex_coll, [{"$match": {"_id": key}}, {"$project": {
        "all": {"$regexFindAll": spec}, "one": {"$regexFind": spec}, "match": {"$regexMatch": spec}}}])
    assert len(out) == 1, out
    assert_same(out[0]["all"], expected)
    assert_same(out[0]["one"], expected[0] if expected else None)
    assert_same(out[0]["match"], bool(expected))


@pytest.mark.parametrize("regex", ["(*LIMIT_MATCH=1)fé", r"(*LIMIT_MATCH=1)(*UCP)^(\w+)"])
@pytest.mark.parametrize("op", ["$regexFindAll", "$regexFind", "$regexMatch"])
def test_regex_match_limit_exceeded(regex_coll, op, regex):
    """regex.js: a (*LIMIT_MATCH=1) pattern that needs more matching steps fails with 51156."""
    aggregate_fails(regex_coll, [{"$match": {"_id": "cafe"}}, {"$project": {"m": {op: {"input": "$text", "regex": regex}}}}],
                 51156, 5073403)


REGEX_ERRORS = [
    (None, 51103), ("incorrect type", 51103),
    ({"input": "$text"}, 31023), ({"regex": Regex("valid")}, 31022),
    ({}, 31022),
    ({"input": "$text", "regex": "[0-9"}, 51111), ({"input": None, "regex": "[a-c"}, 51111),
    ({"input": "$text", "regex": "^(*UCP)[[:alpha:]]+$"}, 51111),
    ({"input": "$text", "regex": "((*UCP)[[:alpha:]]+$)"}, 51111),
    ({"input": "$a", "regex": "valid"}, 51104), ({"input": "$a", "regex": None}, 51104),
    ({"input": "$text", "regex": ["incorrect"]}, 51105),
    ({"input": "$text", "regex": "valid", "options": 123.0}, 51106),
    ({"input": "$text", "regex": "valid", "options": "a"}, 51108),
    ({"input": "$text", "regex": "valid", "options": "I"}, 51108),
    ({"input": None, "regex": None, "options": "I"}, 51108),
    ({"input": "$text", "regex": Regex("(m(p))", "i"), "options": "i"}, 51107),
    ({"input": "$text", "regex": Regex("(m(p))", "i"), "options": "x"}, 51107),
    ({"input": "$text", "regex": Regex("(m(p))", "m"), "options": ""}, 51107),
    ({"input": "$text", "regex": "sasd\0", "options": "i"}, 51109),
    ({"input": None, "regex": "sa\x00sd", "options": "i"}, 51109),
    ({"input": "$text", "regex": Regex("(m(p))"), "options": "i\0"}, 51110),
    ({"input": "$text", "regex": None, "options": "i\x00"}, 51110),
]
_REGEX_EQUIVALENT = {51103: (51103,), 51104: (51104, 5073401), 51105: (51105, 5073405, 5126601),
                     51106: (51106, 5126603, 5126607), 51107: (51107, 5073406, 5126605), 51108: (51108, 5073401),
                     51109: (51109, 5073407, 5126602), 51110: (51110, 5073408, 5126604), 51111: (51111, 5073402),
                     31022: (31022,), 31023: (31023,)}


@pytest.fixture(scope="module")
def regex_error_coll(xdb):
    coll = xdb["regex_errors"]
    coll.insert_many([{"text": "string"}, {"a": "string"}, {"a": {"b": "object"}}])
    return coll


@pytest.mark.parametrize("op", ["$regexFindAll", "$regexFind", "$regexMatch"])
@pytest.mark.parametrize("spec,code", REGEX_ERRORS, ids=[repr(s)[:60] for s, _ in rows(REGEX_ERRORS)])
def test_regex_errors(regex_error_coll, op, spec, code):
    """regex.js: a non-object argument (51103), no 'input' (31022) or no 'regex' (31023), a
    malformed pattern or misplaced start option (51111), a non-string input (51104), regex (51105)
    or options (51106), an unknown or upper-case flag (51108), flags both in the regex and in
    ``options`` (51107), and NUL bytes in the pattern (51109) or options (51110) fail."""
    aggregate_fails(regex_error_coll, [{"$project": {"matches": {op: spec}}}], *_REGEX_EQUIVALENT[code])


MULTI = [
    ("(str.*?[0-9])", [[_m("string1", 0, ["string1"]), _m("string2", 7, ["string2"])],
                       [_m("string3", 0, ["string3"]), _m("string4", 8, ["string4"])]]),
    ("(^.*[0-2]$)", [[], [_m("string1string2", 0, ["string1string2"])]]),
    ("(^.*[5-9]$)", [[], []]),
]


@pytest.mark.parametrize("regex,expected_all", MULTI, ids=["both", "one", "none"])
def test_regex_multiple_documents(db, regex, expected_all):
    """regex.js: over two documents (sorted on the result), ``$regexFindAll`` lists each one's
    matches, ``$regexFind`` the first or null, ``$regexMatch`` whether any."""
    db.c.insert_many([{"a": "string1string2"}, {"a": "string3 string4"}])
    spec = {"input": "$a", "regex": regex}
    expected = {"$regexFindAll": expected_all,
                "$regexFind": [m[0] if m else None for m in expected_all],
                "$regexMatch": [bool(m) for m in expected_all]}
    for op, values in expected.items():
        out = run_agg(db.c, [{"$project": {"_id": 0, "matches": {op: spec}}}, {"$sort": {"matches": 1}}])
        assert_same(out, [{"matches": v} for v in values])


def test_regex_inside_cond(db):
    """regex.js: ``$regexFindAll`` compared with [], ``$regexMatch``, and ``$regexFind`` compared
    with null drive ``$cond`` the same way (the pattern is /public/i)."""
    db.c.insert_many([{"_id": 0, "level": "Public Knowledge", "info": "Company Name"},
                      {"_id": 1, "level": "Private Information", "info": "Company Secret"}])
    rx = {"input": "$level", "regex": Regex("public", "i")}
    expected = [{"_id": 0, "information": "Company Name"}, {"_id": 1, "information": "REDACTED"}]
    for cond in ({"$cond": [{"$eq": [{"$regexFindAll": rx}, []]}, "REDACTED", "$info"]},
                 {"$cond": [{"$regexMatch": rx}, "$info", "REDACTED"]},
                 {"$cond": [{"$ne": [{"$regexFind": rx}, None]}, "$info", "REDACTED"]}):
        out = run_agg(db.c, [{"$project": {"information": cond}}, {"$sort": {"_id": 1}}])
        assert_same(out, expected)


# ==================================================================================================
# replace_one.js / replace_all.js (7.0: string ``find`` only; regex ``find`` is 8.x)

REPLACE_ROWS = [
    ("albatross", "ross", "rachel", "albatrachel", "albatrachel"),
    ("albatross", "", "one ", "one albatross", "one aone lone bone aone tone rone oone sone sone "),
    ("albatross", "", "", "albatross", "albatross"),
    ("", "", "foo", "foo", "foo"),
    ("", "", "", "", ""),
    ("albatross", "rachel", "ross", "albatross", "albatross"),
    ("", "rachel", "ross", "", ""),
    ("", "rachel", "", "", ""),
    ("an antelope is an animal", "an", "", " antelope is an animal", " telope is  imal"),
    ("an antelope is an animal", "an", "this", "this antelope is an animal", "this thistelope is this thisimal"),
]
for _i, _f, _r in itertools.product([None, "a", MISSING], [None, "b", MISSING], [None, "c", MISSING]):
    if None in (_i, _f, _r) or MISSING in (_i, _f, _r):
        REPLACE_ROWS.append((_i, _f, _r, None, None))


@pytest.mark.parametrize("op", ["$replaceOne", "$replaceAll"])
@pytest.mark.parametrize("source", ["fields", "literals"])
@pytest.mark.parametrize("inp,find,repl,one_result,all_result", REPLACE_ROWS,
                         ids=[f"{r[0]!r}-{r[1]!r}-{r[2]!r}" for r in REPLACE_ROWS])
def test_replace(docs, one, op, source, inp, find, repl, one_result, all_result):
    """replace_one.js / replace_all.js: ``$replaceOne`` replaces the first occurrence and
    ``$replaceAll`` every one (an empty ``find`` matches before each character and at the end); any
    null or missing argument gives null. Checked with arguments from fields and as literals."""
    expected = one_result if op == "$replaceOne" else all_result
    if source == "fields":
        doc = {k: v for k, v in (("in", inp), ("find", find), ("replace", repl)) if v is not MISSING}
        got = on_doc(docs, doc, {op: {"input": "$in", "find": "$find", "replacement": "$replace"}})
    else:
        spec = {k: ("$missing" if v is MISSING else v)
                for k, v in (("input", inp), ("find", find), ("replacement", repl))}
        got = value_of(one, {op: spec})
    assert_same(got, expected)


REPLACE_DOC = {"obj_field": {"a": 1.0, "b": 1.0, "c": {"d": 2.0}}, "arr_field1": [1.0, 2.0, 3.0, "c"],
               "arr_field2": ["aaaaa"], "int_field": 1.0, "dbl_field": 1.0, "null_field": None, "str_field": "foo"}
REPLACE_ERRORS = [
    ("$obj_field", "$str_field", "$str_field", 51746), ("$arr_field1", "$str_field", "$str_field", 51746),
    ("$int_field", "$str_field", "$str_field", 51746), ("$dbl_field", "$str_field", "$str_field", 51746),
    ("$str_field", "$obj_field", "$str_field", 51745), ("$str_field", "$arr_field1", "$str_field", 51745),
    ("$str_field", "$int_field", "$str_field", 51745), ("$str_field", "$dbl_field", "$str_field", 51745),
    ("$str_field", "$str_field", "$obj_field", 51744), ("$str_field", "$str_field", "$arr_field1", 51744),
    ("$str_field", "$str_field", "$int_field", 51744), ("$str_field", "$str_field", "$dbl_field", 51744),
    ("$str_field", "$arr_field2", "$dbl_field", 51745), ("$obj_field", "$arr_field2", "$str_field", 51746),
    ("$int_field", "$arr_field2", "$dbl_field", 51746), ("$arr_field2", "$arr_field2", "$arr_field2", 51746),
]
# an invalid type takes precedence over null/missing in the other arguments
for _a, _b in itertools.product(["$null_field", "$missing_field"], repeat=2):
    REPLACE_ERRORS += [("$obj_field", _a, _b, 51746), ("$obj_field", _a, "$str_field", 51746),
                       ("$obj_field", "$str_field", _b, 51746),
                       (_a, "$obj_field", _b, 51745), (_a, "$obj_field", "$str_field", 51745),
                       ("$str_field", "$obj_field", _b, 51745),
                       (_a, _b, "$obj_field", 51744), (_a, "$str_field", "$obj_field", 51744),
                       ("$str_field", _b, "$obj_field", 51744)]
REPLACE_ERRORS = list(dict.fromkeys(REPLACE_ERRORS))


@pytest.fixture(scope="module")
def replace_coll(xdb):
    coll = xdb["replace"]
    coll.insert_one(REPLACE_DOC)
    return coll


@pytest.mark.parametrize("op", ["$replaceOne", "$replaceAll"])
@pytest.mark.parametrize("inp,find,repl,code", REPLACE_ERRORS, ids=[f"{r[0]}-{r[1]}-{r[2]}" for r in rows(REPLACE_ERRORS)])
def test_replace_errors(replace_coll, op, inp, find, repl, code):
    """replace_one.js / replace_all.js: a non-string input (51746), find (51745) or replacement
    (51744) fails, checked in that order, even when other arguments are null or missing."""
    aggregate_fails(replace_coll, [{"$project": {"f": {op: {"input": inp, "find": find, "replacement": repl}}}}],
                 code, 5154400, 7158302)


# ==================================================================================================
# in.js

IN_CASES = [
    (1.0, [1.0, 2.0, 3.0], True, True), ("A", ["a", "A", "a"], True, True), ({"a": 1.0}, [{"b": 1.0}, 2.0], False, True),
    ({"a": 1.0}, [{"a": 1.0}], True, True), ([1.0, 2.0], [[2.0, 1.0]], False, True), ([1.0, 2.0], [[1.0, 2.0]], True, True),
    (7.0, [3.0, 5.0, 7.0, 7.0, 9.0], True, True), (7.0, [3.0, 5.0, 7.0, 9.0, 9.0], True, True),
    (7.0, [3.0, 10.0, 5.0, 7.0, 8.0, 9.0], True, True), (7.0, [7.0, 10.0, 7.0, 10.0, 2.0, 5.0, 3.0, 7.0], True, True),
    (8.0, [10.0, 7.0, 2.0, 5.0, 3.0], False, True), (1.0, [], False, True),
    # aggregation's $in differs from the query's for regexes and array values
    ("abc", [Regex("a"), Regex("b"), Regex("c")], False, False), (Regex("a"), ["a", "b", "c"], False, False),
    ([], [1.0, 2.0, 3.0], False, False), ([1.0], [1.0, 2.0, 3.0], False, False),
    ([1.0, 2.0], [1.0, 2.0, 3.0], False, False),
]


def _check_in(coll, element, array, included, query_equivalent):
    coll.insert_one({"elementField": element})
    out = run_agg(coll, [{"$project": {"included": {"$in": ["$elementField", {"$literal": array}]}}}])
    assert len(out) == 1
    assert_same(out[0]["included"], included)
    if query_equivalent:
        assert len(list(coll.find({"elementField": {"$in": array}}))) == (1 if included else 0)


@pytest.mark.parametrize("element,array,included,query_equivalent", IN_CASES, ids=[f"{c[0]!r}-in-{c[1]!r}" for c in IN_CASES])
def test_in(db, element, array, included, query_equivalent):
    """in.js: ``$in`` tests membership by value (documents and arrays as whole values, duplicates and
    unsorted arrays fine); where the query ``$in`` agrees, ``find`` matches the same way."""
    _check_in(db.c, element, array, included, query_equivalent)


def test_in_uses_collection_collation(db):
    """in.js: on a collection with a case-insensitive default collation, ``$in`` (and the query
    ``$in``) find "abcd" among ["aBcD", "ABCD"]."""
    db.create_collection("c", collation={"locale": "en_US", "strength": 2})
    _check_in(db.c, "abcd", ["aBcD", "ABCD"], True, True)


def test_in_with_hashed_index(db):
    """in.js: with a hashed index on the field, ``$in`` and the query ``$in`` still find 5."""
    db.c.create_index([("elementField", "hashed")])
    _check_in(db.c, 5.0, [10.0, 7.0, 2.0, 5.0, 3.0], True, True)


IN_ERRORS = [
    ([[1.0, 2.0], 1.0], 40081), ([1.0, None], 40081), ([1.0, "$notAField"], 40081),
    (None, 16020), ([1.0], 16020), ([], 16020), ([1.0, 2.0, 3.0], 16020),
]


@pytest.mark.parametrize("args,code", IN_ERRORS, ids=[str(a) for a, _ in IN_ERRORS])
def test_in_errors(one, args, code):
    """in.js: a non-array second argument fails with 40081 (null and missing included); other than two
    arguments with 16020."""
    aggregate_fails(one, [{"$project": {"included": {"$in": args}}}], code)


# ==================================================================================================
# filter.js

FILTER_DOCS = [
    {"_id": 0, "c": 1, "d": 3, "a": [1, 2, 3, 4, 5]}, {"_id": 1, "c": 2, "d": 4, "a": [1, 2]},
    {"_id": 2, "c": 3, "d": 5, "a": []}, {"_id": 3, "c": 4, "d": 6, "a": [4]},
    {"_id": 4, "c": 5, "d": 7, "a": None}, {"_id": 5, "c": 6, "d": 8, "a": UNDEFINED}, {"_id": 6, "c": 7, "d": 9},
]


def _f(*arms):
    return {"$filter": {"input": "$a", "cond": {"$eq": ["$$this", arms[0]]}}}


FILTER_CASES = [
    ("gt2-as-x", {"$filter": {"input": "$a", "as": "x", "cond": {"$gt": ["$$x", 2]}}},
     [[3, 4, 5], [], [], [4], None, None, None]),
    ("this-eq-2", {"$filter": {"input": "$a", "cond": {"$eq": [2, "$$this"]}}}, [[2], [2], [], [], None, None, None]),
    ("in-let", {"$let": {"vars": {"value": "$d"}, "in": {"$filter": {
        "input": "$a", "cond": {"$gte": [{"$add": ["$c", "$$this"]}, "$$value"]}}}}},
     [[2, 3, 4, 5], [2], [], [4], None, None, None]),
    ("and-or", {"$filter": {"input": "$a", "cond": {"$or": [{"$and": [{"$gt": ["$$this", 1]}, {"$lt": ["$$this", 3]}]},
                                                             {"$eq": ["$$this", 5]}]}}},
     [[2, 5], [2], [], [], None, None, None]),
    ("under-and-or", {"$or": [{"$and": [{"$filter": {"input": "$a", "cond": {"$or": [
        {"$and": [{"$gt": ["$$this", 1]}, {"$lt": ["$$this", 3]}]}, {"$eq": ["$$this", 5]}]}}}, "$d"]}, _f(1)]},
     [True, True, True, True, False, False, False]),
    ("under-cond", {"$cond": {"if": _f(1), "then": _f(2), "else": _f(3)}}, [[2], [2], [], [], None, None, None]),
    ("under-switch", {"$switch": {"branches": [{"case": _f(1), "then": _f(2)}, {"case": _f(3), "then": _f(4)}],
                                  "default": _f(5)}},
     [[2], [2], [], [], None, None, None]),
]


@pytest.fixture(scope="module")
def filter_coll(xdb):
    coll = xdb["filter"]
    coll.insert_many([raw(d) for d in FILTER_DOCS])
    return coll


@pytest.mark.parametrize("name,expr,expected", FILTER_CASES, ids=[c[0] for c in FILTER_CASES])
def test_filter(filter_coll, name, expr, expected):
    """filter.js: ``$filter`` with ``as`` or ``$$this``, inside ``$let`` (outer variables and fields),
    with ``$and``/``$or`` conditions, and as an argument of ``$and``/``$or``/``$cond``/``$switch``
    (an empty array is truthy); a null, undefined or missing input gives null."""
    out = run_agg(filter_coll, [{"$project": {"b": expr}}, {"$sort": {"_id": 1}}])
    assert_same(out, [{"_id": i, "b": v} for i, v in enumerate(expected)])


FILTER_ERRORS = [
    ("string", 28646), ({"input": "$a", "as": "x", "cond": True, "extra": 1}, 28647),
    ({"as": "x", "cond": True}, 28648), ({"input": "$a", "as": "x"}, 28650),
    ({"input": "$a", "as": "$x", "cond": True}, 16867),
    ({"input": "string", "as": "x", "cond": True}, 28651), ({"input": "$a", "cond": {"$eq": [1, "$$var"]}}, 17276),
]


@pytest.mark.parametrize("spec,code", FILTER_ERRORS, ids=[repr(s)[:50] for s, _ in rows(FILTER_ERRORS)])
def test_filter_errors(filter_coll, spec, code):
    """filter.js: a non-object spec (28646), an unknown field (28647), no input (28648), no cond
    (28650), an invalid ``as`` name (16867; let.js/map.js expect FailedToParse), a non-array input
    (28651) and an undefined variable (17276) fail."""
    codes = VAR_NAME_CODES if code == 16867 else (code, 5073201, 7158305) if code == 28651 else (code,)
    aggregate_fails(filter_coll, [{"$project": {"b": {"$filter": spec}}}], *codes)


def test_filter_non_array_field_fails(db):
    """filter.js: a string-valued input field fails with 28651."""
    db.c.insert_one({"a": "string"})
    aggregate_fails(db.c, [{"$project": {"b": {"$filter": {"input": "$a", "as": "x", "cond": True}}}}],
                 28651, 5073201, 7158305)


def test_filter_truthiness_deep_paths_and_nesting(db):
    """filter.js: a non-boolean ``cond`` keeps the truthy elements (a date, decimal 1, [] and a
    document, not null/undefined/0/false); ``$$this.b.c.d`` paths; a ``$filter`` as the ``cond`` of
    another keeps the inner arrays (an empty result array is truthy, null is not)."""
    date = dt.datetime(2021, 5, 6, 7, 8, 9)
    db.c.insert_one(raw({"_id": 0, "a": [date, None, UNDEFINED, 0, False, D("1"), [], {"c": 3}]}))
    out = run_agg(db.c, [{"$project": {"b": {"$filter": {"input": "$a", "as": "x", "cond": "$$x"}}}}])
    assert_same(out, [{"_id": 0, "b": [date, D("1"), [], {"c": 3}]}])

    db.d.insert_one({"_id": 0, "a": [{"b": {"c": {"d": i}}} for i in range(1, 5)]})
    out = run_agg(db.d, [{"$project": {"b": {"$filter": {"input": "$a", "cond": {"$gt": ["$$this.b.c.d", 2]}}}}}])
    assert_same(out, [{"_id": 0, "b": [{"b": {"c": {"d": 3}}}, {"b": {"c": {"d": 4}}}]}])

    db.e.insert_one({"_id": 0, "a": [[1, 2, 3], None, [4, 5, 6]]})
    out = run_agg(db.e, [{"$project": {"b": {"$filter": {
        "input": "$a", "cond": {"$filter": {"input": "$$this", "cond": {"$gt": ["$$this", 3]}}}}}}}])
    assert_same(out, [{"_id": 0, "b": [[1, 2, 3], [4, 5, 6]]}])


@pytest.mark.parametrize("cond,expected", [
    ({"$and": [{"$gt": ["$$this", 0]}, {"$ln": "$$this"}]}, []),
    ({"$or": [{"$lt": ["$$this", 0]}, {"$ln": "$$this"}]}, [-1, -2, -3, -4]),
], ids=["and", "or"])
def test_filter_short_circuits(db, cond, expected):
    """filter.js: ``$and``/``$or`` in a ``$filter`` condition short-circuit, so ``$ln`` of a negative
    number (an error) is never evaluated. (The jstest's '$POISON' failpoint variant is left out.)"""
    db.c.insert_one({"_id": 0, "a": [-1, -2, -3, -4]})
    out = run_agg(db.c, [{"$project": {"b": {"$filter": {"input": "$a", "cond": cond}}}}])
    assert_same(out, [{"_id": 0, "b": expected}])


# ==================================================================================================
# map.js

MAP_DOC = {"simple": [1, 2, 3, 4], "nested": [{"a": 1}, {"a": 2}], "mixed": [{"a": 1}, {}, {"a": 2}, {"a": None}],
           "notArray": 1, "null": None}


@pytest.fixture(scope="module")
def map_coll(xdb):
    coll = xdb["map"]
    coll.insert_one(MAP_DOC)
    return coll


MAP_CASES = [
    ({"input": "$simple", "as": "var", "in": "$$var"}, [1, 2, 3, 4]),
    ({"input": "$simple", "as": "var", "in": {"$add": [10, "$$var"]}}, [11, 12, 13, 14]),
    ({"input": "$simple", "in": "$$this"}, [1, 2, 3, 4]),
    ({"input": "$nested", "as": "var", "in": "$$var.a"}, [1, 2]),
    ({"input": "$nested", "as": "CURRENT", "in": "$a"}, [1, 2]),
    ({"input": "$mixed", "as": "var", "in": "$$var.a"}, [1, None, 2, None]),
    ({"input": "$null", "as": "var", "in": "$$var"}, None),
]


@pytest.mark.parametrize("spec,expected", MAP_CASES, ids=[str(s)[:60] for s, _ in rows(MAP_CASES)])
def test_map(map_coll, spec, expected):
    """map.js: ``$map`` with ``as`` or ``$$this``, over documents (a missing field maps to null),
    rebinding CURRENT; a null input gives null."""
    assert_same(value_of(map_coll, {"$map": spec}, field="res"), expected)


MAP_ERRORS = [
    ({"input": "$simple", "as": "ROOT", "in": "$$ROOT"}, FAILED_TO_PARSE),
    ({"input": "$notArray", "as": "var", "in": "$$var"}, 16883),
    ({"x": 1, "input": "$simple", "as": "var", "in": "$$var"}, 16879),
    ({"as": "var", "in": "$$var"}, 16880),
    ({"input": "$simple", "as": "var"}, 16882),
    ({"input": "$simple", "in": "$$var"}, 17276),
]


@pytest.mark.parametrize("spec,code", MAP_ERRORS, ids=[str(s)[:60] for s, _ in rows(MAP_ERRORS)])
def test_map_errors(map_coll, spec, code):
    """map.js: binding ROOT fails (FailedToParse); a non-array input (16883), an unknown field
    (16879), no input (16880), no in (16882) and an undefined variable (17276) fail."""
    aggregate_fails(map_coll, [{"$project": {"a": {"$map": spec}}}], *(VAR_NAME_CODES if code == FAILED_TO_PARSE else (code,)))


# ==================================================================================================
# let.js

LET_CASES = [
    ("$two", 2), ("$$CURRENT.two", 2), ("$$ROOT.two", 2),
    ({"$add": ["$two", "$$CURRENT.three"]}, 5), ({"$add": ["$$CURRENT.two", "$$ROOT.nested.four"]}, 6),
    ({"$let": {"vars": {"a": 10}, "in": "$$a"}}, 10),
    ({"$let": {"vars": {"a": "$zero"}, "in": "$$a"}}, 0),
    ({"$let": {"vars": {"a": {"$add": ["$one", "$two"]}, "b": 10}, "in": {"$multiply": ["$$a", "$$b"]}}}, 30),
    ({"$let": {"vars": {"var1": 1}, "in": {"$let": {"vars": {"var2": "$$var1"}, "in": {"$sum": ["$$var1", "$$var2"]}}}}}, 2),
    ({"$let": {"vars": {"var1": "$one"},
               "in": {"$let": {"vars": {"var2": "$$var1", "var1": 3}, "in": {"$sum": ["$$var2", "$$var1"]}}}}}, 4),
    ({"$let": {"vars": {"CURRENT": "$$ROOT.nested"}, "in": {"$multiply": ["$four", "$$ROOT.two"]}}}, 8),
    ({"$let": {"vars": {"CURRENT": "$$CURRENT.nested"}, "in": {"$multiply": ["$four", "$$ROOT.two"]}}}, 8),
    ({"$let": {"vars": {"CURRENT": "$nested"}, "in": {"$multiply": ["$four", "$$ROOT.two"]}}}, 8),
    ({"$let": {"vars": {"CURRENT": {"$const": {"ten": 10}}}, "in": {"$multiply": ["$ten", "$$ROOT.two"]}}}, 20),
    ({"$let": {"vars": {"CURRENT": "$three"}, "in": {"$multiply": ["$$CURRENT", "$$ROOT.two"]}}}, 6),
    ({"$let": {"vars": {"x": 6, "y": 10},
               "in": {"$let": {"vars": {"x": "$$y", "y": "$$x"}, "in": {"$subtract": ["$$x", "$$y"]}}}}}, 4),
    ({"$let": {"vars": {"日本語": 10}, "in": "$$日本語"}}, 10),
]


@pytest.fixture(scope="module")
def let_coll(xdb):
    coll = xdb["let"]
    coll.insert_one({"zero": 0, "one": 1, "two": 2, "three": 3, "nested": {"four": 4}})
    return coll


@pytest.mark.parametrize("expr,expected", LET_CASES, ids=[str(e)[:70] for e, _ in LET_CASES])
def test_let(let_coll, expr, expected):
    """let.js: CURRENT/ROOT paths, ``$let`` variables (computed, nested, shadowed, swapped without
    order dependency, Unicode names) and rebinding CURRENT (to a document or a number), both in
    ``$project`` and summed by ``$group``."""
    out = run_agg(let_coll, [{"$project": {"output": expr}}])
    assert len(out) == 1
    assert_same(out[0]["output"], expected)
    assert_same(run_agg(let_coll, [{"$group": {"_id": 0, "res": {"$sum": expr}}}]), [{"_id": 0, "res": expected}])


def test_let_root_and_current_whole(db):
    """let.js (SERVER-5916): ``$$ROOT`` and ``$$CURRENT`` without a subfield are the whole document,
    in ``$project`` and pushed by ``$group``."""
    db.c.insert_one({"_id": "obj"})
    for var in ("$$ROOT", "$$CURRENT"):
        assert_same(run_agg(db.c, [{"$project": {"_id": 0, "obj": var}}]), [{"obj": {"_id": "obj"}}])
        assert_same(run_agg(db.c, [{"$group": {"_id": 0, "objs": {"$push": var}}}]),
                    [{"_id": 0, "objs": [{"_id": "obj"}]}])


LET_ERRORS = [
    ({"$let": {"vars": {"ROOT": 1}, "in": "$$ROOT"}}, FAILED_TO_PARSE),
    ({"$let": {"vars": {"FOO": 1}, "in": "$$FOO"}}, FAILED_TO_PARSE),
    ({"$let": {"vars": {"_underbar": 1}, "in": "$$FOO"}}, FAILED_TO_PARSE),
    ({"$let": {"vars": {"a.b": 1}, "in": "$$FOO"}}, FAILED_TO_PARSE),
    ({"$let": {"vars": {"a b": 1}, "in": "$$FOO"}}, FAILED_TO_PARSE),
    ("$$_underbar", FAILED_TO_PARSE),
    ("$$with spaces", FAILED_TO_PARSE),
    ({"$let": {"vars": {"var1": "$one", "var2": "$$var1"}, "in": "$$var1"}}, 17276),
]


@pytest.mark.parametrize("expr,code", LET_ERRORS, ids=[str(e)[:60] for e, _ in rows(LET_ERRORS)])
def test_let_errors(let_coll, expr, code):
    """let.js: binding ROOT, names starting with an upper-case letter or underscore, or holding '.'
    or ' ' fail with FailedToParse (also when referenced); a variable used to define a sibling
    variable is undefined (17276)."""
    aggregate_fails(let_coll, [{"$project": {"a": expr}}], *(VAR_NAME_CODES if code == FAILED_TO_PARSE else (code,)))

"""String expressions: $concat $substr $substrBytes $substrCP $toLower $toUpper $strLenBytes $strLenCP
$split $trim $ltrim $rtrim $indexOfBytes $indexOfCP $strcasecmp $regexMatch $regexFind $regexFindAll
$replaceOne $replaceAll $binarySize.

Byte-based operators count UTF-8 bytes, CP operators count code points, as mongod does. Arguments
are checked in mongod's order, each operator with its own codes (``expr_arrays.named_args``).

$regexMatch/$regexFind/$regexFindAll share the PCRE semantics of the ``$regex`` filter
(``match_regex``). A constant 'regex' and 'options' are checked and compiled once, when the expression
is compiled (mongod's optimize()); otherwise per document, the last pattern kept.
"""

from __future__ import annotations

import string
import uuid
from typing import Any

from tidemark.protocol.errors import MongoError
from tidemark.query.expr_arrays import index_bound
from tidemark.query.expr_base import (
    args_list,
    check_arity,
    int32_arg,
    named_args,
    nullish,
    num_kind,
    type_name,
)
from tidemark.query.expr_conversion import to_string
from tidemark.query.match_regex import (
    MatchLimitExceeded,
    compile_regex,
    find_all,
    is_regex,
    pattern_and_options,
    search,
    validate_options,
)
from tidemark.query.memory import STRING_LIMIT, check_string, string_too_long
from tidemark.query.value_repr import bson_repr
from tidemark.query.values import MISSING


def compile_concat(args, cc):
    fns = [cc(a) for a in args_list(args)]

    def concat(doc, vars):
        parts = []
        null = False
        for fn in fns:
            v = fn(doc, vars)
            if type(v) is str:
                parts.append(v)
            elif v is None or v is MISSING:
                null = True
            else:
                raise MongoError(16702, f"$concat only supports strings, not {type_name(v)}")
        return None if null else check_string("".join(parts))
    return concat


def _to_str_for_case(v, name):
    """$toLower/$toUpper/$substr coerce numbers and dates to strings; null -> ""."""
    if v is None or v is MISSING:
        return ""
    if type(v) is str:
        return v
    if num_kind(v) is not None:
        return to_string(v)
    if hasattr(v, "isoformat") or type(v).__name__ == "DatetimeMS":
        return to_string(v)
    raise MongoError(16007, f"can't convert from BSON type {type_name(v)} to String")


# mongod changes case with the C locale's toupper/tolower, byte by byte: ASCII letters only ("ó" stays
# "ó", upperlower.js / strcasecmp.js). An ASCII string takes str's own (C) methods; any other the tables.
_UPPER_TABLE = str.maketrans(string.ascii_lowercase, string.ascii_uppercase)
_LOWER_TABLE = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


def ascii_upper(s: str) -> str:
    return s.upper() if s.isascii() else s.translate(_UPPER_TABLE)


def ascii_lower(s: str) -> str:
    return s.lower() if s.isascii() else s.translate(_LOWER_TABLE)


def _case(name, fn):
    def compile_op(args, cc):
        (a,) = (cc(x) for x in check_arity(name, args, 1))
        return lambda doc, vars: fn(_to_str_for_case(a(doc, vars), name))
    return compile_op


def compile_substr_bytes(args, cc, name="$substrBytes"):
    s, st, ln = (cc(x) for x in check_arity(name, args, 3))

    def substr(doc, vars):
        text = _to_str_for_case(s(doc, vars), name)
        start, length = st(doc, vars), ln(doc, vars)
        if num_kind(start) is None:
            raise MongoError(16034, f"{name}:  starting index must be a numeric type (is BSON type {type_name(start)})")
        if num_kind(length) is None:
            raise MongoError(16035, f"{name}:  length must be a numeric type (is BSON type {type_name(length)})")
        data = text.encode()
        i, n = _truncated_int(start), _truncated_int(length)
        if i is None or n is None:
            raise MongoError(16034, f"{name}:  starting index and length must be finite numbers")
        if i < 0:  # a length below zero means "to the end", a start below zero is an error (mongod)
            raise MongoError(50752, f"{name}:  starting index must be non-negative (got: {i})")
        end = len(data) if n < 0 else i + n
        if (i < len(data) and (data[i] & 0xC0) == 0x80):
            raise MongoError(28656, f"{name}:  Invalid range, starting index is a UTF-8 continuation byte.")
        if end < len(data) and (data[end] & 0xC0) == 0x80:
            raise MongoError(28657, f"{name}:  Invalid range, ending index is in the middle of a UTF-8 character.")
        return data[i:end].decode()
    return substr


def _truncated_int(v):
    """A number truncated toward zero, None when not finite (mongod coerces with truncation)."""
    try:
        return int(v.to_decimal()) if hasattr(v, "to_decimal") else int(v)
    except (ValueError, OverflowError, ArithmeticError):
        return None


def compile_substr_cp(args, cc):
    s, st, ln = (cc(x) for x in check_arity("$substrCP", args, 3))

    def substr(doc, vars):
        text = _to_str_for_case(s(doc, vars), "$substrCP")
        start, length = st(doc, vars), ln(doc, vars)
        # mongod's order: the start's type and range, the length's, then the signs (length first)
        if num_kind(start) is None:
            raise MongoError(34450, f"$substrCP: starting index must be a numeric type (is BSON type {type_name(start)})")
        i = int32_arg(start)
        if i is None:
            raise MongoError(34451, "$substrCP: starting index cannot be represented as a 32-bit integral value: "
                                    + bson_repr(start))
        if num_kind(length) is None:
            raise MongoError(34452, f"$substrCP: length must be a numeric type (is BSON type {type_name(length)})")
        n = int32_arg(length)
        if n is None:
            raise MongoError(34453, f"$substrCP: length cannot be represented as a 32-bit integral value: {bson_repr(length)}")
        if n < 0:
            raise MongoError(34454, "$substrCP: length must be a nonnegative integer.")
        if i < 0:
            raise MongoError(34455, "$substrCP: the starting index must be nonnegative integer.")
        return text[i:i + n]
    return substr


def _string_arg(name, code):
    def compile_op(args, cc):
        (a,) = (cc(x) for x in check_arity(name, args, 1))

        def op(doc, vars):
            v = a(doc, vars)
            if type(v) is not str:
                raise MongoError(code, f"{name} requires a string argument, found: {type_name(v)}")
            return len(v.encode()) if name == "$strLenBytes" else len(v)
        return op
    return compile_op


def compile_binary_size(args, cc):
    """``$binarySize``: the byte length of a string (UTF-8) or BinData; null for nullish, 51276 for
    anything else (mongod's ExpressionBinarySize)."""
    (a,) = (cc(x) for x in check_arity("$binarySize", args, 1))

    def binary_size(doc, vars):
        v = a(doc, vars)
        if type(v) is str:
            return len(v.encode())
        if isinstance(v, bytes):  # Binary (any subtype) is a bytes subclass
            return len(v)
        if type(v) is uuid.UUID:  # BinData subtype 4, as the codec decodes it
            return 16
        if nullish(v):
            return None
        raise MongoError(51276, f"$binarySize requires a string or BinData argument, found: {type_name(v)}")
    return binary_size


def compile_split(args, cc):
    a, b = (cc(x) for x in check_arity("$split", args, 2))

    def split(doc, vars):
        s, d = a(doc, vars), b(doc, vars)
        if nullish(s) or nullish(d):
            return None
        if type(s) is not str:
            raise MongoError(40085, f"$split requires an expression that evaluates to a string as a first argument, found: {type_name(s)}")
        if type(d) is not str:
            raise MongoError(40086, f"$split requires an expression that evaluates to a string as a second argument, found: {type_name(d)}")
        if not d:
            raise MongoError(40087, "$split requires a non-empty separator")
        return s.split(d)
    return split


_WHITESPACE = "\u0000\u0020\u0009\u000A\u000B\u000C\u000D\u00A0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200A"


def _trim(name, left, right):
    def compile_op(args, cc):
        spec = named_args(args, ("input", "chars"), (50696, f"{name} only supports an object as an argument, found {{}}"),
                          (50694, f"{name} found an unknown argument: {{}}"),
                          (("input", 50695, f"{name} requires an 'input' field"),))
        inp = cc(spec["input"])
        chars = cc(spec["chars"]) if "chars" in spec else None

        def trim(doc, vars):
            s = inp(doc, vars)
            if nullish(s):
                return None
            if type(s) is not str:
                raise MongoError(50699, f"{name} requires its input to be a string, got {bson_repr(s)} (of type "
                                        f"{type_name(s)}) instead.")
            c = _WHITESPACE
            if chars is not None:  # read only once the input is known to be a string, as in mongod
                c = chars(doc, vars)
                if nullish(c):
                    return None
                if type(c) is not str:
                    raise MongoError(50700, f"{name} requires 'chars' to be a string, got {bson_repr(c)} (of type "
                                            f"{type_name(c)}) instead.")
            if left and right:
                return s.strip(c)
            return s.lstrip(c) if left else s.rstrip(c)
        return trim
    return compile_op


def _index_of(name, in_bytes):
    string_code, token_code = (40091, 40092) if in_bytes else (40093, 40094)

    def compile_op(args, cc):
        lst = args_list(args)
        if not 2 <= len(lst) <= 4:
            raise MongoError(28667, f"Expression {name} takes at least 2 arguments, and at most 4, but {len(lst)} were passed in.")
        string_fn, token_fn = cc(lst[0]), cc(lst[1])
        start_fn = cc(lst[2]) if len(lst) > 2 else None
        end_fn = cc(lst[3]) if len(lst) > 3 else None

        def index_of(doc, vars):
            # mongod's order: each argument is evaluated and checked before the next one is read
            s = string_fn(doc, vars)
            if nullish(s):
                return None
            if type(s) is not str:
                raise MongoError(string_code, f"{name} requires a string as the first argument, found: {type_name(s)}")
            sub = token_fn(doc, vars)
            if type(sub) is not str:
                raise MongoError(token_code, f"{name} requires a string as the second argument, found: {type_name(sub)}")
            start = index_bound(start_fn(doc, vars), name, "starting index") if start_fn else 0
            if in_bytes:
                hay = s.encode()
                end = min(index_bound(end_fn(doc, vars), name, "ending index"), len(hay)) if end_fn else len(hay)
                if start > len(hay) or end < start:
                    return -1
                return hay.find(sub.encode(), start, end)
            end = min(index_bound(end_fn(doc, vars), name, "ending index"), len(s)) if end_fn else len(s)
            if end < start:
                return -1
            if not s and not sub:
                return 0
            # a match may start at any code point before ``end`` and run past it (mongod compares the
            # token against the whole input from each start)
            return s.find(sub, start, end + len(sub) - 1) if start < end else -1
        return index_of
    return compile_op


def compile_strcasecmp(args, cc):
    a, b = (cc(x) for x in check_arity("$strcasecmp", args, 2))

    def strcasecmp(doc, vars):
        # (str order is code point order, which is the UTF-8 byte order mongod compares in)
        x = ascii_upper(_to_str_for_case(a(doc, vars), "$strcasecmp"))
        y = ascii_upper(_to_str_for_case(b(doc, vars), "$strcasecmp"))
        return (x > y) - (x < y)
    return strcasecmp


def _regex_spec(name: str, pattern: Any, options: Any) -> tuple[str | None, str]:
    """The pattern (None when null or missing) and option letters of a $regex* expression, checked in
    mongod's order: 'regex' type (51105), 'options' type (51106), flags in both a BSON regex and
    'options' (51107), a NUL byte in the pattern (51109) or options (51110), then the flags (51108),
    also when there is no pattern."""
    if type(pattern) is str:
        text: str | None = pattern
        flags = ""
    elif is_regex(pattern):
        text, flags = pattern_and_options(pattern)
    elif nullish(pattern):
        text, flags = None, ""
    else:
        raise MongoError(51105, f"{name} needs 'regex' to be of type string or regex")
    if not nullish(options):
        if type(options) is not str:
            raise MongoError(51106, f"{name} needs 'options' to be of type string")
        if flags:
            raise MongoError(51107, f"{name}: found regex option(s) specified in both 'regex' and 'option' fields")
        flags = options
    if text is not None and "\x00" in text:
        raise MongoError(51109, f"{name}: regular expression cannot contain an embedded null byte")
    if "\x00" in flags:
        raise MongoError(51110, f"{name}: regular expression options cannot contain an embedded null byte")
    validate_options(flags, name)
    return text, flags


def _regex_op(name, mode):
    def nothing():  # the answer for a null input or regex (a fresh list each time)
        return False if mode == "match" else (None if mode == "find" else [])

    def run(compiled, s):
        try:
            if mode == "match":
                return search(compiled, s) is not None
            if mode == "find":
                m = search(compiled, s)
                return None if m is None else _match_doc(m)
            return _find_all_bounded(name, compiled, s)
        except MatchLimitExceeded:
            raise MongoError(51156, f"Error occurred while executing the regular expression in {name}. "
                                    "Result code: match limit exceeded") from None

    def compile_op(args, cc):
        spec = named_args(args, ("input", "regex", "options"),
                          (51103, f"{name} expects an object of named arguments but found: {{}}"),
                          (31024, f"{name} found an unknown argument: {{}}"),
                          (("input", 31022, f"{name} requires 'input' parameter"),
                           ("regex", 31023, f"{name} requires 'regex' parameter")))
        inp, rx = cc(spec["input"]), cc(spec["regex"])
        opts = cc(spec["options"]) if "options" in spec else None
        if getattr(rx, "is_const", False) and (opts is None or getattr(opts, "is_const", False)):
            text, flags = _regex_spec(name, rx(None, {}), opts(None, {}) if opts is not None else None)
            constant = None if text is None else compile_regex(text, flags, name)

            def op_constant(doc, vars):
                s = inp(doc, vars)
                if type(s) is str:
                    return nothing() if constant is None else run(constant, s)
                if nullish(s):
                    return nothing()
                raise MongoError(51104, f"{name} needs 'input' to be of type string")
            return op_constant

        # Only the last (pattern, flags, compiled): a regex that varies per document is held by the
        # shared, bounded compiled-pattern cache (match_regex.CACHE), not here.
        memo: list = [None, None, None]

        def op(doc, vars):
            s, pattern = inp(doc, vars), rx(doc, vars)
            options = opts(doc, vars) if opts is not None else None
            if type(s) is not str and not nullish(s):
                raise MongoError(51104, f"{name} needs 'input' to be of type string")
            text, flags = _regex_spec(name, pattern, options)
            if text is None:
                return nothing()
            if memo[0] == text and memo[1] == flags:
                compiled = memo[2]
            else:
                compiled = compile_regex(text, flags, name)  # compiled (and checked) even for a null input
                memo[:] = text, flags, compiled
            return nothing() if nullish(s) else run(compiled, s)
        return op
    return compile_op


def _match_doc(m):
    return {"match": m.group(0), "idx": m.start(), "captures": list(m.groups())}


# $regexFindAll's output bound: mongod adds up each match document's approximate in-memory size
# (Value::getApproximateSize) and fails 51151 past BufferMaxSize (64 MiB). Here a match document
# counts a fixed part (its storage and three fields) plus a 16-byte value per capture plus its
# strings' lengths: the same order as mongod's estimate (not byte-exact), and it stops the list from
# growing without bound (an empty match at each of 50,000 positions with 300 captures is ~250 MB).
_BUFFER_MAX_SIZE = 64 * 1024 * 1024
_MATCH_DOC_SIZE = 200
_VALUE_SIZE = 16


def _find_all_bounded(name: str, compiled: Any, s: str) -> list:
    out = []
    total = 0
    for m in find_all(compiled, s):
        doc = _match_doc(m)
        captures = doc["captures"]
        total += _MATCH_DOC_SIZE + len(doc["match"]) + _VALUE_SIZE * len(captures) + \
            sum(len(c) for c in captures if c is not None)
        if total > _BUFFER_MAX_SIZE:
            raise MongoError(51151, f"{name}: the size of buffer to store output exceeded the 64MB limit")
        out.append(doc)
    return out


def _replace(name, count):
    def compile_op(args, cc):
        spec = named_args(args, ("input", "find", "replacement"),
                          (51751, f"{name} requires an object as an argument, found: {{}}"),
                          (51750, f"{name} found an unknown argument: {{}}"),
                          (("input", 51749, f"{name} requires 'input' to be specified"),
                           ("find", 51748, f"{name} requires 'find' to be specified"),
                           ("replacement", 51747, f"{name} requires 'replacement' to be specified")))
        inp, fnd, rep = cc(spec["input"]), cc(spec["find"]), cc(spec["replacement"])

        def op(doc, vars):
            s, f, r = inp(doc, vars), fnd(doc, vars), rep(doc, vars)
            # a wrong type fails before any null answers, checked input, find, replacement
            for label, v, code in (("input", s, 51746), ("find", f, 51745), ("replacement", r, 51744)):
                if type(v) is not str and not nullish(v):
                    raise MongoError(code, f"{name} requires that '{label}' be a string, found: {bson_repr(v)}")
            if nullish(s) or nullish(f) or nullish(r):
                return None
            if not count and len(r) > len(f) and len(s) + s.count(f) * (len(r) - len(f)) >= STRING_LIMIT:
                raise string_too_long()  # refused before building what could be huge
            return check_string(s.replace(f, r, count) if count else s.replace(f, r))
        return op
    return compile_op


OPERATORS = {
    "$concat": compile_concat,
    "$toLower": _case("$toLower", ascii_lower),
    "$toUpper": _case("$toUpper", ascii_upper),
    "$substr": lambda args, cc: compile_substr_bytes(args, cc, "$substrBytes"),
    "$substrBytes": compile_substr_bytes,
    "$substrCP": compile_substr_cp,
    "$strLenBytes": _string_arg("$strLenBytes", 34473),
    "$strLenCP": _string_arg("$strLenCP", 34471),
    "$split": compile_split,
    "$binarySize": compile_binary_size,
    "$trim": _trim("$trim", True, True),
    "$ltrim": _trim("$ltrim", True, False),
    "$rtrim": _trim("$rtrim", False, True),
    "$indexOfBytes": _index_of("$indexOfBytes", True),
    "$indexOfCP": _index_of("$indexOfCP", False),
    "$strcasecmp": compile_strcasecmp,
    "$regexMatch": _regex_op("$regexMatch", "match"),
    "$regexFind": _regex_op("$regexFind", "find"),
    "$regexFindAll": _regex_op("$regexFindAll", "all"),
    "$replaceOne": _replace("$replaceOne", 1),
    "$replaceAll": _replace("$replaceAll", 0),
}

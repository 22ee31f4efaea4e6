"""String expressions: $concat $substr $substrBytes $substrCP $toLower $toUpper $strLenBytes $strLenCP
$split $trim $ltrim $rtrim $indexOfBytes $indexOfCP $strcasecmp $regexMatch $regexFind $regexFindAll
$replaceOne $replaceAll.

Byte-based operators count UTF-8 bytes, CP operators count code points, as mongod does.
"""

from __future__ import annotations

from typing import Any

from bson.regex import Regex

from tidemark.protocol.errors import MongoError
from tidemark.query.expr_base import (
    args_list,
    check_arity,
    int_arg,
    nullish,
    num_kind,
    require_object,
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
)
from tidemark.query.memory import STRING_LIMIT, check_string, string_too_long
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
        if i < 0:
            return ""
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
        i, n = int_arg(start), int_arg(length)
        if i is None:
            raise MongoError(34450 if num_kind(start) is None else 34451,
                             f"$substrCP: starting index must be a numeric type (is BSON type {type_name(start)})")
        if n is None:
            raise MongoError(34452 if num_kind(length) is None else 34453,
                             f"$substrCP: length must be a numeric type (is BSON type {type_name(length)})")
        if i < 0:
            raise MongoError(34455, "$substrCP: the starting index must be nonnegative integer.")
        if n < 0:
            raise MongoError(34454, "$substrCP: length must be a nonnegative integer.")
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
        spec = require_object(name, args, {"input", "chars"}, ("input",))
        inp = cc(spec["input"])
        chars = cc(spec["chars"]) if "chars" in spec else None

        def trim(doc, vars):
            s = inp(doc, vars)
            c = chars(doc, vars) if chars is not None else _WHITESPACE
            if nullish(s) or nullish(c):
                return None
            if type(s) is not str:
                raise MongoError(50699, f"{name} requires its input to be a string, got {s!r} (of type {type_name(s)}) instead.")
            if type(c) is not str:
                raise MongoError(50700, f"{name} requires 'chars' to be a string, got {c!r} (of type {type_name(c)}) instead.")
            if left and right:
                return s.strip(c)
            return s.lstrip(c) if left else s.rstrip(c)
        return trim
    return compile_op


def _index_of(name, in_bytes):
    def compile_op(args, cc):
        lst = args_list(args)
        if not 2 <= len(lst) <= 4:
            raise MongoError(28667, f"Expression {name} takes at least 2 arguments, and at most 4, but {len(lst)} were passed in.")
        fns = [cc(x) for x in lst]

        def index_of(doc, vars):
            vals = [f(doc, vars) for f in fns]
            s, sub = vals[0], vals[1]
            if nullish(s):
                return None
            if type(s) is not str:
                raise MongoError(40091, f"{name} requires a string as the first argument, found: {type_name(s)}")
            if type(sub) is not str:
                raise MongoError(40092, f"{name} requires a string as the second argument, found: {type_name(sub)}")
            hay: Any = s.encode() if in_bytes else s  # str, or its UTF-8 bytes ($indexOfBytes)
            needle: Any = sub.encode() if in_bytes else sub
            start: int | None
            end: int | None
            start, end = 0, len(hay)
            if len(vals) > 2:
                start = int_arg(vals[2])
                if start is None or start < 0:
                    raise MongoError(40096, f"{name} requires a nonnegative integral starting index, found: {vals[2]}")
            if len(vals) > 3:
                end = int_arg(vals[3])
                if end is None or end < 0:
                    raise MongoError(40097, f"{name} requires a nonnegative integral ending index, found: {vals[3]}")
            if start > end or start > len(hay):
                return -1
            return hay.find(needle, start, end)
        return index_of
    return compile_op


def compile_strcasecmp(args, cc):
    a, b = (cc(x) for x in check_arity("$strcasecmp", args, 2))

    def strcasecmp(doc, vars):
        x = _to_str_for_case(a(doc, vars), "$strcasecmp").upper()
        y = _to_str_for_case(b(doc, vars), "$strcasecmp").upper()
        return (x > y) - (x < y)
    return strcasecmp


def _compile_regex(name, pattern, options):
    flags_text = ""
    if isinstance(pattern, Regex):
        flags_text = pattern.flags if isinstance(pattern.flags, str) else ""
        pattern = pattern.pattern
    elif is_regex(pattern):
        pattern, flags_text = pattern_and_options(pattern)
    elif type(pattern) is not str:
        raise MongoError(51105, f"{name} needs 'regex' to be of type string or regex")
    if options is not None and options is not MISSING:
        if type(options) is not str:
            raise MongoError(51106, f"{name} needs 'options' to be of type string")
        if flags_text:
            raise MongoError(51107, f"{name}: found regex option(s) specified in both 'regex' and 'option' fields")
        flags_text = options
    if "\x00" in pattern:
        raise MongoError(51109, f"{name}: regular expression cannot contain an embedded null byte")
    if "\x00" in flags_text:
        raise MongoError(51110, f"{name}: regular expression options cannot contain an embedded null byte")
    return compile_regex(pattern, flags_text, name)


def _regex_op(name, mode):
    def compile_op(args, cc):
        spec = require_object(name, args, {"input", "regex", "options"}, ("input", "regex"))
        inp, rx = cc(spec["input"]), cc(spec["regex"])
        opts = cc(spec["options"]) if "options" in spec else (lambda d, v: None)
        # Only the last (key, compiled): a regex that varies per document is held by the shared,
        # bounded compiled-pattern cache (match_regex.CACHE), not here.
        memo: list = [None]

        def op(doc, vars):
            s, pattern, options = inp(doc, vars), rx(doc, vars), opts(doc, vars)
            if nullish(pattern):
                return False if mode == "match" else (None if mode == "find" else [])
            key = (str(pattern), str(options))
            entry = memo[0]
            if entry is not None and entry[0] == key:
                compiled = entry[1]
            else:
                compiled = _compile_regex(name, pattern, options)
                memo[0] = (key, compiled)
            if nullish(s):
                return False if mode == "match" else (None if mode == "find" else [])
            if type(s) is not str:
                raise MongoError(51104, f"{name} needs 'input' to be of type string")
            try:
                if mode == "match":
                    return search(compiled, s) is not None
                if mode == "find":
                    m = search(compiled, s)
                    return None if m is None else _match_doc(s, m)
                return [_match_doc(s, m) for m in find_all(compiled, s)]
            except MatchLimitExceeded:
                raise MongoError(51156, f"Error occurred while executing the regular expression in {name}. "
                                        "Result code: match limit exceeded") from None
        return op
    return compile_op


def _match_doc(s, m):
    return {"match": m.group(0), "idx": m.start(), "captures": [g for g in m.groups()]}


def _replace(name, count):
    def compile_op(args, cc):
        spec = require_object(name, args, {"input", "find", "replacement"}, ("input", "find", "replacement"))
        inp, fnd, rep = cc(spec["input"]), cc(spec["find"]), cc(spec["replacement"])

        def op(doc, vars):
            s, f, r = inp(doc, vars), fnd(doc, vars), rep(doc, vars)
            for label, v in (("input", s), ("find", f), ("replacement", r)):
                if not nullish(v) and type(v) is not str:
                    raise MongoError(51746, f"{name} requires that '{label}' be a string, found: {v}")
            if nullish(s) or nullish(f) or nullish(r):
                return None
            if not count and len(r) > len(f) and len(s) + s.count(f) * (len(r) - len(f)) >= STRING_LIMIT:
                raise string_too_long()  # refused before building what could be huge
            return check_string(s.replace(f, r, count) if count else s.replace(f, r))
        return op
    return compile_op


OPERATORS = {
    "$concat": compile_concat,
    "$toLower": _case("$toLower", str.lower),
    "$toUpper": _case("$toUpper", str.upper),
    "$substr": lambda args, cc: compile_substr_bytes(args, cc, "$substrBytes"),
    "$substrBytes": compile_substr_bytes,
    "$substrCP": compile_substr_cp,
    "$strLenBytes": _string_arg("$strLenBytes", 34473),
    "$strLenCP": _string_arg("$strLenCP", 34471),
    "$split": compile_split,
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

"""MongoDB (PCRE) regular expressions -> Python ``re`` patterns, validated like mongod.

Options: i (ignore case), m (multi-line anchors), s (dot matches newline), x (extended), u
(accepted; Python str patterns are always Unicode). Any other letter -> 51108. A pattern Python
cannot compile -> 51091 "Regular expression is invalid: ...". PCRE spellings Python lacks
(``(?<name>``, ``\\z``, ``\\Z``) are translated.
"""

from __future__ import annotations

import re
from functools import lru_cache

from bson.regex import Regex as BsonRegex

from protocol.errors import MongoError

VALID_OPTIONS = "imsux"
_FLAG_BITS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "x": re.VERBOSE, "u": 0}
_NAMED_GROUP = re.compile(r"\(\?<(?=[A-Za-z_])")


def validate_options(options: str) -> None:
    for ch in options:
        if ch not in VALID_OPTIONS:
            raise MongoError(51108, f"invalid flag in regex options: {ch}")


def _translate(pattern: str) -> str:
    out = _NAMED_GROUP.sub("(?P<", pattern)
    if "\\z" in out or "\\Z" in out:
        out = re.sub(r"(?<!\\)((?:\\\\)*)\\Z", r"\1(?=\\n?\\Z)", out)
        out = re.sub(r"(?<!\\)((?:\\\\)*)\\z", r"\1\\Z", out)
    return out


@lru_cache(maxsize=1024)
def compile_regex(pattern: str, options: str = "") -> re.Pattern:
    """Compile a MongoDB regex; raises MongoError(51108/51091) like mongod."""
    validate_options(options)
    flags = 0
    for ch in options:
        flags |= _FLAG_BITS[ch]
    if "\x00" in pattern:
        raise MongoError(51091, "Regular expression is invalid: nul byte in pattern")
    try:
        return re.compile(_translate(pattern), flags)
    except re.error as exc:
        raise MongoError(51091, f"Regular expression is invalid: {exc}") from None
    except (OverflowError, RecursionError) as exc:
        raise MongoError(51091, f"Regular expression is invalid: {exc}") from None


def pattern_and_options(value: BsonRegex | re.Pattern) -> tuple[str, str]:
    """The (pattern, options letters) of a BSON regex value or a Python pattern."""
    if isinstance(value, BsonRegex):
        pattern = value.pattern.decode() if isinstance(value.pattern, bytes) else value.pattern
        flags = value.flags
        if isinstance(flags, str):
            return pattern, "".join(sorted(flags))
    else:
        pattern = value.pattern if isinstance(value.pattern, str) else value.pattern.decode()
        flags = value.flags
    letters = "".join(ch for ch, bit in _FLAG_BITS.items() if bit and flags & bit)
    return pattern, "".join(sorted(letters))


def is_regex(value: object) -> bool:
    return isinstance(value, (BsonRegex, re.Pattern))

"""MongoDB (PCRE) regular expressions: THE compile function and THE bounded match, for every caller
(``$regex`` and regex values in filters, ``$in``/``$all`` regexes, ``$jsonSchema`` ``pattern``,
``$regexMatch``/``$regexFind``/``$regexFindAll``).

Engine: the ``regex`` package (PCRE-like syntax: named groups ``(?<n>…)``, possessive quantifiers,
atomic groups, ``\\p{…}``, ``\\K``). It matches with the GIL released (``concurrent=True``), so a
backtracking pattern never freezes the event loop or other queries, and with a ``timeout``, which
bounds it:

- A match runs in slices (20 ms, doubling); between slices the running operation's interruption
  check runs (``server.query.interrupt``), so ``maxTimeMS`` (the slice never outlasts the deadline)
  and ``killOp`` stop a runaway regex.
- PCRE stops a match after 10,000,000 backtracking steps (``PCRE2_ERROR_MATCHLIMIT``); a match that
  runs for ``MATCH_LIMIT_SECONDS`` is this engine's equivalent. As in mongod, a filter then treats
  the value as not matching, and the aggregation operators fail with 51156.

Options: i (ignore case), m (multi-line anchors), s (dot matches newline), x (extended), u (accepted;
patterns are always Unicode). Any other letter -> 51108. PCRE's ``\\Z`` (end, or before a final
newline) is translated; ``\\z`` is native.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

import regex as engine
from bson.regex import Regex as BsonRegex

from protocol.errors import ErrorCode, MongoError
from server.query import interrupt

VALID_OPTIONS = "imsux"
_FLAG_BITS = {"i": engine.IGNORECASE, "m": engine.MULTILINE, "s": engine.DOTALL, "x": engine.VERBOSE, "u": 0}
MAX_PATTERN_SIZE = 32764  # mongod's MaxPatternSize
MATCH_LIMIT_SECONDS = 1.0
FIRST_SLICE_SECONDS = 0.02
_END_BEFORE_NEWLINE = re.compile(r"(?<!\\)((?:\\\\)*)\\Z")

Pattern = engine.Pattern


class MatchLimitExceeded(Exception):
    """A match ran for ``MATCH_LIMIT_SECONDS`` (PCRE's "match limit exceeded")."""


def validate_options(options: str, operator: str | None = None) -> None:
    for ch in options:
        if ch not in VALID_OPTIONS:
            prefix = f"{operator} " if operator else ""
            raise MongoError(51108, f"{prefix}invalid flag in regex options: {ch}")


def _translate(pattern: str) -> str:
    if "\\Z" in pattern:
        pattern = _END_BEFORE_NEWLINE.sub(r"\1(?=\\n?\\z)", pattern)
    return pattern


@lru_cache(maxsize=1024)
def compile_regex(pattern: str, options: str = "", operator: str | None = None) -> Pattern:
    """Compile a MongoDB regex. Errors as mongod: for filters (``operator`` None) 51108 (options),
    2 (too long, NUL byte), 51091 (invalid); for the aggregation operator ``operator`` 51108 and 51111."""
    if operator is None and "\x00" in options:
        raise MongoError(ErrorCode.BadValue, "Regular expression options string cannot contain an embedded null byte")
    validate_options(options, operator)
    flags = 0
    for ch in options:
        flags |= _FLAG_BITS[ch]
    if operator is None:
        if len(pattern.encode("utf-8", "surrogatepass")) > MAX_PATTERN_SIZE:
            raise MongoError(ErrorCode.BadValue, "Regular expression is too long")
        if "\x00" in pattern:
            raise MongoError(ErrorCode.BadValue, "Regular expression cannot contain an embedded null byte")
    try:
        return engine.compile(_translate(pattern), flags)
    except (engine.error, OverflowError, RecursionError, ValueError, MemoryError) as exc:
        reason = str(exc) or "invalid pattern"
        if operator is not None:
            raise MongoError(51111, f"Invalid Regex in {operator}: {reason}") from None
        raise MongoError(51091, f"Regular expression is invalid: {reason}") from None


def search(compiled: Pattern, string: str, pos: int = 0) -> Any:
    """``compiled.search(string, pos)``, bounded (see the module docstring): returns the match or None;
    raises the operation's interruption error, or :class:`MatchLimitExceeded`."""
    timeout = FIRST_SLICE_SECONDS
    spent = 0.0
    while True:
        op = interrupt.current()
        deadline = op.deadline if op is not None else None
        slice_ = timeout if deadline is None else max(0.001, min(timeout, deadline - time.monotonic() + 0.001))
        try:
            # the GIL is released: the operation's run token goes to waiting ones meanwhile
            return interrupt.gil_released(compiled.search, string, pos, concurrent=True, timeout=slice_)
        except TimeoutError:
            spent += slice_
            interrupt.check()
            if spent >= MATCH_LIMIT_SECONDS:
                raise MatchLimitExceeded() from None
            timeout = min(timeout * 2, MATCH_LIMIT_SECONDS - spent)


def matches(compiled: Pattern, string: str) -> bool:
    """Filter semantics: does ``string`` match? A match past the limit does not (mongod's
    ``!!matchView()`` on a PCRE error)."""
    try:
        return search(compiled, string) is not None
    except MatchLimitExceeded:
        return False


def find_all(compiled: Pattern, string: str) -> Iterator[Any]:
    """Every non-overlapping match, left to right; after an empty match the search moves on one
    character (``$regexFindAll``). Each search is bounded like :func:`search`."""
    pos = 0
    while pos <= len(string):
        m = search(compiled, string, pos)
        if m is None:
            return
        yield m
        pos = m.end() + 1 if m.end() == m.start() else m.end()


def pattern_and_options(value: Any) -> tuple[str, str]:
    """The (pattern, options letters) of a BSON regex value or a compiled pattern."""
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
    return isinstance(value, (BsonRegex, re.Pattern, engine.Pattern))

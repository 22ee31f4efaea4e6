"""MongoDB (PCRE) regular expressions: THE compile function and THE bounded match, for every caller
(``$regex`` and regex values in filters, ``$in``/``$all`` regexes, ``$jsonSchema`` ``pattern``,
``$regexMatch``/``$regexFind``/``$regexFindAll``).

Engine: the ``regex`` package (PCRE-like syntax: named groups ``(?<n>…)``, possessive quantifiers,
atomic groups, ``\\p{…}``, ``\\K``). It matches with the GIL released (``concurrent=True``), so a
backtracking pattern never freezes the event loop or other queries, and with a ``timeout``, which
bounds it:

- A match runs in slices (20 ms, doubling); between slices the running operation's interruption
  check runs (``tidemark.query.interrupt``), so ``maxTimeMS`` (the slice never outlasts the deadline)
  and ``killOp`` stop a runaway regex.
- PCRE stops a match after 10,000,000 backtracking steps (``PCRE2_ERROR_MATCHLIMIT``); a match that
  runs for ``MATCH_LIMIT_SECONDS`` is this engine's equivalent. As in mongod, a filter then treats
  the value as not matching, and the aggregation operators fail with 51156.

Options: i (ignore case), m (multi-line anchors), s (dot matches newline), x (extended), u (accepted;
patterns are always Unicode). Any other letter -> 51108. PCRE's ``\\Z`` (end, or before a final
newline) is translated; ``\\z`` is native.

Compile cost is bounded for every pattern a client can send (issue 21): the ``regex`` engine unrolls
counted repetitions (``a{99999999}``, a 13-byte pattern, allocated 23 GB), so before it compiles,
:func:`tidemark.query.regex_limits.scan` (one linear pass, no recursion) refuses what PCRE refuses —
a count above 65,535, nesting above 250 parentheses, an expanded weight above 70,000 — with mongod's
code (51091 for filters and ``$jsonSchema``, 51111 for the aggregation operators) and PCRE's message.
A pattern longer than 32,764 bytes is refused first (2 "Regular expression is too long" in a filter;
51111 "... pattern string is longer than the limit set by the application" for the operators).
Worst accepted compile, measured (the costliest shapes at the weight limit, 2 shared cores, quiet
to loaded): 12-35 ms and at most ~20 MB peak / 10 MB retained (``a{65535}``: 16-45 ms, 18 MB peak,
9.2 MB retained; ``(a){23331}``: 33 ms; ``\\R{11665}``: 25 ms, 19 MB peak); a typical pattern,
microseconds. ``tests/query/test_regex_compile_bound.py`` asserts the memory side (Hypothesis).
Besides the weight, the engine's parser (Python code) costs ~8-30 us per pattern character and
~20-100 us per group (superlinear: hence at most 1,000 groups): a 32,764-byte pattern takes
0.1-1 s to compile. Where compiles run: aggregate and count parse in the thread pool; find, update
and delete parse in the pool from 1 KiB of request (``FILTER_REQUEST_BYTES``), so on the event loop
only patterns under 1 KiB compile — at most ~30 ms of parsing, plus the weight-bound part (the
engine's C compile, which holds the GIL wherever it runs: ``a{65535}`` 16-45 ms). In a worker
thread the parser yields the GIL to the loop every few milliseconds. Deep nesting: 250 levels need
~1,000 Python frames in the engine's parser (the server runs with a recursion limit of 6,000); a
RecursionError anyway is PCRE's "parentheses are too deeply nested (stack check)".

Compiled patterns are cached (:class:`CompiledCache`): least recently used first out, keyed by
(pattern, options, operator), bounded by the sum of the patterns' weights plus a per-entry constant —
``CACHE_BUDGET_WEIGHT``, 32 MB at the measured ~160 bytes of memory per unit — not by a count of
entries, so distinct large patterns cannot pile up (before: 1,024 entries of up to 250 MB each). The
engine's own pattern cache (500 entries, unbounded in bytes) is bypassed (``cache_pattern=False``).
"""

from __future__ import annotations

import re
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

import regex as engine
from bson.regex import Regex as BsonRegex

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query import interrupt
from tidemark.query.regex_limits import PatternRefused, scan

VALID_OPTIONS = "imsux"
_FLAG_BITS = {"i": engine.IGNORECASE, "m": engine.MULTILINE, "s": engine.DOTALL, "x": engine.VERBOSE, "u": 0}
MAX_PATTERN_SIZE = 32764  # mongod's MaxPatternSize (pcre::kMaxPatternLength)
RETAINED_BYTES_PER_WEIGHT = 160  # measured: a{60000} retains 7.5-9.5 MB (tracemalloc, RSS)
CACHE_BUDGET_WEIGHT = 32 * 1024 * 1024 // RETAINED_BYTES_PER_WEIGHT  # 209,715 units: ~32 MB
CACHE_ENTRY_WEIGHT = 32  # a small compiled pattern's own ~5 KB
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


class CompiledCache:
    """The compiled-pattern cache: least recently used out first, bounded by ``budget`` weight units.

    Invariants: ``used`` is the sum of the costs of the entries held and never exceeds ``budget``
    after a ``put`` (a pattern costs its weight plus ``CACHE_ENTRY_WEIGHT``; no accepted pattern
    costs more than the budget); every read and write holds ``lock`` (compiles run on the event
    loop and in worker threads). Compiling happens outside the lock: two threads may compile the
    same pattern at once, and the second ``put`` replaces the first.
    """

    def __init__(self, budget: int):
        self.budget = budget
        self.used = 0
        self.lock = threading.Lock()
        self.entries: OrderedDict[tuple, tuple[Pattern, int]] = OrderedDict()

    def get(self, key: tuple) -> Pattern | None:
        with self.lock:
            entry = self.entries.get(key)
            if entry is None:
                return None
            self.entries.move_to_end(key)
            return entry[0]

    def put(self, key: tuple, compiled: Pattern, cost: int) -> None:
        with self.lock:
            old = self.entries.pop(key, None)
            if old is not None:
                self.used -= old[1]
            if cost > self.budget:
                return
            while self.entries and self.used + cost > self.budget:
                _, (_, evicted) = self.entries.popitem(last=False)
                self.used -= evicted
            self.entries[key] = (compiled, cost)
            self.used += cost

    def clear(self) -> None:
        with self.lock:
            self.entries.clear()
            self.used = 0


CACHE = CompiledCache(CACHE_BUDGET_WEIGHT)


def compile_regex(pattern: str, options: str = "", operator: str | None = None) -> Pattern:
    """Compile a MongoDB regex (cached). Errors as mongod: for filters (``operator`` None) 51108
    (options), 2 (too long, NUL byte), 51091 (invalid, over PCRE's limits); for the aggregation
    operator ``operator`` 51108 and 51111."""
    key = (pattern, options, operator)
    compiled = CACHE.get(key)
    if compiled is None:
        compiled, weight = _compile(pattern, options, operator)
        CACHE.put(key, compiled, weight + CACHE_ENTRY_WEIGHT)
    return compiled


def _invalid(reason: str, operator: str | None) -> MongoError:
    if operator is not None:
        return MongoError(51111, f"Invalid Regex in {operator}: {reason}")
    return MongoError(51091, f"Regular expression is invalid: {reason}")


def _compile(pattern: str, options: str, operator: str | None) -> tuple[Pattern, int]:
    if operator is None and "\x00" in options:
        raise MongoError(ErrorCode.BadValue, "Regular expression options string cannot contain an embedded null byte")
    validate_options(options, operator)
    flags = 0
    for ch in options:
        flags |= _FLAG_BITS[ch]
    if len(pattern) * 4 > MAX_PATTERN_SIZE and len(pattern.encode("utf-8", "surrogatepass")) > MAX_PATTERN_SIZE:
        if operator is not None:
            raise _invalid("pattern string is longer than the limit set by the application", operator)
        raise MongoError(ErrorCode.BadValue, "Regular expression is too long")
    if operator is None and "\x00" in pattern:
        raise MongoError(ErrorCode.BadValue, "Regular expression cannot contain an embedded null byte")
    try:
        scanned = scan(pattern, extended="x" in options)
    except PatternRefused as exc:
        raise _invalid(exc.reason, operator) from None
    try:
        # cache_pattern=False: the engine's own cache (500 patterns, no size bound) would hold every
        # pattern CACHE evicts
        return engine.compile(_translate(scanned.pattern), flags, cache_pattern=False), scanned.weight
    except RecursionError:
        raise _invalid("parentheses are too deeply nested (stack check)", operator) from None
    except (engine.error, OverflowError, ValueError, MemoryError) as exc:
        raise _invalid(str(exc) or "invalid pattern", operator) from None


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

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
patterns are always Unicode). Any other letter -> 51108. A BSON regex value's flags are the letters
its BSON carried (:func:`pattern_and_options`).

PCRE2 semantics the engine lacks are written out by :func:`tidemark.query.regex_limits.scan` (a
``Dialect``): mongod compiles in UTF mode without UCP, so ``\\w \\d \\s \\b`` and the POSIX classes are
ASCII-only (case-insensitive matching stays Unicode); ``\\Z`` is end or before a final newline (the
engine's ``\\Z`` is ``\\z``). PCRE2's start-of-pattern items
(:func:`start_items`) are read here: ``(*UTF)`` ``(*UTF8)`` (UTF is always on), ``(*UCP)`` (Unicode
classes), ``(*CR)`` ``(*LF)`` ``(*CRLF)`` ``(*ANYCRLF)`` ``(*ANY)`` ``(*NUL)`` (what ``.`` ``^`` ``$``
``\\Z`` stop at), ``(*BSR_ANYCRLF)`` ``(*BSR_UNICODE)`` (``\\R``), the optimization switches
``(*NO_AUTO_POSSESS)`` ``(*NO_DOTSTAR_ANCHOR)`` ``(*NO_JIT)`` ``(*NO_START_OPT)`` (no effect on what
matches), and the limits. ``(*LIMIT_MATCH=n)`` / ``(*LIMIT_DEPTH=n)`` (``LIMIT_RECURSION``) lower
PCRE's per-attempt limits: every attempt PCRE2 makes at a start position enters at least two frames
(the attempt and the pattern's outer group), so under 2 any match is "match limit exceeded"
(:class:`LimitedPattern`); a larger match limit shortens the time bound in proportion (10,000,000
steps ~ ``MATCH_LIMIT_SECONDS``, at least ``MIN_LIMIT_SECONDS``): not PCRE's exact count.
``(*LIMIT_HEAP=n)`` is accepted without effect. ``(*NOTEMPTY)`` and ``(*NOTEMPTY_ATSTART)`` are refused as
not supported.

Compile cost is bounded for every pattern a client can send (issue 21): the ``regex`` engine unrolls
counted repetitions (``a{99999999}``, a 13-byte pattern, allocated 23 GB), so before it compiles,
:func:`tidemark.query.regex_limits.scan` (one linear pass, no recursion) refuses what PCRE refuses —
a count above 65,535, nesting above 250 parentheses, an expanded weight above 70,000 — with mongod's
code (51091 for filters and ``$jsonSchema``, 51111 for the aggregation operators) and PCRE's message.
A pattern longer than 32,764 bytes is refused first with PCRE2's "pattern string is longer than the limit
set by the application" (mongod's pcre wrapper sets that maximum): 51091 in a filter, 51111 for the operators.
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
from dataclasses import dataclass
from typing import Any, TypeAlias, final

import regex as engine
from bson.regex import Regex as BsonRegex

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query import interrupt
from tidemark.query.regex_limits import Dialect, PatternRefused, scan

VALID_OPTIONS = "imsux"
# How pymongo's decoder keeps a BSON regex's flags (an int of ``re`` bits): the letters back, in order.
_DECODED_FLAGS = ((2, "i"), (4, "l"), (8, "m"), (16, "s"), (32, "u"), (64, "x"))
_FLAG_BITS = {"i": engine.IGNORECASE, "m": engine.MULTILINE, "s": engine.DOTALL, "x": engine.VERBOSE, "u": 0}
MAX_PATTERN_SIZE = 32764  # mongod's MaxPatternSize (pcre::kMaxPatternLength)
RETAINED_BYTES_PER_WEIGHT = 160  # measured: a{60000} retains 7.5-9.5 MB (tracemalloc, RSS)
CACHE_BUDGET_WEIGHT = 32 * 1024 * 1024 // RETAINED_BYTES_PER_WEIGHT  # 209,715 units: ~32 MB
CACHE_ENTRY_WEIGHT = 32  # a small compiled pattern's own ~5 KB
MATCH_LIMIT_SECONDS = 1.0
PCRE_MATCH_LIMIT = 10_000_000  # PCRE2's default match limit, which MATCH_LIMIT_SECONDS stands for
MIN_LIMIT_SECONDS = 0.001  # the least time a pattern's own lower match limit leaves a search
FIRST_SLICE_SECONDS = 0.02
# PCRE2 10.42's start-of-pattern items (pcre2_compile.c pso_list, in its order): name -> (kind, value).
_START_ITEMS: tuple[tuple[str, str, str], ...] = (
    ("UTF8)", "utf", ""), ("UTF)", "utf", ""), ("UCP)", "ucp", ""), ("NOTEMPTY)", "unsupported", "(*NOTEMPTY)"),
    ("NOTEMPTY_ATSTART)", "unsupported", "(*NOTEMPTY_ATSTART)"), ("NO_AUTO_POSSESS)", "optimization", ""),
    ("NO_DOTSTAR_ANCHOR)", "optimization", ""), ("NO_JIT)", "optimization", ""),
    ("NO_START_OPT)", "optimization", ""), ("LIMIT_HEAP=", "limit", "heap"), ("LIMIT_MATCH=", "limit", "match"),
    ("LIMIT_DEPTH=", "limit", "depth"), ("LIMIT_RECURSION=", "limit", "depth"), ("CR)", "newline", "CR"),
    ("LF)", "newline", "LF"), ("CRLF)", "newline", "CRLF"), ("ANY)", "newline", "ANY"), ("NUL)", "newline", "NUL"),
    ("ANYCRLF)", "newline", "ANYCRLF"), ("BSR_ANYCRLF)", "bsr", "ANYCRLF"), ("BSR_UNICODE)", "bsr", "UNICODE"),
)
_LIMIT_DIGITS = re.compile(r"[0-9]*")
_UINT32_MAX = 2**32 - 1
BAD_VERB = "(*VERB) not recognized or malformed"

Pattern = engine.Pattern


class MatchLimitExceeded(Exception):
    """A match ran for ``MATCH_LIMIT_SECONDS`` (PCRE's "match limit exceeded")."""


def validate_options(options: str, operator: str | None = None) -> None:
    for ch in options:
        if ch not in VALID_OPTIONS:
            prefix = f"{operator} " if operator else ""
            raise MongoError(51108, f"{prefix}invalid flag in regex options: {ch}")


@dataclass(frozen=True, slots=True)
class StartItems:
    """What a pattern's start-of-pattern items asked for; ``length`` is how much of it they take."""

    length: int = 0
    ucp: bool = False
    newline: str = "LF"
    bsr_anycrlf: bool = False
    limit_match: int | None = None
    limit_depth: int | None = None
    unsupported: str | None = None  # the first item Tidemark does not support


def start_items(pattern: str) -> StartItems:
    """PCRE2's reading of the ``(*...)`` items at the very start of ``pattern`` (pcre2_compile.c):
    known names in a row, each ``LIMIT_x=`` with digits and ``)``; the first unknown one ends them
    (the rest of the pattern is parsed as usual). Raises :class:`PatternRefused` with PCRE's
    message for a malformed limit."""
    if not pattern.startswith("(*"):
        return _NO_START_ITEMS
    at = 0
    found: dict[str, Any] = {}
    while pattern.startswith("(*", at):
        item = next((item for item in _START_ITEMS if pattern.startswith(item[0], at + 2)), None)
        if item is None:
            break
        name, kind, value = item
        at += 2 + len(name)
        if kind == "limit":  # digits and ")"; PCRE2 stops reading digits once past UINT32_MAX // 10 - 1
            digits = _LIMIT_DIGITS.match(pattern, at).group()  # type: ignore[union-attr]  # matches ""
            significant = digits.lstrip("0") or "0"
            if not digits or not pattern.startswith(")", at + len(digits)) or len(significant) > 10 \
                    or int(significant) // 10 > _UINT32_MAX // 10 - 1:
                raise PatternRefused(BAD_VERB)
            found[value] = int(significant)  # a later setting of the same limit wins, as in PCRE2
            at += len(digits) + 1
        elif kind == "unsupported":
            found.setdefault("unsupported", value)
        elif kind != "utf" and kind != "optimization":
            found[kind] = value
    return StartItems(at, ucp="ucp" in found, newline=found.get("newline", "LF"),
                      bsr_anycrlf=found.get("bsr") == "ANYCRLF", limit_match=found.get("match"),
                      limit_depth=found.get("depth"), unsupported=found.get("unsupported"))


_NO_START_ITEMS = StartItems()


@final  # (so that ``type(x) is LimitedPattern`` narrows, on the hot path of search)
class LimitedPattern:
    """A compiled pattern that lowered PCRE's match or depth limit ((*LIMIT_MATCH=n), (*LIMIT_DEPTH=n)):
    ``seconds`` bounds each search; ``always_exceeds``: any match exceeds the limit (under 2)."""

    __slots__ = ("pattern", "seconds", "always_exceeds")

    def __init__(self, pattern: Pattern, seconds: float, always_exceeds: bool):
        self.pattern = pattern
        self.seconds = seconds
        self.always_exceeds = always_exceeds


Compiled: TypeAlias = "Pattern | LimitedPattern"  # what compile_regex returns; search() takes either


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
        self.entries: OrderedDict[tuple, tuple[Compiled, int]] = OrderedDict()

    def get(self, key: tuple) -> Compiled | None:
        with self.lock:
            entry = self.entries.get(key)
            if entry is None:
                return None
            self.entries.move_to_end(key)
            return entry[0]

    def put(self, key: tuple, compiled: Compiled, cost: int) -> None:
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


def compile_regex(pattern: str, options: str = "", operator: str | None = None) -> Compiled:
    """Compile a MongoDB regex (cached). Errors as mongod: for filters (``operator`` None) 51108
    (options), 2 (NUL byte), 51091 (invalid, over PCRE's limits, longer than 32,764 bytes); for the aggregation
    operator ``operator`` 51108 and 51111."""
    key = (pattern, options, operator)
    compiled = CACHE.get(key)
    if compiled is None:
        compiled, weight = _compile(pattern, options, operator)
        CACHE.put(key, compiled, weight + CACHE_ENTRY_WEIGHT)
    return compiled


# The engine's compile errors -> PCRE2 10.42's text for the same refusal (mongod's errmsg carries PCRE's
# text, without a position). Matched on the start of the engine's message.
_ENGINE_MESSAGES = (
    ("missing )", "missing closing parenthesis"),
    ("unterminated character set", "missing terminating ] for character class"),
    ("nothing to repeat", "quantifier does not follow a repeatable item"),
    ("multiple repeat", "quantifier does not follow a repeatable item"),
    ("unbalanced parenthesis", "unmatched closing parenthesis"),
    ("bad escape (end of pattern)", "\\ at end of pattern"),
    ("min repeat greater than max repeat", "numbers out of order in {} quantifier"),
    ("bad character range", "range out of order in character class"),
    ("unknown group", "reference to non-existent subpattern"),
    ("invalid group reference", "reference to non-existent subpattern"),
)
_ENGINE_POSITION = re.compile(r" at position \d+(?: \(line \d+, column \d+\))?$")


def _pcre_message(text: str, pattern: str) -> str:
    """PCRE's message for the engine's compile error ``text`` over ``pattern``; one PCRE has no
    counterpart for keeps the engine's words, without the engine's position."""
    if text.startswith("missing )") and pattern.rfind("(?#") > pattern.rfind(")"):
        return "missing ) at end of (?# comment"
    for start, pcre in _ENGINE_MESSAGES:
        if text.startswith(start):
            return pcre
    return _ENGINE_POSITION.sub("", text) or "invalid pattern"


def _invalid(reason: str, operator: str | None) -> MongoError:
    if operator is not None:
        return MongoError(51111, f"Invalid Regex in {operator}: {reason}")
    return MongoError(51091, f"Regular expression is invalid: {reason}")


def _compile(pattern: str, options: str, operator: str | None) -> tuple[Compiled, int]:
    if operator is None and "\x00" in options:
        raise MongoError(ErrorCode.BadValue, "Regular expression options string cannot contain an embedded null byte")
    validate_options(options, operator)
    flags = 0
    for ch in options:
        flags |= _FLAG_BITS[ch]
    # mongod 7.0's RegexMatchExpression refuses a NUL byte before it looks at what PCRE2 said; a pattern
    # over PCRE2's maximum length (set by mongod's pcre wrapper) is then PCRE's compile error, 51091
    if operator is None and "\x00" in pattern:
        raise MongoError(ErrorCode.BadValue, "Regular expression cannot contain an embedded null byte")
    if len(pattern) * 4 > MAX_PATTERN_SIZE and len(pattern.encode("utf-8", "surrogatepass")) > MAX_PATTERN_SIZE:
        raise _invalid("pattern string is longer than the limit set by the application", operator)
    try:
        items = start_items(pattern)
        if items.unsupported is not None:
            raise PatternRefused(f"{items.unsupported} is not supported by Tidemark")
        dialect = Dialect(ucp=items.ucp, newline=items.newline, bsr_anycrlf=items.bsr_anycrlf,
                          multiline="m" in options, dotall="s" in options)
        scanned = scan(pattern[items.length:], extended="x" in options, dialect=dialect)
    except PatternRefused as exc:
        raise _invalid(exc.reason, operator) from None
    try:
        # cache_pattern=False: the engine's own cache (500 patterns, no size bound) would hold every
        # pattern CACHE evicts
        compiled = engine.compile(scanned.pattern, flags, cache_pattern=False)
    except RecursionError:
        raise _invalid("parentheses are too deeply nested (stack check)", operator) from None
    except (engine.error, OverflowError, ValueError, MemoryError) as exc:
        raise _invalid(_pcre_message(str(exc), pattern), operator) from None
    if items.limit_match is None and items.limit_depth is None:
        return compiled, scanned.weight
    steps = PCRE_MATCH_LIMIT if items.limit_match is None else min(items.limit_match, PCRE_MATCH_LIMIT)
    seconds = max(MIN_LIMIT_SECONDS, MATCH_LIMIT_SECONDS * steps / PCRE_MATCH_LIMIT)
    always = min(steps, PCRE_MATCH_LIMIT if items.limit_depth is None else items.limit_depth) < 2
    return LimitedPattern(compiled, seconds, always), scanned.weight


def search(compiled: Compiled, string: str, pos: int = 0, limit: float = MATCH_LIMIT_SECONDS) -> Any:
    """``compiled.search(string, pos)``, bounded (see the module docstring): returns the match or None;
    raises the operation's interruption error, or :class:`MatchLimitExceeded` after ``limit`` seconds
    (a pattern's own lower limit applies instead: :class:`LimitedPattern`)."""
    if type(compiled) is LimitedPattern:
        found = search(compiled.pattern, string, pos, compiled.seconds)
        if found is not None and compiled.always_exceeds:
            raise MatchLimitExceeded()  # PCRE2 ran out of frames at this start position at the latest
        return found
    timeout = FIRST_SLICE_SECONDS if limit >= FIRST_SLICE_SECONDS else limit
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
            if spent >= limit:
                raise MatchLimitExceeded() from None
            timeout = min(timeout * 2, limit - spent)


def matches(compiled: Compiled, string: str) -> bool:
    """Filter semantics: does ``string`` match? A match past the limit does not (mongod's
    ``!!matchView()`` on a PCRE error)."""
    try:
        return search(compiled, string) is not None
    except MatchLimitExceeded:
        return False


def find_all(compiled: Compiled, string: str) -> Iterator[Any]:
    """Every non-overlapping match, left to right, as mongod's ``$regexFindAll`` finds them: after an
    empty match the search moves on one character, and no search starts at the end of a non-empty
    input (an empty match there is not reported). Each search is bounded like :func:`search`."""
    pos = 0
    while True:
        m = search(compiled, string, pos)
        if m is None:
            return
        yield m
        pos = m.end() + 1 if m.end() == m.start() else m.end()
        if pos >= len(string):
            return


def pattern_and_options(value: Any) -> tuple[str, str]:
    """The (pattern, options letters) of a BSON regex value or a compiled pattern."""
    if isinstance(value, BsonRegex):
        pattern = value.pattern.decode() if isinstance(value.pattern, bytes) else value.pattern
        flags = value.flags
        if isinstance(flags, str):
            return pattern, "".join(sorted(flags))
        # decoded from BSON: the flag letters pymongo kept as re bits (u and l included, which the
        # engine's bits below drop), so that a regex value's flags are what its BSON said
        return pattern, "".join(letter for bit, letter in _DECODED_FLAGS if flags & bit)
    else:
        pattern = value.pattern if type(value.pattern) is str else value.pattern.decode()
        flags = value.flags
    letters = "".join(ch for ch, bit in _FLAG_BITS.items() if bit and flags & bit)
    return pattern, "".join(sorted(letters))


def is_regex(value: object) -> bool:
    return isinstance(value, (BsonRegex, re.Pattern, engine.Pattern))

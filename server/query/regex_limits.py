"""The static limits of a MongoDB (PCRE) regular expression, checked in one linear pass before the
engine compiles it. Pure: no server imports, no recursion, no engine call.

mongod compiles with PCRE2 10.42 built with ``LINK_SIZE 2`` (a compiled pattern holds at most 65,535
code units) and ``PARENS_NEST_LIMIT 250``. The engine behind :mod:`tidemark.query.match_regex` (the
``regex`` package) has none of these limits: it unrolls counted repetitions, so ``a{99999999}`` (a
13-byte pattern) allocates until the kernel kills the process. :func:`scan` refuses the same family
of patterns as PCRE, with PCRE's messages (the caller adds MongoDB's code and prefix):

- a counted repetition bound above ``MAX_REPEAT`` (65,535): "number too big in {} quantifier"
  (and ``{5,3}``: "numbers out of order in {} quantifier");
- parentheses nested deeper than ``MAX_NESTING`` (250): "parentheses are too deeply nested";
- a pattern whose *weight* (below) exceeds ``MAX_WEIGHT``: "regular expression is too large" — how
  PCRE bounds nested counted repetitions such as ``(a{60000}){60000}`` or ``((a{1000}){1000}){1000}``;
- more than ``MAX_GROUPS`` (1,000) parentheses in all: "regular expression is too large" too. Here
  the scan is stricter than mongod (PCRE allows 65,535 capturing groups): the engine's parser costs
  ~20-100 µs per group, superlinearly (measured: 1,000 ``()`` 37 ms, 4,000 0.47 s, 16,382 — what fits
  in 32,764 bytes — 10 s on a loaded machine).

**Weight** is an upper bound of what the engine builds, in units of one literal character: a literal,
``.``, an anchor or an escape weighs 1 (``\\R`` and ``\\X``, which expand to alternations, 6); a
character class its number of members (a range ``a-z`` is one; at least 1); a group 2 + its
content, each ``|`` 1 more; a quantified item ``w × (n + 1) + 2`` where ``n`` is ``max(1, min, max)``
for ``{min,max}`` / ``{min}``, ``min + 1`` for an open-ended ``{min,}``, 1 for ``?`` and ``*`` and 2
for ``+`` — the engine builds the ``n`` copies while it still holds the item, which is why nested
quantifiers cost a copy more per level (measured: ``((a{15000}){2}){2}`` peaked at 564 bytes per unit
when a quantifier weighed ``w × n``, 250 with ``w × (n + 1)``). Nested quantifiers multiply. Every
unit is conservative for the ``regex`` engine (measured: an accepted pattern never needs more than
~280 bytes of compile memory per unit, asserted in ``tests/query/test_regex_compile_bound.py``).

``MAX_WEIGHT`` is 70,000: it must admit ``a{65535}`` (mongod accepts it; weight 65,538) with room
for a little context around it. Measured on the ``regex`` engine (2026.11.19, CPython 3.11, 2 shared
cores): ``a{65535}`` compiles in 16-45 ms, retains 9.2 MB and peaks at 18 MB; the costliest accepted
shapes per unit (``a{65535}``, ``\\R{11666}``, ``(a){23332}``, ``(?=a){17499}``, classes of many
members) stay under ~280 bytes of peak memory per unit, so any accepted pattern compiles within ~20 MB
(~10 MB retained) and, measured, 12-35 ms at the limit. The typical pattern (weight < 100) compiles
in microseconds. Compile memory in bytes grows with the weight, not with the pattern's length.

**The pattern for the engine** (:attr:`Scan.pattern`): PCRE and ``regex`` disagree on a few
spellings, and where they do the scanner's reading (PCRE's) is what the engine is given, so the
weight is the weight of what is compiled:

- a ``{`` that PCRE reads as a literal (not followed by ``digits}``, ``digits,}`` or
  ``digits,digits}`` — so ``{,5}``, ``{ 3}``, ``{a}`` and ``regex``'s fuzzy ``{e<=2}`` are literals, as
  in PCRE2 10.42) is escaped (``\\{``);
- ``\\Q...\\E`` (quoted literal text; ``regex`` lacks it) becomes the escaped characters;
- ``\\g{n}``, ``\\g{-n}``, ``\\g{name}`` (back references; ``regex`` reads ``\\g{3}`` as ``ggg``) become
  ``(?:\\n)`` and ``(?P=name)``.
- ``\\Z`` (PCRE: the end or before a final newline; ``regex``: the very end) becomes a lookahead;
- every ``LITERAL_CHUNK`` characters the pattern consumes in a row, ``(?=[\\s\\S])`` (true wherever a
  character follows) goes before the next one: the engine joins adjacent literal characters (across
  non-capturing groups too) into one string, and the first search with a long periodic string
  (``c`` * 3,000, ``\\.`` * 3,000) builds its search tables in time cubic in the length, holding the
  GIL and deaf to the timeout (5 s at 3,000; hours at 16,384); a lookaround ends such a string. It never
  goes before an item an optional quantifier (``*``, ``?``, ``{0,n}``) follows, whose match may be empty;
- under a :class:`Dialect` (what mongod and the pattern's start items tell PCRE2): without UCP, ``\\w``
  ``\\d`` ``\\s`` ``\\b`` (and their negations) get the engine's scoped ASCII flag, ``(?a:\\w)``, and so
  does a class holding one; a POSIX class (``[:alpha:]``, ``[:^digit:]``...) becomes its ASCII ranges,
  or under UCP PCRE2's Unicode properties; a newline convention other than LF writes out ``.``, ``^``
  (with m) and ``$``; ``(*BSR_ANYCRLF)`` writes out ``\\R``; PCRE2's own properties ``\\p{Xan}``
  ``\\p{Xwd}`` ``\\p{Xps}`` ``\\p{Xsp}`` ``\\p{Xuc}`` (and their negations) become the classes they
  stand for (a negated one inside a class is refused as not supported). A POSIX class weighs its ranges (its
  costliest form: the engine's own POSIX class is one set, its ranges are several), a written-out
  anchor or ``\\Z`` its lookaround (measured).

Scanning follows PCRE's rules where the engine agrees and the engine's where it reads a token
differently (so that nothing the engine parses as structure is hidden from the weight): ``\\``
escapes (a plain argument of ``\\p{..}``, ``\\N{..}``, ``\\g<..>`` is part of the escape; ``\\p`` before a
non-letter and ``\\g'..'`` are literals for the engine), character classes (``[]a]`` and ``[^]a]`` hold
a literal ``]``, POSIX ``[:alpha:]`` inside; ``[.a.]``/``[=a=]`` refused as PCRE does: "POSIX collating
elements are not supported"), ``(?#...)`` comments, option settings ``(?x)``, ``(?-x)``, ``(?x:...)``
(scoped to the enclosing group; a quantifier after ``(?i)``, as after a simple assertion, is PCRE2's
"quantifier does not follow a repeatable item", which the engine would read as repeating the item before) and, with ``x``, whitespace and ``#`` comments. An inline option letter PCRE2 does
not know (``regex``'s ``(?V1)``, ``(?f)``, ``(?r)``...) is refused as PCRE refuses it: "unrecognized
character after (? or (?-".

**The net under the scan**: whatever the scan made of a pattern's structure, an unescaped
``{n}``/``{n,}``/``{n,m}`` anywhere in the engine's input with a count above 65,535 is refused — the
one-count bomb cannot reach the engine even if a tokenization disagreement is still undiscovered
(two were found by the token-soup property in ``tests/query/test_regex_compile_bound.py``). The
price: such a count inside a class or a comment, literal text for mongod, is refused too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_REPEAT = 65535  # PCRE2's MAX_REPEAT_COUNT
MAX_NESTING = 250  # PCRE2's PARENS_NEST_LIMIT
MAX_GROUPS = 1000  # the engine's parser is superlinear in groups: 1,000 ~40 ms, 16,382 ~10 s
MAX_WEIGHT = 70_000

TOO_BIG = "number too big in {} quantifier"
OUT_OF_ORDER = "numbers out of order in {} quantifier"
TOO_DEEP = "parentheses are too deeply nested"
TOO_LARGE = "regular expression is too large"
BAD_OPTION = "unrecognized character after (? or (?-"
COLLATING = "POSIX collating elements are not supported"
NOT_REPEATABLE = "quantifier does not follow a repeatable item"
# ``_Frame.last`` after an item PCRE2 does not repeat: an option setting ``(?i)``, a simple assertion (``^``
# ``$`` ``\\b`` ``\\B`` ``\\A`` ``\\z`` ``\\Z`` ``\\G`` ``\\K``). A quantifier there is PCRE2's error 109; the
# engine would repeat the item before it instead (``/^a(?i)*/`` matched "b", and its index bounds from the
# literal prefix "a" missed it).
_UNREPEATABLE = -1
_ASSERTION_ESCAPES = frozenset("bBAzZGK")

GROUP_WEIGHT = 2
QUANTIFIER_WEIGHT = 2
EXPANDING_ESCAPE_WEIGHT = 6  # \R, \X
PCRE_OPTION_LETTERS = frozenset("imnsxJU")
LITERAL_CHUNK = 64  # the longest run of consumed characters the engine gets without a break (above)
CHUNK_BREAK = "(?=[\\s\\S])"
# escapes that consume no character of their own (assertions, \K) or may consume none (references)
_ZERO_WIDTH_ESCAPES = frozenset("bBAzZGKEgk123456789")  # (a stray \E is nothing)

# A counted quantifier as PCRE2 10.42 reads one: {n}, {n,}, {n,m} (no spaces, no {,m}).
_COUNTED = re.compile(r"\{([0-9]+)(,([0-9]*))?\}")
_ANY_COUNT = _COUNTED  # ({,m} unrolls nothing: the engine builds its minimum, 0)
# A run of plain literal characters (outside a class), without and with the x option.
_PLAIN = re.compile(r"[^\\\[\](){}|*+?.^$]+")
_PLAIN_EXTENDED = re.compile(r"[^\\\[\](){}|*+?.^$#\s\x85\u200e\u200f\u2028\u2029]+")
_OPTIONS = re.compile(r"\(\?([A-Za-z0-9^-]*[A-Za-z][A-Za-z0-9^-]*)([):])")
# The opening of a group whose header is not content: (?: (?= (?! (?> (?| (?<= (?<! and names.
_GROUP_HEADER = re.compile(r"\(\?(?:[:=!>|]|<[=!]|(P?<[A-Za-z_][A-Za-z0-9_]*>|'[A-Za-z_][A-Za-z0-9_]*'))")
_NOT_OPTIONS = re.compile(r"R|C[0-9]*")  # (?R) recursion, (?C) (?C1) callouts
# a backtracking control verb, (*NAME) or (*NAME:arg), and (*:arg) (= (*MARK:arg)); PCRE2 10.42's names
_VERB = re.compile(r"\(\*([A-Z_]+|(?=:))(?::([^)]*))?\)")
_MARK_NAMES = re.compile(r"\(\*(?:MARK)?:([^)]*)\)")
BAD_VERB = "(*VERB) not recognized or malformed"
_POSIX = re.compile(r"\[([:.=])\^?[A-Za-z]+\1\]")
_WHITESPACE = frozenset(" \t\n\x0b\x0c\r\x85\u200e\u200f\u2028\u2029")
# Escapes followed by a delimited argument: the opening delimiter -> the closing one.
_BRACED = {"x", "o", "p", "P", "N", "g", "k"}
_DELIMITERS = {"{": "}", "<": ">", "'": "'"}
_ARGUMENT = re.compile(r"[A-Za-z0-9_ ^=:&.+-]*")
_BACKREFERENCE = re.compile(r"\\g\{(?:([+-]?)([0-9]+)|([A-Za-z_][A-Za-z0-9_]*))\}")
NO_SUBPATTERN = "reference to non-existent subpattern"
BAD_G = "\\g is not followed by a braced, angle-bracketed, or quoted name/number or by a plain number"

# PCRE2 compiled in UTF mode without UCP (mongod's default): \d \s \w \b and the POSIX classes are
# ASCII-only; the engine's are Unicode. Outside a class the escape gets the engine's scoped ASCII flag
# ((?a:\w): same cost, case-insensitive matching of literals untouched); a class holding one of them is
# wrapped so; a POSIX class becomes its ranges (the engine's [:alpha:] is Unicode even under (?a:)).
# PCRE2's own properties (pcre2pattern "PCRE2's additional properties"), which the engine does not
# know: the class members each stands for. Xsp is Xps since PCRE 8.34; names match loosely (case,
# spaces, '_' and '-' ignored), as PCRE2 10.40+ matches every property name.
_PCRE_PROPERTIES = {
    "xan": r"\p{L}\p{N}", "xwd": r"\p{L}\p{N}_", "xps": r"\p{Z}\t\n\x0b\f\r", "xsp": r"\p{Z}\t\n\x0b\f\r",
    "xuc": r"\$@`\xa0-\ud7ff\ue000-\U0010ffff",
}
_PROPERTY_ESCAPE = re.compile(r"\\([pP])\{(\^?)([^}]*)\}")
NEGATED_PROPERTY_IN_CLASS = "a negated PCRE2 property (\\P{Xan}...) inside a class is not supported by Tidemark"


def _pcre_property(pattern: str, i: int) -> tuple[str, bool] | None:
    """At the escape ``pattern[i:]``: (members, negated) when it is one of PCRE2's own properties."""
    m = _PROPERTY_ESCAPE.match(pattern, i)
    if m is None:
        return None
    members = _PCRE_PROPERTIES.get("".join(ch for ch in m.group(3).lower() if ch not in " _-"))
    if members is None:
        return None
    return members, (m.group(1) == "P") != (m.group(2) == "^")


_ASCII_ESCAPES = frozenset("wWdDsSbB")
_IN_CLASS_ASCII = frozenset("wWdDsS")
_POSIX_NAME = re.compile(r"\[:(\^?)([a-z]+):\]")
_MAX_CODE_POINT = 0x10FFFF
_POSIX_ASCII: dict[str, tuple[tuple[int, int], ...]] = {
    "alpha": ((0x41, 0x5A), (0x61, 0x7A)), "digit": ((0x30, 0x39),),
    "alnum": ((0x30, 0x39), (0x41, 0x5A), (0x61, 0x7A)),
    "word": ((0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)),
    "space": ((0x09, 0x0D), (0x20, 0x20)), "blank": ((0x09, 0x09), (0x20, 0x20)),
    "lower": ((0x61, 0x7A),), "upper": ((0x41, 0x5A),),
    "punct": ((0x21, 0x2F), (0x3A, 0x40), (0x5B, 0x60), (0x7B, 0x7E)),
    "graph": ((0x21, 0x7E),), "print": ((0x20, 0x7E),), "cntrl": ((0x00, 0x1F), (0x7F, 0x7F)),
    "xdigit": ((0x30, 0x39), (0x41, 0x46), (0x61, 0x66)), "ascii": ((0x00, 0x7F),),
}
# With (*UCP), PCRE2 10.42 reads these as Unicode properties (its posix_substitutes; (member text,
# members)); graph, print and punct become its own Unicode sets, which the engine's POSIX classes
# approximate; a negated multi-property class is the engine's own negated POSIX class too.
_POSIX_UCP: dict[str, tuple[str, int]] = {
    "alpha": (r"\p{L}", 1), "lower": (r"\p{Ll}", 1), "upper": (r"\p{Lu}", 1), "digit": (r"\p{Nd}", 1),
    "alnum": (r"\p{L}\p{N}", 2), "word": (r"\p{L}\p{N}_", 3), "space": (r"\p{Z}\x09-\x0d", 2),
    "blank": (r"\x09\x20\xa0\u1680\u180e\u2000-\u200a\u202f\u205f\u3000", 9),
}
_POSIX_UCP_SINGLE = frozenset({"alpha", "lower", "upper", "digit"})

# PCRE2's newline conventions ((*CR), (*LF), ... at the start of a pattern) decide what ".", "^", "$"
# and "\Z" stop at. The engine knows only LF, so for the others the scan writes them out:
# (one newline sequence, "." without the s option, the lookbehind "^" with the m option needs).
_ANY_NEWLINE = r"\n\x0b\x0c\r\x85\u2028\u2029"
NEWLINES: dict[str, tuple[str, str, str]] = {
    "LF": (r"\n", ".", r"(?<=\n)"),
    "CR": (r"\r", r"[^\r]", r"(?<=\r)"),
    "NUL": (r"\x00", r"[^\x00]", r"(?<=\x00)"),
    "CRLF": (r"\r\n", r"(?:(?!\r\n)(?s:.))", r"(?<=\r\n)"),
    "ANYCRLF": (r"(?:\r\n|[\r\n])", r"[^\r\n]", r"(?<=[\r\n])"),
    "ANY": (rf"(?:\r\n|[{_ANY_NEWLINE}])", rf"[^{_ANY_NEWLINE}]", rf"(?<=[{_ANY_NEWLINE}])"),
}
# Measured engine cost of what the scan writes for them, in weight units (~280 bytes each): an
# anchor's lookaround costs 4-9 literals, a CRLF "." 4.
END_WEIGHT = 5  # (?=\n?\z), PCRE's \Z (and a non-m $ under another convention: LOOKAROUND_WEIGHT)
LOOKAROUND_WEIGHT = 9
CRLF_DOT_WEIGHT = 4


class PatternRefused(ValueError):
    """The pattern breaks one of PCRE's limits; ``reason`` is PCRE's message."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Scan:
    weight: int  # the upper bound of the compiled size, in literal-character units
    pattern: str  # the pattern to give the engine (PCRE-literal braces escaped, \Q...\E expanded)


@dataclass(frozen=True, slots=True)
class Dialect:
    """What PCRE2 is told besides the pattern's own tokens: mongod's options m and s, and the
    start-of-pattern items (*UCP), (*CR)/(*LF)/..., (*BSR_ANYCRLF). The default is mongod's: UTF
    without UCP (ASCII classes), LF newlines, Unicode ``\\R``."""

    ucp: bool = False
    newline: str = "LF"  # a key of NEWLINES
    bsr_anycrlf: bool = False
    multiline: bool = False
    dotall: bool = False


class _Frame:
    """One open group: the weight of its finished branches, of the current branch and of the last
    quantifiable item (None: nothing to quantify), and the options x, m and s inside it."""

    __slots__ = ("done", "current", "last", "extended", "multiline", "dotall")

    def __init__(self, extended: bool, multiline: bool = False, dotall: bool = False):
        self.done = 0
        self.current = 0
        self.last: int | None = None
        self.extended = extended
        self.multiline = multiline
        self.dotall = dotall


def _code_point(c: int) -> str:
    return f"\\x{c:02x}" if c < 0x100 else f"\\U{c:08x}"


def _posix_members(name: str, negated: bool, ucp: bool) -> tuple[str, int]:
    """The class members [:name:] (or [:^name:]) stands for under PCRE2, and how many they are."""
    if ucp and name in _POSIX_UCP:
        text, count = _POSIX_UCP[name]
        if not negated:
            return text, count
        if name in _POSIX_UCP_SINGLE:
            return text.replace("\\p", "\\P"), 1
        return f"[:^{name}:]", 1
    if ucp and name in ("graph", "print", "punct"):
        return f"[:^{name}:]" if negated else f"[:{name}:]", 1
    ranges = list(_POSIX_ASCII[name])
    if negated:  # the complement, up to the last code point
        low, inverse = 0, []
        for lo, hi in ranges:
            if lo > low:
                inverse.append((low, lo - 1))
            low = hi + 1
        ranges = [*inverse, (low, _MAX_CODE_POINT)]
    text = "".join(_code_point(lo) if lo == hi else f"{_code_point(lo)}-{_code_point(hi)}" for lo, hi in ranges)
    return text, len(ranges)


# Built once: (name, negated, ucp) -> (members, count); a POSIX class weighs its costliest form.
_POSIX_TEXT = {(name, neg, ucp): _posix_members(name, neg, ucp)
               for name in _POSIX_ASCII for neg in (False, True) for ucp in (False, True)}
_POSIX_WEIGHT = {(name, neg): max(_POSIX_TEXT[name, neg, False][1], _POSIX_TEXT[name, neg, True][1])
                 for name in _POSIX_ASCII for neg in (False, True)}


def _escape_literal(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch == "_" else "\\" + ch for ch in text)


def _count(digits: str) -> int:
    digits = digits.lstrip("0")
    return MAX_REPEAT + 1 if len(digits) > 5 else int(digits or "0")


def _escape_end(pattern: str, i: int) -> int:
    """The index after the escape starting at ``pattern[i] == '\\\\'`` (``\\Q`` excluded)."""
    n = len(pattern)
    if i + 1 >= n:
        return n
    ch = pattern[i + 1]
    j = i + 2
    if ch in _BRACED and j < n and pattern[j] in _DELIMITERS and not (ch in "xopPN" and pattern[j] != "{") \
            and not (ch == "g" and pattern[j] == "'"):  # the engine reads \g'1' as g, ', 1, '
        # Only a plain argument (\p{Greek}, \g<name>, \N{LATIN SMALL LETTER A}) is one item: the
        # engine reads others differently (\g'{3}' is g, ' and a quantifier {3}), so their
        # characters are scanned one by one, braces as quantifiers or literals.
        m = _ARGUMENT.match(pattern, j + 1)
        assert m is not None  # the pattern matches the empty string too
        if m.end() < n and pattern[m.end()] == _DELIMITERS[pattern[j]]:
            return m.end() + 1
        return j
    if ch == "c":
        return min(n, j + 1)
    if ch in "pP":  # \pL; before anything else the engine reads \p as a literal p (in a class too)
        return j + 1 if j < n and pattern[j].isascii() and pattern[j].isalpha() else j
    if ch == "x":  # \xhh
        k = j
        while k < n and k < j + 2 and pattern[k] in "0123456789abcdefABCDEF":
            k += 1
        return k
    if ch.isdigit():  # back reference or octal
        k = j
        while k < n and pattern[k].isdigit():
            k += 1
        return k
    if ch == "g" and j < n and (pattern[j].isdigit() or pattern[j] in "+-"):
        k = j + 1
        while k < n and pattern[k].isdigit():
            k += 1
        return k
    return j


def _class_end(pattern: str, i: int, out: list[str] | None,
               dialect: Dialect | None = None) -> tuple[int, int, bool, bool]:
    """``pattern[i] == '['``: (index after the class, number of members — a range ``a-z`` is one, a
    POSIX class its ranges —, whether the engine needs it rewritten, whether it needs the scoped ASCII
    flag). With ``out``, the class is appended to it, ``\\Q...\\E`` inside expanded to escaped
    characters and, under a ``dialect``, POSIX classes written as PCRE2 reads them."""
    n = len(pattern)
    j = i + 1
    if j < n and pattern[j] == "^":
        j += 1
    members = 0
    if j < n and pattern[j] == "]":  # a leading ] is a member
        j += 1
        members = 1
    start = i
    rewrite = ascii_only = False
    in_range = False  # after the - of a range: the next member closes it and is not counted
    while j < n:
        ch = pattern[j]
        if ch == "]":
            if out is not None:
                out.append(pattern[start:j + 1])
            return j + 1, members, rewrite, ascii_only
        if ch == "-" and members and not in_range and j + 1 < n and pattern[j + 1] != "]":
            in_range = True
            j += 1
            continue
        if ch == "\\":
            if j + 1 < n and pattern[j + 1] == "Q":
                end = pattern.find("\\E", j + 2)
                text = pattern[j + 2:] if end < 0 else pattern[j + 2:end]
                members += len(text)
                rewrite = True
                if out is not None:
                    out.append(pattern[start:j])
                    out.append(_escape_literal(text))
                j = start = n if end < 0 else end + 2
                in_range = False
                continue
            if dialect is not None and not dialect.ucp and pattern[j + 1:j + 2] in _IN_CLASS_ASCII:
                ascii_only = True
            prop = _pcre_property(pattern, j) if dialect is not None and pattern[j + 1:j + 2] in "pP" else None
            if prop is not None:
                if prop[1]:
                    raise PatternRefused(NEGATED_PROPERTY_IN_CLASS)
                rewrite = True
                if out is not None:
                    out.append(pattern[start:j])
                    out.append(prop[0])
                    start = _escape_end(pattern, j)
            j = _escape_end(pattern, j)
        elif ch == "[" and j + 1 < n and pattern[j + 1] in ":.=":
            m = _POSIX.match(pattern, j)
            if m and m.group(1) != ":":  # the engine would end the class at its ]
                raise PatternRefused(COLLATING)
            posix = _POSIX_NAME.match(pattern, j)
            if posix is not None and posix.group(2) in _POSIX_ASCII:
                negated = posix.group(1) == "^"
                members += _POSIX_WEIGHT[posix.group(2), negated] - 1
                if dialect is not None:
                    rewrite = True
                    if out is not None:
                        out.append(pattern[start:j])
                        out.append(_POSIX_TEXT[posix.group(2), negated, dialect.ucp][0])
                        start = posix.end()
            j = m.end() if m else j + 1
        else:
            j += 1
        if in_range:
            in_range = False
        else:
            members += 1
    if out is not None:
        out.append(pattern[start:])
    return n, members, rewrite, ascii_only


def _options(letters: str, frame: _Frame) -> tuple[bool, bool, bool]:
    """The options x, m and s after the option letters of ``(?letters)`` / ``(?letters:`` in
    ``frame`` (``^`` first turns them all off, as in PCRE2)."""
    extended, multiline, dotall = frame.extended, frame.multiline, frame.dotall
    if letters.startswith("^"):
        extended = multiline = dotall = False
        letters = letters[1:]
    on, _, off = letters.partition("-")
    extended = ("x" in on or extended) and "x" not in off
    multiline = ("m" in on or multiline) and "m" not in off
    dotall = ("s" in on or dotall) and "s" not in off
    return extended, multiline, dotall


def scan(pattern: str, extended: bool = False, dialect: Dialect | None = None) -> Scan:
    """Measure ``pattern`` (``extended``: the ``x`` option is on). Raises :class:`PatternRefused` with
    PCRE's message for a repetition count above 65,535, nesting above 250 parentheses, an unknown
    inline option letter or a weight above ``MAX_WEIGHT``. Linear in the pattern's length.

    With a ``dialect`` the engine's pattern also says what PCRE2 means under it (ASCII \\w \\d \\s
    \\b and POSIX classes without UCP, its newline convention's ``.`` ``^`` ``$`` ``\\Z``, its ``\\R``);
    without one, those tokens are left as written. The weight is the same either way (a POSIX class
    weighs its costliest form), so that measuring without a dialect bounds every compile."""
    n = len(pattern)
    out: list[str] = []  # the engine's pattern, when it differs: pieces up to ``copied``
    copied = 0
    if dialect is None:
        stack = [_Frame(extended)]
        newline, dot, after = "\\n", None, None
    else:
        stack = [_Frame(extended, dialect.multiline, dialect.dotall)]
        newline, dot, after = NEWLINES[dialect.newline]
        if dialect.newline == "LF":  # the engine's own ., ^ and $ are LF's (^ after a final \n aside)
            dot = after = None
    frame = stack[0]
    accept_open = False  # a top-level (*ACCEPT) was written as "(?:|": its group is still open
    groups = 0
    captures = 0  # capturing groups opened so far (for \g{-n})
    i = 0

    def emit(j: int, text: str) -> None:  # the engine gets ``text`` for pattern[i:j]
        nonlocal copied
        out.append(pattern[copied:i])
        out.append(text)
        copied = j

    def add(weight: int) -> None:
        frame.current += weight
        frame.last = weight
        if frame.current > MAX_WEIGHT:
            raise PatternRefused(TOO_LARGE)

    def quantify(factor: int) -> None:
        last = frame.last
        if last is None:  # nothing to repeat: the engine reports it
            return
        if last == _UNREPEATABLE:
            raise PatternRefused(NOT_REPEATABLE)
        weight = last * (factor + 1) + QUANTIFIER_WEIGHT  # the item, and its copies
        frame.current += weight - last
        frame.last = weight  # a further quantifier repeats this one
        if frame.current > MAX_WEIGHT:
            raise PatternRefused(TOO_LARGE)

    def suffix(j: int) -> int:  # past a lazy or possessive suffix of a quantifier
        return j + 1 if j < n and pattern[j] in "?+" else j

    run = 0  # characters consumed since the last CHUNK_BREAK (an upper bound of the engine's literals)

    def optional_after(j: int) -> bool:
        """Whether an optional quantifier (``*``, ``?``, ``{0..}``) follows an item ending at ``j``."""
        while j < n:
            if frame.extended and pattern[j] in _WHITESPACE:
                j += 1
            elif frame.extended and pattern[j] == "#":
                end = pattern.find("\n", j)
                j = n if end < 0 else end + 1
            elif pattern.startswith("(?#", j):
                end = pattern.find(")", j)
                j = n if end < 0 else end + 1
            elif pattern.startswith("\\Q\\E", j):  # an empty quote: PCRE's quantifier after it applies to the item
                j += 4
            else:
                break
        if j >= n:
            return False
        if pattern[j] in "*?":
            return True
        m = _COUNTED.match(pattern, j)
        return m is not None and _count(m.group(1)) == 0

    def consume(at: int, count: int, item_end: int) -> list[int]:
        """``count`` characters consumed by the items from ``at`` (one item when ``count`` is 1; else
        a literal run whose characters are items of one character each, the last ending at
        ``item_end``): the offsets among them before which a CHUNK_BREAK goes."""
        nonlocal run
        cuts = []
        k = max(0, LITERAL_CHUNK - run)
        while k < count and not (k == count - 1 and optional_after(item_end)):
            cuts.append(k)
            run = 0
            k += LITERAL_CHUNK
        run += count - (cuts[-1] if cuts else 0)
        return cuts

    def break_run(at: int, count: int, item_end: int) -> None:
        """``consume``, the breaks written into the engine's pattern (``pattern[at:]`` copied as is)."""
        nonlocal copied
        for k in consume(at, count, item_end):
            out.append(pattern[copied:at + k])
            out.append(CHUNK_BREAK)
            copied = at + k

    while i < n:
        ch = pattern[i]
        if frame.extended and (ch in _WHITESPACE or ch == "#"):
            if ch == "#":
                end = pattern.find("\n", i)
                i = n if end < 0 else end + 1
            else:
                i += 1
            continue
        if ch == "\\":
            if pattern.startswith("\\Q", i):
                end = pattern.find("\\E", i + 2)
                text = pattern[i + 2:] if end < 0 else pattern[i + 2:end]
                out.append(pattern[copied:i])
                after_quote = n if end < 0 else end + 2
                start = 0
                for k in consume(i, len(text), after_quote):
                    out.append(_escape_literal(text[start:k]))
                    out.append(CHUNK_BREAK)
                    start = k
                out.append(_escape_literal(text[start:]))
                i = copied = after_quote
                if text:  # a following quantifier repeats the last character
                    frame.current += len(text) - 1
                    add(1)
                continue
            escaped = pattern[i + 1:i + 2]
            if escaped == "g" and pattern.startswith("{", i + 2):
                # PCRE's \g{n} / \g{-n} / \g{name} is a back reference; the engine reads \g as a literal
                # g and {n} as a quantifier: it gets the reference spelled its way
                m = _BACKREFERENCE.match(pattern, i)
                if m is None:
                    raise PatternRefused(BAD_G)
                if m.group(3) is not None:
                    reference = f"(?P={m.group(3)})"
                else:
                    number = _count(m.group(2))
                    if m.group(1) == "-":
                        number = captures - number + 1
                    elif m.group(1) == "+":
                        number = captures + number
                    if not 0 < number <= MAX_GROUPS:
                        raise PatternRefused(NO_SUBPATTERN)
                    reference = f"(?:\\{number})"
                out.append(pattern[copied:i])
                out.append(reference)
                i = copied = m.end()
                add(1)
                continue
            if escaped == "Z":  # PCRE's end or before a final newline; the engine's \Z is \z
                emit(i + 2, f"(?={newline}?\\z)" if len(newline) == 2 else f"(?=(?:{newline})?\\z)")
                i += 2
                add(END_WEIGHT if len(newline) == 2 else LOOKAROUND_WEIGHT)
                frame.last = _UNREPEATABLE
                continue
            if escaped == "E":  # a stray \E is nothing: a quantifier after it applies to the item before
                emit(i + 2, "")
                i += 2
                continue
            if escaped not in _ZERO_WIDTH_ESCAPES:
                break_run(i, 1, _escape_end(pattern, i))
            prop = _pcre_property(pattern, i) if dialect is not None and escaped in ("p", "P") else None
            if prop is not None:
                emit(_escape_end(pattern, i), f"[{'^' if prop[1] else ''}{prop[0]}]")
            elif dialect is not None and escaped in _ASCII_ESCAPES and not dialect.ucp:
                emit(i + 2, f"(?a:\\{escaped})")
            elif dialect is not None and escaped == "R" and dialect.bsr_anycrlf:
                emit(i + 2, "(?>\\r\\n|[\\r\\n])")
            i = _escape_end(pattern, i)
            add(EXPANDING_ESCAPE_WEIGHT if escaped in ("R", "X") else 1)
            if escaped in _ASSERTION_ESCAPES:
                frame.last = _UNREPEATABLE
        elif ch == "[":
            end, members, rewrite, ascii_only = _class_end(pattern, i, None, dialect)
            break_run(i, 1, end)
            if rewrite or ascii_only:
                pieces: list[str] = []
                if rewrite:
                    _class_end(pattern, i, pieces, dialect)
                text = "".join(pieces) if rewrite else pattern[i:end]
                emit(end, f"(?a:{text})" if ascii_only else text)
            i = end
            add(max(1, members))
        elif ch == "(" and pattern.startswith("(*", i) and (verb := _VERB.match(pattern, i)) is not None:
            text = _verb_text(pattern, verb, depth=len(stack) - 1)
            if text == _ACCEPT_OPEN:  # the rest of this top-level alternative can never be reached
                accept_open = True
            emit(verb.end(), text)
            i = verb.end()
            add(1)
        elif ch == "(":
            if pattern.startswith("(?#", i):  # a comment, to the first )
                end = pattern.find(")", i + 3)
                i = n if end < 0 else end + 1
                continue
            header = _GROUP_HEADER.match(pattern, i)
            m = None if header else _OPTIONS.match(pattern, i)
            if m is not None and not _NOT_OPTIONS.fullmatch(m.group(1)):
                if any(c not in PCRE_OPTION_LETTERS and c not in "^-" for c in m.group(1)):
                    raise PatternRefused(BAD_OPTION)
                on = _options(m.group(1), frame)
                i = m.end()
                if m.group(2) == ")":  # (?x): the rest of the enclosing group
                    frame.extended, frame.multiline, frame.dotall = on
                    frame.last = _UNREPEATABLE
                    continue
                frame = _Frame(*on)
            else:
                if header is None and not pattern.startswith(("(?", "(*"), i) or header and header.group(1):
                    captures += 1  # ( and named groups capture
                frame = _Frame(frame.extended, frame.multiline, frame.dotall)
                i = header.end() if header else i + 1
            stack.append(frame)
            if len(stack) - 1 > MAX_NESTING:
                raise PatternRefused(TOO_DEEP)
            groups += 1
            if groups > MAX_GROUPS:
                raise PatternRefused(TOO_LARGE)
        elif ch == ")":
            if len(stack) > 1:
                closed = stack.pop()
                frame = stack[-1]
                add(GROUP_WEIGHT + closed.done + closed.current)
            else:
                add(1)  # unmatched: the engine reports it
            i += 1
        elif ch == "|":
            if accept_open and len(stack) == 1:  # closes the (?:| opened for a top-level (*ACCEPT)
                emit(i + 1, ")|")
                accept_open = False
            frame.done += frame.current + 1
            frame.current = 0
            frame.last = None
            if frame.done > MAX_WEIGHT:
                raise PatternRefused(TOO_LARGE)
            i += 1
        elif ch in "*?":
            quantify(1)
            i = suffix(i + 1)
        elif ch == "+":
            quantify(2)
            i = suffix(i + 1)
        elif ch == "{":
            m = _COUNTED.match(pattern, i)
            if m is None:  # a literal brace for PCRE: make it one for the engine
                break_run(i, 1, i + 1)
                out.append(pattern[copied:i])
                out.append("\\{")
                i = copied = i + 1
                add(1)
                continue
            low = _count(m.group(1))
            if m.group(2) is None:
                high: int | None = low
            elif m.group(3):
                high = _count(m.group(3))
            else:
                high = None  # {n,}
            if low > MAX_REPEAT or (high is not None and high > MAX_REPEAT):
                raise PatternRefused(TOO_BIG)
            if high is not None and high < low:
                raise PatternRefused(OUT_OF_ORDER)
            quantify(max(1, low, high) if high is not None else low + 1)
            i = suffix(m.end())
        elif ch == "." and dot is not None and not frame.dotall:
            break_run(i, 1, i + 1)
            emit(i + 1, dot)
            i += 1
            add(CRLF_DOT_WEIGHT if dot.startswith("(") else 1)
        elif ch == "^" and after is not None and frame.multiline:
            emit(i + 1, f"(?:\\A|{after}(?!\\z))")  # not after a newline that ends the subject
            i += 1
            add(LOOKAROUND_WEIGHT)
            frame.last = _UNREPEATABLE
        elif ch == "$" and after is not None:
            emit(i + 1, f"(?={newline}|\\z)" if frame.multiline else f"(?=(?:{newline})?\\z)")
            i += 1
            add(LOOKAROUND_WEIGHT)
            frame.last = _UNREPEATABLE
        else:
            m = (_PLAIN_EXTENDED if frame.extended else _PLAIN).match(pattern, i)
            end = m.end() if m is not None else i + 1
            if ch not in "^$":  # (the anchors the dialect leaves as they are consume nothing)
                break_run(i, end - i, end)
            frame.current += end - i - 1
            i = end
            add(1)  # a following quantifier repeats the last character
            if ch in "^$":
                frame.last = _UNREPEATABLE
    total = 0
    for open_frame in reversed(stack):  # unclosed groups (the engine reports them) still weigh
        total = open_frame.done + open_frame.current + total
    if total > MAX_WEIGHT:
        raise PatternRefused(TOO_LARGE)
    if out:
        out.append(pattern[copied:])
        if accept_open:  # (after a newline under x: the pattern may end in a # comment)
            out.append("\n)" if stack[0].extended else ")")
        pattern = "".join(out)
    _no_big_count_anywhere(pattern)
    return Scan(total, pattern)


_ACCEPT_OPEN = "(?:|"


def _verb_text(pattern: str, verb: re.Match[str], depth: int) -> str:
    """The engine's text for the backtracking control verb ``verb`` (at group ``depth``), where it
    has the same meaning for every subject; refuses the rest. The engine knows (*FAIL), (*F),
    (*PRUNE) and (*SKIP). A mark's name matters only to (*SKIP:NAME) (and to reporting, which
    MongoDB does not do), so (*MARK:NAME) is dropped and (*PRUNE:NAME) is (*PRUNE); (*SKIP:NAME)
    without a (*MARK:NAME) is ignored by PCRE2; (*THEN) outside any alternation is (*PRUNE); a verb
    ending the pattern at the top level is never backtracked into, so it changes nothing; a top-level
    (*ACCEPT) ends the match there: ``X(*ACCEPT)Y|Z`` matches where ``X(?:|Y)|Z`` does (the empty
    alternative is tried first and nothing follows it), so it opens that group, closed by the caller
    at the next top-level ``|`` or the end."""
    name, arg = verb.group(1), verb.group(2)
    at_end = depth == 0 and verb.end() == len(pattern)
    if name in ("", "MARK"):
        if not arg:
            raise PatternRefused("(*MARK) must have an argument")
        return ""
    if name in ("FAIL", "F"):
        return "(*FAIL)"
    if name in ("PRUNE", "SKIP") and arg is None:
        return verb.group(0)
    if name == "PRUNE":
        return "(*PRUNE)"
    if name == "SKIP":
        if arg in _MARK_NAMES.findall(pattern):
            raise PatternRefused("(*SKIP:NAME) after a (*MARK:NAME) is not supported by Tidemark")
        return ""
    if name == "THEN":
        if at_end:
            return ""
        if "|" not in pattern:
            return "(*PRUNE)"
        raise PatternRefused("(*THEN) inside an alternation is not supported by Tidemark")
    if name == "COMMIT":
        if at_end:
            return ""
        raise PatternRefused("(*COMMIT) is not supported by Tidemark")
    if name == "ACCEPT":
        if pattern[verb.end():verb.end() + 1] in ("*", "+", "?", "{"):
            raise PatternRefused("a quantified (*ACCEPT) is not supported by Tidemark")
        if depth == 0:
            return "" if at_end else _ACCEPT_OPEN
        raise PatternRefused("(*ACCEPT) inside a group is not supported by Tidemark")
    raise PatternRefused(BAD_VERB)


def _no_big_count_anywhere(pattern: str) -> None:
    """The net under the scan: a ``{n}``, ``{n,}`` or ``{n,m}`` the engine might read as a quantifier
    — anywhere not after an escaping backslash, whatever the scan made of its context — with a
    count above 65,535 is refused. Should the scan and the engine ever tokenize a pattern
    differently, the one-count bomb (``a{99999999}``: 23 GB) still cannot reach the engine. The
    price: such a count inside a class or a comment, which mongod reads as literal text, is refused
    too (write ``\\{``)."""
    for m in _ANY_COUNT.finditer(pattern):
        k = m.start()
        while k > 0 and pattern[k - 1] == "\\":
            k -= 1
        if (m.start() - k) % 2:  # \{ is a literal for the engine
            continue
        if _count(m.group(1)) > MAX_REPEAT or (m.group(3) and _count(m.group(3)) > MAX_REPEAT):
            raise PatternRefused(TOO_BIG)

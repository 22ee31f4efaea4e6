"""Reading date strings for $dateFromString, $convert and $toDate (the date arithmetic is dates.py).

$dateFromString (and $convert / $toDate) read strings as mongod does with timelib. Without a format,
timelib_strtotime's scanner: at each position the longest of its layouts wins (ties go to the earlier
rule), so "2017-07-04T11:56.02", "July 4th, 2017 11am", "7/4/17", "04-07-2017", "2017-Jul-04 noon",
zone abbreviations, "GMT+0545" and military letters all parse, while "2017, 12:50:53" is two times
("2017" reads as 20:17). With a format, timelib_parse_from_format with mongod's %-specifiers. Both
fill a _Parsed (timelib_time: a field never set stays None) and collect timelib's error texts;
_finish applies mongod's checks (incomplete strings, a zone in the string next to a timezone
argument) and computes the instant. Relative phrases ("next monday", "+1 day") are not read: they
fail as unparsable.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import cast

import regex as _regex

from tidemark.query.dates import (
    MONTH_NAMES,
    UTC,
    TimeZone,
    civil_from_days,
    days_from_civil,
    days_in_month,
    iso_week_start_days,
    iso_weekday,
)


class DateParseError(ValueError):
    """A string that is not a date (ConversionFailure, 241, for the caller). ``str()`` is the detail
    that follows "Error parsing date string '...'; " in mongod's message, ``message`` the whole
    message mongod sends."""

    def __init__(self, detail: str, message: str | None = None):
        super().__init__(detail)
        self.message = detail if message is None else message


@dataclass
class _Parsed:
    """The fields of timelib's ``timelib_time`` that mongod reads; None is TIMELIB_UNSET."""

    y: int | None = None
    m: int | None = None
    d: int | None = None
    h: int | None = None
    i: int | None = None
    s: int | None = None
    us: int | None = None
    have_time: int = 0
    have_date: int = 0
    have_zone: int = 0
    zone_type: int = 0  # timelib's: 0 none, 1 a UTC offset, 2 an abbreviation
    offset_s: int = 0  # the zone's UTC offset, daylight saving included
    abbr: str = ""
    weekday: int | None = None  # a weekday name: move forward to it (0 = Sunday), as timelib does
    rel_days: int = 0
    rel_seconds: int = 0
    errors: list[tuple[int, str, str]] = field(default_factory=list)  # (position, message, character)
    checked: bool = False  # the reader checked the date and time itself (a format: timelib's own checks)

    def error(self, pos: int, message: str, text: str) -> None:
        self.errors.append((pos, message, text[pos] if pos < len(text) else ""))

    def have_time_now(self, pos: int, text: str) -> bool:
        """TIMELIB_HAVE_TIME: a second time is an error; otherwise the time starts at 00:00:00."""
        if self.have_time:
            self.error(pos, "Double time specification", text)
            return False
        self.have_time, self.h, self.i, self.s, self.us = 1, 0, 0, 0, 0
        return True

    def unhave_time(self) -> None:
        self.have_time, self.h, self.i, self.s, self.us = 0, 0, 0, 0, 0

    def have_date_now(self, pos: int, text: str) -> bool:
        if self.have_date:
            self.error(pos, "Double date specification", text)
            return False
        self.have_date = 1
        return True

    def set_zone(self, pos: int, text: str, zone: tuple[int, int, str] | None) -> None:
        """TIMELIB_HAVE_TZ and the zone parsed at ``pos`` (None: not an offset nor a known abbreviation)."""
        if self.have_zone:
            self.error(pos, "Double timezone specification", text)
            return
        self.have_zone = 1
        if zone is None:
            # mongod replaces timelib's "The timezone could not be found in the database": it never
            # makes zone identifiers available inside the string.
            self.error(pos, "passing a time zone identifier as part of the string is not allowed", text)
        else:
            self.zone_type, self.offset_s, self.abbr = zone


def _digit(c: str) -> bool:
    return "0" <= c <= "9"


class _Cursor:
    """timelib's readers over a token: a number skips whatever precedes it (timelib_get_nr)."""

    __slots__ = ("text", "i")

    def __init__(self, text: str, i: int = 0) -> None:
        self.text, self.i = text, i

    def peek(self) -> str:
        return self.text[self.i] if self.i < len(self.text) else ""

    def nr(self, max_len: int) -> tuple[int | None, int]:
        """(value, digits read) of the next number of at most ``max_len`` digits; (None, 0) if none."""
        t, i = self.text, self.i
        while i < len(t) and not _digit(t[i]):
            i += 1
        j = i
        while j < len(t) and j - i < max_len and _digit(t[j]):
            j += 1
        self.i = j
        return (int(t[i:j]), j - i) if j > i else (None, 0)

    def year(self, max_len: int) -> int | None:
        """A year: two digits are 1970..2069 (TIMELIB_PROCESS_YEAR)."""
        y, n = self.nr(max_len)
        if y is not None and n < 4 and y < 100:
            y += 2000 if y < 70 else 1900
        return y

    def signed_nr(self, max_len: int) -> int | None:
        t = self.text
        while self.i < len(t) and not _digit(t[self.i]) and t[self.i] not in "+-":
            self.i += 1
        sign = -1 if self.peek() == "-" else 1
        if self.peek() in ("+", "-"):
            self.i += 1
        v, _ = self.nr(max_len)
        return None if v is None else sign * v

    def month(self) -> int | None:
        t = self.text
        while self.i < len(t) and t[self.i] in " \t-./":
            self.i += 1
        j = self.i
        while j < len(t) and t[j].isascii() and t[j].isalpha():
            j += 1
        word, self.i = t[self.i:j].lower(), j
        return _MONTH_WORDS.get(word)

    def skip_day_suffix(self) -> None:
        if self.peek() not in (" ", "\t") and self.text[self.i:self.i + 2].lower() in ("st", "nd", "rd", "th"):
            self.i += 2

    def frac_us(self) -> int:
        """Microseconds of a '.123' fraction (digits past the sixth dropped)."""
        t = self.text
        self.i += 1
        j = self.i
        while j < len(t) and _digit(t[j]):
            j += 1
        digits, self.i = t[self.i:j], j
        return int(digits[:6].ljust(6, "0")) if digits else 0

    def meridian(self, h: int) -> int:
        """timelib_meridian: the hours to add for am / pm (12am is 0, 12pm is 12)."""
        t = self.text
        while self.i < len(t) and t[self.i] not in "AaPp":
            self.i += 1
        am = self.peek() in ("a", "A")
        self.i = len(t)
        if am:
            return -12 if h == 12 else 0
        return 0 if h == 12 else 12


_MONTH_WORDS = {name.lower(): n for n, name in enumerate(MONTH_NAMES, 1)}
_MONTH_WORDS.update({name[:3].lower(): n for n, name in enumerate(MONTH_NAMES, 1)})
_MONTH_WORDS.update({"sept": 9, "i": 1, "ii": 2, "iii": 3, "iv": 4, "v": 5, "vi": 6, "vii": 7, "viii": 8, "ix": 9,
                     "x": 10, "xi": 11, "xii": 12})
_WEEKDAY_WORDS = {name: n for n, name in enumerate(("sunday", "monday", "tuesday", "wednesday", "thursday",
                                                     "friday", "saturday"))}
_WEEKDAY_WORDS.update({name[:3]: n for name, n in list(_WEEKDAY_WORDS.items())})

# Zone abbreviations (offset in seconds, daylight saving included), as timelib resolves the common ones,
# and the military letters (J is not a zone). An abbreviation that is not here fails, like a zone name.
_ABBREVIATIONS = {
    "utc": 0, "gmt": 0, "ut": 0, "wet": 0, "west": 3600, "bst": 3600, "cet": 3600, "cest": 7200, "met": 3600,
    "mest": 7200, "eet": 7200, "eest": 10800, "msk": 10800, "msd": 14400, "pkt": 18000, "npt": 20700,
    "hkt": 28800, "sgt": 28800, "awst": 28800, "jst": 32400, "kst": 32400, "acst": 34200, "acdt": 37800,
    "aest": 36000, "aedt": 39600, "nzst": 43200, "nzdt": 46800, "sst": -39600, "hst": -36000, "akst": -32400,
    "akdt": -28800, "pst": -28800, "pdt": -25200, "mst": -25200, "mdt": -21600, "cst": -21600, "cdt": -18000,
    "est": -18000, "edt": -14400, "ast": -14400, "adt": -10800, "nst": -12600, "ndt": -9000, "brt": -10800,
    "brst": -7200,
}
_ABBREVIATIONS.update({letter: 3600 * n for n, letter in enumerate("abcdefghiklm", 1)})
_ABBREVIATIONS.update({letter: -3600 * n for n, letter in enumerate("nopqrstuvwxy", 1)})
_ABBREVIATIONS["z"] = 0


def _tz_correction(digits: str) -> int | None:
    """timelib_parse_tz_cor: seconds of 'H', 'HH', 'H:MM', 'HH:MM', 'HMM', 'HHMM', 'HHMMSS', 'HH:MM:SS'."""
    n = len(digits)
    try:
        if n in (1, 2):
            return int(digits) * 3600
        if n in (3, 4):
            if digits[1] == ":":
                return int(digits[0]) * 3600 + int(digits[2:]) * 60
            if digits[2] == ":":
                return int(digits[:2]) * 3600 + int(digits[3:] or 0) * 60
            v = int(digits)
            return v // 100 * 3600 + v % 100 * 60
        if n == 5 and digits[2] == ":":
            return int(digits[:2]) * 3600 + int(digits[3:]) * 60
        if n == 6:
            v = int(digits)
            return v // 10000 * 3600 + v // 100 % 100 * 60 + v % 100
        if n == 8 and digits[2] == ":" and digits[5] == ":":
            return int(digits[:2]) * 3600 + int(digits[3:5]) * 60 + int(digits[6:])
    except ValueError:
        return None
    return None


def _parse_zone(text: str, i: int) -> tuple[int, tuple[int, int, str] | None]:
    """timelib_parse_zone at ``text[i:]``: (end, (zone type, offset seconds, abbreviation) or None when
    it is neither an offset nor a known abbreviation)."""
    n = len(text)
    while i < n and text[i] in " \t(":
        i += 1
    if text.startswith(("GMT+", "GMT-"), i):
        i += 3
    zone: tuple[int, int, str] | None
    if i < n and text[i] in "+-":
        sign = -1 if text[i] == "-" else 1
        j = i = i + 1
        while j < n and (_digit(text[j]) or text[j] == ":"):
            j += 1
        offset = _tz_correction(text[i:j])
        zone, i = (None if offset is None else (1, sign * offset, "")), j
    else:
        j = i
        while j < n and (text[j].isascii() and text[j].isalnum() or text[j] in "/_-+"):
            j += 1
        word, i = text[i:j], j
        offset = _ABBREVIATIONS.get(word.lower())
        zone = None if offset is None else (2, offset, word.upper())
    while i < n and text[i] == ")":
        i += 1
    return i, zone


# timelib's scanner rules (parse_date.re), in its order. Building blocks first, each a group (so that
# "{space}?" is optional) that may use the blocks above it; 'x' is case-insensitive there, "x" is not.
_MONTH_TEXT = (r"(?i:january|february|march|april|may|june|july|august|september|october|november|december"
               r"|jan|feb|mar|apr|may|jun|jul|aug|sept?|oct|nov|dec)")
_B: dict[str, str] = {}
for _name, _pattern in [
    ("hour24", r"[01]?[0-9]|2[0-4]"), ("hour24lz", r"[01][0-9]|2[0-4]"), ("hour12", r"0?[1-9]|1[0-2]"),
    ("minute", r"[0-5]?[0-9]"), ("minutelz", r"[0-5][0-9]"), ("second", r"[0-5]?[0-9]|60"),
    ("secondlz", r"[0-5][0-9]|60"), ("frac", r"\.[0-9]+"), ("space", r"[ \t]+"),
    ("meridian", r"[AaPp]\.?[Mm]\.?(?=[\t ]|$)"),
    ("month", r"0?[0-9]|1[0-2]"), ("day", r"(?:[0-2]?[0-9]|3[01])(?:st|nd|rd|th)?"),
    ("year", r"[0-9]{{1,4}}"), ("year2", r"[0-9]{{2}}"), ("year4", r"[0-9]{{4}}"),
    ("dayofyear", r"00[1-9]|0[1-9][0-9]|[12][0-9][0-9]|3[0-5][0-9]|36[0-6]"),
    ("weekofyear", r"0[1-9]|[1-4][0-9]|5[0-3]"), ("monthlz", r"0[0-9]|1[0-2]"),
    ("daylz", r"0[0-9]|[12][0-9]|3[01]"),
    ("monthnames", _MONTH_TEXT.replace("{", "{{").replace("}", "}}")),
    ("monthtext", "{monthnames}|I|II|III|IV|V|VI|VII|VIII|IX|X|XI|XII"),
    ("monthabbr", r"(?i:jan|feb|mar|apr|may|jun|jul|aug|sept?|oct|nov|dec)"),
    ("daytext", r"(?i:sunday|monday|tuesday|wednesday|thursday|friday|saturday|sun|mon|tue|wed|thu|fri|sat)"),
    ("tz", r"\(?[A-Za-z]{{1,6}}\)?|[A-Z][a-z]+(?:[_/-][A-Za-z]+)+"),
    ("tzcorrection", "(?:GMT)?[+-](?:{hour24}(?::?{minute})?|{hour24lz}{minutelz}{secondlz}"
                     "|{hour24lz}:{minutelz}:{secondlz})"),
    ("datenoyear", r"{monthtext}[ .\t-]*{day}[,.stndrh\t ]*"),
    ("timeshort12", r"{hour12}[:.]{minute}{space}?{meridian}"),
    ("timelong12", r"{hour12}[:.]{minute}[:.]{second}{space}?{meridian}"),
    ("timeshort24", r"(?i:t)?{hour24}[:.]{minute}"),
    ("timelong24", r"(?i:t)?{hour24}[:.]{minute}[:.]{second}"),
    ("iso8601long", r"(?i:t)?{hour24}[:.]{minute}[:.]{second}{frac}"),
    ("iso8601normtz", r"(?i:t)?{hour24}[:.]{minute}[:.]{secondlz}{space}?(?:{tzcorrection}|{tz})"),
]:
    _B[_name] = "(?:" + _pattern.format(**_B) + ")"
_RULE_PATTERNS = [
    ("yesterday", r"(?i:yesterday)"), ("now", r"(?i:now)"), ("noon", r"(?i:noon)"),
    ("today", r"(?i:midnight|today)"), ("tomorrow", r"(?i:tomorrow)"), ("timestamp", r"@-?[0-9]+"),
    ("time12", r"{hour12}{space}?{meridian}|{timeshort12}|{timelong12}"),
    ("time24", r"{timeshort24}|{timelong24}|{iso8601long}"),
    ("gnunocolon", r"(?i:t)?{hour24lz}{minutelz}"),
    ("iso8601nocolon", r"(?i:t)?{hour24lz}{minutelz}{secondlz}"),
    ("american", r"{month}/{day}(?:/{year})?"),
    ("iso8601date4", r"[+-]?{year4}-{monthlz}-{daylz}|{year4}/{monthlz}/{daylz}/?|{year4}/{month}/{day}"),
    ("iso8601date2", r"{year2}-{monthlz}-{daylz}"),
    ("iso8601datex", r"[+-][0-9]{{5,19}}-{monthlz}-{daylz}"),
    ("gnudateshorter", r"{year4}-{month}"),
    ("gnudateshort", r"{year}-{month}-{day}"),
    ("datefull", r"{day}[ \t.-]*{monthtext}[ \t.-]*{year}"),
    ("pointeddate4", r"{day}[.\t-]{month}[.-]{year4}"),
    ("pointeddate2", r"{day}[.\t]{month}\.{year2}"),
    ("datenoday", r"{monthtext}[ .\t-]*{year4}"),
    ("datenodayrev", r"{year4}[ .\t-]*{monthtext}"),
    ("datetextual", r"{monthtext}[ .\t-]*{day}[,.stndrh\t ]*{year}|{datenoyear}"),
    ("datenoyearrev", r"{day}[ .\t-]*{monthtext}"),
    ("datenocolon", r"{year4}{monthlz}{daylz}"),
    ("xmlrpc", r"{year4}{monthlz}{daylz}[Tt]{hour24}{minutelz}{secondlz}"
               r"|{year4}-{monthlz}-{daylz}T{hour24lz}:{minutelz}:{secondlz}{frac}{tzcorrection}?"
               r"|{year4}-{month}-{day}T{hour24}:{minute}:{second}"
               r"|{year4}:{monthlz}:{daylz} {hour24lz}:{minutelz}:{secondlz}"),
    ("pgydotd", r"{year4}\.?{dayofyear}"),
    ("isoweekday", r"{year4}-?W{weekofyear}-?[0-7]"),
    ("isoweek", r"{year4}-?W{weekofyear}"),
    ("pgtextshort", r"{monthabbr}-{daylz}-{year}"),
    ("pgtextreverse", r"{year}-{monthabbr}-{daylz}"),
    ("clf", r"{day}/{monthabbr}/{year4}:{hour24lz}:{minutelz}:{secondlz}{space}{tzcorrection}"),
    ("year4", r"{year4}"),
    ("daytext", r"{daytext}"),
    ("monthtext", r"{monthnames}"),
    ("tz", r"{tzcorrection}|{tz}"),
    ("dateshortwithtime12", r"{datenoyear}(?:{timeshort12}|{timelong12})"),
    ("dateshortwithtime24", r"{datenoyear}(?:{timeshort24}|{timelong24}|{iso8601normtz})"),
]


@lru_cache(maxsize=1)
def _rules() -> list[tuple[str, _regex.Pattern[str]]]:
    """The compiled rules, on first use (compiling them costs tens of milliseconds). POSIX (leftmost-
    longest) matching, as re2c's: each rule's longest match competes."""
    return [(name, _regex.compile(pattern.format(**_B), _regex.POSIX)) for name, pattern in _RULE_PATTERNS]


def _rule_time24(p: _Parsed, c: _Cursor, pos: int, text: str) -> None:
    if p.have_time_now(pos, text):
        p.h, p.i = c.nr(2)[0], c.nr(2)[0]
        if c.peek() in (":", "."):
            p.s = c.nr(2)[0]
            if c.peek() == ".":
                p.us = c.frac_us()


def _rule_time12(p: _Parsed, c: _Cursor, pos: int, text: str) -> None:
    if p.have_time_now(pos, text):
        h = cast(int, c.nr(2)[0])  # the rule starts with an hour
        if c.peek() in (":", "."):
            p.i = c.nr(2)[0]
            if c.peek() in (":", "."):
                p.s = c.nr(2)[0]
        p.h = h + c.meridian(h)


def _rule_gnunocolon(p: _Parsed, c: _Cursor, pos: int, text: str) -> None:
    # "HHMM" is a time, or the year when a time came first ("12:00 2017"); a third is an error.
    if p.have_time == 0:
        p.h, p.i, p.s = c.nr(2)[0], c.nr(2)[0], 0
    elif p.have_time == 1:
        p.y = c.nr(4)[0]
    else:
        p.error(pos, "Double time specification", text)
        return
    p.have_time += 1


def _rule_iso8601nocolon(p: _Parsed, c: _Cursor, pos: int, text: str) -> None:
    if p.have_time_now(pos, text):
        p.h, p.i, p.s = c.nr(2)[0], c.nr(2)[0], c.nr(2)[0]


def _rule_american(p: _Parsed, c: _Cursor, pos: int, text: str) -> None:
    if p.have_date_now(pos, text):
        p.m, p.d = c.nr(2)[0], c.nr(2)[0]
        if c.peek() == "/":
            p.y = c.year(4)


def _rule_iso8601date4(p: _Parsed, c: _Cursor, pos: int, text: str) -> None:
    if p.have_date_now(pos, text):
        p.y, p.m, p.d = c.signed_nr(4), c.nr(2)[0], c.nr(2)[0]


def _rule_iso8601datex(p: _Parsed, c: _Cursor, pos: int, text: str) -> None:
    if p.have_date_now(pos, text):
        p.y, p.m, p.d = c.signed_nr(19), c.nr(2)[0], c.nr(2)[0]


def _rule_year_month_day(width: int, day: bool) -> _Rule:
    def rule(p: _Parsed, c: _Cursor, pos: int, text: str) -> None:
        if p.have_date_now(pos, text):
            p.y, p.m = c.year(width), c.nr(2)[0]
            p.d = c.nr(2)[0] if day else 1
    return rule


def _rule_datefull(p: _Parsed, c: _Cursor, pos: int, text: str) -> None:
    if p.have_date_now(pos, text):
        p.d = c.nr(2)[0]
        c.skip_day_suffix()
        p.m, p.y = c.month(), c.year(4)


def _rule_pointeddate(width: int) -> _Rule:
    def rule(p: _Parsed, c: _Cursor, pos: int, text: str) -> None:
        if p.have_date_now(pos, text):
            p.d, p.m, p.y = c.nr(2)[0], c.nr(2)[0], c.year(width)
    return rule


def _rule_datenoday(p: _Parsed, c: _Cursor, pos: int, text: str) -> None:
    if p.have_date_now(pos, text):
        p.m, p.y, p.d = c.month(), c.year(4), 1


def _rule_datenodayrev(p: _Parsed, c: _Cursor, pos: int, text: str) -> None:
    if p.have_date_now(pos, text):
        p.y, p.m, p.d = c.year(4), c.month(), 1


def _rule_datetextual(p: _Parsed, c: _Cursor, pos: int, text: str) -> None:
    if p.have_date_now(pos, text):
        p.m, p.d, p.y = c.month(), c.nr(2)[0], c.year(4)  # no year in "July 4th": it stays unset


def _rule_datenoyearrev(p: _Parsed, c: _Cursor, pos: int, text: str) -> None:
    if p.have_date_now(pos, text):
        p.d = c.nr(2)[0]
        c.skip_day_suffix()
        p.m = c.month()


def _rule_datenocolon(p: _Parsed, c: _Cursor, pos: int, text: str) -> None:
    if p.have_date_now(pos, text):
        p.y, p.m, p.d = c.nr(4)[0], c.nr(2)[0], c.nr(2)[0]


def _rule_xmlrpc(p: _Parsed, c: _Cursor, pos: int, text: str) -> None:
    # xmlrpc, soap, wddx, exif: a date and a time in one token (soap may end with a UTC offset).
    if p.have_time_now(pos, text) and p.have_date_now(pos, text):
        p.y, p.m, p.d = c.nr(4)[0], c.nr(2)[0], c.nr(2)[0]
        p.h, p.i, p.s = c.nr(2)[0], c.nr(2)[0], c.nr(2)[0]
        if c.peek() == ".":
            p.us = c.frac_us()
        if c.peek():
            p.set_zone(pos, text, _parse_zone(c.text, c.i)[1])


def _rule_pgydotd(p: _Parsed, c: _Cursor, pos: int, text: str) -> None:
    if p.have_date_now(pos, text):
        p.y, p.d, p.m = c.year(4), c.nr(3)[0], 1


def _rule_isoweek(p: _Parsed, c: _Cursor, pos: int, text: str) -> None:
    if p.have_date_now(pos, text):
        y, w = cast(int, c.nr(4)[0]), cast(int, c.nr(2)[0])  # the rule has both
        weekday = c.nr(1)[0]
        p.y, p.m, p.d = y, 1, 1
        # timelib_daynr_from_weeknr: days from 1 January to that ISO week's day.
        jan1 = iso_weekday(days_from_civil(y, 1, 1)) % 7
        p.rel_days += -(jan1 - 7 if jan1 > 4 else jan1) + (w - 1) * 7 + (1 if weekday is None else weekday)


def _rule_pgtextshort(p: _Parsed, c: _Cursor, pos: int, text: str) -> None:
    if p.have_date_now(pos, text):
        p.m, p.d, p.y = c.month(), c.nr(2)[0], c.year(4)


def _rule_pgtextreverse(p: _Parsed, c: _Cursor, pos: int, text: str) -> None:
    if p.have_date_now(pos, text):
        p.y, p.m, p.d = c.year(4), c.month(), c.nr(2)[0]


def _rule_clf(p: _Parsed, c: _Cursor, pos: int, text: str) -> None:
    if p.have_time_now(pos, text) and p.have_date_now(pos, text):
        p.d, p.m, p.y = c.nr(2)[0], c.month(), c.nr(4)[0]
        p.h, p.i, p.s = c.nr(2)[0], c.nr(2)[0], c.nr(2)[0]
        p.set_zone(pos, text, _parse_zone(c.text, c.i)[1])


def _rule_year4(p: _Parsed, c: _Cursor, pos: int, text: str) -> None:
    p.y = c.nr(4)[0]


def _rule_daytext(p: _Parsed, c: _Cursor, pos: int, text: str) -> None:
    # A weekday name moves the date forward to that weekday and, as in timelib, resets the time.
    p.unhave_time()
    p.weekday = _WEEKDAY_WORDS[c.text.lower()]


def _rule_monthtext(p: _Parsed, c: _Cursor, pos: int, text: str) -> None:
    if p.have_date_now(pos, text):
        p.m = c.month()


def _rule_tz(p: _Parsed, c: _Cursor, pos: int, text: str) -> None:
    p.set_zone(pos, text, _parse_zone(c.text, 0)[1])


def _rule_dateshortwithtime(twelve: bool) -> _Rule:
    def rule(p: _Parsed, c: _Cursor, pos: int, text: str) -> None:
        if not (p.have_date_now(pos, text) and p.have_time_now(pos, text)):
            return
        p.m, p.d = c.month(), c.nr(2)[0]
        h, p.i = cast(int, c.nr(2)[0]), c.nr(2)[0]  # the rule has an hour and a minute
        if c.peek() in ((":", ".") if twelve else (":",)):
            p.s = c.nr(2)[0]
        if twelve:
            h += c.meridian(h)
        elif c.peek() == ".":
            p.us = c.frac_us()
        p.h = h
        if not twelve and c.peek():
            p.set_zone(pos, text, _parse_zone(c.text, c.i)[1])
    return rule


def _rule_special(p: _Parsed, c: _Cursor, pos: int, text: str) -> None:
    word = c.text.lower()
    if word == "now":
        return
    p.unhave_time()
    if word == "noon":
        p.have_time, p.h = 1, 12
    elif word in ("yesterday", "tomorrow"):
        p.rel_days += -1 if word == "yesterday" else 1


def _rule_timestamp(p: _Parsed, c: _Cursor, pos: int, text: str) -> None:
    # "@1500000000": seconds since the epoch, in UTC.
    p.unhave_time()
    p.have_date, p.y, p.m, p.d = 0, 1970, 1, 1
    p.set_zone(pos, text, (1, 0, ""))
    p.rel_seconds += int(c.text[1:])


_Rule = Callable[[_Parsed, _Cursor, int, str], None]
_HANDLERS: dict[str, _Rule] = {
    "yesterday": _rule_special, "now": _rule_special, "noon": _rule_special, "today": _rule_special,
    "tomorrow": _rule_special, "timestamp": _rule_timestamp, "time12": _rule_time12, "time24": _rule_time24,
    "gnunocolon": _rule_gnunocolon, "iso8601nocolon": _rule_iso8601nocolon, "american": _rule_american,
    "iso8601date4": _rule_iso8601date4, "iso8601date2": _rule_year_month_day(2, True),
    "iso8601datex": _rule_iso8601datex, "gnudateshorter": _rule_year_month_day(4, False),
    "gnudateshort": _rule_year_month_day(4, True), "datefull": _rule_datefull,
    "pointeddate4": _rule_pointeddate(4), "pointeddate2": _rule_pointeddate(2), "datenoday": _rule_datenoday,
    "datenodayrev": _rule_datenodayrev, "datetextual": _rule_datetextual, "datenoyearrev": _rule_datenoyearrev,
    "datenocolon": _rule_datenocolon, "xmlrpc": _rule_xmlrpc, "pgydotd": _rule_pgydotd,
    "isoweekday": _rule_isoweek, "isoweek": _rule_isoweek, "pgtextshort": _rule_pgtextshort,
    "pgtextreverse": _rule_pgtextreverse, "clf": _rule_clf, "year4": _rule_year4, "daytext": _rule_daytext,
    "monthtext": _rule_monthtext, "tz": _rule_tz, "dateshortwithtime12": _rule_dateshortwithtime(True),
    "dateshortwithtime24": _rule_dateshortwithtime(False),
}


def _strtotime(text: str) -> _Parsed:
    """timelib_strtotime without a reference time: the fields the string sets, and its errors."""
    p = _Parsed()
    end = len(text)
    for stop in ("\0", "\n"):  # the scanner's end of input
        k = text.find(stop)
        if k != -1:
            end = min(end, k)
    pos = 0
    while pos < end:
        best, best_end = "", pos
        for name, rx in _rules():
            m = rx.match(text, pos, end)
            if m is not None and m.end() > best_end:
                best, best_end = name, m.end()
        if best:
            _HANDLERS[best](p, _Cursor(text[pos:best_end]), pos, text)
            pos = best_end
        else:
            if text[pos] not in " .,\t":
                p.error(pos, "Unexpected character", text)
            pos += 1
    return p


# specifier: (most digits read, exactly that many, timelib's error when there are none). Every one
# but the ISO ones first checks that a digit comes next ("Unexpected data found.", parsing goes on).
_FORMAT_NUMBERS = {
    "d": (2, False, "A two digit day could not be found"), "m": (2, False, "A two digit month could not be found"),
    "Y": (4, False, "A four digit year could not be found"), "H": (2, False, "A two digit hour could not be found"),
    "M": (2, True, "A two digit minute could not be found"), "S": (2, True, "A two digit second could not be found"),
    "L": (3, False, "A three digit millisecond could not be found"),
    "j": (3, False, "A three digit day-of-year could not be found"),
    "G": (4, False, "A four digit ISO year could not be found"), "V": (2, False, "A two digit ISO week could not be found"),
    "u": (1, False, "A single digit day of week could not be found"),
}
_ISO_RANGES = {"V": (1, 53, "ISO Week must be between 1 and 53"), "u": (1, 7, "Day of week must be between 1 and 7")}


def _parse_with_format(text: str, fmt: str) -> _Parsed:
    """timelib_parse_from_format with mongod's specifiers ('%' prefixed). As timelib, an error does
    not stop the reading (mongod reports them all); numbers skip what precedes them; %M and %S take
    exactly two digits; %j is a 0-based day of the year after the year; %V and %u are range checked;
    a field the format does not set stays unset (a date without a month or day is incomplete). The
    string and the format are C strings there: each ends at its first NUL."""
    text, fmt = text.split("\0", 1)[0], fmt.split("\0", 1)[0]
    p = _Parsed()
    iso: dict[str, int] = {}
    i = j = 0
    prefix = False
    while i < len(fmt) and j < len(text):
        begin = j
        if fmt[i] != "%" if not prefix else fmt[i] == "%":  # a literal, or the second '%' of "%%"
            if text[j] != fmt[i]:
                p.error(begin, "Format literal not found", text)
            i, j, prefix = i + 1, j + 1, False
            continue
        if fmt[i] == "%":
            i, prefix = i + 1, True
            continue
        f, prefix = fmt[i], False
        i += 1
        if f in _FORMAT_NUMBERS:
            digits, exact, missing = _FORMAT_NUMBERS[f]
            if f not in "GVu" and not _digit(text[j]):
                p.error(begin, "Unexpected data found.", text)
            if f == "j" and p.y is None:
                p.error(begin, "A 'day of year' can only come after a year has been found", text)
            c = _Cursor(text, j)
            value, n = c.nr(digits)
            j = c.i
            if value is None or (exact and n != digits):
                p.error(begin, missing, text)
                continue
            if f in _ISO_RANGES and not _ISO_RANGES[f][0] <= value <= _ISO_RANGES[f][1]:
                p.error(begin, _ISO_RANGES[f][2], text)
                continue
            if f in "GVu":
                iso[f] = value
                p.have_date = 1
            elif f == "j":
                if p.y is not None:  # the day counts from 0, as PHP's 'z'
                    p.have_date = 1
                    p.y, p.m, p.d = civil_from_days(days_from_civil(p.y, 1, 1) + value)
            elif f in "dmY":
                setattr(p, {"d": "d", "m": "m", "Y": "y"}[f], value)
                p.have_date = 1
            else:
                p.have_time = 1
                if f == "L":
                    p.us = value * 10 ** (3 - n) * 1000  # '%L' of "8" is 800 ms
                else:
                    setattr(p, {"H": "h", "M": "i", "S": "s"}[f], value)
        elif f in ("b", "B"):
            c = _Cursor(text, j)
            month = c.month()
            j = c.i
            if month is None:
                p.error(begin, "A textual month could not be found", text)
                continue
            p.m, p.have_date = month, 1
        elif f == "z":
            j, zone = _parse_zone(text, j)
            if zone is None:
                # mongod's text for timelib's TIMELIB_ERR_TZID_NOT_FOUND
                p.error(begin, "passing a time zone identifier as part of the string is not allowed", text)
                continue
            p.have_zone = 1
            p.zone_type, p.offset_s, p.abbr = zone
        else:  # 'Z': an offset in minutes, its sign required (timelib_parse_tz_minutes)
            m = _regex.match(r"[+-][0-9]{1,4}", text[j:])
            if m is None:
                p.error(begin, "Invalid timezone offset in minutes", text)
                continue
            p.have_zone, p.zone_type, p.offset_s = 1, 1, int(m.group(0)) * 60
            j += m.end()
    if j < len(text):
        p.error(j, "Trailing data", text)
    if i < len(fmt):
        p.error(j, "Data missing", text)
    if p.h is not None or p.i is not None or p.s is not None or p.us is not None:
        p.h, p.i, p.s, p.us = (0 if v is None else v for v in (p.h, p.i, p.s, p.us))
    if p.y is not None and iso:
        p.error(j, "Mixing of ISO dates with natural dates is not allowed", text)
    if "G" in iso and (p.y is not None or p.m is not None or p.d is not None):
        p.error(j, "Mixing of ISO dates with natural dates is not allowed", text)
    if "G" in iso:
        days = iso_week_start_days(iso["G"]) + (iso.get("V", 1) - 1) * 7 + iso.get("u", 1) - 1
        p.y, p.m, p.d = civil_from_days(days)
    elif iso:
        p.error(j, "The parsed date was invalid", text)
    # timelib checks a time and a date only once all their fields are set
    time_ok, date_ok = _valid(p)
    if p.h is not None and p.i is not None and p.s is not None and not time_ok:
        p.error(j, "The parsed time was invalid", text)
    if p.y is not None and p.m is not None and p.d is not None and not date_ok:
        p.error(j, "The parsed date was invalid", text)
    p.checked = True
    return p


def _valid(p: _Parsed) -> tuple[bool, bool]:
    """timelib_valid_time / timelib_valid_date of the parsed fields (an unset year is not a leap year)."""
    h, i, s = (-1 if v is None else v for v in (p.h, p.i, p.s))
    time_ok = 0 <= h <= 23 and 0 <= i <= 59 and 0 <= s <= 59
    m, d = (-1 if v is None else v for v in (p.m, p.d))
    date_ok = 1 <= m <= 12 and 1 <= d <= days_in_month(1 if p.y is None else p.y, m)
    return time_ok, date_ok


def _finish(p: _Parsed, text: str, tz: TimeZone | None) -> int:
    """mongod's TimeZoneDatabase::fromString after timelib: the UTC millis of the parsed fields."""
    time_ok, date_ok = _valid(p)
    if p.have_time and not time_ok and not p.checked:
        p.errors.append((len(text), "The parsed time was invalid", ""))
    if p.have_date and not date_ok and not p.checked:
        p.errors.append((len(text), "The parsed date was invalid", ""))
    if p.errors:
        detail = "; ".join(f"{pos}: {message} '{char}'" for pos, message, char in p.errors)
        raise DateParseError(detail, f"Error parsing date string '{text}'; {detail}")
    if p.h is None and p.i is None and p.s is None:
        p.h = p.i = p.s = p.us = 0
    if p.y is None or p.m is None or p.d is None or p.h is None or p.i is None or p.s is None:
        raise DateParseError(f'an incomplete date/time string has been found, with elements missing: "{text}"')
    if p.zone_type and tz is not None and not tz.is_utc_zone:
        if p.zone_type == 1:
            raise DateParseError("you cannot pass in a date/time string with GMT offset together with a timezone "
                                 "argument")
        raise DateParseError(f"you cannot pass in a date/time string with time zone information ('{p.abbr}') "
                             "together with a timezone argument")
    days = days_from_civil(p.y + (p.m - 1) // 12, (p.m - 1) % 12 + 1, 1) + p.d - 1
    if p.weekday is not None:
        days += (p.weekday - (days + 4) % 7) % 7  # 1970-01-01 was a Thursday (4)
    local_s = (days + p.rel_days) * 86400 + p.h * 3600 + p.i * 60 + p.s + p.rel_seconds
    if p.zone_type:
        utc_ms = (local_s - p.offset_s) * 1000
    else:
        utc_ms = (tz or UTC).to_utc(local_s * 1000)
    total_us = utc_ms * 1000 + (p.us or 0)
    return total_us // 1000 if total_us >= 0 else -(-total_us // 1000)  # mongod truncates toward zero


def parse_date_string(s: str, fmt: str | None = None, tz: TimeZone | None = None) -> int:
    """$dateFromString: UTC millis of ``s`` read with ``fmt`` (timelib's free-form reading when None),
    in ``tz`` when the string has no zone (None: no timezone argument, UTC). DateParseError when the
    string is not a date, as mongod's ConversionFailure."""
    parsed = _strtotime(s) if fmt is None else _parse_with_format(s, fmt)
    return _finish(parsed, s, tz)

"""Operation diagnostics: ``profile`` (the database profiler's settings, server/profiler.py) and ``top``
(per-collection time and counts, server/top.py — what mongotop polls).

``profile: <level>`` answers the settings as they were (``was``, ``slowms``, ``sampleRate``, and
``filter`` when one was set) and then applies the request, as mongod 7.0: levels 0..2 change the
database's level, any other level only reads; ``slowms`` and ``sampleRate`` are server-wide; ``filter``
(a query on profile-entry fields, or ``"unset"``) replaces slowms/sampleRate for that database.
Turning profiling on creates ``<db>.system.profile`` (capped, 1 MB) like mongod.

``setProfilingFilterGlobally`` (set_profiling_filter_globally_cmd.cpp; on any database, enableProfiler
on every normal resource, no writeConcern) runs only when the query knob
``internalQueryGlobalProfilingFilter`` is on, which it is not by default in mongod 7.0 and which
Tidemark does not have: it answers 7283301 "setProfilingFilterGlobally command requires query knob
to be enabled" before its arguments are parsed, as mongod does with the knob off.
"""

from __future__ import annotations

import asyncio
from typing import Any

from bson.decimal128 import Decimal128

from tidemark import log
from tidemark.arguments import check_fields, safe_number_long, wrong_type
from tidemark.context import CommandContext, CommandSpec
from tidemark.profiler import ensure_profile_collection
from tidemark.protocol.errors import ErrorCode, MongoError

FILTER_NOTE = ("When a filter expression is set, slowms and sampleRate are not used for profiling and "
               "slow-query log lines.")


def _level(value: Any) -> int:
    """The ``profile`` command's level (any integer; outside 0..2 only reads the settings)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise wrong_type("profile.profile", value, ("long", "int", "decimal", "double"))
    return safe_number_long(value)  # (a safeInt64: NaN is 0, infinities clamp)


def _slowms(cmd: dict[str, Any]) -> int | None:
    value = cmd.get("slowms")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal128):
        raise wrong_type("profile.slowms", value, ("long", "int", "decimal", "double"))
    return safe_number_long(value)


def _sample_rate(cmd: dict[str, Any]) -> float | None:
    value = cmd.get("sampleRate")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise wrong_type("profile.sampleRate", value, "double")
    if not 0.0 <= value <= 1.0:
        raise MongoError(ErrorCode.BadValue, "'sampleRate' must be between 0.0 and 1.0 inclusive")
    return float(value)


def _filter(cmd: dict[str, Any]) -> Any:
    """The filter asked for: None when the field is absent; a present null is refused as any other
    value that is neither an object nor "unset" (mongod's parseObjectOrUnset)."""
    if "filter" not in cmd:
        return None
    value = cmd["filter"]
    if isinstance(value, dict) or value == "unset":
        return value
    raise MongoError(ErrorCode.BadValue, "Expected an object, or the string 'unset'.")


PROFILE_FIELDS = {"slowms", "sampleRate", "filter"}


async def profile(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    check_fields(cmd, "profile", PROFILE_FIELDS)  # 40415 for anything else (profile1.js)
    level = _level(cmd["profile"])
    slowms, sample_rate, flt = _slowms(cmd), _sample_rate(cmd), _filter(cmd)
    profiler = ctx.server.profiler
    db = ctx.db
    old_level, old_filter = profiler.settings(db)
    old_slowms, old_rate = profiler.slowms, profiler.sample_rate
    new_level = level if 0 <= level <= 2 else None
    if new_level or (flt is not None and flt != "unset"):
        await asyncio.wrap_future(ctx.server.engine.write(lambda w: ensure_profile_collection(w, db)))
    if new_level is not None or flt is not None:
        profiler.configure(db, new_level, flt)
    reply: dict[str, Any] = {"was": old_level, "slowms": old_slowms, "sampleRate": old_rate}
    if old_filter is not None:
        reply["filter"] = old_filter
    if old_filter is not None or (flt is not None and flt != "unset"):
        reply["note"] = FILTER_NOTE
    if slowms is not None:
        profiler.slowms = slowms
    if sample_rate is not None:
        profiler.sample_rate = sample_rate
    if new_level is not None or slowms is not None or sample_rate is not None or flt is not None:
        new_level_now, new_filter = profiler.settings(db)
        before: dict[str, Any] = {"level": old_level, "slowms": old_slowms, "sampleRate": old_rate}
        after: dict[str, Any] = {"level": new_level_now, "slowms": profiler.slowms, "sampleRate": profiler.sample_rate}
        if old_filter is not None:
            before["filter"] = old_filter
        if new_filter is not None:
            after["filter"] = new_filter
        log.info("COMMAND", 48742, "Profiler settings changed", ctx=f"conn{ctx.conn.id}", **{"from": before},
                 to=after, db=db)
    return reply


async def top(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    return {"totals": ctx.server.top.totals()}


GLOBAL_FILTER_KNOB_OFF = 7283301  # mongod's code for setProfilingFilterGlobally without its knob


async def set_profiling_filter_globally(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    raise MongoError(GLOBAL_FILTER_KNOB_OFF, "setProfilingFilterGlobally command requires query knob to be enabled")


COMMANDS = [
    CommandSpec("profile", profile,
                help="controls the behaviour of the performance profiler, the fraction of eligible operations "
                     "which are sampled for logging/profiling, and the threshold duration at which ops "
                     "become eligible: {profile: <-1|0|1|2>, slowms, sampleRate, filter}"),
    CommandSpec("setProfilingFilterGlobally", set_profiling_filter_globally,
                help="updates a global filter that determines which operations are eligible for logging/profiling"),
    CommandSpec("top", top, help="usage by collection: time (microseconds) and counts of reads, writes and "
                                 "commands since start-up (what mongotop polls)", admin_only=True),
]

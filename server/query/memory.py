"""Memory limits of what a query buffers or builds, as mongod enforces them, and the one size estimate.

- ``approx_size(value, stop_above=None)``: about the BSON size of a value (iterative; with
  ``stop_above`` it stops counting once past it, so checking a huge value costs little).
- Strings built by expressions (``$concat``, ``$replaceAll``...) stop at 16 MB: 16493 "Tried to create
  string longer than 16MB" (mongod's RCString limit).
- Arrays built from other values (``$concatArrays``, ``$map``) stop at 64 MB: 13548, the limit of
  mongod's BufBuilder that would serialize them — a ``$reduce`` doubling an array, or a ``$map``
  repeating one large value, fails fast instead of growing without bound.
- ``$lookup`` results: 100 MB per input document (4568).
- Blocking stages account what they buffer: ``$sort`` and ``$setWindowFields`` against
  ``PipelineContext.memory_limit``, ``$group`` ``group_memory_limit``, ``$bucketAuto``
  ``bucket_auto_memory_limit``, ``$setWindowFields`` ``window_memory_limit`` per partition (each mongod's
  server parameter, 100 MB). Without ``allowDiskUse`` -> 292 (a ``$setWindowFields`` partition: 5643011);
  with it ``$sort``, ``$group``, ``$bucketAuto`` and ``$setWindowFields`` spill to disk (``spill.py``,
  ``stage_group``, ``windows``). ``stage_limit_error`` is what a
  ``$group`` answers: 292, or 146 for a state that cannot be written to disk.
"""

from __future__ import annotations

from typing import Any

from tidemark.protocol.errors import ErrorCode, MongoError

MIB = 1024 * 1024
STRING_LIMIT = 16 * MIB
BUFFER_LIMIT = 64 * MIB
LOOKUP_LIMIT = 100 * MIB


def approx_size(value: Any, stop_above: int | None = None) -> int:
    """About the BSON size of ``value`` (16 bytes per scalar and container, plus string and key
    lengths). With ``stop_above``, returns as soon as the running total passes it."""
    total = 0
    stack = [value]
    pop, push = stack.pop, stack.append
    while stack:
        v = pop()
        t = type(v)
        if t is str:
            total += 16 + len(v)
        elif t is dict:
            total += 16
            for k, x in v.items():
                total += len(k)
                push(x)
        elif t is list or t is tuple:  # (tuples: sort keys an accumulator keeps)
            total += 16
            stack.extend(v)
        elif t is bytes:
            total += 16 + len(v)
        else:
            total += 16
        if stop_above is not None and total > stop_above:
            return total
    return total


def string_too_long() -> MongoError:
    return MongoError(16493, f"Tried to create string longer than {STRING_LIMIT // MIB}MB")


def check_string(s: str) -> str:
    """``s`` unless it is longer than 16 MB (then 16493)."""
    if len(s) >= STRING_LIMIT // 4 and len(s.encode("utf-8", "surrogatepass")) >= STRING_LIMIT:
        raise string_too_long()
    return s


def check_built(value: list, parts_size: int | None = None) -> list:
    """An array an expression built, unless it serializes past 64 MB (then 13548)."""
    size = parts_size if parts_size is not None else approx_size(value, BUFFER_LIMIT)
    if size > BUFFER_LIMIT:
        raise MongoError(13548, f"BufBuilder attempted to grow() to {size} bytes, past the 64MB limit.")
    return value


def stage_limit_error(stage: str, limit: int, allow_disk_use: bool) -> MongoError:
    """A blocking stage went past ``limit`` bytes without allowDiskUse (292), or cannot spill (146)."""
    if not allow_disk_use:
        if stage == "$sort":
            return MongoError(ErrorCode.QueryExceededMemoryLimitNoDiskUseAllowed,
                              f"Sort exceeded memory limit of {limit} bytes, but did not opt in to external sorting.")
        return MongoError(ErrorCode.QueryExceededMemoryLimitNoDiskUseAllowed,
                          f"Exceeded memory limit for {stage}, but didn't allow external sort. "
                          "Pass allowDiskUse:true to opt in.")
    # (mongod spills these; Tidemark cannot. The wording is mongod's for what cannot spill: $push's)
    return MongoError(ErrorCode.ExceededMemoryLimit,
                      f"{stage} used too much memory and cannot spill to disk. Memory limit: {limit} bytes")

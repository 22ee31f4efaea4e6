"""The plan cache and index filter commands, as a standalone mongod 7.0 answers them for a collection
whose plan cache is empty: Tidemark plans every query afresh and keeps no plan cache.

- ``planCacheClear`` (planCacheWrite on the collection): clears one query shape (``query``, with
  ``sort``/``projection``/``collation``) or the whole cache: here always nothing to clear. The shape is
  checked as mongod's plan_cache_commands::canonicalize checks it (2 "required field query must be an
  object", "optional field sort must be an object", ...; then the filter, sort, projection and
  collation parse as a find's would); ``sort``/``projection``/``collation`` without ``query`` -> 2
  "sort, projection, or collation provided without query". A missing collection: ok, before any check
  of the shape (its cache is never looked at); a view (a time-series collection too): 166 "Namespace
  <ns> is a view, not a collection" (AutoGetCollectionForReadCommand forbids views).
- ``planCacheListFilters`` (planCacheRead): ``filters: []``. ``planCacheClearFilters``
  (planCacheIndexFilter): the same shape checks, nothing to clear. Both: a missing collection has no
  filters (ok, nothing checked), a view 166.
- ``planCacheSetFilter``: an index filter would have to constrain the planner, which Tidemark does not
  do: refused with 115 CommandNotSupported, so no client believes a filter took effect.
"""

from __future__ import annotations

from typing import Any

from tidemark.context import CommandContext, CommandSpec
from tidemark.core import collection as C
from tidemark.core import namespace
from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query.match import compile_filter
from tidemark.query.project import compile_projection
from tidemark.query.sort import parse_sort

_SHAPE_FIELDS = ("sort", "projection", "collation")


def _check_shape(cmd: dict[str, Any], command: str) -> None:
    """A query shape given to clear (plan_cache_commands::canonicalize), or none at all."""
    if "query" not in cmd:
        if any(name in cmd for name in _SHAPE_FIELDS):
            raise MongoError(ErrorCode.BadValue, "sort, projection, or collation provided without query")
        return
    query = cmd["query"]
    if not isinstance(query, dict):
        raise MongoError(ErrorCode.BadValue, "required field query must be an object")
    for name in _SHAPE_FIELDS:
        if name in cmd and not isinstance(cmd[name], dict):
            raise MongoError(ErrorCode.BadValue, f"optional field {name} must be an object")
    C.collation_arg(cmd, command)  # (each part validated only: no cache entry to match it against)
    compile_filter(query)
    parse_sort(cmd.get("sort"))
    compile_projection(cmd.get("projection"), filter=query)


async def _collection_exists(ctx: CommandContext, cmd: dict[str, Any], command: str) -> bool:
    """Whether the named collection exists (166 for a view: mongod reads the cache of a collection)."""
    name = C.collection_arg(cmd, command)
    found = await ctx.run_blocking(namespace.resolve, ctx.server.engine, ctx.db, name)
    if found.view is not None:
        raise C.view_write_error(ctx.db, name)
    return found.kind != namespace.MISSING


async def plan_cache_clear(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    if await _collection_exists(ctx, cmd, "planCacheClear"):
        _check_shape(cmd, "planCacheClear")
    return {}


async def plan_cache_clear_filters(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    if await _collection_exists(ctx, cmd, "planCacheClearFilters"):
        _check_shape(cmd, "planCacheClearFilters")
    return {}


async def plan_cache_list_filters(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    await _collection_exists(ctx, cmd, "planCacheListFilters")
    return {"filters": []}


async def plan_cache_set_filter(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    C.collection_arg(cmd, "planCacheSetFilter")
    raise MongoError(ErrorCode.CommandNotSupported,
                     "planCacheSetFilter is not supported by Tidemark: its planner takes no index filters")


COMMANDS = [
    CommandSpec("planCacheClear", plan_cache_clear,
                help="Drops one or all plan cache entries in a collection (Tidemark keeps none)."),
    CommandSpec("planCacheClearFilters", plan_cache_clear_filters,
                help="Clears index filter for a single query shape or, if the query shape is omitted, "
                     "all filters for the collection (Tidemark has none)."),
    CommandSpec("planCacheListFilters", plan_cache_list_filters,
                help="Displays index filters for all query shapes in a collection (Tidemark has none)."),
    CommandSpec("planCacheSetFilter", plan_cache_set_filter,
                help="Sets index filter for a query shape (not supported by Tidemark: refused with 115)."),
]

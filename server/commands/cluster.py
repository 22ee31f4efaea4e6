"""What a standalone mongod 7.0 answers to the cluster-wide settings and the inter-server machinery it
does not take part in: the default read/write concerns, the sharding state, the outgoing connection
pools.

- ``getDefaultRWConcern`` / ``setDefaultRWConcern``: parsed as mongod's IDL does (unknown field 40415,
  a field of the wrong type 14), then refused with 51300 "'<name>' is not supported on standalone
  nodes." (rwc_defaults_commands.cpp ``assertNotStandaloneOrShardServer``; jstests/hooks/
  run_fuzzer_restore_settings.js expects 51300 from a standalone).
- ``getClusterParameter`` / ``setClusterParameter``: parsed as their IDL (cluster_server_parameter_cmds.idl:
  a name, "*" or a list of names; an object), then 20 IllegalOperation "<name> cannot be run on
  standalones" (get_cluster_parameter_command.cpp / set_cluster_parameter_command.cpp; jstests'
  getClusterParameter "doesNotRunOnStandalone"); admin only.
- ``setUserWriteBlockMode``: parsed as its IDL (set_user_write_block_mode.idl: ``global``, a bool,
  required; unknown field 40415), then 20 IllegalOperation "setUserWriteBlockMode cannot be run on
  standalones" (set_user_write_block_mode_command.cpp: write blocking lives in a replica set's
  recoverable critical section, and its op observer checks writes only on a replica-set primary, so a
  standalone never blocks a write); on any database, cluster action setUserWriteBlockMode, no
  writeConcern.
- ``shardingState``: ``{enabled: false}`` (ShardingState::appendInfo stops there on a node that is no
  shard).
- ``connPoolStats``: a standalone connects to no other server, so every pool is empty: the counters
  are 0 and ``pools``/``hosts``/``replicaSets`` are empty documents (conn_pool_stats.cpp and
  ConnectionPoolStats::appendToBSON: a pool that never created a connection is not listed).
- ``connPoolSync`` (``connpoolsync``): flushes those empty pools: nothing to do.
- ``dropConnections``: ``{dropConnections: 1, hostAndPort: ["host:port", ...]}`` (drop_connections.idl,
  admin only, cluster action dropConnections) drops the pooled outgoing connections to those hosts:
  a standalone has none, so once every entry parses as a HostAndPort (``parse_host_and_port``) there
  is nothing to drop. Client connections to this server are never touched (mongod's egress pools
  only).
"""

from __future__ import annotations

import re
from typing import Any

from bson.int64 import Int64

from tidemark.arguments import check_fields, field, of_kind, wrong_type
from tidemark.context import CommandContext, CommandSpec
from tidemark.protocol.errors import ErrorCode, MongoError

NOT_ON_STANDALONE = 51300  # mongod's code for a cluster-wide default asked of a standalone


def _not_on_standalone(name: str) -> MongoError:
    return MongoError(NOT_ON_STANDALONE, f"'{name}' is not supported on standalone nodes.")


async def get_default_rw_concern(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    check_fields(cmd, "getDefaultRWConcern", {"inMemory"})
    field(cmd, "getDefaultRWConcern", "inMemory", bool, "bool")
    raise _not_on_standalone("getDefaultRWConcern")


async def set_default_rw_concern(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    check_fields(cmd, "setDefaultRWConcern", {"defaultReadConcern", "defaultWriteConcern"})
    for name in ("defaultReadConcern", "defaultWriteConcern"):
        field(cmd, "setDefaultRWConcern", name, dict, "object")
    raise _not_on_standalone("setDefaultRWConcern")


async def get_cluster_parameter(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    name = "getClusterParameter"
    check_fields(cmd, name, set())
    value = cmd[name]
    if not (of_kind(value, str) or (isinstance(value, list) and all(of_kind(v, str) for v in value))):
        raise wrong_type(f"{name}.{name}", value, ("string", "array"))
    raise MongoError(ErrorCode.IllegalOperation, f"{name} cannot be run on standalones")


async def set_cluster_parameter(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    name = "setClusterParameter"
    check_fields(cmd, name, set())
    if not isinstance(cmd[name], dict):
        raise wrong_type(f"{name}.{name}", cmd[name], "object")
    raise MongoError(ErrorCode.IllegalOperation, f"{name} cannot be run on standalones")


async def set_user_write_block_mode(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    name = "setUserWriteBlockMode"
    check_fields(cmd, name, {"global"})
    field(cmd, name, "global", bool, "bool", required=True)
    raise MongoError(ErrorCode.IllegalOperation, f"{name} cannot be run on standalones")


async def sharding_state(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    return {"enabled": False}


# ConnectionPoolStats' totals, in appendToBSON's order (featureFlagConnHealthMetrics is on in 7.0,
# which adds totalWasNeverUsed). appendNumber of a long long that fits an int appends an int.
_POOL_TOTALS = ("totalInUse", "totalAvailable", "totalLeased", "totalCreated", "totalRefreshing",
                "totalRefreshed", "totalWasNeverUsed")


def _empty_wait_histogram() -> dict[str, Any]:
    """The connection acquisition wait-time histogram with nothing recorded: 50 ms buckets from 0 to
    1000 ms, below and above them open-ended (mongod's ConnectionWaitTimeHistogram)."""
    edges = list(range(0, 1001, 50))
    buckets = {"(-inf, 0ms)": {"count": Int64(0)}}
    for low, high in zip(edges, edges[1:], strict=False):
        buckets[f"[{low}ms, {high}ms)"] = {"count": Int64(0)}
    buckets["[1000ms, inf)"] = {"count": Int64(0)}
    return {**buckets, "totalCount": Int64(0)}


async def conn_pool_stats(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    reply: dict[str, Any] = {"numClientConnections": 0, "numAScopedConnections": 0}
    reply.update((name, 0) for name in _POOL_TOTALS)
    reply["acquisitionWaitTimes"] = _empty_wait_histogram()
    reply.update(pools={}, hosts={}, replicaSets={})
    return reply


def parse_host_and_port(text: str) -> tuple[str, int | None]:
    """mongod's HostAndPort::initialize (util/net/hostandport.cpp): ``host``, ``host:port`` or
    ``[ipv6]:port``; a malformed one is 9 FailedToParse with its message. Returns (host, port or None)."""
    colon = text.rfind(":")
    host = text[:colon] if colon >= 0 else text
    open_at, close_at = text.find("["), text.find("]")
    if open_at >= 0:
        if open_at != 0:
            raise MongoError(ErrorCode.FailedToParse, f"'[' present, but not first character in {text}")
        if close_at < 0:
            raise MongoError(ErrorCode.FailedToParse, f"ipv6 address is missing closing ']' in hostname in {text}")
        host = text[1:close_at]
        if colon < close_at:
            if len(text) != close_at + 1:
                raise MongoError(ErrorCode.FailedToParse, f"missing colon after ']' before the port in {text}")
            colon = -1
        elif colon != close_at + 1:
            raise MongoError(ErrorCode.FailedToParse, f"Extraneous characters between ']' and pre-port ':' in {text}")
    elif close_at >= 0:
        raise MongoError(ErrorCode.FailedToParse, f"']' present without '[' in {text}")
    elif text.find(":") != colon:
        raise MongoError(ErrorCode.FailedToParse, "More than one ':' detected. If this is an ipv6 address, it needs "
                                                  f"to be surrounded by '[' and ']'; {text}")
    if not host:
        raise MongoError(ErrorCode.FailedToParse, f'Empty host component parsing HostAndPort from "{text}"')
    if colon < 0:
        return host, None
    digits = text[colon + 1:]
    # (NumberParser, base 10: an optional sign and digits, the whole string, within an int; its
    # messages are these, the port's text is not in them)
    if not re.fullmatch(r"[+-]?[0-9]+", digits):
        raise MongoError(ErrorCode.FailedToParse, "No digits" if not digits else "Did not consume whole string.")
    port = int(digits)
    if not -(2**31) <= port <= 2**31 - 1:
        raise MongoError(ErrorCode.Overflow, "Overflow")
    if port <= 0 or port > 65535:
        raise MongoError(ErrorCode.FailedToParse,
                         f'Port number {port} out of range parsing HostAndPort from "{text}"')
    return host, port


async def drop_connections(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    check_fields(cmd, "dropConnections", {"hostAndPort"})
    hosts = field(cmd, "dropConnections", "hostAndPort", list, "array", required=True)
    for i, entry in enumerate(hosts):
        if type(entry) is not str:
            raise wrong_type(f"dropConnections.hostAndPort.{i}", entry, "string")
        parse_host_and_port(entry)
    return {}  # (a standalone's egress pools are empty: nothing to drop)


async def conn_pool_sync(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    return {}


COMMANDS = [
    CommandSpec("connPoolStats", conn_pool_stats,
                help="stats about connections between servers in a replica set or sharded cluster."),
    CommandSpec("connPoolSync", conn_pool_sync, aliases=("connpoolsync",),
                help="flush the outgoing connection pools (a standalone has none in use)"),
    CommandSpec("dropConnections", drop_connections, admin_only=True,
                help="Drop egress connections to specified host and port"),
    CommandSpec("getClusterParameter", get_cluster_parameter, admin_only=True,
                help="Get in-memory cluster parameter value(s) from this node (a standalone has none)"),
    CommandSpec("setClusterParameter", set_cluster_parameter, admin_only=True,
                help="Set cluster parameter on replica set or cluster (refused on a standalone)"),
    CommandSpec("getDefaultRWConcern", get_default_rw_concern, admin_only=True,
                help="get the current read/write concern defaults being applied by this node"),
    CommandSpec("setDefaultRWConcern", set_default_rw_concern, admin_only=True,
                help="set the current read/write concern defaults (cluster-wide)"),
    CommandSpec("setUserWriteBlockMode", set_user_write_block_mode,
                help="Set whether user write blocking is enabled (refused on a standalone)"),
    CommandSpec("shardingState", sharding_state, admin_only=True,
                help="the node's sharding state (a standalone takes no part in sharding)"),
]

"""setFeatureCompatibilityVersion as a standalone mongod 7.0 runs it, and the document that keeps the
feature compatibility version across restarts.

The version lives where mongod keeps it: ``admin.system.version`` ``{_id: "featureCompatibilityVersion",
version}`` (written only once it differs from a fresh server's "7.0": a data directory without the
document is at 7.0). The parameter ``featureCompatibilityVersion`` (getParameter) mirrors it: set from the
document at start-up (:func:`on_startup`, a lifecycle hook) and by the command.

The command (set_feature_compatibility_version_command.cpp, 7.0):

- parsed as its IDL: the value a string (14), one of "6.0", "6.3", "7.0" (4926900, the message of 7.0's
  FeatureCompatibilityVersionParser); fields ``confirm``, ``fromConfigServer`` (bool),
  ``changeTimestamp`` (timestamp), ``phase`` ("start" | "prepare" | "complete"); another -> 40415;
- without ``confirm: true`` -> 7369100 (even for the current version: the message is then the
  downgrade one, as mongod's ``requestedVersion > actualVersion`` test picks it);
- the current version -> ok, nothing written;
- transitions: 7.0 <-> 6.0 only ("6.3", the last continuous, is for config servers and tests) ->
  5147403 "cannot set featureCompatibilityVersion to '6.3' while featureCompatibilityVersion is '7.0'";
- ``phase`` -> 5563600 (shards only);
- a downgrade is refused with 332 CannotDowngrade while a time-series collection has custom bucketing
  parameters (no granularity) or a partial TTL index (``_userCollectionsUassertsForDowngrade``).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from bson.timestamp import Timestamp

from tidemark import log
from tidemark.arguments import check_fields, field, wrong_type
from tidemark.auth import store
from tidemark.context import CommandContext, CommandSpec
from tidemark.core.namespace import BUCKETS_PREFIX
from tidemark.protocol import codec
from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query import index_keys

if TYPE_CHECKING:
    from tidemark.context import ServerState

COMMAND = "setFeatureCompatibilityVersion"
PARAMETER = "featureCompatibilityVersion"
DOCUMENT_ID = "featureCompatibilityVersion"
LAST_LTS, LAST_CONTINUOUS, LATEST = "6.0", "6.3", "7.0"
_KNOWN = (LAST_LTS, LAST_CONTINUOUS, LATEST)
# (from, to) a standalone may move between (mongod's FCVTransitions without fromConfigServer)
_TRANSITIONS = frozenset({(LATEST, LAST_LTS), (LAST_LTS, LATEST)})
_PHASES = ("start", "prepare", "complete")
CANNOT_DOWNGRADE = 332  # ErrorCodes::CannotDowngrade
_COMPATIBILITY_LINK = "https://docs.mongodb.com/master/release-notes/6.0-compatibility/#feature-compatibility"
_UPGRADE_MESSAGE = ("Once you have upgraded to {}, you will not be able to downgrade FCV and binary version "
                    "without support assistance. Please re-run this command with 'confirm: true' to "
                    "acknowledge this and continue with the FCV upgrade.")
_DOWNGRADE_MESSAGE = ("Once you have downgraded the FCV, if you choose to downgrade the binary version, it will "
                      "require support assistance. Please re-run this command with 'confirm: true' to "
                      "acknowledge this and continue with the FCV downgrade.")


def current(state: Any) -> str:
    return str(state.params[PARAMETER]["version"])


def _parse(cmd: dict[str, Any]) -> tuple[str, bool]:
    """(requested version, confirmed) after the IDL's checks."""
    check_fields(cmd, COMMAND, {"confirm", "fromConfigServer", "changeTimestamp", "phase"})
    version = cmd[COMMAND]
    if type(version) is not str:
        raise wrong_type(f"{COMMAND}.{COMMAND}", version, "string")
    if version not in _KNOWN:
        raise MongoError(4926900, f"Invalid feature compatibility version value '{version}'; expected "
                                  f"'{LAST_LTS}' or '{LAST_CONTINUOUS}' or '{LATEST}'. See {_COMPATIBILITY_LINK}.")
    confirm = field(cmd, COMMAND, "confirm", bool, "bool")
    from_config_server = field(cmd, COMMAND, "fromConfigServer", bool, "bool")
    field(cmd, COMMAND, "changeTimestamp", Timestamp, "timestamp")
    phase = field(cmd, COMMAND, "phase", str, "string")
    if phase is not None and phase not in _PHASES:
        raise MongoError(ErrorCode.BadValue, f"Enumeration value '{phase}' for field '{COMMAND}.phase' is not "
                                             "a valid value.")
    return version, bool(confirm) or bool(from_config_server)


def _downgrade_blockers(r: Any) -> None:
    """332 CannotDowngrade for what FCV 6.0 cannot hold (mongod 7.0's
    _userCollectionsUassertsForDowngrade on a standalone): time-series collections with a partial TTL
    index or with custom bucketing parameters, the first found."""
    for db in r.list_databases():
        for info in r.list_collections(db):
            if not info.name.startswith(BUCKETS_PREFIX):
                continue
            options = (info.options or {}).get("timeseries")
            if not isinstance(options, dict):
                continue
            view = f"{db}.{info.name[len(BUCKETS_PREFIX):]}"
            for spec in info.indexes:
                if "partialFilterExpression" in spec and "expireAfterSeconds" in spec:
                    raise MongoError(
                        CANNOT_DOWNGRADE,
                        "Cannot downgrade the cluster when there are secondary TTL indexes with partial "
                        "filters on time-series collections. Drop all partial, TTL indexes on time-series "
                        f"collections before downgrading. First detected incompatible index name: "
                        f"'{spec.get('name')}' on collection: '{view}'")
            if "granularity" not in options:
                raise MongoError(
                    CANNOT_DOWNGRADE,
                    "Cannot downgrade the cluster when there are time-series collections with custom bucketing "
                    "parameters. In order to downgrade, the time-series collection(s) must be updated with a "
                    f"granularity of 'seconds', 'minutes' or 'hours'. First detected incompatible collection: "
                    f"'{view}'")


def _store(version: str, *, downgrade: bool):
    """The write function: check what a downgrade must (inside the write, so no collection changes
    between the check and the new version), then upsert the document."""

    def fn(w: Any) -> None:
        if downgrade:
            _downgrade_blockers(w)
        info = w.get_collection(store.VERSION)
        if info is None:
            info = w.create_collection(store.VERSION)
        doc = {"_id": DOCUMENT_ID, "version": version}
        rid, old = store.find_in(w, store.VERSION, DOCUMENT_ID)
        if old is None:
            w.insert(info, codec.encode(doc), index_keys.index_key_map(info.indexes, doc))
        else:
            w.update(info, rid, codec.encode(doc), index_keys.index_key_map(info.indexes, old),
                     index_keys.index_key_map(info.indexes, doc))

    return fn


async def set_feature_compatibility_version(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    requested, confirmed = _parse(cmd)
    actual = current(ctx.server)
    if not confirmed:
        message = _UPGRADE_MESSAGE.format(requested) if requested > actual else _DOWNGRADE_MESSAGE
        raise MongoError(7369100, message)
    if requested == actual:
        return {}
    if (actual, requested) not in _TRANSITIONS:
        raise MongoError(5147403, f"cannot set featureCompatibilityVersion to '{requested}' while "
                                  f"featureCompatibilityVersion is '{actual}'")
    if cmd.get("phase") is not None:
        raise MongoError(5563600, "'phase' field is only valid to be specified on shards")
    direction = "upgrade" if requested > actual else "downgrade"
    log.info("COMMAND", 6744300, "setFeatureCompatibilityVersion command called", upgradeOrDowngrade=direction,
             serverType="replica set/standalone", fromVersion=actual, toVersion=requested)
    await asyncio.wrap_future(ctx.server.engine.write(_store(requested, downgrade=requested < actual)))
    ctx.server.params.assign(PARAMETER, {"version": requested})
    log.info("COMMAND", 6744302, "setFeatureCompatibilityVersion succeeded", upgradeOrDowngrade=direction,
             serverType="replica set/standalone", fromVersion=actual, toVersion=requested)
    return {}


async def on_startup(state: ServerState) -> None:
    """The parameter takes the persisted version (a data directory without the document is at 7.0)."""
    doc = store.read_one(state.engine, store.VERSION, DOCUMENT_ID)
    if doc is not None and doc.get("version") in _KNOWN:
        state.params.assign(PARAMETER, {"version": doc["version"]})


async def on_shutdown(state: ServerState) -> None:
    return None


COMMANDS = [
    CommandSpec(COMMAND, set_feature_compatibility_version, admin_only=True,
                help="Set the featureCompatibilityVersion used by this cluster. If set to '6.0', then features "
                     "introduced in versions greater than '6.0' will be disabled. If set to '7.0', then '7.0' "
                     "features are enabled, and all nodes in the cluster must be binary version 7.0."),
]

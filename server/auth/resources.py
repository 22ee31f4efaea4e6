"""Resources, resource patterns and privileges: what a role grants and how a request is matched.

A *pattern* (what a privilege names) is a small tuple, hashable and cheap to compare:

    ("any",)                     {anyResource: true}        every resource, system collections too
    ("anyNormal",)               {db: "", collection: ""}   every database and non-system collection
    ("cluster",)                 {cluster: true}
    ("db", db)                   {db, collection: ""}       the database and its non-system collections
    ("coll", name)               {db: "", collection}       that collection name in every database
    ("ns", db, name)             {db, collection}           one namespace
    ("anyBuckets",)              {db: "", system_buckets: ""}
    ("bucketsInDb", db)          {db, system_buckets: ""}
    ("bucketsAnyDb", name)       {db: "", system_buckets}
    ("buckets", db, name)        {db, system_buckets}       <db>.system.buckets.<name>

A *target* (what a request touches) is ``("cluster",)``, ``("db", db)`` or ``("ns", db, coll)``, or a
pattern itself (``("anyNormal",)``: "every normal resource", matched by ``any`` and by itself).
:func:`search_list` gives the patterns that can match a target, in mongod's order (``local`` and
``config`` are never matched by ``anyNormal``; ``system.*`` collections only by patterns that name
them, ``any``, or the buckets patterns). A privilege set is ``{pattern: frozenset(actions)}``; a
request is allowed when the union of the actions of every matching pattern covers what it needs.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import Any

from tidemark.core.namespace import BUCKETS_PREFIX
from tidemark.protocol.errors import ErrorCode, MongoError

Pattern = tuple
Privileges = Mapping[Pattern, frozenset]

CLUSTER: Pattern = ("cluster",)
ANY: Pattern = ("any",)
ANY_NORMAL: Pattern = ("anyNormal",)
ANY_BUCKETS: Pattern = ("anyBuckets",)

# Every action name mongod 7.0 knows (action_type.idl); user-defined roles may name only these.
ACTIONS = frozenset(
    """addShard advanceClusterTime allCollectionStats analyze analyzeShardKey anyAction appendOplogNote
    applicationMessage applyOps auditConfigure auditLogRotate authCheck authenticate authSchemaUpgrade
    bypassDocumentValidation bypassWriteBlockingMode changeCustomData changePassword changeOwnPassword
    changeOwnCustomData changeStream checkFreeMonitoringStatus checkMetadataConsistency cleanupOrphaned
    clearJumboFlag cleanupStructuredEncryptionData closeAllDatabases collMod collStats compact
    compactStructuredEncryptionData configureQueryAnalyzer connPoolStats connPoolSync convertToCapped
    cpuProfiler createCollection createDatabase createIndex createRole createSearchIndexes createUser
    dbCheck dbHash dbStats dropAllRolesFromDatabase dropAllUsersFromDatabase dropCollection
    dropConnections dropDatabase dropIndex dropRole dropSearchIndex dropUser emptycapped enableProfiler
    enableSharding exportCollection find flushRouterConfig forceUUID fsync fsyncUnlock
    getChangeStreamState getClusterParameter getCmdLineOpts getDatabaseVersion getDefaultRWConcern
    getLog getParameter getShardMap getShardVersion grantPrivilegesToRole grantRole grantRolesToRole
    grantRolesToUser hostInfo importCollection impersonate indexStats inprog insert internal
    invalidateUserCache issueDirectShardOperations killAnyCursor killAnySession killCursors killop
    listCachedAndActiveUsers listCollections listCursors listDatabases listIndexes listSampledQueries
    listSearchIndexes listSessions listShards logRotate moveChunk moveCollection netstat oidReset
    oidcListKeys oidcRefreshKeys operationMetrics planCacheIndexFilter planCacheRead planCacheWrite
    querySettings queryStatsRead queryStatsReadTransformed reIndex refineCollectionShardKey remove
    removeShard renameCollection renameCollectionSameDB repairDatabase replSetConfigure
    replSetGetConfig replSetGetStatus replSetHeartbeat replSetReconfig replSetResizeOplog
    replSetStateChange reshardCollection resync revokePrivilegesFromRole revokeRole revokeRolesFromRole
    revokeRolesFromUser rotateCertificates runAsLessPrivilegedUser runTenantMigration serverStatus
    setAuthenticationRestriction setChangeStreamState setClusterParameter setDefaultRWConcern
    setFeatureCompatibilityVersion setFreeMonitoring setParameter setUserWriteBlockMode shardCollection
    shardedDataDistribution shardingState shutdown splitChunk splitVector storageDetails top touch
    trafficRecord transitionFromDedicatedConfigServer transitionToDedicatedConfigServer unlock update
    updateRole updateSearchIndex updateUser useTenant useUUID validate viewRole viewUser""".split()
)


def ns_target(db: str, coll: str) -> Pattern:
    return ("ns", db, coll)


def db_target(db: str) -> Pattern:
    return ("db", db)


def is_normal_collection(db: str, coll: str) -> bool:
    """mongod's NamespaceString::isNormalCollection: not ``system.*`` (nor ``local.replset.*``)."""
    return not coll.startswith("system.") and not (db == "local" and coll.startswith("replset."))


@functools.lru_cache(maxsize=4096)
def search_list(target: Pattern) -> tuple[Pattern, ...]:
    """Every pattern that matches ``target`` (see the module docstring)."""
    kind = target[0]
    out: list[Pattern] = [ANY]
    if kind == "ns":
        db, coll = target[1], target[2]
        if is_normal_collection(db, coll):
            if db not in ("local", "config"):
                out.append(ANY_NORMAL)
            out.append(("db", db))
        elif coll.startswith(BUCKETS_PREFIX) and len(coll) > len(BUCKETS_PREFIX):
            name = coll[len(BUCKETS_PREFIX):]
            out += [("buckets", db, name), ANY_BUCKETS, ("bucketsInDb", db), ("bucketsAnyDb", name)]
        out += [("coll", coll), target]
    elif kind == "db":
        if target[1] not in ("local", "config"):
            out.append(ANY_NORMAL)
        out.append(target)
    elif kind != "any":
        out.append(target)  # the cluster, or a pattern itself (mongod's updateRole asks anyNormal)
    return tuple(out)


def actions_on(privileges: Privileges, target: Pattern) -> frozenset:
    """The union of the actions every matching privilege grants on ``target``."""
    found: frozenset = frozenset()
    for pattern in search_list(target):
        actions = privileges.get(pattern)
        if actions:
            found = found | actions
    return found


def is_authorized(privileges: Privileges, target: Pattern, actions: Iterable[str]) -> bool:
    have = actions_on(privileges, target)
    return "anyAction" in have or all(action in have for action in actions)


def merge(into: dict[Pattern, frozenset], privileges: Mapping[Pattern, Iterable[str]]) -> None:
    """Add ``privileges`` to ``into`` (actions of one pattern are unioned)."""
    for pattern, actions in privileges.items():
        into[pattern] = into.get(pattern, frozenset()) | frozenset(actions)


# -- privilege documents ({resource, actions}) --------------------------------------------------------


def pattern_document(pattern: Pattern) -> dict[str, Any]:
    """The ``resource`` document mongod shows for a pattern."""
    kind = pattern[0]
    if kind == "any":
        return {"anyResource": True}
    if kind == "cluster":
        return {"cluster": True}
    if kind == "anyNormal":
        return {"db": "", "collection": ""}
    if kind == "db":
        return {"db": pattern[1], "collection": ""}
    if kind == "coll":
        return {"db": "", "collection": pattern[1]}
    if kind == "ns":
        return {"db": pattern[1], "collection": pattern[2]}
    if kind == "anyBuckets":
        return {"db": "", "system_buckets": ""}
    if kind == "bucketsInDb":
        return {"db": pattern[1], "system_buckets": ""}
    if kind == "bucketsAnyDb":
        return {"db": "", "system_buckets": pattern[1]}
    return {"db": pattern[1], "system_buckets": pattern[2]}


def privilege_documents(privileges: Privileges) -> list[dict[str, Any]]:
    """``[{resource, actions}]`` sorted like mongod prints them (actions alphabetically)."""
    return [
        {"resource": pattern_document(pattern), "actions": sorted(actions)}
        for pattern, actions in privileges.items()
        if actions
    ]


def _bad(message: str) -> MongoError:
    return MongoError(ErrorCode.FailedToParse, message)


def parse_pattern(resource: Any) -> Pattern:
    """A ``resource`` document -> pattern; 9 FailedToParse when it is not one mongod accepts."""
    if not isinstance(resource, dict):
        raise _bad("Expected privilege document 'resource' field to be an object")
    keys = set(resource)
    if keys == {"cluster"}:
        if resource["cluster"] is not True:
            raise _bad("resource: {cluster: } must be true")
        return CLUSTER
    if keys == {"anyResource"}:
        if resource["anyResource"] is not True:
            raise _bad("resource: {anyResource: } must be true")
        return ANY
    if keys == {"db", "collection"} or keys == {"db", "system_buckets"}:
        db = resource["db"]
        name = resource.get("collection", resource.get("system_buckets"))
        if type(db) is not str or type(name) is not str:
            raise _bad("resource: 'db' and 'collection' must be strings")
        if "system_buckets" in keys:
            if db and name:
                return ("buckets", db, name)
            return ("bucketsInDb", db) if db else (("bucketsAnyDb", name) if name else ANY_BUCKETS)
        if name and not _valid_collection_name(name):
            raise MongoError(ErrorCode.BadValue, f"'{name}' is not a valid collection name")
        if db and name:
            return ("ns", db, name)
        return ("db", db) if db else (("coll", name) if name else ANY_NORMAL)
    raise _bad(
        "resource pattern must contain 'collection' or 'systemBuckets' specifier, "
        f"or be one of 'cluster' or 'anyResource': {sorted(keys)}"
    )


def _valid_collection_name(name: str) -> bool:
    """mongod's NamespaceString::validCollectionName (privilege.cpp refuses a privilege naming another)."""
    return not name.startswith(".") and "$" not in name and "\0" not in name


def parse_privileges(docs: Any, field: str) -> dict[Pattern, frozenset]:
    """``[{resource, actions}]`` -> privilege set; FailedToParse / BadValue like mongod."""
    if not isinstance(docs, list):
        raise _bad(f"\"{field}\" must be an array of privilege documents")
    out: dict[Pattern, frozenset] = {}
    for doc in docs:
        if not isinstance(doc, dict) or set(doc) - {"resource", "actions"}:
            raise _bad("Privilege documents may only have 'resource' and 'actions' fields")
        if "resource" not in doc or "actions" not in doc:
            raise _bad("Privilege documents must have 'resource' and 'actions' fields")
        pattern = parse_pattern(doc["resource"])
        actions = doc["actions"]
        if not isinstance(actions, list) or not all(type(a) is str for a in actions):
            raise _bad("Privilege 'actions' must be an array of strings")
        if not actions:
            raise MongoError(ErrorCode.BadValue, "'actions' field of privilege resource must not be empty")
        for action in actions:
            if action not in ACTIONS:
                raise MongoError(ErrorCode.BadValue, f"Unrecognized action privilege string: {action}")
        merge(out, {pattern: actions})
    return out


def pattern_db(pattern: Pattern) -> str | None:
    """The database a pattern is confined to (None for cluster-wide or any-database patterns)."""
    if pattern[0] in ("db", "ns", "bucketsInDb", "buckets"):
        return pattern[1]
    return None

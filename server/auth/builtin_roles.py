"""mongod 7.0's built-in roles: what each grants, as data (from builtin_roles.yml).

``ROLES[name]`` is ``(admin_only, inherited, privileges)``: ``inherited`` lists ``(role, db)`` with
``db`` None meaning "the database the role is granted on"; each privilege is ``(match, db, name,
actions)`` where ``match`` is one of ``any any_normal cluster database collection exact_namespace
any_system_buckets`` and ``db`` None again means the role's database. :func:`privileges` expands a
role granted on a database into a privilege set (``tidemark.auth.resources``). Admin-only roles exist
only on ``admin``; the others exist on every database (except ``$external``).
"""

from __future__ import annotations

import functools

from tidemark.auth import resources as R

READ = (
    "changeStream collStats dbHash dbStats find killCursors listCollections listIndexes "
    "listSearchIndexes planCacheRead"
).split()
READ_WRITE = READ + (
    "cleanupStructuredEncryptionData compactStructuredEncryptionData convertToCapped createCollection "
    "createIndex createSearchIndexes dropCollection dropIndex dropSearchIndex insert remove "
    "renameCollectionSameDB update updateSearchIndex"
).split()
USER_ADMIN = (
    "changeCustomData changePassword createUser createRole dropUser dropRole grantRole revokeRole "
    "setAuthenticationRestriction viewUser viewRole"
).split()
DB_ADMIN = (
    "analyze bypassDocumentValidation collMod collStats compact convertToCapped createCollection dbStats "
    "dropCollection dropDatabase dropIndex dropSearchIndex createIndex createSearchIndexes enableProfiler "
    "listCollections listIndexes listSearchIndexes updateSearchIndex planCacheIndexFilter planCacheRead "
    "planCacheWrite reIndex renameCollectionSameDB storageDetails validate"
).split()
PROFILE = READ + ["convertToCapped", "createCollection", "dropCollection"]
READ_AND_INDEX = READ + ["createIndex", "createSearchIndexes", "dropIndex", "dropSearchIndex"]
CLUSTER_MONITOR = (
    "connPoolStats getCmdLineOpts getDefaultRWConcern getLog getParameter getShardMap hostInfo "
    "listDatabases listSampledQueries listSessions listShards netstat operationMetrics replSetGetConfig "
    "replSetGetStatus serverStatus top useUUID inprog shardingState allCollectionStats "
    "shardedDataDistribution"
).split()
CLUSTER_MONITOR_DB = "collStats dbStats getDatabaseVersion getShardVersion indexStats".split()
HOST_MANAGER = (
    "applicationMessage auditConfigure connPoolSync dropConnections logRotate oidReset setParameter "
    "shutdown touch unlock flushRouterConfig fsync invalidateUserCache killAnyCursor killAnySession "
    "killop replSetResizeOplog resync trafficRecord rotateCertificates oidcListKeys oidcRefreshKeys"
).split()
CLUSTER_MANAGER = (
    "appendOplogNote applicationMessage replSetConfigure replSetGetConfig replSetGetStatus "
    "replSetStateChange resync addShard removeShard listSessions listShards flushRouterConfig "
    "cleanupOrphaned getDefaultRWConcern runTenantMigration setDefaultRWConcern "
    "setFeatureCompatibilityVersion setClusterParameter getClusterParameter setChangeStreamState "
    "getChangeStreamState querySettings queryStatsRead queryStatsReadTransformed checkMetadataConsistency "
    "transitionFromDedicatedConfigServer transitionToDedicatedConfigServer"
).split()
CLUSTER_MANAGER_DB = (
    "analyzeShardKey configureQueryAnalyzer clearJumboFlag splitChunk moveChunk moveCollection "
    "enableSharding splitVector refineCollectionShardKey reshardCollection"
).split()
WRITE = ["insert", "update", "remove"]
RESTORE_WRITE = (
    "bypassDocumentValidation collMod convertToCapped createCollection createIndex createSearchIndexes "
    "dropCollection insert updateSearchIndex"
).split()

ROLES: dict[str, tuple[bool, list[tuple[str, str | None]], list[tuple]]] = {
    "read": (False, [], [
        ("database", None, None, READ),
        ("exact_namespace", None, "system.js", READ),
    ]),
    "readWrite": (False, [], [
        ("database", None, None, READ_WRITE),
        ("exact_namespace", None, "system.js", READ_WRITE),
    ]),
    "userAdmin": (False, [], [("database", None, None, USER_ADMIN)]),
    "dbAdmin": (False, [], [
        ("database", None, None, DB_ADMIN + ["configureQueryAnalyzer"]),
        ("exact_namespace", None, "system.profile", PROFILE),
    ]),
    "dbOwner": (False, [("readWrite", None), ("dbAdmin", None), ("userAdmin", None)], []),
    "enableSharding": (False, [], [
        ("any_normal", None, None,
         "analyzeShardKey enableSharding moveCollection refineCollectionShardKey reshardCollection".split()),
    ]),
    "readAnyDatabase": (True, [], [
        ("any_normal", None, None, READ),
        ("cluster", None, None, ["listDatabases"]),
        ("collection", None, "system.js", READ),
        ("any_system_buckets", None, None, READ),
    ]),
    "readWriteAnyDatabase": (True, [("readAnyDatabase", None)], [
        ("any_normal", None, None, READ_WRITE),
        ("collection", None, "system.js", READ_WRITE),
        ("any_system_buckets", None, None, READ_WRITE),
    ]),
    "userAdminAnyDatabase": (True, [], [
        ("any_normal", None, None, USER_ADMIN + ["listCachedAndActiveUsers"]),
        ("database", "local", None, USER_ADMIN),
        ("database", "config", None, USER_ADMIN),
        ("cluster", None, None, "listDatabases authSchemaUpgrade invalidateUserCache viewUser".split()),
        ("exact_namespace", "admin", "system.users", READ_AND_INDEX),
        ("exact_namespace", "admin", "system.roles", READ_AND_INDEX),
        ("collection", None, "system.users", READ),
        ("exact_namespace", "admin", "system.version", READ),
        ("exact_namespace", "admin", "system.backup_users", READ),
    ]),
    "dbAdminAnyDatabase": (True, [], [
        ("cluster", None, None, ["listDatabases", "applyOps"]),
        ("any_normal", None, None, DB_ADMIN + ["configureQueryAnalyzer"]),
        ("collection", None, "system.profile", PROFILE),
        ("any_system_buckets", None, None, DB_ADMIN),
    ]),
    "clusterMonitor": (True, [("read", "config"), ("read", "local")], [
        ("cluster", None, None, CLUSTER_MONITOR),
        ("any_normal", None, None, CLUSTER_MONITOR_DB),
        ("database", "config", None, CLUSTER_MONITOR_DB),
        ("exact_namespace", "config", "system.sessions", CLUSTER_MONITOR_DB),
        ("database", "local", None, CLUSTER_MONITOR_DB),
        ("exact_namespace", "local", "system.replset", ["find"]),
        ("exact_namespace", "local", "replset.election", ["find"]),
        ("exact_namespace", "local", "replset.minvalid", ["find"]),
        ("collection", None, "system.profile", ["find"]),
    ]),
    "hostManager": (True, [], [
        ("cluster", None, None, HOST_MANAGER),
        ("any_normal", None, None, ["killCursors"]),
    ]),
    "clusterManager": (True, [("read", "config")], [
        ("cluster", None, None, CLUSTER_MANAGER),
        ("any_normal", None, None, CLUSTER_MANAGER_DB),
        ("any_system_buckets", None, None, CLUSTER_MANAGER_DB),
        ("database", "config", None, CLUSTER_MANAGER_DB),
        ("database", "local", None, CLUSTER_MANAGER_DB),
        ("exact_namespace", "local", "system.replset", READ),
        ("any", None, None, ["dbCheck"]),
        ("exact_namespace", "local", "system.healthlog", READ),
        ("database", "config", None, WRITE),
        ("database", "local", None, WRITE),
        ("exact_namespace", "local", "replset.election", WRITE),
        ("exact_namespace", "local", "replset.minvalid", WRITE),
    ]),
    "clusterAdmin": (True, [("clusterMonitor", None), ("hostManager", None), ("clusterManager", None)], [
        ("any_normal", None, None, ["dropDatabase"]),
        ("any", None, None, ["importCollection", "exportCollection"]),
    ]),
    "__queryableBackup": (True, [], [
        ("any", None, None, ["collStats", "listCollections", "listIndexes", "listSearchIndexes"]),
        ("any_normal", None, None, ["find"]),
        ("any_system_buckets", None, None, ["find"]),
        ("cluster", None, None, ["getParameter", "listDatabases", "useUUID"]),
        ("database", "config", None, ["find"]),
        ("database", "local", None, ["find"]),
        ("exact_namespace", "local", "replset.election", ["find"]),
        ("exact_namespace", "local", "replset.minvalid", ["find"]),
        ("collection", None, "system.js", ["find"]),
        ("collection", None, "system.users", ["find"]),
        ("collection", None, "system.profile", ["find"]),
        ("exact_namespace", "admin", "system.backup_users", ["find"]),
        ("exact_namespace", "admin", "system.roles", ["find"]),
        ("exact_namespace", "admin", "system.version", ["find"]),
        ("exact_namespace", "config", "settings", ["find"]),
    ]),
    "backup": (True, [("__queryableBackup", None)], [
        ("cluster", None, None, ["appendOplogNote", "serverStatus", "setUserWriteBlockMode"]),
        ("exact_namespace", "config", "settings", ["insert", "update"]),
    ]),
    "restore": (True, [], [
        ("cluster", None, None,
         "getParameter forceUUID useUUID bypassWriteBlockingMode setUserWriteBlockMode applyOps".split()),
        ("database", "local", None, RESTORE_WRITE),
        ("database", "config", None, RESTORE_WRITE),
        ("any_system_buckets", None, None, RESTORE_WRITE),
        ("exact_namespace", "local", "system.replset", RESTORE_WRITE),
        ("exact_namespace", "local", "replset.election", RESTORE_WRITE),
        ("exact_namespace", "local", "replset.minvalid", RESTORE_WRITE),
        ("any", None, None, ["listCollections"]),
        ("any_normal", None, None, RESTORE_WRITE + USER_ADMIN),
        ("collection", None, "system.js", RESTORE_WRITE),
        ("exact_namespace", "admin", "tempusers", ["find"]),
        ("exact_namespace", "admin", "temproles", ["find"]),
        ("exact_namespace", "admin", "system.backup_users", RESTORE_WRITE),
        ("exact_namespace", "admin", "system.version", RESTORE_WRITE + ["find"]),
        ("collection", None, "system.users", RESTORE_WRITE + ["find", "update", "remove"]),
        ("exact_namespace", "admin", "system.roles", ["createIndex"]),
    ]),
    "directShardOperations": (True, [], [("cluster", None, None, ["issueDirectShardOperations"])]),
    # the internal role (mongod's __system): every action on every resource; shown by rolesInfo when
    # named, never among showBuiltinRoles (as __queryableBackup)
    "__system": (True, [], [("any", None, None, ["anyAction"])]),
    "root": (True, [
        ("clusterAdmin", None), ("userAdminAnyDatabase", None), ("dbAdminAnyDatabase", None),
        ("readWriteAnyDatabase", None), ("backup", None), ("restore", None), ("directShardOperations", None),
    ], [
        ("any", None, None, ["validate"]),
        ("cluster", None, None, ["useTenant"]),
        ("exact_namespace", "config", "system.preimages", ["find", "remove"]),
        ("exact_namespace", "config", "system.change_collection", ["find", "insert", "remove", "update"]),
    ]),
}


def is_builtin(role: str, db: str) -> bool:
    """True for a built-in role name on a database where it exists."""
    spec = ROLES.get(role)
    if spec is None or not db or db == "$external":
        return False
    return not spec[0] or db == "admin"


def role_names(db: str) -> list[str]:
    """The built-in roles that exist on ``db`` (admin has all of them)."""
    return sorted(name for name in ROLES if is_builtin(name, db) and not name.startswith("__"))


def direct_roles(role: str, db: str) -> list[tuple[str, str]]:
    """The roles a built-in role inherits, as (role, db)."""
    return [(name, sub_db or db) for name, sub_db in ROLES[role][1]]


def _pattern(match: str, db: str | None, name: str | None, role_db: str) -> R.Pattern:
    if match == "any":
        return R.ANY
    if match == "any_normal":
        return R.ANY_NORMAL
    if match == "cluster":
        return R.CLUSTER
    if match == "database":
        return ("db", db or role_db)
    if match == "collection":
        return ("coll", name)
    if match == "exact_namespace":
        return ("ns", db or role_db, name)
    return R.ANY_BUCKETS


@functools.lru_cache(maxsize=1024)
def own_privileges(role: str, db: str) -> dict[R.Pattern, frozenset]:
    """The privileges a built-in role grants directly (without its inherited roles)."""
    out: dict[R.Pattern, frozenset] = {}
    for match, priv_db, name, actions in ROLES[role][2]:
        R.merge(out, {_pattern(match, priv_db, name, db): actions})
    return out


@functools.lru_cache(maxsize=1024)
def privileges(role: str, db: str) -> dict[R.Pattern, frozenset]:
    """Every privilege of a built-in role granted on ``db``, inherited roles included."""
    out = dict(own_privileges(role, db))
    for sub_role, sub_db in direct_roles(role, db):
        R.merge(out, privileges(sub_role, sub_db))
    return out

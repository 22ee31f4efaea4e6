"""The privileges an aggregation pipeline needs (mongod's ``getPrivilegesForAggregate`` and each
stage's ``requiredPrivileges``): ``find`` on the source unless the first stage is an initial source,
and for every stage what it reads or writes — ``$lookup``/``$graphLookup``/``$unionWith``/``$facet``
sub-pipelines recursively, ``insert``+``remove`` on a ``$out`` target, the actions of its mode on a
``$merge`` target (``query.stage_write.MERGE_MODES``: ``insert`` and/or ``update``),
``collStats``/``indexStats``/``planCacheRead``/``changeStream`` for those stages, ``inprog``/``listSessions``
on the cluster for ``allUsers`` variants and for ``users`` lists naming anyone but the caller. Used by the
``aggregate``, ``create`` (views) and ``collMod`` rules in :mod:`tidemark.auth.rules`. Pure; tolerant of
malformed stages (the handler refuses them).
"""

from __future__ import annotations

from typing import Any

from tidemark.auth import resources as R
from tidemark.auth.names import UserName
from tidemark.protocol.errors import MongoError
from tidemark.query.stage_write import MERGE_MODES, merge_options

INITIAL_SOURCES = frozenset({
    "$collStats", "$indexStats", "$currentOp", "$listSessions", "$listLocalSessions", "$documents",
    "$changeStream", "$planCacheStats", "$listCatalog", "$queue", "$listSearchIndexes", "$search",
    "$searchMeta", "$vectorSearch", "$listSampledQueries", "$shardedDataDistribution",
})


def _target_ns(db: str, spec: Any, *, coll_key: str = "coll") -> R.Pattern | None:
    if type(spec) is str and spec:
        return R.ns_target(db, spec)
    if isinstance(spec, dict):
        coll, other_db = spec.get(coll_key), spec.get("db", db)
        if type(coll) is str and coll and type(other_db) is str and other_db:
            return R.ns_target(other_db, coll)
    return None


def pipeline_privileges(db: str, source: R.Pattern | None, pipeline: Any, bypass: tuple,
                        caller: UserName | None = None) -> list:
    """[(target, actions)] a pipeline over ``source`` (None: collectionless) needs; a None target
    means "an authenticated user, no privilege". ``caller``: the user running it ($listSessions /
    $listLocalSessions naming only that user need no privilege, as mongod's
    listSessionsRequiredPrivileges)."""
    needs: list[tuple[R.Pattern | None, tuple[str, ...]]] = []
    stages = pipeline if isinstance(pipeline, list) else []
    first = next(iter(stages[0]), "") if stages and isinstance(stages[0], dict) and stages[0] else ""
    if source is not None and first not in INITIAL_SOURCES:
        needs.append((source, ("find",)))
    for stage in stages:
        if not isinstance(stage, dict) or not stage:
            continue
        name, spec = next(iter(stage.items()))
        here = source if source is not None else R.db_target(db)
        if name == "$out":
            target = _target_ns(db, spec)
            needs.append((target or R.db_target(db), ("insert", "remove", *bypass)))
        elif name == "$merge":
            target = _target_ns(db, spec.get("into") if isinstance(spec, dict) else spec)
            try:
                options = merge_options(spec)
            except MongoError:  # malformed: the handler refuses it (asked the broadest actions meanwhile)
                actions: tuple[str, ...] = ("insert", "update")
            else:
                actions = MERGE_MODES[options["whenMatched"], options["whenNotMatched"]]
            needs.append((target or R.db_target(db), (*actions, *bypass)))
        elif name in ("$lookup", "$graphLookup") and isinstance(spec, dict):
            foreign = _target_ns(db, spec.get("from"))
            if name == "$graphLookup":
                if foreign is not None:
                    needs.append((foreign, ("find",)))
            elif foreign is not None or "pipeline" in spec:  # a sub-pipeline over the foreign collection
                needs += pipeline_privileges(db, foreign, spec.get("pipeline", []), bypass)
        elif name == "$unionWith":
            if type(spec) is str:
                needs.append((R.ns_target(db, spec), ("find",)))
            elif isinstance(spec, dict):
                needs += pipeline_privileges(db, _target_ns(db, spec.get("coll")),
                                             spec.get("pipeline", []), bypass)
        elif name == "$facet" and isinstance(spec, dict):
            for sub in spec.values():
                needs += pipeline_privileges(db, None, sub, bypass)
        elif name == "$collStats":
            needs.append((here, ("collStats",)))
        elif name == "$indexStats":
            needs.append((here, ("indexStats",)))
        elif name == "$planCacheStats":
            needs.append((here, ("planCacheRead",)))
        elif name == "$changeStream":
            needs.append((here, ("changeStream", "find")))
        elif name in ("$currentOp", "$listSessions", "$listLocalSessions"):
            if isinstance(spec, dict) and (spec.get("allUsers") is True or spec.get("users") and not (
                    name != "$currentOp" and _only(spec.get("users"), caller))):
                needs.append((R.CLUSTER, ("inprog",) if name == "$currentOp" else ("listSessions",)))
            else:
                needs.append((None, ()))
        elif name == "$listCatalog":
            needs.append((R.CLUSTER if db == "admin" else R.db_target(db), ("listCollections",)))
    return needs


def _only(users: Any, caller: UserName | None) -> bool:
    """Whether a $listSessions ``users`` list names the caller and nobody else."""
    return (caller is not None and isinstance(users, list)
            and all(isinstance(u, dict) and set(u) == {"user", "db"} and UserName(u["user"], u["db"]) == caller
                    for u in users))

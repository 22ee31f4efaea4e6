"""The read core's hooks for the special read kinds (synchronous, like ``tidemark.collections``):

- ``with_meta`` / ``find_meta``: a DocMeta table (``tidemark.query.docmeta``) for reads whose pipeline,
  projection or sort asks for ``$meta`` (textScore needs a ``$text`` filter: 40218);
- ``geo_near_source``: a leading ``$geoNear`` on a collection, run as a near query on its key through
  the geo index (``plan_special``/``geo_near``), each result decorated with its distance; ``near_over``:
  the same search over documents no index holds (a buckets collection's);
- ``timeseries_special``: ``$text`` on a time-series collection (no text index: 27) and ``$geoNear``
  over the view (mongod 7.0's rewrite to ``$geoWithin`` + distance + ``$sort``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tidemark.core import collection as C
from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query import docmeta
from tidemark.query import plan as planner
from tidemark.query.geo_near import geo_near_key, parse_geo_near, timeseries_rewrite
from tidemark.query.match import compile_filter, parse_filter
from tidemark.query.match_parse import refuse_special_features
from tidemark.query.parsed_match import MatchStage
from tidemark.query.pipeline import has_near, parse_pipeline
from tidemark.query.plan_special import mentions_special, special_scan


def with_meta(variables: dict | None, pipeline: list) -> tuple[dict | None, Any]:
    """The read's variables with a DocMeta table when the pipeline asks for ``$meta``."""
    if not docmeta.mentions_meta(pipeline):
        return variables, None
    meta = docmeta.DocMeta()
    return {**(variables or {}), docmeta.META_VAR: meta}, meta


def timeseries_special(full: list, variables: dict | None) -> list:
    """$text cannot run on a time-series collection (no text index); a leading $geoNear becomes
    mongod's time-series form ($match $geoWithin, distance, $match, $sort)."""
    first = full[0] if full else None
    # (type first: an isinstance is a call, and every time-series read comes here)
    if type(first) is dict or isinstance(first, dict):
        if "$match" in first and (type(flt := first["$match"]) is dict or isinstance(flt, dict)):
            if "$text" in flt:
                raise MongoError(ErrorCode.IndexNotFound, "text index required for $text query")
            near = has_near(flt)
            unparsed = type(first) is not MatchStage  # (parsed()'s test, without the call)
            if unparsed and (len(first) != 1 or near):
                parse_pipeline(full[:1])  # $near/$nearSphere in a $match: 5626500, as on any aggregation
            elif near:
                parse_pipeline([{"$match": flt}])
            elif unparsed:
                # validated here as parse_pipeline would, parsed once: the time-series source takes
                # the node (deps.leading_matches) and compiles its per-measurement filter only if a
                # bucket needs it (view.EventFilter)
                node = parse_filter(flt, no_where=True)
                full = [MatchStage(flt, node, None, None, variables), *full[1:]]
            else:
                # a find's filter, parsed by the command: a find on a view runs as an aggregation,
                # whose $match refuses $where (2) as on any view ($text and the near operators were
                # answered above)
                refuse_special_features(flt)
        if "$geoNear" in full[0]:
            return timeseries_rewrite(full[0]["$geoNear"], variables) + full[1:]
    return full


def geo_near_source(engine, info, raw: Any, variables: dict | None, meta: Any, stats: dict, collation: Any = None,
                    unindexed: Iterator[dict] | None = None):
    """A leading ``$geoNear``: the near query on its key AND its ``query`` (under the read's
    collation), each result decorated. ``unindexed``: the collection's documents when it has no index
    entries to search (a buckets collection: ``near_over``)."""
    spec = parse_geo_near(raw, variables)
    key = spec.key or geo_near_key(list(info.indexes))
    flt: dict = {key: spec.near_condition()}
    if spec.query:
        flt = {"$and": [flt, spec.query]}
    plan = planner.choose_plan(list(info.indexes), flt, None, None, multikey_default=info.clustered,
                               collation=collation)
    plan.meta = meta
    plan.special.output = spec.output()
    if unindexed is not None:
        source = near_over(plan, unindexed)
    else:
        source = C.plan_docs(engine, info, plan, stats=stats)
    if spec.query:
        source = filter(compile_filter(spec.query, variables=variables, collation=collation), source)
    return plan, source


def near_over(plan: Any, docs: Iterator[dict]) -> Iterator[dict]:
    """The documents of a GEO_NEAR ``plan``, nearest first, read from ``docs`` rather than from index
    entries: a buckets collection's documents are its persisted buckets merged with the open ones
    (``timeseries.view.bucket_source``), which no index holds. The expanding search takes them all at
    its first ring and still hands each on only once its ring has passed it, so the order and the
    distances are those of the indexed search (mongod runs the same GEO_NEAR stage on the buckets'
    geo index of the meta field)."""
    pending = [((b"", doc) for doc in docs)]

    def scan(intervals: list, index: Any = None) -> Iterator[tuple[bytes, dict]]:
        return pending.pop() if pending else iter(())

    return (doc for _, doc in special_scan(plan, scan))


def geo_near_on_missing(raw: Any, variables: dict | None, ns: str) -> None:
    """A leading ``$geoNear`` over a collection that does not exist: its spec's errors first, then 26
    (mongod finds no geo index to run it on)."""
    parse_geo_near(raw, variables)
    raise MongoError(ErrorCode.NamespaceNotFound, f"$geoNear requires a geo index to run, but {ns} does not exist")


def find_meta(projection: Any, sort: Any, flt: dict, let: dict | None) -> tuple[Any, dict | None]:
    """A DocMeta table (and the variables that carry it) when the projection or sort asks for $meta."""
    if not (docmeta.mentions_meta(projection) or docmeta.mentions_meta(sort)):
        return None, let
    if "textScore" in repr((projection, sort)) and not (flt and mentions_special(flt)
                                                        and "$text" in repr(flt)):
        raise MongoError(40218, "query requires text score metadata, but it is not available")
    meta = docmeta.DocMeta()
    return meta, {**(let or {}), docmeta.META_VAR: meta}

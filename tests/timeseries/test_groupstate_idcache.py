"""The columnar ``$group``'s ``_id`` templates kept across queries (groupstate ``_TEMPLATES``/``_ELEMENTS``),
pure: keyed by the group's ``id_shape`` (the ``_id`` expression as BSON with the fields it reads) and the
meta's BSON token, so queries whose ``_id``s differ in shape, unit, field order, constant type or meta
path never take each other's templates; an ``_id`` reading a variable (``$$NOW``) is never planned
here, and a group without an ``id_shape`` caches nothing."""

from __future__ import annotations

import datetime as dt

import bson
import numpy as np

from tidemark.query.pipeline import PipelineContext
from tidemark.timeseries import columnar, groupstate
from tidemark.timeseries.groupstate import DenseGroups

EPOCH = dt.datetime(1970, 1, 1)
METAS = [{"h": "a", "r": 1}, {"h": "b", "r": 2}, {"h": 3, "r": "x"}]
TOKENS = [bson.encode({"m": meta}) for meta in METAS]
MINUTE, HOUR = {"$dateTrunc": {"date": "$t", "unit": "minute"}}, {"$dateTrunc": {"date": "$t", "unit": "hour"}}
# each differs from the others in one way only; every one's templates are fixed per meta
SHAPES = [
    {"t": MINUTE, "h": "$m.h"},
    {"t": HOUR, "h": "$m.h"},  # the unit
    {"h": "$m.h", "t": MINUTE},  # the field order
    {"t": MINUTE, "h": "$m.r"},  # the meta path
    {"t": MINUTE, "h": "$m.h", "c": 1},
    {"t": MINUTE, "h": "$m.h", "c": 1.0},  # the constant's type (1 == 1.0 in Python)
    {"t": MINUTE, "h": "$m.h", "c": True},
    MINUTE,
    HOUR,
    "$m.h",
    "$m.r",
    {"h": "$m.h"},
]


def _ids(spec, truncs, unit_ms):
    plan = columnar.plan(None, [{"$group": {"_id": spec, "n": {"$count": {}}}}], "t", "m")
    assert plan is not None and plan.id_shape is not None
    ctx = PipelineContext()
    dense = DenseGroups(plan, ctx, [(True, meta) for meta in METAS], TOKENS)
    owners = np.asarray([k for k in range(len(METAS)) for _ in truncs], dtype=np.int64)
    times = np.asarray(truncs * len(METAS), dtype=np.int64)
    dense.slots(owners, times if plan.unit_ms is not None else None, times + 1234)
    got = [bson.encode(d) for d in dense.results()]
    raw = dense.encoded()  # (fewer than ENCODED_MIN groups: None, else the BSON documents)
    want, seen = [], set()
    for owner, ms in zip(owners.tolist(), times.tolist(), strict=True):
        idv = plan.id_fn({"t": EPOCH + dt.timedelta(milliseconds=ms + 1234), "m": METAS[owner]}, ctx.variables)
        doc = bson.encode({"_id": idv, "n": 0})
        if doc not in seen:
            seen.add(doc)
            want.append(doc)
    return got, raw, want


def test_queries_of_other_id_shapes_on_the_same_metas_do_not_share_templates():
    groupstate._TEMPLATES.clear()
    groupstate._ELEMENTS.clear()
    truncs = [0, 3_600_000, 7_200_000]
    for _ in range(2):  # the second time round, every template is a remembered one
        for spec in SHAPES + SHAPES[::-1]:
            got, _raw, want = _ids(spec, truncs, None)
            assert got == want, spec
    assert len(groupstate._TEMPLATES) == len(SHAPES) * len(METAS)


def test_remembered_elements_make_the_same_bson():
    """Enough groups for the BSON path (``encoded``): its documents, made from elements remembered by
    an earlier query, are the dicts' bytes."""
    truncs = [i * 3_600_000 for i in range(40)]
    for _ in range(2):
        for spec in ({"t": HOUR, "h": "$m.h"}, {"t": HOUR, "h": "$m.r"}, HOUR):
            got, raw, want = _ids(spec, truncs, None)
            assert got == want
            assert raw is not None and [d.raw for d in raw] == want, spec


def test_variable_dependent_ids_are_not_planned_nor_cached():
    for spec in ({"t": MINUTE, "now": "$$NOW"}, {"t": MINUTE, "h": "$$ROOT.m.h"},
                 {"$dateTrunc": {"date": "$t", "unit": "minute", "timezone": "+01:00"}},
                 {"$dateTrunc": {"date": "$t", "unit": "minute", "binSize": 2}}):
        assert columnar.plan(None, [{"$group": {"_id": spec, "n": {"$count": {}}}}], "t", "m") is None, spec
    # a group whose _id reads a variable (were one ever planned): no id_shape, nothing remembered
    spec = {"_id": {"h": "$m.h", "now": "$$NOW"}}
    group = columnar.ColumnarGroup(spec, columnar._Shape(spec, None, [], "t", "m"), [], "t", "m")
    assert group.id_shape is None
    groupstate._TEMPLATES.clear()
    dense = DenseGroups(group, PipelineContext(), [(True, meta) for meta in METAS], TOKENS)
    dense.slots(np.arange(len(METAS), dtype=np.int64), None, np.zeros(len(METAS), dtype=np.int64))
    assert not groupstate._TEMPLATES

"""groupbson.documents: each document is exactly ``encode_in_order`` of the dict the dense path builds —
with one head (one series, or a ``_id`` reading no meta: the one-layout path) and with several."""

from __future__ import annotations

import datetime as dt

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.protocol.codec import encode_in_order
from tidemark.timeseries import groupbson

EPOCH = dt.datetime(1970, 1, 1)
MS = st.integers(-(2**40), 2**40)
_KINDS = {groupbson.DOUBLE: ("<f8", st.floats(allow_nan=False)), groupbson.INT32: ("<i4", st.integers(-(2**31), 2**31 - 1)),
          groupbson.DATE: ("<i8", MS)}


def _date(ms: int) -> dt.datetime:
    return EPOCH + dt.timedelta(milliseconds=ms)


def _shown(kind: int, value):
    return _date(value) if kind == groupbson.DATE else value


@st.composite
def _cases(draw):
    bare = draw(st.booleans())
    n_heads = draw(st.integers(1, 3))
    parts = [] if bare else draw(st.lists(st.sampled_from(["t", "u"]), unique=True, max_size=2))
    templates = []
    for h in range(n_heads):
        if bare:
            templates.append(_date(0))
        else:
            idv = {"h": "x" * draw(st.integers(0, 5)) + str(h)}
            for key in parts:
                idv[key] = _date(0)
            templates.append(idv)
    fields = draw(st.lists(st.tuples(st.sampled_from(["a", "bb", "ccc"]), st.sampled_from(sorted(_KINDS))),
                           unique_by=lambda f: f[0], min_size=1, max_size=3))
    n = draw(st.integers(1, 30))
    owner = draw(st.lists(st.integers(0, n_heads - 1), min_size=n, max_size=n))
    dates = draw(st.lists(MS, min_size=n, max_size=n))
    values = [draw(st.lists(_KINDS[kind][1], min_size=n, max_size=n)) for _, kind in fields]
    return bare, parts, templates, fields, owner, dates, values


@settings(max_examples=300, deadline=None)
@given(_cases())
def test_documents_are_the_dicts_encoded(case):
    bare, parts, templates, fields, owner, dates, values = case
    heads = [groupbson.element(idv) for idv in templates]
    offsets = [groupbson.date_offsets(head, idv, parts, bare) for head, idv in zip(heads, templates, strict=True)]
    timed = bare or bool(parts)
    tail, places = groupbson.tail_layout(tuple(fields))
    fills = [(at, width, np.asarray(column, dtype=_KINDS[kind][0]))
             for (at, width), (_, kind), column in zip(places, fields, values, strict=True)]
    run = groupbson.documents(heads, offsets,
                              np.asarray(owner, dtype=np.int64), np.asarray(dates, dtype=np.int64) if timed else None,
                              tail, fills)
    expected = []
    for i, h in enumerate(owner):
        idv = templates[h]
        if bare:
            idv = _date(dates[i])
        else:
            idv = {k: _date(dates[i]) if k in parts else v for k, v in idv.items()}
        doc = {"_id": idv}
        for (name, kind), column in zip(fields, values, strict=True):
            doc[name] = _shown(kind, column[i])
        expected.append(encode_in_order(doc))
    assert [bytes(d) for d in run.docs] == expected
    sizes = [run.sizes] * len(run.docs) if type(run.sizes) is int else list(run.sizes)  # (an int: every one that long)
    assert sizes == [len(d) for d in expected]

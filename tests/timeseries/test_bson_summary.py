"""stored.bson_summary: ``{_id, control, meta?}`` of a stored bucket's BSON, and stored.bson_head: ``{_id,
meta?}``, whatever the elements' types and order, equal to what a full decode holds (each decodes only
those elements)."""

import datetime

import bson
from bson import Binary, Decimal128, Int64, MaxKey, MinKey, ObjectId, Regex, Timestamp
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.protocol.codec import decode
from tidemark.timeseries import rawcolumns
from tidemark.timeseries.stored import bson_head, bson_summary

_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**31), 2**31 - 1), st.integers(-(2**63), 2**63 - 1).map(Int64),
    st.floats(allow_nan=False), st.text(max_size=8), st.binary(max_size=8).map(Binary),
    st.builds(ObjectId), st.datetimes(min_value=datetime.datetime(1900, 1, 1)).map(lambda d: d.replace(microsecond=0)),
    st.just(Decimal128("1.5")), st.just(Regex("^a", "i")), st.just(Timestamp(5, 1)), st.just(MinKey()),
    st.just(MaxKey()))
_values = st.recursive(_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text("abcmt", min_size=1, max_size=3), inner, max_size=3)),
    max_leaves=8)


@settings(max_examples=200, deadline=None)
@given(st.permutations(["_id", "control", "meta", "data"]), _values, _values, _values, st.booleans())
def test_the_summary_holds_exactly_the_decoded_id_control_and_meta(order, id_value, control, meta, has_meta):
    fields = {"_id": id_value, "control": control, "meta": meta, "data": {"t": {"0": 1}}}
    doc = {name: fields[name] for name in order if name != "meta" or has_meta}
    raw = bson.encode(doc)
    full = decode(raw)
    summary = bson_summary(raw)
    assert list(summary) == ["_id", "control"] + (["meta"] if has_meta else [])
    assert summary == {name: full[name] for name in summary}
    head = bson_head(raw)  # None exactly where the walker cannot size a top-level element
    assert (head is None) == (rawcolumns.elements(raw) is None)
    assert head is None or head == {name: full[name] for name in ("_id", "meta") if name in full}

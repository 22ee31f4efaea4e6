"""Issue 23: raw insert batches of mixed documents (types changing between documents, missing fields,
bad or missing time fields, metas of several kinds, with and without ``_id``), ordered and unordered,
answer exactly as the per-document path does (``timeseriesColumnarInserts`` off): the same reply (``n``,
write errors with their index, code and message) and the same measurements; the measurements accepted
are exactly the documents a regular collection takes, minus the refused ones."""

import datetime as dt

import bson
import pytest
from bson.int64 import Int64
from bson.objectid import ObjectId
from bson.raw_bson import RawBSONDocument
from harness import raw_command
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

T0 = dt.datetime(2016, 1, 1)
pytestmark = pytest.mark.commands("insert", "find", "setParameter", "drop")

_TIME = st.one_of(
    st.integers(0, 3 * 3600 * 1000).map(lambda ms: T0 + dt.timedelta(milliseconds=ms)),  # mostly valid
    st.integers(0, 3 * 3600 * 1000).map(lambda ms: T0 + dt.timedelta(milliseconds=ms)),
    st.integers(0, 3 * 3600 * 1000).map(lambda ms: T0 + dt.timedelta(milliseconds=ms)),
    st.sampled_from(["2016-01-01", 17, None, 1.5, "missing"]),
)
_META = st.one_of(st.sampled_from(["missing", "h1", 7, None]),
                  st.fixed_dictionaries({"host": st.sampled_from(["a", "b", "c"])}),
                  st.fixed_dictionaries({"host": st.sampled_from(["a", "b"]), "rack": st.sampled_from([1, 2])}))
_VALUE = st.one_of(st.floats(allow_nan=False, min_value=-1e6, max_value=1e6), st.integers(-5, 5),
                   st.sampled_from(["x", True, None, "missing"]))


@st.composite
def _documents(draw):
    same_shape = draw(st.booleans())  # most real batches share one layout: the column-wise path
    with_ids = draw(st.booleans())
    n = draw(st.integers(1, 25))
    meta = draw(_META)
    docs = []
    for i in range(n):
        time = draw(_TIME) if not same_shape or draw(st.integers(0, 9)) == 0 else T0 + dt.timedelta(seconds=i * 97)
        doc = {"_id": ObjectId()} if with_ids else {}
        doc["time"] = time
        doc["tags"] = meta if same_shape else draw(_META)
        doc["v"] = float(i) if same_shape else draw(_VALUE)
        doc["w"] = draw(_VALUE) if not same_shape else 1.0
        docs.append({k: v for k, v in doc.items() if v != "missing"})
    return docs, draw(st.booleans())


# Documents that almost share one layout (issue 23.4: the column-wise parse checks every document's
# bytes against the first one's): one value of another type at the same offsets (double, int64, date:
# 8 bytes each), another key of the same length, a meta of the same length but other keys or nesting,
# an element repeated (a name twice: kept as raw BSON, no dict holds it).
_NEAR = st.sampled_from(["same", "same", "same", "int64", "date", "key", "meta_key", "meta_nested", "meta_long",
                         "meta_type", "duplicate", "bool"])


def _near_document(i, variant, with_ids):
    doc = {"_id": ObjectId()} if with_ids else {}
    doc["time"] = T0 + dt.timedelta(seconds=i * 97)
    doc["tags"] = {"host": f"h{i % 3}"}
    doc["v"] = float(i)
    doc["w"] = 1.5
    if variant == "int64":
        doc["v"] = Int64(i)
    elif variant == "date":
        doc["v"] = T0
    elif variant == "bool":
        doc["w"] = True
    elif variant == "key":
        doc["x"] = doc.pop("w")
    elif variant == "meta_key":
        doc["tags"] = {"hozt": f"h{i % 3}"}
    elif variant == "meta_nested":
        doc["tags"] = {"host": {"r": i % 2}}
    elif variant == "meta_long":
        doc["tags"] = {"host": f"h{i}" * 3}
    elif variant == "meta_type":
        doc["tags"] = {"host": i % 3}
    elif variant == "duplicate":
        raw = bson.encode(doc)
        body = raw[4:-1] + b"\x01v\x00" + bson.encode({"": 2.5})[6:14]  # "v" again, a double
        return RawBSONDocument((len(body) + 5).to_bytes(4, "little") + body + b"\x00")
    return doc


@st.composite
def _near_documents(draw):
    with_ids = draw(st.booleans())
    n = draw(st.integers(1, 25))
    return [_near_document(i, draw(_NEAR), with_ids) for i in range(n)], draw(st.booleans())


def _time_ok(doc):
    if isinstance(doc, RawBSONDocument):
        return True
    return type(doc.get("time")) is dt.datetime


def _measurements(db, name, normalized=False):
    """The documents (without ``_id``); ``normalized``: a meta document's fields in name order, as a
    time-series collection stores and returns them (its two paths are compared as they are)."""
    out = []
    for doc in db[name].find({}, {"_id": 0}):
        if normalized and type(doc.get("tags")) is dict:
            doc["tags"] = dict(sorted(doc["tags"].items()))
        out.append(repr(sorted(doc.items())))
    return sorted(out)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(_documents(), _near_documents()))
def test_raw_batches_answer_and_store_as_the_per_document_path(server, client, drawn):
    docs, ordered = drawn
    db = client.tsdiff
    for name in ("fast", "slow", "plain"):
        db.drop_collection(name)
    db.create_collection("fast", timeseries={"timeField": "time", "metaField": "tags"})
    db.create_collection("slow", timeseries={"timeField": "time", "metaField": "tags"})
    db.create_collection("plain")
    command = {"ordered": ordered, "$db": "tsdiff"}
    fast = raw_command(server.port, {"insert": "fast", **command}, sequences={"documents": docs})
    client.admin.command("setParameter", 1, timeseriesColumnarInserts=False)
    try:
        slow = raw_command(server.port, {"insert": "slow", **command}, sequences={"documents": docs})
    finally:
        client.admin.command("setParameter", 1, timeseriesColumnarInserts=True)
    assert fast == slow
    refused = {e["index"] for e in fast.get("writeErrors", [])}
    for error in fast.get("writeErrors", []):
        assert not _time_ok(docs[error["index"]])
        assert (error["code"], error["errmsg"]) == (
            2, "'time' must be present and contain a valid BSON UTC datetime value")
    bad = [i for i, d in enumerate(docs) if not _time_ok(d)]
    if ordered:
        accepted = docs[:bad[0]] if bad else docs
        assert refused == set(bad[:1])
    else:
        accepted = [d for i, d in enumerate(docs) if i not in refused]
        assert refused == set(bad)
    assert fast["n"] == len(accepted)
    if accepted:
        db.plain.insert_many([dict(d) for d in accepted])
    assert _measurements(db, "fast") == _measurements(db, "slow")
    if not any(isinstance(d, RawBSONDocument) for d in docs):  # (a name twice: no dict to compare with)
        assert _measurements(db, "fast") == _measurements(db, "plain", normalized=True)

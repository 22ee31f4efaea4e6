"""$_internalUnpackBucket / $_unpackBucket parsing and behaviour (spec §5.1 codes)."""

import datetime as dt

import pytest

from tidemark.protocol.errors import MongoError
from tidemark.timeseries.unpack import EXTRA_STAGES, parse_internal_unpack, parse_unpack_bucket

T0 = dt.datetime(2024, 1, 1)
BUCKET = {"_id": 1, "control": {"version": 1, "min": {"t": T0}, "max": {"t": T0}}, "meta": {"a": 1},
          "data": {"t": {"0": T0, "1": T0}, "v": {"1": 5}}}


@pytest.mark.parametrize("spec,code", [
    ("x", 5612400), ({"timeField": 1}, 5612401), ({"timeField": "t", "metaField": 1}, 5612402),
    ({"timeField": "t", "metaField": "a.b"}, 5612403), ({"timeField": "t", "other": 1}, 5612404),
    ({"metaField": "m"}, 5612405),
])
def test_unpack_bucket_spec_errors(spec, code):
    with pytest.raises(MongoError) as info:
        parse_unpack_bucket(spec)
    assert info.value.code == code


def test_unpack_bucket_requires_meta_field_when_bucket_has_meta():
    with pytest.raises(MongoError) as info:
        list(parse_unpack_bucket({"timeField": "t"}).apply([BUCKET]))
    assert info.value.code == 5369601


def test_unpack_bucket_renames_meta_and_keeps_sparse_fields():
    out = list(EXTRA_STAGES["$_unpackBucket"]({"timeField": "t", "metaField": "m"}, None)([BUCKET]))
    assert out == [{"t": T0, "m": {"a": 1}}, {"t": T0, "m": {"a": 1}, "v": 5}]


def test_internal_unpack_include_and_exclude():
    spec = parse_internal_unpack({"timeField": "t", "metaField": "m", "bucketMaxSpanSeconds": 3600,
                                  "exclude": ["v"]})
    assert list(spec.apply([BUCKET])) == [{"t": T0, "m": {"a": 1}}, {"t": T0, "m": {"a": 1}}]
    assert spec.explained["exclude"] == ["v"]
    spec = parse_internal_unpack({"timeField": "t", "include": ["v"]})
    assert list(spec.apply([BUCKET])) == [{}, {"v": 5}]
    with pytest.raises(MongoError) as info:
        parse_internal_unpack([])
    assert info.value.code == 5346500

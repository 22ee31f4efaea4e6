"""``parse_internal_unpack`` remembers its parse per stage object (a time-series view's stage is one
object while its resolution is reused): every spec, however often its memory is reused by a new one,
parses to what its own content says, and a bad spec fails every time."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tidemark.protocol.errors import MongoError
from tidemark.timeseries import unpack

NAMES = st.text(alphabet="abcdefgh", min_size=1, max_size=4)
SPECS = st.fixed_dictionaries(
    {"timeField": NAMES},
    optional={"metaField": NAMES, "bucketMaxSpanSeconds": st.integers(1, 10**6),
              "exclude": st.lists(NAMES, max_size=3)})


def _expected(spec: dict) -> tuple:
    return (spec["timeField"], spec.get("metaField"), spec.get("bucketMaxSpanSeconds"),
            tuple(spec.get("exclude", [])))


def _got(parsed: unpack.UnpackSpec) -> tuple:
    return parsed.time_field, parsed.meta_field, parsed.bucket_max_span_seconds, parsed.exclude


@given(st.lists(SPECS, min_size=1, max_size=20))
def test_each_spec_object_parses_to_its_own_content(specs):
    for spec in specs:
        # a fresh copy each time: a freed dict's id is soon reused by the next one
        fresh = dict(spec)
        assert _got(unpack.parse_internal_unpack(fresh)) == _expected(spec)
        assert unpack.parse_internal_unpack(fresh) is unpack.parse_internal_unpack(fresh)
        del fresh


def test_a_reused_id_does_not_return_another_specs_parse():
    for i in range(200):  # (each dict freed before the next is made: CPython reuses its memory)
        assert unpack.parse_internal_unpack({"timeField": f"t{i}"}).time_field == f"t{i}"


def test_a_bad_spec_fails_every_time():
    spec = {"timeField": 1}
    for _ in range(2):
        with pytest.raises(MongoError) as err:
            unpack.parse_internal_unpack(spec)
        assert err.value.code == 40514

"""Which buckets count as closed for time-series meta updates (``tidemark.timeseries.modify.is_closed``;
timeseries_closed_update_delete.js): exactly those whose ``control.closed`` is the boolean true, the
buckets the deletes' ``CLOSED_BUCKET_FILTER`` (``{$not: {$eq: true}}``) leaves alone."""

from __future__ import annotations

import pytest

from tidemark.query.match import compile_filter
from tidemark.timeseries.modify import CLOSED_BUCKET_FILTER, is_closed

OPEN_FILTER = compile_filter(CLOSED_BUCKET_FILTER)


@pytest.mark.parametrize(("control", "closed"), [
    ({"version": 1, "closed": True}, True),
    ({"version": 1, "closed": False}, False),
    ({"version": 1}, False),
    ({"version": 1, "closed": 1}, False),  # $eq: true matches only the boolean
    ({"version": 1, "closed": "true"}, False),
    ({"version": 1, "closed": None}, False),
])
def test_closed_is_exactly_control_closed_true(control, closed):
    bucket = {"_id": 1, "control": control, "meta": "a", "data": {}}
    assert is_closed(bucket) is closed
    assert OPEN_FILTER(bucket) is not closed  # updates and deletes agree on which buckets are closed


@pytest.mark.parametrize("bucket", [{"_id": 1}, {"_id": 1, "control": 5}, {"_id": 1, "control": [True]}])
def test_malformed_control_is_not_closed(bucket):
    assert not is_closed(bucket)

"""An aggregation's leading $match on a time-series collection is parsed once by the read core
(``special_reads.timeseries_special``, ``parse_filter(no_where=True)``): ``$where`` is refused there as
in any aggregation (2 BadValue), at the top or under ``$and``/``$or``, and the refusal does not outlive
the parse (a find on a collection still takes ``$where``)."""

import datetime as dt

import pytest
from pymongo.errors import OperationFailure


@pytest.mark.commands("aggregate", "find")
@pytest.mark.parametrize("flt", [{"$where": "true"}, {"$and": [{"m": 1}, {"$where": "true"}]},
                                 {"t": {"$gte": dt.datetime(2024, 1, 1)}, "$or": [{"$where": "true"}, {"m": 2}]}])
def test_where_is_refused_in_a_time_series_match(db, flt):
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    db.ts.insert_many([{"t": dt.datetime(2024, 1, 1, 0, i), "m": i % 2, "v": i} for i in range(4)])
    with pytest.raises(OperationFailure) as err:
        list(db.ts.aggregate([{"$match": flt}, {"$group": {"_id": "$m", "n": {"$sum": 1}}}]))
    assert err.value.code == 2 and "$where is not allowed in this context" in str(err.value)
    db.plain.insert_one({"a": 1})
    try:
        db.plain.find_one({"$where": "true"})
    except OperationFailure as exc:  # (a server without JavaScript: another refusal than the parse scope's)
        assert "not allowed in this context" not in str(exc)

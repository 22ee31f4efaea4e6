"""mongod 7.0 refuses an index once the collection's catalog holds 64 (IndexCatalogImpl::
_doesSpecConflictWithExisting: numIndexesTotal >= 64 -> 67 CannotCreateIndex "add index fails, too many
indexes for <ns> key:<key>"). A clustered collection's clustered index is no catalog entry, so it takes
64 secondary indexes; a time-series collection's indexes live on its clustered buckets collection, so the
same rule applies there (its default meta/time index counts), the message naming
``<db>.system.buckets.<name>`` and the key translated to the buckets' fields. Tidemark checked the limit
on regular and clustered collections only: a time-series collection took any number of indexes.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

# collection kind -> (create options, catalog entries it starts with, the namespace the message names)
KINDS = {
    "regular": ({}, 1, "{db}.c"),  # _id_
    "clustered": ({"clusteredIndex": {"key": {"_id": 1}, "unique": True}}, 0, "{db}.c"),
    "ts_meta": ({"timeseries": {"timeField": "t", "metaField": "m"}}, 1, "{db}.system.buckets.c"),  # meta_1_t_1
    "ts": ({"timeseries": {"timeField": "t"}}, 0, "{db}.system.buckets.c"),
}


def _key(kind: str, i: int) -> tuple[list, str]:
    """The i-th index's key, and how the refusal prints it (the buckets' fields for time series)."""
    if not kind.startswith("ts"):
        return [(f"x{i}", 1)], f"{{ x{i}: 1 }}"
    if kind == "ts_meta" and i % 2:
        return [(f"m.f{i}", -1)], f"{{ meta.f{i}: -1 }}"
    return [(f"x{i}", 1)], f"{{ control.min.x{i}: 1, control.max.x{i}: 1 }}"


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch=st.integers(1, 7))
@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.commands("createIndexes", "listIndexes")
def test_a_collection_takes_64_catalog_indexes_whatever_its_kind(db, kind, batch):
    options, existing, ns = KINDS[kind]
    db.drop_collection("c")
    db.create_collection("c", **options)
    allowed = 64 - existing
    i = 0
    while i < allowed:  # up to the limit, in commands of ``batch`` indexes
        n = min(batch, allowed - i)
        db.command("createIndexes", "c", indexes=[
            {"key": dict(_key(kind, j)[0]), "name": f"i{j}"} for j in range(i, i + n)])
        i += n
    # one more: refused, alone or as part of a command (which then creates none of its indexes)
    specs = [{"key": dict(_key(kind, j)[0]), "name": f"i{j}"} for j in range(allowed, allowed + batch)]
    with pytest.raises(OperationFailure) as err:
        db.command("createIndexes", "c", indexes=specs)
    assert err.value.code == 67
    assert err.value.details["errmsg"] == (
        f"add index fails, too many indexes for {ns.format(db=db.name)} key:{_key(kind, allowed)[1]}")
    catalog = "system.buckets.c" if kind.startswith("ts") else "c"
    listed = len(list(db[catalog].list_indexes()))
    assert listed == 64 + (kind == "clustered")  # (listIndexes shows a clustered collection's clustered index)
    # an index that exists already is still no error at the limit
    again = db.command("createIndexes", "c", indexes=[{"key": dict(_key(kind, 0)[0]), "name": "i0"}])
    assert again["note"] == "all indexes already exist"

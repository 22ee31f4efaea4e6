"""Recovery builds the journaled buckets' documents in groups, as a commit does (one by one, 100,000
one-row buckets took 16.6 s to recover; in groups 10.2 s), and a group one bucket breaks is built one by
one so that only that bucket is quarantined. Both shown after a SIGKILL: every acknowledged measurement
of many series reads back, with the groups built together and with every group made to fail (a launcher
patches ``full_documents`` to refuse more than one bucket), which leaves each bucket built alone."""

import datetime as dt

import pytest
from harness.server import patched

pytestmark = [pytest.mark.commands("insert", "find"), pytest.mark.slow]

T0 = dt.datetime(2024, 1, 1)
SERIES = 500


def _load_and_kill(proc) -> list[int]:
    with proc.client() as client:
        client.r.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
        client.r.ts.insert_many([{"t": T0 + dt.timedelta(seconds=i % 7), "m": {"h": f"h{i % SERIES}"}, "v": i}
                                 for i in range(3 * SERIES)])
    proc.kill()  # SIGKILL: the buckets are only in the journal
    return list(range(3 * SERIES))


@pytest.mark.parametrize("groups_fail", [False, True])
def test_every_journaled_measurement_of_many_series_reads_back_after_a_kill(start_server, groups_fail):
    proc = start_server()
    expected = _load_and_kill(proc)
    restarted = proc
    if groups_fail:
        restarted = patched(proc, "import tidemark.timeseries.bucket as bucket\n"
                                  "import tidemark.timeseries.recovery as recovery\n"
                                  "real = recovery.full_documents\n"
                                  "def refusing(items):\n"
                                  "    if len(items) > 1:\n"
                                  "        raise ValueError('a group is refused')\n"
                                  "    return real(items)\n"
                                  "recovery.full_documents = bucket.full_documents = refusing", "groups-refused")
    restarted.start()
    try:
        with restarted.client() as client:
            assert sorted(d["v"] for d in client.r.ts.find()) == expected
            assert "tidemark.quarantine.ts" not in client.r.list_collection_names()
    finally:
        restarted.kill()

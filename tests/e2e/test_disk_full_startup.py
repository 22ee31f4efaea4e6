"""A restart after a SIGKILL on a full disk: start-up must write (the time-series journal is replayed into
full buckets), and the disk refuses. The server exits with one clear log line and mongod's exit code for a
failed start-up (100, as for an unusable dbpath), never a Python traceback; once there is space again it
starts and every acknowledged write is there. The full disk is injected from the first write of the
start-up (``--setParameter failStorageCommitsForTest=N:ENOSPC``, test-only, storage/faults.py)."""

import datetime as dt
import subprocess

import pytest
from harness import PYTHON, ROOT

pytestmark = [pytest.mark.commands("insert", "find")]
T0 = dt.datetime(2024, 5, 1)


@pytest.mark.slow
def test_start_up_on_a_full_disk_exits_100_with_one_clear_line_and_no_traceback(start_server, tmp_path):
    proc = start_server(params={"enableTestCommands": 1})
    with proc.client() as client:
        client.db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
        client.db.ts.insert_many([{"t": T0 + dt.timedelta(seconds=i), "m": i % 3, "v": i} for i in range(30)])
        client.db.c.insert_one({"_id": 1})
    proc.kill()  # the open buckets live in the journal: the next start-up replays them (writes)

    argv = [PYTHON, "-m", "tidemark", "--port", str(proc.port), "--dbpath", proc.dbpath,
            "--setParameter", "enableTestCommands=1", "--setParameter", "failStorageCommitsForTest=100:ENOSPC"]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=60)
    output = done.stdout + done.stderr
    assert done.returncode == 100, output
    assert "Traceback" not in output, output
    fatal = [line for line in output.splitlines() if '"id":20557' in line]
    assert len(fatal) == 1 and "OutOfDiskSpace" in fatal[0], output
    assert "tidemark: OutOfDiskSpace" in done.stderr

    proc.start()  # space again: recovery completes and nothing acknowledged is lost
    with proc.client() as client:
        assert sorted(d["v"] for d in client.db.ts.find()) == list(range(30))
        assert client.db.c.count_documents({}) == 1

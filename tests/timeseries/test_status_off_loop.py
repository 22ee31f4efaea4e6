"""serverStatus' ``bucketCatalog`` section walks every live bucket (its open/idle/archived counts): under a
series explosion (~200,000 buckets) that walk costs ~130 ms of CPU, so it runs in a worker thread, never on
the event loop every client shares — for serverStatus and for the Prometheus scrape alike."""

from __future__ import annotations

import datetime as dt
import threading


def test_the_bucket_catalog_figures_are_counted_off_the_event_loop(tidemark_server_factory, monkeypatch):
    server = tidemark_server_factory()
    catalog = server._app.state.bucket_catalog
    loop_thread = server._thread
    counted_on: list[threading.Thread] = []
    original = type(catalog).server_status

    def recording(self, snapshot=None):
        counted_on.append(threading.current_thread())
        return original(self, snapshot)

    monkeypatch.setattr(type(catalog), "server_status", recording)
    with server.client() as client:
        db = client.status_off_loop
        db.create_collection("req", timeseries={"timeField": "t", "metaField": "m"})
        db.req.insert_many([{"t": dt.datetime(2024, 1, 1), "m": i} for i in range(50)])
        section = client.admin.command("serverStatus")["bucketCatalog"]
    assert section["numBuckets"] == 50 and section["numOpenBuckets"] == 50
    assert counted_on and all(thread is not loop_thread for thread in counted_on)

"""GridFS from pymongo: a 5 MB file in 255 KiB chunks (put/get/find/delete)."""

from __future__ import annotations

import hashlib
import os

import gridfs
import pytest


@pytest.mark.commands("insert", "find", "createIndexes", "delete", "listIndexes")
def test_gridfs_put_get_find_delete_5mb(db):
    fs = gridfs.GridFS(db)
    payload = os.urandom(5 * 1024 * 1024)
    file_id = fs.put(payload, filename="big.bin", chunkSize=255 * 1024)
    assert len(list(db.fs.chunks.find({"files_id": file_id}, {"data": 0}))) == -(-len(payload) // (255 * 1024))
    out = fs.get(file_id).read()
    assert hashlib.sha256(out).digest() == hashlib.sha256(payload).digest()
    assert [f.filename for f in fs.find({"filename": "big.bin"})] == ["big.bin"]
    assert fs.get_last_version("big.bin")._id == file_id
    index_names = {i["name"] for i in db.fs.chunks.list_indexes()}
    assert "files_id_1_n_1" in index_names
    fs.delete(file_id)
    assert not fs.exists(file_id)
    assert list(db.fs.chunks.find({"files_id": file_id})) == []


@pytest.mark.commands("insert", "find")
def test_gridfs_bucket_streams_ranges(db):
    bucket = gridfs.GridFSBucket(db, chunk_size_bytes=255 * 1024)
    payload = bytes(range(256)) * 4000
    fid = bucket.upload_from_stream("r.bin", payload)
    stream = bucket.open_download_stream(fid)
    stream.seek(300_000)
    assert stream.read(1000) == payload[300_000:301_000]

"""rotateCertificates as mongod 7.0 runs it (rotate_certificates_command.cpp, rotate_certificates.idl;
admin only, cluster action rotateCertificates, no writeConcern): SSLManagerCoordinator::rotate loads
the certificate, key and CA files again, connections accepted afterwards are served with the new
certificate, established ones go on with theirs; ``message`` (an optional string) is logged (4988500).
A file that no longer loads answers 140 InvalidSSLConfiguration and the current certificate stays.
Without TLS it succeeds too. Tidemark answered 59 CommandNotFound.
"""

from __future__ import annotations

import shutil
import ssl

import pymongo
import pytest
from bson.son import SON
from harness import ServerProcess
from harness.certs import make_certificates
from hypothesis import given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure, ServerSelectionTimeoutError

pytestmark = pytest.mark.commands("rotateCertificates")


def _uri(server: ServerProcess, ca) -> str:
    return f"mongodb://127.0.0.1:{server.port}/?directConnection=true&tls=true&tlsCAFile={ca}"


def _connects(server: ServerProcess, ca) -> bool:
    with pymongo.MongoClient(_uri(server, ca), serverSelectionTimeoutMS=1500) as client:
        try:
            client.admin.command("ping")
        except ServerSelectionTimeoutError:
            return False
    return True


def _error(call) -> OperationFailure:
    with pytest.raises(OperationFailure) as e:
        call()
    return e.value


@pytest.mark.slow
def test_rotation_serves_new_connections_with_the_new_certificate(tmp_path):
    old, new = make_certificates(tmp_path / "old"), make_certificates(tmp_path / "new")
    live = tmp_path / "server.pem"
    shutil.copy(old.server, live)
    server = ServerProcess(tmp_path / "db", log_path=tmp_path / "tidemark.log",
                           ssl_context=ssl.create_default_context(cafile=str(old.ca)),
                           args=("--tlsMode", "allowTLS", "--tlsCertificateKeyFile", str(live)))
    server.start()
    try:
        established = pymongo.MongoClient(_uri(server, old.ca), maxPoolSize=1)
        established.admin.command("ping")
        shutil.copy(new.server, live)
        assert _connects(server, old.ca)  # nothing changes before the rotation
        assert established.admin.command("rotateCertificates", 1, message="new CA")["ok"] == 1
        assert _connects(server, new.ca) and not _connects(server, old.ca)
        assert established.admin.command("ping")["ok"] == 1  # an established connection keeps its own
        log = server.log_text()
        assert '"id":4913400' in log and '"message":"new CA"' in log

        live.write_text("not a certificate")
        e = _error(lambda: established.admin.command("rotateCertificates", 1))
        assert (e.code, e.details["errmsg"]) == (140, "Can not set up PEM key file.")
        assert _connects(server, new.ca)  # the current certificate stays
        established.close()
    finally:
        assert server.terminate() == 0


@settings(max_examples=25, deadline=None)
@given(message=st.one_of(st.none(), st.text(max_size=6), st.integers(-(2**63), 2**63 - 1), st.booleans(),
                         st.lists(st.integers(-(2**63), 2**63 - 1), max_size=1)))
def test_rotate_certificates_without_tls_and_its_arguments(client, message):
    cmd = SON([("rotateCertificates", 1), *([] if message is None else [("message", message)])])
    if message is None or isinstance(message, str):
        assert client.admin.command(cmd)["ok"] == 1
    else:
        assert _error(lambda: client.admin.command(cmd)).code == 14


def test_rotate_certificates_refusals(client):
    assert _error(lambda: client.test.command("rotateCertificates", 1)).code == 13  # admin only
    assert _error(lambda: client.admin.command(SON([("rotateCertificates", 1), ("other", 1)]))).code == 40415
    e = _error(lambda: client.admin.command(SON([("rotateCertificates", 1), ("writeConcern", {"w": 1})])))
    assert e.code == 72

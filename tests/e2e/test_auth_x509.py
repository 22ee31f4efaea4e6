"""MONGODB-X509 against a real server (--auth, requireTLS, --tlsCAFile) through pymongo: a client whose
verified certificate's subject names a user of ``$external`` logs in speculatively (inside hello) or
with ``authenticate``; a wrong ``user``, an unknown user, no certificate, a certificate the CA did not
sign, unmet authentication restrictions, a connection already authenticated and X509 disabled fail as
mongod's do; the user's roles are enforced; and a Hypothesis family of subjects (attribute
types, multi-valued RDNs, RFC 2253 specials, spaces, non-ASCII) round-trips createUser -> X509 login."""

from __future__ import annotations

import json
import ssl
import uuid

import pymongo
import pytest
from cryptography import x509  # (a test dependency in pyproject: the subjects are checked as it parses them)
from cryptography.x509.oid import NameOID
from harness import ServerProcess
from harness.certs import issue_client, make_certificates
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("authenticate", "createUser", "usersInfo", "connectionStatus", "logout")

ROOT, ROOT_PWD = "x509root", "pw"


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_certificates(tmp_path_factory.mktemp("x509-certs"))


def _server(base, certs, *extra: str) -> ServerProcess:
    proc = ServerProcess(base / "db", log_path=base / "tidemark.log",
                         ssl_context=ssl.create_default_context(cafile=str(certs.ca)),
                         args=("--auth", "--tlsMode", "requireTLS", "--tlsCertificateKeyFile", str(certs.server),
                               "--tlsCAFile", str(certs.ca), "--tlsAllowConnectionsWithoutCertificates", *extra))
    return proc.start()


@pytest.fixture(scope="module")
def server(certs, tmp_path_factory):
    proc = _server(tmp_path_factory.mktemp("x509-server"), certs)
    with _client(proc, certs) as bootstrap:  # the localhost exception: the first user
        bootstrap.admin.command("createUser", ROOT, pwd=ROOT_PWD, roles=["root"])
    yield proc
    assert proc.terminate() == 0


def _client(proc, certs, cert=None, **kwargs) -> pymongo.MongoClient:
    options = {"tls": True, "tlsCAFile": str(certs.ca), "directConnection": True, "serverSelectionTimeoutMS": 5000,
               "maxPoolSize": 1, **kwargs}
    if cert is not None:
        options["tlsCertificateKeyFile"] = str(cert)
    return pymongo.MongoClient(f"mongodb://127.0.0.1:{proc.port}/", **options)


@pytest.fixture(scope="module")
def root(server, certs):
    with _client(server, certs, username=ROOT, password=ROOT_PWD) as client:
        yield client


def _name(*rdns) -> x509.Name:
    return x509.Name([x509.RelativeDistinguishedName([x509.NameAttribute(oid, value) for oid, value in rdn])
                      for rdn in rdns])


def _log_lines(proc, log_id: int) -> list[dict]:
    return [json.loads(line) for line in proc.log_text().splitlines() if f'"id":{log_id},' in line]


@pytest.fixture
def alice(certs, tmp_path, root):
    """A certificate whose subject (C first in the certificate, so CN first in RFC 2253) names a new
    $external user with readWrite on x509db."""
    tag = uuid.uuid4().hex[:8]
    cert = issue_client(certs, tmp_path / "alice.pem", _name(
        [(NameOID.COUNTRY_NAME, "US")], [(NameOID.STATE_OR_PROVINCE_NAME, "Y")], [(NameOID.LOCALITY_NAME, "X")],
        [(NameOID.ORGANIZATION_NAME, "Acme")], [(NameOID.ORGANIZATIONAL_UNIT_NAME, "eng")],
        [(NameOID.COMMON_NAME, f"alice-{tag}")]))
    subject = f"CN=alice-{tag},OU=eng,O=Acme,L=X,ST=Y,C=US"
    root["$external"].command("createUser", subject, roles=[{"role": "readWrite", "db": "x509db"}])
    return cert, subject


@pytest.mark.slow
def test_speculative_x509_login_and_roles_enforced(server, certs, alice):
    cert, subject = alice
    with _client(server, certs, cert, authMechanism="MONGODB-X509") as client:
        status = client.admin.command("connectionStatus")["authInfo"]
        assert status["authenticatedUsers"] == [{"user": subject, "db": "$external"}]
        assert status["authenticatedUserRoles"] == [{"role": "readWrite", "db": "x509db"}]
        client.x509db.c.insert_one({"by": "alice"})
        assert client.x509db.c.count_documents({"by": "alice"}) >= 1
        with pytest.raises(OperationFailure) as refused:
            client.otherdb.c.insert_one({"x": 1})
        assert refused.value.code == 13 and "not authorized on otherdb" in str(refused.value)
    succeeded = [line["attr"] for line in _log_lines(server, 20250) if line["attr"]["principalName"] == subject]
    assert succeeded and succeeded[-1] == {
        "mechanism": "MONGODB-X509", "speculative": True, "principalName": subject,
        "authenticationDatabase": "$external", "remote": succeeded[-1]["remote"], "extraInfo": {}}


@pytest.mark.slow
def test_authenticate_command_with_and_without_user_then_logout(server, certs, alice):
    cert, subject = alice
    with _client(server, certs, cert) as client:
        assert client["$external"].command("authenticate", mechanism="MONGODB-X509") == {
            "dbname": "$external", "user": subject, "ok": 1.0}
        assert client["$external"].command({"authenticate": 1, "mechanism": "MONGODB-X509", "user": subject})["user"] \
            == subject
        assert client.x509db.c.count_documents({}) >= 0
        client["$external"].command("logout")
        assert client.admin.command("connectionStatus")["authInfo"]["authenticatedUsers"] == []
        with pytest.raises(OperationFailure) as refused:
            client.x509db.c.count_documents({})
        assert refused.value.code == 13
    with _client(server, certs, cert, username=subject, authMechanism="MONGODB-X509") as client:
        assert client.x509db.c.count_documents({}) >= 0  # the driver's own user= path


@pytest.mark.slow
def test_failures_answer_like_mongod(server, certs, alice, root, tmp_path):
    cert, subject = alice
    with _client(server, certs, cert) as client:
        external = client["$external"]
        cases = [
            ({"user": "CN=someone else"}, "$external", 18, "Authentication failed."),
            ({}, "admin", 17, "X.509 authentication must always use the $external database."),
            ({"mechanism": "PLAIN"}, "$external", 18, "Authentication failed."),
            ({"mechanism": ""}, "$external", 18, "Authentication failed."),
        ]
        for extra, db, code, message in cases:
            with pytest.raises(OperationFailure) as failure:
                client[db].command({"authenticate": 1, "mechanism": "MONGODB-X509", **extra})
            assert (failure.value.code, failure.value.details["errmsg"]) == (code, message), extra
        with pytest.raises(OperationFailure) as failure:  # X509 is not a SASL mechanism in mongod 7.0
            external.command("saslStart", mechanism="MONGODB-X509", payload=b"")
        assert (failure.value.code, failure.value.details["errmsg"]) == (
            2, "Unsupported mechanism 'MONGODB-X509' on authentication database '$external'")
    with _client(server, certs, cert, username=ROOT, password=ROOT_PWD) as client:  # one user per connection
        with pytest.raises(OperationFailure) as failure:
            client["$external"].command("authenticate", mechanism="MONGODB-X509")
        assert failure.value.code == 18  # mongod's authenticate lets only 11 and 17 through
    errors = [line["attr"]["error"] for line in _log_lines(server, 20249)]
    assert "AuthenticationFailed: There is no x.509 client certificate matching the user." in errors
    assert f"Location5626701: Each client connection may only be authenticated once. Previously authenticated " \
           f"as: {ROOT}@admin" in errors

    fenced = issue_client(certs, tmp_path / "fenced.pem", _name([(NameOID.COMMON_NAME, "fenced")]))
    root["$external"].command("createUser", "CN=fenced", roles=[{"role": "read", "db": "x509db"}],
                              authenticationRestrictions=[{"clientSource": ["10.9.9.9/32"]}])
    with _client(server, certs, fenced) as client:
        with pytest.raises(OperationFailure) as failure:
            client["$external"].command("authenticate", mechanism="MONGODB-X509")
        assert failure.value.code == 18
    assert {"principalName": "CN=fenced",
            "error": "AuthenticationRestrictionUnmet: Evaluation of authentication restrictions failed"} in [
        {key: line["attr"][key] for key in ("principalName", "error")} for line in _log_lines(server, 20249)]

    unknown = issue_client(certs, tmp_path / "nobody.pem", _name([(NameOID.COMMON_NAME, "nobody")]))
    with _client(server, certs, unknown) as client:
        with pytest.raises(OperationFailure) as failure:
            client["$external"].command("authenticate", mechanism="MONGODB-X509")
        assert failure.value.code == 11 and failure.value.details["errmsg"] == \
            'Could not find user "CN=nobody" for db "$external"'
    with _client(server, certs, unknown, authMechanism="MONGODB-X509") as client:
        with pytest.raises(OperationFailure) as failure:  # the speculative attempt fails silently first
            client.admin.command("ping")
        assert failure.value.code == 11

    with _client(server, certs) as client:  # no client certificate
        with pytest.raises(OperationFailure) as failure:
            client["$external"].command("authenticate", mechanism="MONGODB-X509")
        assert failure.value.code == 18
    assert "AuthenticationFailed: No verified subject name available from client" in \
        [line["attr"]["error"] for line in _log_lines(server, 20249)]


@pytest.mark.slow
def test_a_certificate_the_ca_did_not_sign_never_authenticates(certs, tmp_path):
    rogue = issue_client(certs, tmp_path / "rogue.pem", _name([(NameOID.COMMON_NAME, "rogue")]), other_ca=True)
    strict = _server(tmp_path / "strict", certs)
    try:  # the handshake refuses it
        with _client(strict, certs, rogue, serverSelectionTimeoutMS=1500) as client:
            with pytest.raises(pymongo.errors.ServerSelectionTimeoutError):
                client.admin.command("ping")
    finally:
        strict.kill()
    lax = _server(tmp_path / "lax", certs, "--tlsAllowInvalidCertificates")
    try:  # accepted on the wire, but no verified subject: X509 fails even for an existing user
        with _client(lax, certs) as bootstrap:
            bootstrap["$external"].command("createUser", "CN=rogue", roles=[{"role": "root", "db": "admin"}])
        with _client(lax, certs, rogue) as client:
            with pytest.raises(OperationFailure) as failure:
                client["$external"].command("authenticate", mechanism="MONGODB-X509")
            assert failure.value.code == 18
    finally:
        lax.kill()


@pytest.mark.slow
def test_x509_can_be_disabled(certs, tmp_path):
    proc = _server(tmp_path, certs, "--setParameter", "authenticationMechanisms=SCRAM-SHA-256")
    try:
        cert = issue_client(certs, tmp_path / "off.pem", _name([(NameOID.COMMON_NAME, "off")]))
        with _client(proc, certs) as bootstrap:
            bootstrap["$external"].command("createUser", "CN=off", roles=[{"role": "root", "db": "admin"}])
        with _client(proc, certs, cert) as client:
            with pytest.raises(OperationFailure) as failure:
                client["$external"].command("authenticate", mechanism="MONGODB-X509")
            assert failure.value.code == 18
            with pytest.raises(OperationFailure) as failure:
                client["$external"].command("saslStart", mechanism="MONGODB-X509", payload=b"")
            assert failure.value.code == 334
        assert "BadValue: x.509 authentication is disabled." in [
            line["attr"]["error"] for line in _log_lines(proc, 20249)]
    finally:
        proc.kill()


@pytest.mark.slow
def test_external_users_are_listed_with_the_external_mechanism(root, alice):
    _, subject = alice
    with pytest.raises(OperationFailure) as failure:
        root["$external"].command("createUser", "CN=pw", pwd="x", roles=[])
    assert failure.value.code == 2
    info = root["$external"].command("usersInfo", subject)["users"]
    assert [(u["user"], u["db"], u["mechanisms"]) for u in info] == [(subject, "$external", ["external"])]


# -- the subject family ------------------------------------------------------------------------------
# Attribute types whose values cryptography encodes as UTF8String, with OpenSSL's short names.
TYPES = {NameOID.COMMON_NAME: "CN", NameOID.ORGANIZATIONAL_UNIT_NAME: "OU", NameOID.ORGANIZATION_NAME: "O",
         NameOID.LOCALITY_NAME: "L", NameOID.STATE_OR_PROVINCE_NAME: "ST", NameOID.TITLE: "title",
         NameOID.PSEUDONYM: "pseudonym", NameOID.GIVEN_NAME: "GN", NameOID.SURNAME: "SN",
         x509.ObjectIdentifier("1.3.6.1.4.1.55555.1"): "1.3.6.1.4.1.55555.1"}
# RFC 2253 specials, spaces, '#', '=', and non-ASCII letters that RFC 4518's preparation leaves alone.
VALUES = st.text(alphabet=st.sampled_from(list('ab Z09,+="\\<>;#-.é€Жあ')), min_size=1, max_size=12)
RDN = st.lists(st.tuples(st.sampled_from(list(TYPES)), VALUES), min_size=1, max_size=2,
               unique_by=lambda pair: pair[0])


def _mongod_subject(cert_pem: bytes) -> str:
    """The oracle: mongod's rendering of the certificate's subject as encoded (cryptography's parser)."""
    def escape(value: str) -> str:
        out = "".join(f"\\{b:02X}" if b >= 0x80 else ("\\" + chr(b) if chr(b) in ',+"\\<>;' else chr(b))
                      for b in value.encode())
        if value[:1] in (" ", "#"):
            out = "\\" + out
        return out[:-1] + "\\ " if len(out) > 2 and out.endswith(" ") else out

    subject = x509.load_pem_x509_certificate(cert_pem).subject
    return ",".join("+".join(f"{TYPES[a.oid]}={escape(str(a.value))}" for a in reversed(list(rdn)))
                    for rdn in reversed(subject.rdns))


@pytest.mark.slow
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rdns=st.lists(RDN, min_size=1, max_size=4))
def test_any_subject_round_trips_create_user_then_x509_login(server, certs, root, tmp_path, rdns):
    path = tmp_path / f"{uuid.uuid4().hex}.pem"
    issue_client(certs, path, _name(*rdns))
    subject = _mongod_subject(path.read_bytes())
    root["$external"].command("createUser", subject, roles=[{"role": "read", "db": "x509db"}])
    try:
        with _client(server, certs, path, authMechanism="MONGODB-X509") as client:
            users = client.admin.command("connectionStatus")["authInfo"]["authenticatedUsers"]
            assert users == [{"user": subject, "db": "$external"}]
    finally:
        root["$external"].command("dropUser", subject)

"""mongosh (-u/-p, db.auth(), db.createUser(), show users) and the Node driver authenticate against
a server with --auth, and both connect with tls=true + a CA file; mongosh logs in with MONGODB-X509."""

from __future__ import annotations

import uuid

import pytest
from harness import ClientError, have_mongosh, have_node_driver, run_mongosh, run_node
from harness.certs import make_certificates

pytestmark = [pytest.mark.clients,
              pytest.mark.commands("createUser", "usersInfo", "saslStart", "saslContinue", "authenticate")]

needs_mongosh = pytest.mark.skipif(not have_mongosh(), reason="mongosh is not installed (run `make test`)")
needs_node = pytest.mark.skipif(not have_node_driver(), reason="the Node driver is not installed (run `make test`)")


def _plain_uri(server) -> str:
    return f"mongodb://127.0.0.1:{server.port}/?directConnection=true"


@pytest.mark.slow
@needs_mongosh
def test_mongosh_with_user_and_password_flags(auth_server, root_client):
    user = f"sh_{uuid.uuid4().hex[:6]}"
    root_client.admin.command("createUser", user, pwd="pw", roles=[{"role": "readWrite", "db": "shdb"}])
    result = run_mongosh(_plain_uri(auth_server), "db.getSiblingDB('shdb').c.insertOne({a: 1}); "
                         "db.getSiblingDB('shdb').c.countDocuments({})",
                         args=("-u", user, "-p", "pw", "--authenticationDatabase", "admin"))
    assert result >= 1
    with pytest.raises(ClientError) as failure:
        run_mongosh(_plain_uri(auth_server), "db.runCommand({ping: 1})", args=("-u", user, "-p", "wrong"))
    assert "Authentication failed" in str(failure.value)


@pytest.mark.slow
@needs_mongosh
def test_mongosh_db_auth_create_user_and_show_users(auth_server):
    user = f"made_{uuid.uuid4().hex[:6]}"
    script = (
        "const admin = db.getSiblingDB('admin');"
        "admin.auth('root', 'rootpw');"
        f"db.getSiblingDB('shusers').createUser({{user: '{user}', pwd: 'pw', roles: ['read']}});"
        "db.getSiblingDB('shusers').getUsers().users.map(u => u.user)"
    )
    assert user in run_mongosh(_plain_uri(auth_server), script)
    shown = run_mongosh(f"mongodb://127.0.0.1:{auth_server.port}/shusers?directConnection=true", "show users",
                        raw=True, args=("-u", "root", "-p", "rootpw", "--authenticationDatabase", "admin"))
    assert user in shown and "SCRAM-SHA-256" in shown
    unauthenticated = run_mongosh(_plain_uri(auth_server),
                                  "try { db.getSiblingDB('shusers').c.findOne() } catch (e) { e.code }")
    assert unauthenticated == 13


@pytest.mark.slow
@needs_node
def test_node_driver_authenticates_and_works(auth_server, root_client):
    user = f"node_{uuid.uuid4().hex[:6]}"
    root_client.admin.command("createUser", user, pwd="pw", roles=[{"role": "readWrite", "db": "nodedb"}])
    uri = f"mongodb://{user}:pw@127.0.0.1:{auth_server.port}/?directConnection=true&authSource=admin"
    result = run_node(uri, """
        const coll = client.db('nodedb').collection('c');
        await coll.insertOne({from: 'node'});
        const status = await client.db('admin').command({connectionStatus: 1});
        return {count: await coll.countDocuments({from: 'node'}), users: status.authInfo.authenticatedUsers};
    """)
    assert result == {"count": 1, "users": [{"user": user, "db": "admin"}]}
    for mechanism in ("SCRAM-SHA-1", "SCRAM-SHA-256"):
        assert run_node(f"{uri}&authMechanism={mechanism}",
                        "return (await client.db('nodedb').collection('c').findOne({}, {projection: {_id: 0}}))") \
            == {"from": "node"}
    with pytest.raises(ClientError) as failure:
        run_node(uri.replace(":pw@", ":wrong@"), "return 1")
    assert "Authentication failed" in str(failure.value)


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory):
    import ssl

    from harness import ServerProcess

    certs = make_certificates(tmp_path_factory.mktemp("client-tls"))
    base = tmp_path_factory.mktemp("client-tls-db")
    proc = ServerProcess(base / "db", log_path=base / "tidemark.log",
                         ssl_context=ssl.create_default_context(cafile=str(certs.ca)),
                         args=("--tlsMode", "requireTLS", "--tlsCertificateKeyFile", str(certs.server)))
    proc.start()
    yield proc, certs
    assert proc.terminate() == 0


@pytest.mark.slow
@needs_mongosh
def test_mongosh_connects_with_tls_and_a_ca_file(tls_server):
    proc, certs = tls_server
    result = run_mongosh(_plain_uri(proc), "db.getSiblingDB('tlssh').c.insertOne({x: 1}); "
                         "db.getSiblingDB('tlssh').c.countDocuments({})",
                         args=("--tls", "--tlsCAFile", str(certs.ca)))
    assert result >= 1


@needs_node
def test_node_driver_connects_with_tls_and_a_ca_file(tls_server):
    proc, certs = tls_server
    uri = f"{_plain_uri(proc)}&tls=true&tlsCAFile={certs.ca}"
    assert run_node(uri, "return (await client.db('admin').command({ping: 1})).ok") == 1


@pytest.mark.slow
@needs_mongosh
def test_mongosh_logs_in_with_mongodb_x509(tmp_path):
    """mongosh --tls --tlsCertificateKeyFile with authMechanism=MONGODB-X509 (speculative authenticate in
    its hello) is the $external user its certificate's subject names, with that user's roles."""
    import ssl

    from cryptography import x509
    from cryptography.x509.oid import NameOID
    from harness import ServerProcess
    from harness.certs import issue_client

    certs = make_certificates(tmp_path / "certs")
    subject = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Acme"),
                         x509.NameAttribute(NameOID.COMMON_NAME, "shell user")])
    cert = issue_client(certs, tmp_path / "shell.pem", subject)
    proc = ServerProcess(tmp_path / "db", log_path=tmp_path / "tidemark.log",
                         ssl_context=ssl.create_default_context(cafile=str(certs.ca)),
                         args=("--auth", "--tlsMode", "requireTLS", "--tlsCertificateKeyFile", str(certs.server),
                               "--tlsCAFile", str(certs.ca), "--tlsAllowConnectionsWithoutCertificates"))
    proc.start()
    try:
        tls = ("--tls", "--tlsCAFile", str(certs.ca))
        run_mongosh(_plain_uri(proc), "const admin = db.getSiblingDB('admin');"
                    "admin.createUser({user: 'root', pwd: 'pw', roles: ['root']}); admin.auth('root', 'pw');"
                    "db.getSiblingDB('$external').createUser("
                    "{user: 'CN=shell user,O=Acme', roles: [{role: 'readWrite', db: 'shx509'}]})", args=tls)
        uri = f"{_plain_uri(proc)}&authMechanism=MONGODB-X509&authSource=%24external"
        result = run_mongosh(uri, "db.getSiblingDB('shx509').c.insertOne({x: 1});"
                             "db.getSiblingDB('admin').runCommand({connectionStatus: 1}).authInfo.authenticatedUsers",
                             args=(*tls, "--tlsCertificateKeyFile", str(cert)))
        assert result == [{"user": "CN=shell user,O=Acme", "db": "$external"}]
    finally:
        assert proc.terminate() == 0

"""mongod enforces ``authenticationRestrictions`` (address_restriction.cpp, restriction_set.h,
User::validateRestrictions): a user authenticates only when the connection meets its own restriction
document and that of every role it has, inherited ones included (a document is met when any of its
``{clientSource?, serverAddress?}`` sets is, a set when each of its CIDR lists contains the client's /
the server's address), else 18 "Authentication failed."; an authenticated session whose user's
restrictions change so that they are no longer met is logged out when the user is re-read
(AuthorizationSessionImpl::_refreshUserInfoAsNeeded, log 20242). Tidemark stored the restrictions and
never enforced them; updateRole dropped the ones it was given.

- Property (Hypothesis): restriction documents on the user and on two roles (one inherited through
  the other), drawn from CIDRs that contain or miss the loopback addresses; logging in through
  127.0.0.1, 127.0.0.2 (the server's address differs, the client's stays 127.0.0.1) and [::1]
  succeeds exactly when an independent model of mongod's rule says so.
- A session already authenticated is logged out once updateUser / updateRole give it restrictions it
  does not meet; ``updateUser authenticationRestrictions: []`` removes the field and login works again.
- Invalid restriction arguments answer mongod's IDL errors (40415, 14) in createUser / updateUser /
  createRole / updateRole, and createUser's document check (162 for a set naming neither field, 2
  BadValue with cidr.cpp's messages for a bad range).
"""

from __future__ import annotations

import ipaddress
import itertools

import pymongo
import pytest
from harness import ServerProcess
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("createUser", "updateUser", "createRole", "updateRole", "saslStart",
                                  "saslContinue", "find")

PW = "pw-restrictions"
# (host to connect to, client address the server sees, server address)
ENDPOINTS = (("127.0.0.1", "127.0.0.1", "127.0.0.1"), ("127.0.0.2", "127.0.0.1", "127.0.0.2"),
             ("[::1]", "::1", "::1"))
CIDRS = st.sampled_from(["127.0.0.1", "127.0.0.2", "127.0.0.2/32", "127.0.0.0/8", "127.0.0.3/31", "127.0.0.0/31",
                         "127.1.2.3/8", "0.0.0.0/0", "192.0.2.0/24", "10.0.0.1", "::1", "::1/128", "::/0",
                         "fe80::/10", "::ffff:127.0.0.1"])
RANGES = st.lists(CIDRS, min_size=0, max_size=3)
RESTRICTION_SET = st.one_of(st.fixed_dictionaries({"clientSource": RANGES}),
                            st.fixed_dictionaries({"serverAddress": RANGES}),
                            st.fixed_dictionaries({"clientSource": RANGES, "serverAddress": RANGES}))
DOCUMENT = st.lists(RESTRICTION_SET, min_size=0, max_size=3)
_SEQ = itertools.count()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    base = tmp_path_factory.mktemp("tidemark-restrictions")
    proc = ServerProcess(base / "db", args=("--auth", "--bind_ip", "127.0.0.1,127.0.0.2,::1", "--ipv6"),
                         log_path=base / "tidemark.log").start()
    with proc.client() as bootstrap:
        bootstrap.admin.command("createUser", "root", pwd="rootpw", roles=["root"])
    yield proc
    assert proc.terminate() == 0


@pytest.fixture(scope="module")
def root(server):
    with server.client(username="root", password="rootpw") as mongo:
        yield mongo


def _connect(server, host: str, user: str) -> pymongo.MongoClient:
    return pymongo.MongoClient(host=host, port=server.port, directConnection=True, username=user, password=PW,
                               authSource="admin", serverSelectionTimeoutMS=5000)


def _logs_in(server, host: str, user: str) -> bool:
    with _connect(server, host, user) as mongo:
        try:
            mongo.admin.command("connectionStatus")
            return True
        except OperationFailure as exc:
            assert exc.code == 18 and exc.details["errmsg"] == "Authentication failed."
            return False


def _model(documents: list[list[dict]], client: str, server: str) -> bool:
    """mongod's rule, written from restriction_set.h: every document met; a document by any of its
    sets (or by being empty); a set by each of its lists containing the address of its side."""
    addresses = {"clientSource": ipaddress.ip_address(client), "serverAddress": ipaddress.ip_address(server)}

    def contains(ranges: list[str], address) -> bool:
        nets = [ipaddress.ip_network(r, strict=False) for r in ranges]
        return any(net.version == address.version and address in net for net in nets)

    return all(not doc or any(all(contains(ranges, addresses[k]) for k, ranges in s.items()) for s in doc)
               for doc in documents)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(own=DOCUMENT, inner=DOCUMENT, outer=DOCUMENT)
def test_login_meets_user_and_inherited_role_restrictions(server, root, own, inner, outer):
    n = next(_SEQ)
    user, inner_role, outer_role = f"ru{n}", f"inner{n}", f"outer{n}"
    root.admin.command("createRole", inner_role, privileges=[], roles=[], authenticationRestrictions=inner)
    root.admin.command("createRole", outer_role, privileges=[], roles=[inner_role], authenticationRestrictions=[])
    root.admin.command("updateRole", outer_role, authenticationRestrictions=outer)  # updateRole stores them
    root.admin.command("createUser", user, pwd=PW, roles=[outer_role], authenticationRestrictions=own)
    try:
        info = root.admin.command("usersInfo", user, showPrivileges=True)["users"][0]
        assert info["inheritedAuthenticationRestrictions"] == [d for d in (outer, inner) if d]
        for host, client, server_address in ENDPOINTS:
            expected = _model([own, inner, outer], client, server_address)
            assert _logs_in(server, host, user) is expected, (host, own, inner, outer)
    finally:
        root.admin.command("dropUser", user)
        root.admin.command("dropRole", outer_role)
        root.admin.command("dropRole", inner_role)


def test_authenticated_session_is_logged_out_when_restrictions_change(server, root):
    root.admin.command("createRole", "sessionRole", privileges=[], roles=[{"role": "read", "db": "rdata"}])
    root.admin.command("createUser", "sess", pwd=PW, roles=["sessionRole"])
    root.rdata.c.insert_one({"_id": 1})
    try:
        local, other = _connect(server, "127.0.0.1", "sess"), _connect(server, "127.0.0.2", "sess")
        assert local.rdata.c.find_one() == other.rdata.c.find_one() == {"_id": 1}
        root.admin.command("updateUser", "sess", authenticationRestrictions=[{"serverAddress": ["127.0.0.1"]}])
        assert local.rdata.c.find_one() == {"_id": 1}
        with pytest.raises(OperationFailure) as err:
            other.rdata.c.find_one()
        assert err.value.code == 13 and "requires authentication" in err.value.details["errmsg"]
        assert "20242" in server.log_text()
        # [] removes the field (mongod's $unset), and the user may log in again through 127.0.0.2
        root.admin.command("updateUser", "sess", authenticationRestrictions=[])
        assert "authenticationRestrictions" not in root.admin.system.users.find_one({"user": "sess"})
        assert _logs_in(server, "127.0.0.2", "sess")
        # a restriction on a role the user has logs the session out the same way
        local.close()
        local = _connect(server, "127.0.0.1", "sess")
        assert local.rdata.c.find_one() == {"_id": 1}
        root.admin.command("updateRole", "sessionRole", authenticationRestrictions=[{"clientSource": ["::1"]}])
        with pytest.raises(OperationFailure) as err:
            local.rdata.c.find_one()
        assert err.value.code == 13
        assert not _logs_in(server, "127.0.0.1", "sess") and _logs_in(server, "[::1]", "sess")
        root.admin.command("updateRole", "sessionRole", authenticationRestrictions=[])
        assert "authenticationRestrictions" not in root.admin.system.roles.find_one({"role": "sessionRole"})
        assert _logs_in(server, "127.0.0.1", "sess")
        local.close()
        other.close()
    finally:
        root.admin.command("dropUser", "sess")
        root.admin.command("dropRole", "sessionRole")


IDL_ERRORS = [
    ([{"invalidRestriction": ["127.0.0.1"]}], 40415, "BSON field '{c}.authenticationRestrictions.invalidRestriction' is an unknown field."),
    (["127.0.0.1"], 14, "BSON field '{c}.authenticationRestrictions.0' is the wrong type 'string', expected type 'object'"),
    ([{"clientSource": "127.0.0.1"}], 14, "BSON field '{c}.authenticationRestrictions.clientSource' is the wrong type 'string', expected type 'array'"),
    ([{"serverAddress": ["127.0.0.1", 7]}], 14, "BSON field '{c}.authenticationRestrictions.serverAddress.1' is the wrong type 'int', expected type 'string'"),
    (None, 14, "BSON field '{c}.authenticationRestrictions' is the wrong type 'null', expected type 'array'"),
]
USER_DOCUMENT_ERRORS = [
    ([{}], 162, "At least one of 'clientSource' or 'serverAddress' must be set"),
    ([{"clientSource": ["127.0.0.1"]}, {}], 162, "At least one of 'clientSource' or 'serverAddress' must be set"),
    ([{"clientSource": ["localhost"]}], 2, "Invalid IP address in CIDR string"),
    ([{"serverAddress": ["127.0.0.1%lo"]}], 2, "Invalid IP address in CIDR string"),
    ([{"clientSource": ["127.0.0.1/33"]}], 2, "Invalid length in CIDR string"),
    ([{"clientSource": ["::1/129"]}], 2, "Invalid length in CIDR string"),
    ([{"clientSource": ["127.0.0.1/-1"]}], 2, "Invalid length in CIDR string"),
    ([{"clientSource": ["127.0.0.1/"]}], 2, "Non-numeric length in CIDR string"),
    ([{"clientSource": ["127.0.0.1/8x"]}], 2, "Non-numeric length in CIDR string"),
]


@pytest.mark.parametrize("value, code, message", IDL_ERRORS + USER_DOCUMENT_ERRORS)
def test_invalid_restrictions_answer_mongods_errors(root, value, code, message):
    with pytest.raises(OperationFailure) as err:
        root.admin.command("createUser", "badRestrictions", pwd=PW, roles=[], authenticationRestrictions=value)
    assert (err.value.code, err.value.details["errmsg"]) == (code, message.format(c="createUser"))
    assert root.admin.system.users.find_one({"user": "badRestrictions"}) is None


@pytest.mark.parametrize("value, code, message", IDL_ERRORS)
@pytest.mark.parametrize("command", ["updateUser", "createRole", "updateRole"])
def test_invalid_restriction_arguments_of_other_commands(root, command, value, code, message):
    root.admin.command("createUser", "idlUser", pwd=PW, roles=[])
    root.admin.command("createRole", "idlRole", privileges=[], roles=[])
    try:
        name = "idlUser" if command == "updateUser" else "idlRole2" if command == "createRole" else "idlRole"
        extra = {"privileges": [], "roles": []} if command == "createRole" else {}
        with pytest.raises(OperationFailure) as err:
            root.admin.command(command, name, authenticationRestrictions=value, **extra)
        assert (err.value.code, err.value.details["errmsg"]) == (code, message.format(c=command))
    finally:
        root.admin.command("dropUser", "idlUser")
        root.admin.command("dropRole", "idlRole")

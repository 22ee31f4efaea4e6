"""The getMore session rule (``tidemark.commands.cursors._check_session``, mongod's validateLSID): a
cursor continues only in the logical session that opened it — same ``lsid.id`` and same user digest."""

from __future__ import annotations

import uuid
from types import SimpleNamespace

import pytest

from tidemark.auth.names import UserName
from tidemark.commands.cursors import _check_session
from tidemark.protocol.errors import MongoError
from tidemark.session_cache import lsid_text

A, B = uuid.UUID(int=1), uuid.UUID(int=2)
EMPTY_UID = "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="  # base64 of SHA-256("")


def _ctx(lsid, principal=None):
    return SimpleNamespace(lsid=lsid, conn=SimpleNamespace(principal=principal))


def _cursor(lsid, owner=None):
    return SimpleNamespace(id=7, lsid=lsid, owner=owner)


def test_the_same_session_or_none_at_all_continues():
    _check_session(_ctx({"id": A}), _cursor({"id": A}))
    _check_session(_ctx(None), _cursor(None))


@pytest.mark.parametrize(("opened", "used", "code", "message"), [
    (None, {"id": A}, 50736,
     f"Cannot run getMore on cursor 7, which was not created in a session, in session {A} - {EMPTY_UID} -  - "),
    ({"id": A}, None, 50737,
     f"Cannot run getMore on cursor 7, which was created in session {A} - {EMPTY_UID} -  - , without an lsid"),
    ({"id": A}, {"id": B}, 50738,
     f"Cannot run getMore on cursor 7, which was created in session {A} - {EMPTY_UID} -  - , in session "
     f"{B} - {EMPTY_UID} -  - "),
])
def test_another_session_is_refused(opened, used, code, message):
    with pytest.raises(MongoError) as info:
        _check_session(_ctx(used), _cursor(opened))
    assert (info.value.code, info.value.message) == (code, message)


def test_the_same_id_under_another_user_is_another_session():
    alice = SimpleNamespace(name=UserName("alice", "admin"))
    with pytest.raises(MongoError) as info:
        _check_session(_ctx({"id": A}, alice), _cursor({"id": A}))
    assert info.value.code == 50738
    _check_session(_ctx({"id": A}, alice), _cursor({"id": A}, alice))


def test_a_binary_session_id_shows_as_its_uuid():
    assert lsid_text(A.bytes, None) == lsid_text(A, None) == f"{A} - {EMPTY_UID} -  - "

"""The server side of SCRAM against the RFC 5802 / RFC 7677 test vectors, and its refusals."""

from __future__ import annotations

import base64

import pytest

from tidemark.auth.scram import (
    SHA1,
    SHA256,
    Credential,
    ScramError,
    ServerConversation,
    derive_credential,
    password_input,
)


def _conversation(mechanism, salt_b64, client_nonce_suffix, **kw):
    cred = Credential.from_document(derive_credential(mechanism, b"pencil", 4096, base64.b64decode(salt_b64)))
    return ServerConversation(mechanism, cred, (b"x" * 16, 10000), server_nonce=client_nonce_suffix, **kw)


def test_rfc5802_sha1_vector():
    conv = _conversation(SHA1, "QSXCR+Q6sek8bf92", "3rfcNHYJY1ZVvWVs7j", skip_empty_exchange=True)
    first, done = conv.step(b"n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL")
    assert (first, done) == (b"r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096", False)
    final, done = conv.step(
        b"c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts="
    )
    assert (final, done) == (b"v=rmF9pqV8S7suAoZWja4dJRkFsKQ=", True)
    assert conv.success and conv.user == "user"


def test_rfc7677_sha256_vector_with_the_empty_exchange():
    conv = _conversation(SHA256, "W22ZaJ0SNY7soEsUEjb6gQ==", "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0")
    conv.step(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO")
    final, done = conv.step(
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
        b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
    )
    assert (final, done) == (b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=", False)
    assert not conv.success
    assert conv.step(b"") == (b"", True)
    assert conv.success


def test_wrong_proof_fails_and_the_conversation_cannot_be_replayed():
    conv = _conversation(SHA1, "QSXCR+Q6sek8bf92", "3rfcNHYJY1ZVvWVs7j", skip_empty_exchange=True)
    conv.step(b"n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL")
    bad = b"c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=" + base64.b64encode(b"\0" * 20)
    with pytest.raises(ScramError):
        conv.step(bad)
    good = b"c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts="
    with pytest.raises(ScramError):
        conv.step(good)  # a failed conversation stays failed
    assert not conv.success


def test_unknown_user_fails_only_at_the_proof():
    conv = ServerConversation(SHA256, None, (b"s" * 28, 15000), skip_empty_exchange=True)
    first, _ = conv.step(b"n,,n=ghost,r=abc")
    assert first.startswith(b"r=abc") and b",i=15000" in first
    nonce = first.split(b",")[0][2:]
    with pytest.raises(ScramError):
        conv.step(b"c=biws,r=" + nonce + b",p=" + base64.b64encode(b"\0" * 32))


@pytest.mark.parametrize(
    "payload",
    [
        b"",
        b"n,,",
        b"p=tls-unique,,n=user,r=abc",
        b"x,,n=user,r=abc",
        b"n,,r=abc,n=user",
        b"n,,m=ext,n=user,r=abc",
        b"n,,n=us=er,r=abc",
        b"n,,n=,r=abc",
        b"n,a=other,n=user,r=abc",
        b"n,,n=user,r=",
        b"\xff\xfe",
        b"n,,n=user,r=" + b"a" * 20000,
    ],
)
def test_malformed_client_first_messages_are_refused(payload):
    conv = ServerConversation(SHA256, None, (b"s" * 28, 15000))
    with pytest.raises(ScramError):
        conv.step(payload)


@pytest.mark.parametrize(
    "final",
    [
        b"",
        b"c=biws",
        b"c=biws,r=WRONG,p=AAAA",
        b"c=eSws,r={nonce},p=AAAA",
        b"c=biws,r={nonce},p=***",
        b"c=biws,r={nonce}",
        b"r={nonce},c=biws,p=AAAA",
    ],
)
def test_malformed_client_final_messages_are_refused(final):
    conv = _conversation(SHA256, "W22ZaJ0SNY7soEsUEjb6gQ==", "srv")
    first, _ = conv.step(b"n,,n=user,r=cli")
    nonce = first.split(b",")[0][2:]
    with pytest.raises(ScramError):
        conv.step(final.replace(b"{nonce}", nonce))


def test_password_inputs_follow_mongodb():
    # SCRAM-SHA-1 hashes MongoDB's md5 digest of "user:mongo:password"; SHA-256 the SASLprepped password.
    assert password_input(SHA1, "user", "pencil") == b"1c33006ec1ffd90f9cadcbcc0e118200"
    assert password_input(SHA256, "user", "I\u00adX") == b"IX"

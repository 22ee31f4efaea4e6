"""SCRAM-SHA-1 and SCRAM-SHA-256 (RFC 5802 / RFC 7677) as mongod speaks them: pure, no I/O.

- :func:`derive_credential` turns a password into what ``admin.system.users`` stores per mechanism
  (``iterationCount``, ``salt``, ``storedKey``, ``serverKey``, base64 strings): the password itself is
  never kept. SCRAM-SHA-1 hashes ``md5("<user>:mongo:<password>")`` (MongoDB's digest, what drivers
  send), SCRAM-SHA-256 the SASLprepped password.
- :class:`ServerConversation` is one server side of a conversation: ``step(payload) -> (reply,
  done)``. It verifies the client proof with the stored keys only (no PBKDF2 on the server: that cost
  is paid once, when the credential is created). Any protocol violation raises :class:`ScramError`;
  the caller answers every such error with 18 AuthenticationFailed and logs the reason.
- An unknown user gets a conversation over a *decoy* credential (salt derived from a process secret
  and the name, no keys), so it fails at the proof exactly like a wrong password: the two cannot be
  told apart from the wire.

Crypto primitives come from hashlib/hmac (``pbkdf2_hmac``); SASLprep from pymongo.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from dataclasses import dataclass
from typing import Any

SHA1 = "SCRAM-SHA-1"
SHA256 = "SCRAM-SHA-256"
MECHANISMS = (SHA1, SHA256)

# Salt lengths mongod uses (hash size minus 4) and the digest of each mechanism.
_HASHES = {SHA1: ("sha1", 16), SHA256: ("sha256", 28)}
NONCE_BYTES = 24
# No legitimate client message comes near this; bigger ones are refused before any parsing.
MAX_CLIENT_MESSAGE = 8192


class ScramError(Exception):
    """A malformed or failed SCRAM exchange. The message is for the log, never for the client."""


@dataclass(frozen=True, slots=True)
class Credential:
    """One mechanism's stored credential, decoded."""

    iterations: int
    salt: bytes
    stored_key: bytes
    server_key: bytes

    @classmethod
    def from_document(cls, doc: Any) -> Credential:
        """From ``credentials.<mechanism>`` of a user document; ScramError if it is unusable."""
        try:
            return cls(
                int(doc["iterationCount"]),
                base64.b64decode(doc["salt"], validate=True),
                base64.b64decode(doc["storedKey"], validate=True),
                base64.b64decode(doc["serverKey"], validate=True),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ScramError(f"invalid stored SCRAM credentials: {exc}") from None


def password_input(mechanism: str, user: str, password: str) -> bytes:
    """The bytes PBKDF2 salts: MongoDB's MD5 digest for SHA-1, the SASLprepped password for SHA-256."""
    if mechanism == SHA1:
        return hashlib.md5(f"{user}:mongo:{password}".encode()).hexdigest().encode()
    # Imported on first use: ``pymongo/__init__`` loads the whole driver (~50 ms of start-up) for this
    # one stringprep function, which only SCRAM-SHA-256 needs.
    from pymongo.saslprep import saslprep

    return saslprep(password).encode()


def derive_credential(mechanism: str, digest_input: bytes, iterations: int, salt: bytes | None = None) -> dict:
    """The ``credentials.<mechanism>`` sub-document for ``digest_input`` (see :func:`password_input`)."""
    name, salt_len = _HASHES[mechanism]
    salt = os.urandom(salt_len) if salt is None else salt
    salted = hashlib.pbkdf2_hmac(name, digest_input, salt, iterations)
    client_key = hmac.digest(salted, b"Client Key", name)
    return {
        "iterationCount": iterations,
        "salt": base64.b64encode(salt).decode(),
        "storedKey": base64.b64encode(hashlib.new(name, client_key).digest()).decode(),
        "serverKey": base64.b64encode(hmac.digest(salted, b"Server Key", name)).decode(),
    }


def decoy_salt(secret: bytes, mechanism: str, user_key: str) -> bytes:
    """A stable salt for a user that does not exist (same length as a real one)."""
    name, salt_len = _HASHES[mechanism]
    return hmac.digest(secret, f"{mechanism}\0{user_key}".encode(), "sha256")[:salt_len]


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _attributes(message: str, what: str) -> list[tuple[str, str]]:
    """``a=b,c=d`` -> [(a, b), (c, d)]; every attribute must be one letter followed by '='."""
    out = []
    for part in message.split(","):
        if len(part) < 2 or part[1] != "=" or not part[0].isalpha():
            raise ScramError(f"Incorrect SCRAM {what} format: {message!r}")
        out.append((part[0], part[2:]))
    return out


def _decode_name(value: str) -> str:
    """RFC 5802 saslname: ',' travels as '=2C' and '=' as '=3D'; any other '=' is invalid."""
    out, i = [], 0
    while i < len(value):
        if value[i] == "=":
            escape = value[i : i + 3]
            if escape == "=2C":
                out.append(",")
            elif escape == "=3D":
                out.append("=")
            else:
                raise ScramError("Invalid SCRAM user name encoding")
            i += 3
        else:
            out.append(value[i])
            i += 1
    return "".join(out)


def _client_text(payload: bytes, which: str, encoding: str, described: str) -> str:
    """A client message as text, refused when over ``MAX_CLIENT_MESSAGE`` bytes or not ``encoding``."""
    if len(payload) > MAX_CLIENT_MESSAGE:
        raise ScramError(f"SCRAM {which} message is too large")
    try:
        return payload.decode(encoding)
    except UnicodeDecodeError:
        raise ScramError(f"SCRAM {which} message is not {described}") from None


def parse_client_first(payload: bytes) -> tuple[str, str, str, str]:
    """(gs2 header, client-first-bare, user name, client nonce) of a client-first message."""
    text = _client_text(payload, "client-first", "utf-8", "valid UTF-8")
    flag, sep, rest = text.partition(",")
    if not sep:
        raise ScramError("Incorrect number of arguments for first SCRAM client message")
    if flag == "p" or flag.startswith("p="):
        raise ScramError("Server does not support channel binding")
    if flag not in ("n", "y"):
        raise ScramError(f"Incorrect SCRAM client message prefix: {flag!r}")
    authzid, sep, bare = rest.partition(",")
    if not sep:
        raise ScramError("Incorrect number of arguments for first SCRAM client message")
    if authzid and not authzid.startswith("a="):
        raise ScramError(f"Incorrect SCRAM authzid: {authzid!r}")
    attrs = _attributes(bare, "client-first")
    if len(attrs) < 2 or attrs[0][0] != "n" or attrs[1][0] != "r":
        if attrs and attrs[0][0] == "m":
            raise ScramError("SCRAM mandatory extensions are not supported")
        raise ScramError("Incorrect SCRAM client-first message: expected n= and r=")
    if len(attrs) > 2:
        raise ScramError("Unexpected attributes in the SCRAM client-first message")
    user = _decode_name(attrs[0][1])
    nonce = attrs[1][1]
    if not user:
        raise ScramError("SCRAM user name is empty")
    if authzid and _decode_name(authzid[2:]) != user:
        raise ScramError("SCRAM authzid does not match the user name")
    if not nonce or not nonce.isprintable() or "," in nonce:
        raise ScramError("Invalid SCRAM client nonce")
    return f"{flag},{authzid},", bare, user, nonce


class ServerConversation:
    """The server side of one SCRAM conversation.

    ``credential`` None means the user is unknown: the conversation still answers a server-first
    message (with a decoy salt) and fails at the proof. Steps: client-first -> server-first;
    client-final -> server-final (``done`` at once with ``skip_empty_exchange``, else after one more
    empty exchange). A failed step ends the conversation: every later step fails too (no replay).
    """

    def __init__(
        self,
        mechanism: str,
        credential: Credential | None,
        decoy: tuple[bytes, int],
        *,
        skip_empty_exchange: bool = False,
        server_nonce: str | None = None,
    ):
        self._server_nonce = server_nonce  # fixed only by tests (RFC test vectors)
        self.mechanism = mechanism
        self._hash = _HASHES[mechanism][0]
        self._credential = credential
        self._decoy = decoy
        self.skip_empty_exchange = skip_empty_exchange
        self.user = ""
        self.success = False
        self._state = "first"
        self._gs2 = self._first_bare = self._server_first = self._nonce = ""

    def step(self, payload: bytes) -> tuple[bytes, bool]:
        """Advance by one client message; returns (server message, done)."""
        state, self._state = self._state, "failed"
        if state == "first":
            reply = self._first(payload)
            self._state = "final"
            return reply, False
        if state == "final":
            reply = self._final(payload)
            if self.skip_empty_exchange:
                self.success = True
                self._state = "done"
                return reply, True
            self._state = "empty"
            return reply, False
        if state == "empty":
            if payload:
                raise ScramError("SCRAM: expected an empty final client message")
            self.success = True
            self._state = "done"
            return b"", True
        raise ScramError("SCRAM conversation is already finished" if state == "done" else
                         "SCRAM conversation failed earlier and cannot continue")

    def _first(self, payload: bytes) -> bytes:
        self._gs2, self._first_bare, self.user, client_nonce = parse_client_first(payload)
        self._nonce = client_nonce + (self._server_nonce or _b64(os.urandom(NONCE_BYTES)))
        if self._credential is not None:
            salt, iterations = self._credential.salt, self._credential.iterations
        else:
            salt, iterations = self._decoy
        self._server_first = f"r={self._nonce},s={_b64(salt)},i={iterations}"
        return self._server_first.encode()

    def _final(self, payload: bytes) -> bytes:
        text = _client_text(payload, "client-final", "ascii", "ASCII")
        attrs = _attributes(text, "client-final")
        if len(attrs) < 3 or attrs[0][0] != "c" or attrs[1][0] != "r" or attrs[-1][0] != "p":
            raise ScramError("Incorrect SCRAM client-final message: expected c=, r= and p=")
        if attrs[0][1] != _b64(self._gs2.encode()):
            raise ScramError("SCRAM channel binding data does not match the client-first message")
        if not hmac.compare_digest(attrs[1][1].encode(), self._nonce.encode()):
            raise ScramError("Unmatched SCRAM nonce received from client in second step")
        try:
            proof = base64.b64decode(attrs[-1][1], validate=True)
        except ValueError:
            raise ScramError("SCRAM client proof is not valid base64") from None
        without_proof = text[: text.rindex(",p=")]
        auth_message = f"{self._first_bare},{self._server_first},{without_proof}".encode()
        credential = self._credential
        if credential is None:
            raise ScramError("UserNotFound: Could not find user")
        signature = hmac.digest(credential.stored_key, auth_message, self._hash)
        if len(proof) != len(signature):
            raise ScramError("SCRAM client proof has the wrong length")
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        if not hmac.compare_digest(hashlib.new(self._hash, client_key).digest(), credential.stored_key):
            raise ScramError("SCRAM authentication failed, storedKey mismatch")
        server_signature = hmac.digest(credential.server_key, auth_message, self._hash)
        return f"v={_b64(server_signature)}".encode()

"""MONGODB-X509: a client authenticated as the subject of its verified TLS certificate, as mongod 7.0 does.

The subject name (:func:`subject_name`) is mongod's ``SSLX509Name::toString()`` of the peer certificate:

- RDNs from the last one encoded to the first (RFC 2253 order), and so are the attributes of a
  multi-valued RDN (mongod walks the flat OpenSSL entry list backwards and groups it by set), joined
  by ``,`` and ``+``;
- attribute types by OpenSSL's short name (``CN``, ``OU``, ``emailAddress``, ``DC``, ``UID``...), an
  OID OpenSSL does not know as its dotted form;
- each value prepared with RFC 4518's LDAP string preparation (mongod's ``normalizeStrings``: ICU's
  ``USPREP_RFC4518_LDAP``, here from the RFC's tables, Unicode 3.2 NFKC and stringprep's prohibited
  tables); a value it refuses leaves the certificate without a usable subject;
- then escaped as mongod's ``escapeRfc2253``: ``, + " \\ < > ;`` anywhere, a leading space or ``#``,
  a trailing space when the escaped text is longer than two characters (mongod's own rule: ``"a "``
  stays ``a ``), and every byte of a non-ASCII character's UTF-8 as ``\\XX`` (upper-case hex).

The certificate is the one the TLS handshake verified against ``--tlsCAFile`` (``getpeercert()``): none
without a CA file, none from a client that sent none, none under ``--tlsAllowInvalidCertificates``
(Python does not verify what it is told to accept unverified).

:func:`authenticate` is the ``authenticate`` command and hello's ``speculativeAuthenticate``
(mongod's ``_authenticateX509``), in mongod's order: the mechanism, a subject, the ``user`` (if given)
equal to it, the ``$external`` database (17 ProtocolError otherwise), the mechanism enabled in
``authenticationMechanisms``, then the user ``{user: <subject>, db: "$external"}`` (11 UserNotFound when
it does not exist), its authentication restrictions, one user per connection. Every other failure answers
18 "Authentication failed." and is logged (20249) through :func:`tidemark.auth.sasl.reject`; success logs 20250.
"""

from __future__ import annotations

import functools
import ssl
import stringprep
import unicodedata
from typing import Any

from tidemark.arguments import field
from tidemark.auth import sasl
from tidemark.auth.names import UserName
from tidemark.auth.restrictions import RESTRICTIONS_UNMET
from tidemark.auth.session import session_of
from tidemark.protocol.errors import ErrorCode, MongoError

CommandContext = Any  # tidemark.context.CommandContext (see sasl.py: not importable from this layer)

MECHANISM = "MONGODB-X509"
EXTERNAL = "$external"

# RFC 4518 section 2.2 (Map): code points mapped to SPACE, and to nothing.
_TO_SPACE = frozenset([*range(0x09, 0x0E), 0x85, 0x20, 0xA0, 0x1680, *range(0x2000, 0x200B), 0x2028, 0x2029,
                       0x202F, 0x205F, 0x3000])
_TO_NOTHING = frozenset([
    0xAD, 0x1806, 0x34F, *range(0x180B, 0x180F), *range(0xFE00, 0xFE10), 0xFFFC, 0x200B,
    *range(0x00, 0x09), *range(0x0E, 0x20), *range(0x7F, 0x85), *range(0x86, 0xA0), 0x6DD, 0x70F,
    *range(0x200C, 0x2010), *range(0x202A, 0x202F), *range(0x2060, 0x2064), *range(0x206A, 0x2070), 0xFEFF,
    *range(0xFFF9, 0xFFFC), *range(0x1D173, 0x1D17B), 0xE0001, *range(0xE0020, 0xE0080),
])
_SPECIAL = frozenset(',+"\\<>;')


def prepare(value: str) -> str:
    """RFC 4518's LDAP string preparation of one attribute value (map, NFKC, prohibit; no case folding).
    Raises ValueError for a prohibited or unassigned (in Unicode 3.2) character, as ICU refuses it."""
    if not value:
        return value  # mongod leaves an empty value alone (SERVER-39107)
    mapped = "".join(" " if ord(c) in _TO_SPACE else c for c in value if ord(c) not in _TO_NOTHING)
    normalized = unicodedata.ucd_3_2_0.normalize("NFKC", mapped)
    for c in normalized:
        if (stringprep.in_table_a1(c) or stringprep.in_table_c3(c) or stringprep.in_table_c4(c)
                or stringprep.in_table_c5(c) or stringprep.in_table_c8(c) or c == "\ufffd"):
            raise ValueError(f"prohibited character U+{ord(c):04X} in a subject name")
    return normalized


def escape(value: str) -> str:
    """mongod's escapeRfc2253 (see the module docstring), over the value's UTF-8 bytes."""
    data = value.encode("utf-8", "surrogatepass")
    out = []
    start = 0
    if data[:1] in (b" ", b"#"):
        out.append("\\" + chr(data[0]))
        start = 1
    for byte in data[start:]:
        if byte >= 0x80:
            out.append(f"\\{byte:02X}")
        elif chr(byte) in _SPECIAL:
            out.append("\\" + chr(byte))
        else:
            out.append(chr(byte))
    text = "".join(out)
    if len(text) > 2 and text[-1] == " ":
        text = text[:-1] + "\\ "
    return text


@functools.lru_cache(maxsize=256)
def short_name(name: str) -> str:
    """OpenSSL's short name of an attribute type given as ``getpeercert()`` names it (the long name, or
    the dotted OID of a type OpenSSL does not know, which stays as it is)."""
    try:
        return ssl._ASN1Object.fromname(name).shortname or name
    except ValueError:
        return name


def subject_name(certificate: dict | None) -> str | None:
    """The RFC 2253 subject of a verified peer certificate as ``getpeercert()`` decodes it, or None when
    there is none (no verified certificate, an empty subject, or a value RFC 4518 refuses)."""
    if not certificate:
        return None
    rdns = certificate.get("subject") or ()
    try:
        text = ",".join("+".join(f"{short_name(name)}={escape(prepare(value))}" for name, value in reversed(rdn))
                        for rdn in reversed(rdns) if rdn)
    except (ValueError, TypeError):
        return None
    return text or None


async def authenticate(ctx: CommandContext, cmd: dict, db: str, *, speculative: bool = False) -> dict[str, Any]:
    """The ``authenticate`` command (or hello's ``speculativeAuthenticate`` document, ``db`` its
    database): ``{dbname, user}`` on success."""
    mechanism = field(cmd, "authenticate", "mechanism", str, "string", required=True)
    given = field(cmd, "authenticate", "user", str, "string")
    subject = subject_name(ctx.conn.peer_certificate)
    attrs = {"mechanism": mechanism, "speculative": speculative, "principalName": given or subject or "",
             "authenticationDatabase": db, "remote": ctx.conn.peer, "extraInfo": {}}

    async def fail(error: str, code: int = ErrorCode.AuthenticationFailed, message: str = sasl.AUTH_FAILED) -> MongoError:
        refused = await sasl.reject(ctx, {**attrs, "error": error}, speculative=speculative)
        return refused if code == ErrorCode.AuthenticationFailed else MongoError(code, message)

    if not mechanism:
        raise await fail("BadValue: Auth mechanism not specified")
    if mechanism != MECHANISM:
        raise await fail(f"BadValue: Unsupported mechanism: {mechanism}")
    if subject is None:
        raise await fail("AuthenticationFailed: No verified subject name available from client")
    if given is not None and given != subject:
        raise await fail("AuthenticationFailed: There is no x.509 client certificate matching the user.")
    if db != EXTERNAL:
        message = "X.509 authentication must always use the $external database."
        raise await fail(f"ProtocolError: {message}", ErrorCode.ProtocolError, message)
    if MECHANISM not in ctx.params["authenticationMechanisms"]:
        raise await fail("BadValue: x.509 authentication is disabled.")
    manager = ctx.server.auth
    generation = manager.generation
    resolved = manager.resolve(UserName(subject, db))
    if resolved is None:
        message = f'Could not find user "{subject}" for db "{db}"'
        raise await fail(f"UserNotFound: {message}", ErrorCode.UserNotFound, message)
    if not resolved.restrictions.met_by(ctx.conn.peer, ctx.conn.local):
        raise await fail(RESTRICTIONS_UNMET)
    session = session_of(ctx.conn)
    if session.name is not None and session.name != resolved.name:
        # mongod's authenticate answers 18 for this (only UserNotFound and ProtocolError pass through)
        raise await fail("Location5626701: Each client connection may only be authenticated once. "
                         f"Previously authenticated as: {session.name.display()}")
    session.conversation = None
    session.login(resolved, generation)
    sasl.admitted(ctx, attrs)
    return {"dbname": db, "user": subject}


async def speculative(ctx: CommandContext, doc: dict) -> dict[str, Any] | None:
    """hello's ``speculativeAuthenticate: {authenticate: 1, mechanism, user?, db?}`` (``db`` defaults to
    ``$external``): the whole authentication inside hello; any failure means "no speculative reply" (the
    client then runs ``authenticate`` itself), as mongod's doSpeculativeAuthenticate."""
    db = doc.get("db", EXTERNAL)
    if type(db) is not str:
        return None
    try:
        return await authenticate(ctx, doc, db, speculative=True)
    except MongoError:
        return None

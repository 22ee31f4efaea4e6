"""Authentication restrictions: which client and server addresses a user may authenticate through.

mongod's model (src/mongo/db/auth/address_restriction.{idl,cpp}, restriction_set.h, cidr.cpp):

- ``authenticationRestrictions`` of a user or role is a *document*: an array of *sets*
  ``{clientSource?: [CIDR...], serverAddress?: [CIDR...]}``. A set is met when every range list it
  has contains the address (the client's for ``clientSource``, the server's for ``serverAddress``);
  a document is met when any of its sets is (an empty document always is).
- A user must meet its own document and the document of every role it has, directly or inherited
  (``inheritedAuthenticationRestrictions``): at authentication (else 18 "Authentication failed.") and
  whenever its user data is re-read while the connection is authenticated (else the session is
  logged out, log 20242), so a restriction added later ends existing sessions.
- A CIDR is an IPv4 or IPv6 address with an optional ``/length`` (host bits are ignored); a range
  matches an address of its own family only.

Arguments (createUser, updateUser, createRole, updateRole: ``array<address_restriction>`` of the IDL,
strict): :func:`parse_argument` checks the shape with the IDL's messages and returns the stored form
(fields in the IDL's order). A user's restrictions are then validated as mongod's
``V2UserDocumentParser::checkValidUserDocument`` does (:func:`check_user_document`): a set naming
neither field is 162 CollectionIsEmpty "At least one of 'clientSource' or 'serverAddress' must be set", a bad range 2
BadValue with cidr.cpp's message. mongod validates ranges so only when it creates a user (not at
updateUser, createRole or updateRole); restrictions that cannot be parsed are never met here (mongod
then cannot acquire the user either).

Pure: no storage, no connection; :class:`Restrictions` is compiled once per user resolution.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import Any

from tidemark.arguments import wrong_type
from tidemark.protocol.errors import ErrorCode, MongoError

# the reason logged (20249 at authentication, 20242 for a session): mongod's User::validateRestrictions
RESTRICTIONS_UNMET = "AuthenticationRestrictionUnmet: Evaluation of authentication restrictions failed"
FIELDS = ("clientSource", "serverAddress")  # the IDL's order: the stored documents keep it
_LENGTH = re.compile(r"\s*[+-]?[0-9]+")  # what std::stoi reads (leading blanks, a sign, digits)

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def parse_argument(value: Any, command: str) -> list[dict[str, list[str]]]:
    """A command's ``authenticationRestrictions`` (a list) checked as mongod's IDL parser checks
    ``array<address_restriction>``; the documents as mongod stores them."""
    path = f"{command}.authenticationRestrictions"
    out = []
    for index, entry in enumerate(value):
        if not isinstance(entry, dict):
            raise wrong_type(f"{path}.{index}", entry, "object")
        stored: dict[str, list[str]] = {}
        for key, ranges in entry.items():
            if key not in FIELDS:
                raise MongoError(ErrorCode.IDLUnknownField, f"BSON field '{path}.{key}' is an unknown field.")
            if not isinstance(ranges, list):
                raise wrong_type(f"{path}.{key}", ranges, "array")
            for position, text in enumerate(ranges):
                if type(text) is not str:
                    raise wrong_type(f"{path}.{key}.{position}", text, "string")
            stored[key] = list(ranges)
        out.append({key: stored[key] for key in FIELDS if key in stored})
    return out


def check_user_document(restrictions: list[dict[str, list[str]]]) -> None:
    """mongod's validation of a user document's restrictions (parseAddressRestrictionSet)."""
    for entry in restrictions:
        if not entry:
            raise MongoError(162, "At least one of 'clientSource' or 'serverAddress' must be set")  # CollectionIsEmpty
        for ranges in entry.values():
            for text in ranges:
                parse_cidr(text)


def parse_cidr(text: str) -> Network:
    """mongod's ``CIDR(StringData)``: an address (inet_pton's syntax) and an optional ``/length``;
    2 BadValue with its message otherwise."""
    address, slash, length = text.partition("/")
    network: Network
    try:
        if "%" in address:  # a scope id: not inet_pton's syntax
            raise ValueError(address)
        ip = ipaddress.ip_address(address)
    except ValueError:
        raise MongoError(ErrorCode.BadValue, "Invalid IP address in CIDR string") from None
    if not slash:
        return ipaddress.ip_network(ip)
    if _LENGTH.fullmatch(length) is None:
        raise MongoError(ErrorCode.BadValue, "Non-numeric length in CIDR string")
    bits = int(length)
    if not 0 <= bits <= ip.max_prefixlen:
        raise MongoError(ErrorCode.BadValue, "Invalid length in CIDR string")
    network = ipaddress.ip_network(f"{ip}/{bits}", strict=False)
    return network


@dataclass(frozen=True, slots=True)
class _Set:
    """One ``{clientSource?, serverAddress?}``: None for an absent field (no condition)."""

    client: tuple[Network, ...] | None
    server: tuple[Network, ...] | None

    def met(self, client: Any, server: Any) -> bool:
        return _within(client, self.client) and _within(server, self.server)


def _within(address: Any, ranges: tuple[Network, ...] | None) -> bool:
    if ranges is None:
        return True
    return address is not None and any(address.version == net.version and address in net for net in ranges)


# A document: its sets (met when any is, or when it has none); None for one that cannot be parsed
_Document = tuple[_Set, ...] | None


def _compile(document: Any) -> _Document:
    if not isinstance(document, list):
        return None
    sets = []
    try:
        for entry in document:
            if not isinstance(entry, dict) or not entry or set(entry) - set(FIELDS):
                return None
            ranges = {}
            for key in FIELDS:
                if key in entry:
                    if not isinstance(entry[key], list) or not all(type(t) is str for t in entry[key]):
                        return None
                    ranges[key] = tuple(parse_cidr(t) for t in entry[key])
            sets.append(_Set(ranges.get("clientSource"), ranges.get("serverAddress")))
    except MongoError:
        return None
    return tuple(sets)


def host_of(address: str) -> Any:
    """The IP address of a connection's ``"host:port"`` / ``"[v6]:port"`` text, None when it is none."""
    host = address[1:address.find("]")] if address.startswith("[") else address.rpartition(":")[0]
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class Restrictions:
    """Every restriction document a user must meet (its own, then its roles'), compiled."""

    documents: tuple[_Document, ...] = ()

    @classmethod
    def of(cls, documents: list[Any]) -> Restrictions:
        """From the stored ``authenticationRestrictions`` arrays (absent / empty ones left out)."""
        return cls(tuple(_compile(d) for d in documents if d is not None and d != []))

    def met_by(self, peer: str, local: str) -> bool:
        """Whether a connection from ``peer`` to ``local`` (``"host:port"``) meets them all."""
        if not self.documents:
            return True
        client, server = host_of(peer), host_of(local)
        return all(doc is not None and (not doc or any(s.met(client, server) for s in doc))
                   for doc in self.documents)

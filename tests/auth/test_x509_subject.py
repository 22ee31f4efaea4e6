"""tidemark.auth.x509's subject rendering, pure: mongod's escapeRfc2253 cases (ssl_manager_test.cpp and
jstests/ssl/libs/ssl_x509_role_auth_*.js), RFC 2253 order of RDNs and of a multi-valued RDN's members,
OpenSSL short names, RFC 4518 preparation."""

from __future__ import annotations

import pytest

from tidemark.auth import x509


@pytest.mark.parametrize(("value", "escaped"), [
    ("abc", "abc"), (" abc", "\\ abc"), ("#abc", "\\#abc"), ("a,c", "a\\,c"), ("a+c", "a\\+c"),
    ('a"c', 'a\\"c'), ("a\\c", "a\\\\c"), ("a<c", "a\\<c"), ("a>c", "a\\>c"), ("a;c", "a\\;c"),
    ("abc ", "abc\\ "),
    ("; ", "\\;\\ "), (" >", "\\ \\>"), ('"\\<', '\\"\\\\\\<'), (",+", "\\,\\+"),  # the escape jstest
    ("a ", "a "), (" ", "\\ "), ("  ", "\\ \\ "),  # mongod's "longer than two characters" trailing-space rule
    ("a=b", "a=b"), ("Калоян", "\\D0\\9A\\D0\\B0\\D0\\BB\\D0\\BE\\D1\\8F\\D0\\BD"),  # the UTF-8 jstest
])
def test_escape_is_mongods(value, escaped):
    assert x509.escape(value) == escaped


def _cert(*rdns):
    return {"subject": tuple(tuple(rdn) for rdn in rdns)}


def test_rdns_and_multi_valued_members_are_reversed_with_short_names():
    cert = _cert([("countryName", "US")], [("stateOrProvinceName", "Y")], [("localityName", "X")],
                 [("organizationName", "Acme")], [("organizationalUnitName", "eng"), ("domainComponent", "d")],
                 [("commonName", "alice"), ("userId", "a1"), ("1.2.3.4.5", "v")], [("emailAddress", "a@b")])
    assert x509.subject_name(cert) == \
        "emailAddress=a@b,1.2.3.4.5=v+UID=a1+CN=alice,DC=d+OU=eng,O=Acme,L=X,ST=Y,C=US"


@pytest.mark.parametrize(("value", "prepared"), [
    ("a\u00a0b", "a b"),  # separators map to SPACE
    ("a\u00adb\u200bc", "abc"),  # soft hyphen, zero width space: to nothing
    ("\ufb01x", "fix"),  # NFKC
    ("a\tb", "a b"),
    ("", ""),
])
def test_values_are_prepared_as_rfc4518(value, prepared):
    assert x509.prepare(value) == prepared


@pytest.mark.parametrize("value", ["\ue000", "\ufffd", "\U0001f600"])  # private use, replacement, unassigned in 3.2
def test_a_prohibited_value_leaves_no_subject(value):
    with pytest.raises(ValueError):
        x509.prepare(value)
    assert x509.subject_name(_cert([("commonName", value)])) is None


@pytest.mark.parametrize("cert", [None, {}, {"subject": ()}])
def test_no_certificate_or_an_empty_subject_is_no_subject(cert):
    assert x509.subject_name(cert) is None

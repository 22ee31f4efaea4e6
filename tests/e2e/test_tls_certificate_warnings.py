"""A server certificate that has expired, is not yet valid or expires within 30 days is reported at
start-up as mongod reports it: one structured log line of severity W (23785, 28652, 23786), also among
getLog's start-up warnings; a certificate valid for long gives none. Certificates are generated with the
``cryptography`` package."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from tidemark import tls

NOW = dt.datetime.now(dt.UTC)
DAY = dt.timedelta(days=1)


def _certificate(path: Path, not_before: dt.datetime, not_after: dt.datetime, *, san: bool = True) -> Path:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    builder = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
               .serial_number(x509.random_serial_number()).not_valid_before(not_before).not_valid_after(not_after))
    if san:
        builder = builder.add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
    cert = builder.sign(key, hashes.SHA256())
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM) + key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    return path


def _warnings(log_text: str) -> list[dict]:
    lines = [json.loads(line) for line in log_text.splitlines() if line.startswith("{")]
    return [entry for entry in lines if entry["s"] == "W" and entry["c"] == "NETWORK"]


CASES = {
    "expired": (NOW - 60 * DAY, NOW - DAY, 23785, "Server certificate has expired"),
    "not yet valid": (NOW + DAY, NOW + 60 * DAY, 28652, "The provided SSL certificate is expired or not yet valid"),
    "expires in 10 days": (NOW - DAY, NOW + 10 * DAY, 23786, "Server certificate will expire soon"),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
def test_start_up_warns_about_the_certificate_validity(start_server, tmp_path, case):
    not_before, not_after, log_id, message = CASES[case]
    pem = _certificate(tmp_path / "server.pem", not_before, not_after)
    srv = start_server(args=("--tlsMode", "allowTLS", "--tlsCertificateKeyFile", str(pem)))
    found = [w for w in _warnings(srv.log_text()) if w["id"] == log_id]
    assert len(found) == 1, srv.log_text()
    assert found[0]["msg"] == message and found[0]["ctx"] == "main"
    attr = found[0]["attr"]
    if log_id == 28652:
        assert attr["notBefore"].startswith(not_before.strftime("%Y-%m-%dT%H:%M:%S"))
        assert attr["notAfter"].endswith("Z")
    else:
        assert attr["certExpiration"] == not_after.strftime("%Y-%m-%dT%H:%M:%S.000Z")
    if log_id == 23786:
        assert 9 * 24 <= attr["validDuration"] <= 10 * 24
    with srv.client() as client:  # plaintext on the allowTLS port still works, and getLog lists it
        startup = client.admin.command("getLog", "startupWarnings")["log"]
        assert any(f'"id":{log_id}' in line for line in startup)


@pytest.mark.slow
def test_a_certificate_valid_for_long_gives_no_warning(start_server, tmp_path):
    pem = _certificate(tmp_path / "server.pem", NOW - DAY, NOW + 365 * DAY)
    srv = start_server(args=("--tlsMode", "allowTLS", "--tlsCertificateKeyFile", str(pem)))
    assert not [w for w in _warnings(srv.log_text()) if w["id"] in (23785, 23786, 28652, 551190)]


def test_a_certificate_without_subject_alternative_name_is_reported(tmp_path):
    pem = _certificate(tmp_path / "server.pem", NOW - DAY, NOW + 365 * DAY, san=False)
    assert tls.certificate_warnings(str(pem)) == [551190]
    assert tls.certificate_warnings(str(pem), now=(NOW + 400 * DAY).timestamp()) == [23785, 551190]
    assert tls.certificate_warnings(str(tmp_path / "missing.pem")) == []

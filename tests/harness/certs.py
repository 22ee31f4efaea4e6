"""Throwaway TLS material for tests: a CA, a server certificate for localhost/127.0.0.1 and a client
certificate, generated with the ``cryptography`` package into a directory; :func:`issue_client` signs
more client certificates (any subject) with that CA or with the unrelated one."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Certificates:
    ca: Path  # CA certificate (PEM)
    server: Path  # server certificate + private key (PEM), for --tlsCertificateKeyFile
    client: Path  # client certificate + private key (PEM), signed by the same CA
    other_ca: Path  # an unrelated CA (a client trusting it must refuse the server)
    ca_key: Path  # the CA's private key and certificate (PEM), for issue_client
    other_ca_key: Path  # the unrelated CA's private key and certificate (PEM)


def _key():
    from cryptography.hazmat.primitives.asymmetric import ec

    return ec.generate_private_key(ec.SECP256R1())


def _pem(cert, key=None) -> bytes:
    from cryptography.hazmat.primitives import serialization

    out = cert.public_bytes(serialization.Encoding.PEM)
    if key is not None:
        out += key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                 serialization.NoEncryption())
    return out


def _ca(name: str):
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.x509.oid import NameOID

    key = _key()
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=365))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False, data_encipherment=False,
                                         key_agreement=False, encipher_only=False, decipher_only=False),
                           critical=True)
            .sign(key, hashes.SHA256()))
    return cert, key


def _leaf(ca_cert, ca_key, name: str, *, server: bool):
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    key = _key()
    now = datetime.datetime.now(datetime.UTC)
    builder = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
               .issuer_name(ca_cert.subject).public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=365))
               .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH if server
                                                     else ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False))
    if server:
        builder = builder.add_extension(x509.SubjectAlternativeName(
            [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
    return builder.sign(ca_key, hashes.SHA256()), key


def make_certificates(directory: Path) -> Certificates:
    directory.mkdir(parents=True, exist_ok=True)
    ca_cert, ca_key = _ca("Tidemark Test CA")
    server_cert, server_key = _leaf(ca_cert, ca_key, "localhost", server=True)
    client_cert, client_key = _leaf(ca_cert, ca_key, "tidemark-test-client", server=False)
    other_cert, other_key = _ca("Some Other CA")
    paths = Certificates(directory / "ca.pem", directory / "server.pem", directory / "client.pem",
                         directory / "other-ca.pem", directory / "ca-key.pem", directory / "other-ca-key.pem")
    paths.ca.write_bytes(_pem(ca_cert))
    paths.server.write_bytes(_pem(server_cert, server_key))
    paths.client.write_bytes(_pem(client_cert, client_key))
    paths.other_ca.write_bytes(_pem(other_cert))
    paths.ca_key.write_bytes(_pem(ca_cert, ca_key))
    paths.other_ca_key.write_bytes(_pem(other_cert, other_key))
    return paths


def issue_client(certs: Certificates, path: Path, subject, *, other_ca: bool = False) -> Path:
    """A client certificate + key (PEM) at ``path`` for ``subject`` (a ``cryptography.x509.Name``),
    signed by the test CA (or by the unrelated one, which the server does not trust)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.serialization import load_pem_private_key
    from cryptography.x509.oid import ExtendedKeyUsageOID

    pem = (certs.other_ca_key if other_ca else certs.ca_key).read_bytes()
    ca_cert = x509.load_pem_x509_certificate(pem)
    ca_key = load_pem_private_key(pem, password=None)
    key = _key()
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(ca_cert.subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=365))
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))  # type: ignore[arg-type]
    path.write_bytes(_pem(cert, key))
    return path

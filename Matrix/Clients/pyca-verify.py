#!/usr/bin/env python3
"""The strict RFC 5280 column of the client matrix: pyca/cryptography's X.509 verifier (cryptography.x509.verification,
the CA/Browser Forum web PKI profile) judging the chain each server sends, for the name the matrix asks about.

Usage: pyca-verify.py CA.pem TARGETS (one ID<TAB>HOST<TAB>PORT line each); one JSON line per target on standard output.
It is a verifier, not a TLS client: the chain is fetched with Python's ssl module at security level 0 and every
protocol version, so only the certificates are judged, never the handshake (see docs/CLIENTS.md).
"""
import ipaddress
import json
import socket
import ssl
import sys
import warnings

from cryptography import x509
from cryptography.x509.verification import PolicyBuilder, Store


def fetch_chain(host, port):
    address = host if is_address(host) else "127.0.0.1"
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.set_ciphers("ALL:eNULL:@SECLEVEL=0")   # every suite, NULL ones too: only the certificates are judged
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)   # TLS 1.0 is deprecated: that is why it is asked for
        context.minimum_version = ssl.TLSVersion.TLSv1
    with socket.create_connection((address, port), timeout=10) as raw:
        server_name = None if is_address(host) else host
        with context.wrap_socket(raw, server_hostname=server_name) as tls:
            return [certificate.public_bytes(ssl._ssl.ENCODING_DER) for certificate in tls._sslobj.get_unverified_chain()]


def is_address(host):
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return False


def main():
    if len(sys.argv) != 3:
        print("usage: pyca-verify.py CA.pem TARGETS", file=sys.stderr)
        sys.exit(64)
    with open(sys.argv[1], "rb") as handle:
        roots = x509.load_pem_x509_certificates(handle.read())
    store = Store(roots)
    with open(sys.argv[2]) as handle:
        targets = [line.rstrip("\n").split("\t") for line in handle if line.strip()]
    for target_id, host, port in targets:
        try:
            chain = fetch_chain(host, int(port))
        except Exception as error:
            # No chain, no verdict (null): Python's OpenSSL client refuses some servers before their chain is complete
            # (a 512-bit DH group, even at security level 0). The matrix shows it as "not judged".
            emit(target_id, None, f"no chain to judge: {type(error).__name__}: {error}")
            continue
        try:
            leaf = x509.load_der_x509_certificate(chain[0])
            intermediates = [x509.load_der_x509_certificate(der) for der in chain[1:]]
            subject = x509.IPAddress(ipaddress.ip_address(host)) if is_address(host) else x509.DNSName(host)
            verifier = PolicyBuilder().store(store).build_server_verifier(subject)
            built = verifier.verify(leaf, intermediates)
            emit(target_id, True, f"chain of {len(built)} verified")
        except Exception as error:
            emit(target_id, False, f"{type(error).__name__}: {error}")


def emit(target_id, accepted, detail):
    """accepted: True, False, or None when there was nothing to judge."""
    print(json.dumps({"id": target_id, "accepted": accepted, "detail": " ".join(str(detail).split())}), flush=True)


if __name__ == "__main__":
    main()

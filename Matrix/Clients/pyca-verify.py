#!/usr/bin/env python3
"""The strict RFC 5280 column of the client matrix: pyca/cryptography's X.509 verifier (cryptography.x509.verification,
the CA/Browser Forum web PKI profile) judging the chain a server sends, for the name the matrix asks about.

Usage: pyca-verify.py CA.pem HOST PORT. It loads https://HOST:PORT/ once, prints one line (the status, or the verifier's
error) and exits 0 when it read an HTTP 200, 1 when it did not. Only the certificates are judged, never the handshake:
Python's ssl module drives it at security level 0 with every protocol version and suite and verifies nothing itself.
The verdict is given where a TLS client gives its own, so the fixture records it: once the server's flight (and its
chain) has arrived and before the client's Finished leaves, the verifier judges the chain; a refused chain ends the
connection there (a close after the server's flight, before the client's Finished), an accepted one lets the handshake
finish and asks for `/`. A DNS name is connected at 127.0.0.1.
"""
import ipaddress
import socket
import ssl
import sys
import warnings

from cryptography import x509
from cryptography.x509.verification import PolicyBuilder, Store


class Refused(Exception):
    """The verifier refused the chain: the connection ended before the client's Finished."""


def is_address(host):
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return False


def judge(store, host, chain):
    """None when the verifier accepts `chain` (DER, leaf first) for `host`; otherwise its error."""
    try:
        leaf = x509.load_der_x509_certificate(chain[0])
        intermediates = [x509.load_der_x509_certificate(der) for der in chain[1:]]
        subject = x509.IPAddress(ipaddress.ip_address(host)) if is_address(host) else x509.DNSName(host)
        PolicyBuilder().store(store).build_server_verifier(subject).verify(leaf, intermediates)
        return None
    except Exception as error:
        return f"{type(error).__name__}: {error}"


def load(store, host, port):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.set_ciphers("ALL:eNULL:@SECLEVEL=0")   # every suite, NULL ones too: only the certificates are judged
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)   # TLS 1.0 is deprecated: that is why it is asked for
        context.minimum_version = ssl.TLSVersion.TLSv1
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing, server_hostname=None if is_address(host) else host)
    with socket.create_connection((host if is_address(host) else "127.0.0.1", port), timeout=15) as connection:
        judged = False
        while True:
            try:
                tls.do_handshake()
                done = True
            except ssl.SSLWantReadError:
                done = False
            except ssl.SSLError:
                connection.sendall(outgoing.read())   # Python's own alert, as any client sends it
                raise
            pending = outgoing.read()
            # The client is about to answer the server's flight (TLS 1.2: its key exchange and Finished; TLS 1.3: its
            # Finished): the chain is in, and nothing the client says after this point is sent before the verdict.
            chain = tls._sslobj.get_unverified_chain() if not judged else None
            if chain and (pending or done):
                judged = True
                error = judge(store, host, [c.public_bytes(ssl._ssl.ENCODING_DER) for c in chain])
                if error:
                    raise Refused(error)
            if pending:
                connection.sendall(pending)
            if done:
                break
            received = connection.recv(65536)
            if not received:
                raise ConnectionError("the server closed the connection during the handshake")
            incoming.write(received)
        if not judged:
            raise ConnectionError("the handshake completed without a chain to judge")
        tls.write(f"GET / HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
        connection.sendall(outgoing.read())
        response = b""
        while True:
            try:
                data = tls.read(65536)
                if not data:
                    break   # the server's close_notify
                response += data
                continue
            except ssl.SSLWantReadError:
                pass
            except (ssl.SSLZeroReturnError, ssl.SSLEOFError):
                break
            received = connection.recv(65536)
            if not received:
                break
            incoming.write(received)
        return response.split(b"\r\n", 1)[0].decode("latin-1")


def main():
    if len(sys.argv) != 4:
        print("usage: pyca-verify.py CA.pem HOST PORT", file=sys.stderr)
        sys.exit(64)
    _, ca_file, host, port = sys.argv
    with open(ca_file, "rb") as handle:
        store = Store(x509.load_pem_x509_certificates(handle.read()))
    try:
        status = load(store, host, int(port))
    except Refused as refusal:
        print(" ".join(str(refusal).split()))
        sys.exit(1)
    except Exception as error:
        # No chain judged: Python's OpenSSL client refused the server before the verifier had a say (a 512-bit DH
        # group, a Certificate message over OpenSSL's limit, even at security level 0), or the connection failed.
        print(" ".join(f"no chain to judge: {type(error).__name__}: {error}".split()))
        sys.exit(1)
    accepted = status.startswith("HTTP/1.1 200")
    print(f"{status or 'no HTTP answer'}, chain verified")
    sys.exit(0 if accepted else 1)


if __name__ == "__main__":
    main()

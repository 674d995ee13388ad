"""HTTPS as `vllm serve` offers it (--ssl-certfile, --ssl-keyfile, --ssl-ca-certs,
--ssl-cert-reqs, --ssl-ciphers), with the self-signed certificate of tests/fixtures/tls
(tools/make_tls_fixtures.sh): the openai client streams a chat over it with the certificate
trusted, and is refused without; plain HTTP gets no answer; client certificates are asked for
and checked when --ssl-cert-reqs says so; bad files and values stop the server naming them."""

import http.client
import pathlib
import socket
import ssl
import unittest

import server_fixture as fx

TLS = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "tls"
CERT, KEY, BOTH = str(TLS / "cert.pem"), str(TLS / "key.pem"), str(TLS / "cert_and_key.pem")


def trusting(client_cert=False):
    """A client context that trusts the fixture certificate (and presents it, if asked)."""
    ctx = ssl.create_default_context(cafile=CERT)
    ctx.verify_flags |= ssl.VERIFY_X509_STRICT  # Python 3.13's default: the fixture passes it
    if client_cert:
        ctx.load_cert_chain(CERT, KEY)
    return ctx


class Tls(unittest.TestCase):
    def test_the_openai_client_runs_over_https(self):
        for args in (["--ssl-certfile", CERT, "--ssl-keyfile", KEY],
                     ["--ssl-certfile", BOTH]):  # the key in the certificate file
            with self.subTest(args=args), fx.Server(args, tls=trusting()) as server:
                client = fx.openai_client(server)
                n = fx.seeded_rng(self).randint(1, 8)
                chunks = list(client.chat.completions.create(
                    model=fx.MODEL, messages=[{"role": "user", "content": "tls"}],
                    max_tokens=n, stream=True, stream_options={"include_usage": True},
                    extra_body={"ignore_eos": True}))
                self.assertEqual(chunks[-1].usage.completion_tokens, n)
                whole = client.completions.create(model=fx.MODEL, prompt="tls", max_tokens=n,
                                                  extra_body={"ignore_eos": True})
                self.assertEqual(whole.usage.completion_tokens, n)
                # A client that does not trust the certificate is refused by its own check.
                with self.assertRaises(ssl.SSLCertVerificationError):
                    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as raw:
                        ssl.create_default_context().wrap_socket(raw,
                                                                 server_hostname="127.0.0.1")
                # Plain HTTP on the HTTPS port gets no HTTP answer.
                conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
                with self.assertRaises((http.client.HTTPException, ConnectionError)):
                    conn.request("GET", "/health")
                    conn.getresponse()
                conn.close()

    def test_client_certificates_when_required(self):
        args = ["--ssl-certfile", CERT, "--ssl-keyfile", KEY, "--ssl-ca-certs", CERT,
                "--ssl-cert-reqs", "2", "--ssl-ciphers", "ECDHE+AESGCM"]
        with fx.Server(args, tls=trusting(client_cert=True)) as server:
            status, body, _ = server.request("GET", "/v1/models")
            self.assertEqual(status, 200, body)
            server.tls = trusting()  # no client certificate: the handshake fails
            with self.assertRaises((ssl.SSLError, ConnectionError)):
                server.request("GET", "/v1/models")

    def test_bad_values_stop_the_server_naming_them(self):
        for args, says in (
                (["--ssl-certfile", "/nonexistent.pem"], "--ssl-certfile /nonexistent.pem"),
                (["--ssl-certfile", KEY], f"--ssl-certfile {KEY}: no PEM certificate"),
                (["--ssl-certfile", CERT], f"--ssl-certfile {CERT}: no PEM private key"),
                (["--ssl-keyfile", KEY], f"--ssl-keyfile {KEY} needs --ssl-certfile"),
                (["--ssl-certfile", CERT, "--ssl-keyfile", CERT], f"--ssl-keyfile {CERT}"),
                (["--ssl-certfile", BOTH, "--ssl-cert-reqs", "3"], "--ssl-cert-reqs 3"),
                (["--ssl-certfile", BOTH, "--ssl-ciphers", "NO-SUCH-CIPHER"], "NO-SUCH-CIPHER"),
                (["--ssl-certfile", BOTH, "--ssl-ca-certs", "/nonexistent-ca.pem"],
                 "--ssl-ca-certs /nonexistent-ca.pem"),
                (["--ssl-certfile", BOTH, "--enable-ssl-refresh"], "--enable-ssl-refresh")):
            with self.subTest(args=args):
                status, stderr = fx.failed_start(args)
                self.assertNotEqual(status, 0)
                self.assertIn(says, stderr)


if __name__ == "__main__":
    unittest.main()

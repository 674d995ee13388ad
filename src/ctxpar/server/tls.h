// HTTPS as `vllm serve` (uvicorn) offers it: --ssl-certfile and --ssl-keyfile (the key may sit
// in the certificate file), --ssl-ca-certs and --ssl-cert-reqs to verify clients'
// certificates, --ssl-ciphers. Without a certificate the server speaks plain HTTP.
#pragma once

#include <memory>
#include <string>

namespace httplib {
class Server;
}  // namespace httplib

namespace ctxpar::server {

struct TlsOptions {
  std::string certfile;  // PEM certificate chain; empty: plain HTTP
  std::string keyfile;   // PEM private key; empty: read from certfile
  std::string ca_certs;  // PEM CA certificates that client certificates must chain to
  int cert_reqs = 0;     // Python's ssl.VerifyMode: 0 none, 1 optional, 2 required
  std::string ciphers;   // OpenSSL cipher list (TLS 1.2 and below); empty: OpenSSL's default

  bool enabled() const { return !certfile.empty() || !keyfile.empty(); }
};

// A plain HTTP server, or an HTTPS one set up from `tls`. Throws InputError naming the flag and
// file when a value is invalid or a file cannot be read or does not match. The caller owns it.
std::unique_ptr<httplib::Server> make_http_server(const TlsOptions& tls);

// Throws as make_http_server would (for a check before the model loads).
void check_tls(const TlsOptions& tls);

}  // namespace ctxpar::server

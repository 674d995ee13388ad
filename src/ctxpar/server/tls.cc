#include "ctxpar/server/tls.h"

#include <httplib.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "ctxpar/core/error.h"

namespace ctxpar::server {
namespace {

// OpenSSL's first queued error, as its error string, or `fallback`; clears the queue.
std::string openssl_reason(const char* fallback) {
  const unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return fallback;
  char text[256];
  ERR_error_string_n(e, text, sizeof(text));
  return text;
}

}  // namespace

std::unique_ptr<httplib::Server> make_http_server(const TlsOptions& tls) {
  if (!tls.enabled()) return std::make_unique<httplib::Server>();
  CTXPAR_CHECK_INPUT(!tls.certfile.empty(), "--ssl-keyfile {} needs --ssl-certfile", tls.keyfile);
  CTXPAR_CHECK_INPUT(tls.cert_reqs >= 0 && tls.cert_reqs <= 2,
                     "--ssl-cert-reqs {}: give 0 (CERT_NONE), 1 (CERT_OPTIONAL) or 2 "
                     "(CERT_REQUIRED)",
                     tls.cert_reqs);
  std::string error;
  const auto fail = [&error](std::string message) {
    error = std::move(message);
    return false;
  };
  auto server = std::make_unique<httplib::SSLServer>([&](SSL_CTX& ctx) {
    // What httplib's file constructor sets up, and uvicorn's: TLS 1.2 at least, no compression.
    SSL_CTX_set_options(&ctx,
                        SSL_OP_NO_COMPRESSION | SSL_OP_NO_SESSION_RESUMPTION_ON_RENEGOTIATION);
    SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION);
    const std::string& key = tls.keyfile.empty() ? tls.certfile : tls.keyfile;
    const char* key_flag = tls.keyfile.empty() ? "--ssl-certfile" : "--ssl-keyfile";
    if (SSL_CTX_use_certificate_chain_file(&ctx, tls.certfile.c_str()) != 1) {
      return fail(fmt::format("--ssl-certfile {}: no PEM certificate could be read ({})",
                              tls.certfile, openssl_reason("no reason given")));
    }
    if (SSL_CTX_use_PrivateKey_file(&ctx, key.c_str(), SSL_FILETYPE_PEM) != 1) {
      return fail(fmt::format("{} {}: no PEM private key could be read ({})", key_flag, key,
                              openssl_reason("no reason given")));
    }
    if (SSL_CTX_check_private_key(&ctx) != 1) {
      return fail(fmt::format("{} {} does not match the certificate of --ssl-certfile {}", key_flag,
                              key, tls.certfile));
    }
    if (!tls.ca_certs.empty() &&
        SSL_CTX_load_verify_locations(&ctx, tls.ca_certs.c_str(), nullptr) != 1) {
      return fail(fmt::format("--ssl-ca-certs {}: no PEM certificates could be read ({})",
                              tls.ca_certs, openssl_reason("no reason given")));
    }
    if (!tls.ciphers.empty() && SSL_CTX_set_cipher_list(&ctx, tls.ciphers.c_str()) != 1) {
      return fail(fmt::format("--ssl-ciphers '{}' selects no cipher OpenSSL knows", tls.ciphers));
    }
    const int mode = tls.cert_reqs == 0   ? SSL_VERIFY_NONE
                     : tls.cert_reqs == 1 ? SSL_VERIFY_PEER
                                          : SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
    SSL_CTX_set_verify(&ctx, mode, nullptr);
    return true;
  });
  CTXPAR_CHECK_INPUT(server->is_valid(), "{}",
                     error.empty() ? "OpenSSL could not make a TLS context" : error);
  return server;
}

void check_tls(const TlsOptions& tls) {
  make_http_server(tls);
}

}  // namespace ctxpar::server

#!/usr/bin/env bash
# A self-signed certificate for 127.0.0.1 and its key (tests/fixtures/tls), for the HTTPS server
# test (tests/server/test_tls.py), which also presents it as the client's certificate. Test-only:
# the key is public. Valid for 100 years, so the committed files do not expire under the tests.
set -euo pipefail
out="$(dirname "$0")/../tests/fixtures/tls"
mkdir -p "$out"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 36500 \
  -subj "/CN=127.0.0.1" -addext "subjectAltName=IP:127.0.0.1" \
  -addext "extendedKeyUsage=serverAuth,clientAuth" \
  -keyout "$out/key.pem" -out "$out/cert.pem" 2>/dev/null
cat "$out/cert.pem" "$out/key.pem" >"$out/cert_and_key.pem"
echo "wrote $out/cert.pem, key.pem, cert_and_key.pem"

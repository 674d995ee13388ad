#!/usr/bin/env bash
# A self-signed certificate for 127.0.0.1 and its key (tests/fixtures/tls), for the HTTPS server
# test (tests/server/test_tls.py), which also presents it as the client's certificate. Test-only:
# the key is public. Valid from 2000 to 2120 (`openssl ca -selfsign`, which takes both dates), so
# neither a machine whose clock lags nor the years ahead see it out of its validity.
set -euo pipefail
out="$(cd "$(dirname "$0")/.." && pwd)/tests/fixtures/tls"
mkdir -p "$out"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
touch "$work/index.txt"
cat >"$work/ca.cnf" <<CNF
[ca]
default_ca = fixture
[fixture]
database = $work/index.txt
new_certs_dir = $work
serial = $work/serial
default_md = sha256
policy = any
copy_extensions = none
x509_extensions = ext
[any]
commonName = supplied
[ext]
subjectAltName = IP:127.0.0.1
extendedKeyUsage = serverAuth, clientAuth
basicConstraints = critical, CA:TRUE
keyUsage = digitalSignature, keyCertSign
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
CNF
echo 01 >"$work/serial"
openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=127.0.0.1" \
  -keyout "$out/key.pem" -out "$work/req.csr" 2>/dev/null
openssl ca -batch -config "$work/ca.cnf" -selfsign -keyfile "$out/key.pem" -in "$work/req.csr" \
  -startdate 20000101000000Z -enddate 21200101000000Z -notext -out "$out/cert.pem" 2>/dev/null
cat "$out/cert.pem" "$out/key.pem" >"$out/cert_and_key.pem"
echo "wrote $out/cert.pem, key.pem, cert_and_key.pem"

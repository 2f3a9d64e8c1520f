#!/usr/bin/env bash
# self-check.sh [WORK_DIR] -- start a stack, exercise it over HTTP and with
# sigstore-python, stop it, verify offline. One line per check, then a closing
# "N passed, M failed" line; exits non-zero if any check failed.
#
# Needs: install.sh done (node_modules and .venv), curl. Keys, proofs and
# signatures are made with node's crypto (no openssl). WORK_DIR defaults to a
# temporary directory, removed afterwards unless KEEP=1 or a check failed.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
USER_W=${1:-}
if [ -n "$USER_W" ]; then mkdir -p "$USER_W" && W=$(cd "$USER_W" && pwd); else W=$(mktemp -d); fi
STATE=$W/stack
NODE=${NODE:-node}
PYSIG=$HERE/.venv/bin/sigstore
pass=0 fail=0
ok() { echo "PASS $*"; pass=$((pass + 1)); }
ko() { echo "FAIL $*"; fail=$((fail + 1)); }
# check NAME CMD...: passes when CMD exits 0; shows the tail of its output otherwise
check() {
  local name=$1; shift
  if "$@" >"$W/last.out" 2>&1; then ok "$name"; else ko "$name (rc=$?)"; tail -5 "$W/last.out" | sed 's/^/    /'; fi
}
# refute NAME CMD...: passes when CMD fails
refute() {
  local name=$1; shift
  if "$@" >"$W/last.out" 2>&1; then ko "$name (unexpectedly succeeded)"; tail -5 "$W/last.out" | sed 's/^/    /'; else ok "$name"; fi
}
cleanup() {
  "$HERE/stop.sh" "$STATE" >/dev/null 2>&1
  if [ -z "$USER_W" ] && [ "$fail" = 0 ] && [ "${KEEP:-0}" != 1 ]; then rm -rf "$W"; else echo "work dir kept: $W"; fi
}
trap cleanup EXIT
cd "$W" || exit 1

# ---- helper: JWT checks, keys, proofs, signatures, cert/SET checks (node crypto) ----
cat >"$W/h.cjs" <<'EOF'
const fs = require('fs');
const crypto = require('crypto');
const [cmd, ...a] = process.argv.slice(2);
const rd = (f) => fs.readFileSync(f, 'utf8');
const b64url = (s) => Buffer.from(s, 'base64url');
const fail = (m) => { console.error(m); process.exit(1); };
const claimsOf = (jwt) => JSON.parse(b64url(jwt.trim().split('.')[1]).toString('utf8'));
const now = () => Math.floor(Date.now() / 1000);
const trustedRoot = (f) => JSON.parse(rd(f));
const der2pem = (der, label) => `-----BEGIN ${label}-----\n${der.toString('base64').replace(/(.{64})/g, '$1\n').replace(/\n$/, '')}\n-----END ${label}-----\n`;
(async () => {
  switch (cmd) {
    case 'claim': { // claim TOKENFILE NAME -> prints the claim
      const v = claimsOf(rd(a[0]))[a[1]];
      console.log(typeof v === 'string' ? v : JSON.stringify(v));
      break;
    }
    case 'jwt-verify': { // jwt-verify TOKENFILE JWKS_URL ISS AUD: signature, iss, aud, exp, nbf
      const [h, p, s] = rd(a[0]).trim().split('.');
      const header = JSON.parse(b64url(h));
      const jwks = await (await fetch(a[1])).json();
      const jwk = jwks.keys.find((k) => k.kid === header.kid) || fail(`no key ${header.kid} in JWKS`);
      const key = crypto.createPublicKey({ key: jwk, format: 'jwk' });
      const algs = { RS256: 'sha256', ES256: 'sha256' };
      const sig = b64url(s);
      const okSig = crypto.verify(algs[header.alg], Buffer.from(`${h}.${p}`), header.alg === 'ES256' ? { key, dsaEncoding: 'ieee-p1363' } : key, sig);
      if (!okSig) fail('bad signature');
      const c = claimsOf(rd(a[0]));
      if (c.iss !== a[2]) fail(`iss ${c.iss} != ${a[2]}`);
      const aud = Array.isArray(c.aud) ? c.aud : [c.aud];
      if (!aud.includes(a[3])) fail(`aud ${JSON.stringify(c.aud)} does not include ${a[3]}`);
      if (!(c.exp > now())) fail(`expired: exp ${c.exp} <= now ${now()}`);
      if (c.nbf !== undefined && c.nbf > now() + 5) fail(`not yet valid: nbf ${c.nbf}`);
      console.log('valid', JSON.stringify(c));
      break;
    }
    case 'keygen': { // keygen KEY.pem PUB.pem: ECDSA P-256
      const { privateKey, publicKey } = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
      fs.writeFileSync(a[0], privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
      fs.writeFileSync(a[1], publicKey.export({ type: 'spki', format: 'pem' }));
      break;
    }
    case 'fulcio-req': { // fulcio-req TOKENFILE KEY.pem PUB.pem: Fulcio v2 CreateSigningCertificateRequest
      const token = rd(a[0]).trim();
      // proof of possession: signature over the token's `sub` claim
      const pop = crypto.sign('sha256', Buffer.from(claimsOf(token).sub), crypto.createPrivateKey(rd(a[1])));
      console.log(JSON.stringify({
        credentials: { oidcIdentityToken: token },
        publicKeyRequest: { publicKey: { algorithm: 'ECDSA', content: rd(a[2]) }, proofOfPossession: pop.toString('base64') },
      }));
      break;
    }
    case 'leaf': { // leaf RESP.json -> leaf PEM
      process.stdout.write(JSON.parse(rd(a[0])).signedCertificateEmbeddedSct.chain.certificates[0]);
      break;
    }
    case 'check-leaf': { // check-leaf LEAF.pem TRUSTED_ROOT PUB.pem SAN_URI
      const leaf = new crypto.X509Certificate(rd(a[0]));
      const tr = trustedRoot(a[1]);
      const ca = new crypto.X509Certificate(Buffer.from(tr.certificateAuthorities[0].certChain.certificates.at(-1).rawBytes, 'base64'));
      if (!leaf.verify(ca.publicKey)) fail('leaf is not signed by the trusted root CA');
      if (!leaf.checkIssued(ca)) fail('leaf issuer does not match the CA subject');
      const want = crypto.createPublicKey(rd(a[2])).export({ type: 'spki', format: 'der' });
      if (!leaf.publicKey.export({ type: 'spki', format: 'der' }).equals(want)) fail('leaf key is not our key');
      if (leaf.subjectAltName !== `URI:${a[3]}`) fail(`SAN ${leaf.subjectAltName} != URI:${a[3]}`);
      console.log('leaf ok', leaf.subjectAltName);
      break;
    }
    case 'hashedrekord': { // hashedrekord ARTIFACT KEY.pem LEAF.pem: Rekor v1 proposed entry
      const data = fs.readFileSync(a[0]);
      const sig = crypto.sign('sha256', data, crypto.createPrivateKey(rd(a[1])));
      console.log(JSON.stringify({
        apiVersion: '0.0.1', kind: 'hashedrekord',
        spec: {
          data: { hash: { algorithm: 'sha256', value: crypto.createHash('sha256').update(data).digest('hex') } },
          signature: { content: sig.toString('base64'), publicKey: { content: Buffer.from(rd(a[2])).toString('base64') } },
        },
      }));
      break;
    }
    case 'check-set': { // check-set RESP.json TRUSTED_ROOT: Rekor SignedEntryTimestamp
      const [[uuid, e]] = Object.entries(JSON.parse(rd(a[0])));
      const tl = trustedRoot(a[1]).tlogs[0];
      const key = crypto.createPublicKey({ key: Buffer.from(tl.publicKey.rawBytes, 'base64'), format: 'der', type: 'spki' });
      if (Buffer.from(e.logID, 'hex').toString('base64') !== tl.logId.keyId) fail('logID is not the trusted log');
      // canonical JSON (RFC 8785) of these four fields is this key order
      const payload = JSON.stringify({ body: e.body, integratedTime: e.integratedTime, logID: e.logID, logIndex: e.logIndex });
      if (!crypto.verify('sha256', Buffer.from(payload), key, Buffer.from(e.verification.signedEntryTimestamp, 'base64'))) fail('SET does not verify');
      console.log('SET ok', uuid);
      break;
    }
    case 'get': { // get JSONFILE KEY
      const v = JSON.parse(rd(a[0]))[a[1]];
      console.log(typeof v === 'string' ? v : JSON.stringify(v));
      break;
    }
    case 'stats-eq': { // stats-eq JSONFILE k=v ...: every listed counter has the value
      const s = JSON.parse(rd(a[0]));
      const bad = a.slice(1).map((kv) => kv.split('=')).filter(([k, v]) => String(s[k]) !== v);
      if (bad.length) fail(`want ${a.slice(1).join(' ')}; got ${JSON.stringify(s)}`);
      console.log(JSON.stringify(s));
      break;
    }
    default: fail(`unknown helper command ${cmd}`);
  }
})().catch((e) => fail(e.stack || String(e)));
EOF
H() { "$NODE" "$W/h.cjs" "$@"; }
# post URL FILE OUT -> prints the HTTP status (000 on transport failure / timeout)
post() { curl -s -o "$3" -w '%{http_code}' -H 'Content-Type: application/json' --data-binary @"$2" "${@:4}" "$1"; }
# status_is WANT CMD...: the command printed WANT
status_is() { local want=$1 got; shift; got=$("$@"); echo "status $got"; [ "$got" = "$want" ]; }
stats() { curl -sf "$1" >"$W/stats.json" && H stats-eq "$W/stats.json" "${@:2}"; }
faults() { curl -sf -X POST -H 'Content-Type: application/json' --data "$1" "$SIGSTORE_FAULTS_URL"; }

# ---- 0. start ----------------------------------------------------------------
t0=$(date +%s%N)
if ! "$HERE/start.sh" "$STATE" >"$W/start.out" 2>&1; then
  cat "$W/start.out"; ko "start.sh"; echo "$pass passed, $fail failed"; exit 1
fi
ok "start.sh ($(( ($(date +%s%N) - t0) / 1000000 )) ms)"
# shellcheck disable=SC1091
. "$STATE/env"
check "env exports every SIGSTORE_* variable" bash -c '
  for v in SIGSTORE_STACK_DIR SIGSTORE_OIDC_ISSUER SIGSTORE_OIDC_TOKEN_URL SIGSTORE_ID_TOKEN_FILE SIGSTORE_IDENTITY \
           SIGSTORE_FULCIO_URL SIGSTORE_REKOR_URL SIGSTORE_TSA_URL SIGSTORE_TRUSTED_ROOT SIGSTORE_SIGNING_CONFIG \
           SIGSTORE_TRUST_CONFIG SIGSTORE_STATS_FULCIO_URL SIGSTORE_STATS_REKOR_URL SIGSTORE_FAULTS_URL SIGSTORE_MINT_TOKEN; do
    [ -n "${!v:-}" ] || { echo "$v is empty"; exit 1; }
  done
  for f in "$SIGSTORE_ID_TOKEN_FILE" "$SIGSTORE_TRUSTED_ROOT" "$SIGSTORE_SIGNING_CONFIG" "$SIGSTORE_TRUST_CONFIG"; do
    [ -s "$f" ] || { echo "$f missing"; exit 1; }
  done'
ISS=$SIGSTORE_OIDC_ISSUER
CUSTOM_SUB=https://github.com/mansign/self-check/.github/workflows/check.yml@refs/heads/custom-$$

# ---- 1. OIDC issuer and mint-token.sh ------------------------------------------
check "oidc: discovery names the issuer" bash -c "curl -sf '$ISS/.well-known/openid-configuration' | grep -qF '\"issuer\":\"$ISS\"'"
check "oidc: id_token file verifies against JWKS (aud sigstore)" H jwt-verify "$SIGSTORE_ID_TOKEN_FILE" "$ISS/jwks" "$ISS" sigstore
"$HERE/mint-token.sh" "$STATE" "sub=$CUSTOM_SUB" >custom.jwt 2>"$W/mint.err"
check "mint-token: custom sub token verifies" H jwt-verify custom.jwt "$ISS/jwks" "$ISS" sigstore
check "mint-token: sub claim is the custom sub" test "$(H claim custom.jwt sub)" = "$CUSTOM_SUB"
"$HERE/mint-token.sh" "$STATE" --ttl -60 >expired.jwt 2>>"$W/mint.err"
check "mint-token --ttl -60: exp is 60 s in the past" bash -c "e=\$('$NODE' '$W/h.cjs' claim expired.jwt exp); n=\$(date +%s); [ \$((n - e)) -ge 55 ] && [ \$((n - e)) -le 70 ]"
refute "mint-token --ttl -60: JWT check rejects it as expired" H jwt-verify expired.jwt "$ISS/jwks" "$ISS" sigstore
check "mint-token --ttl -60: only the expiry is wrong" bash -c "'$NODE' '$W/h.cjs' jwt-verify expired.jwt '$ISS/jwks' '$ISS' sigstore 2>&1 | grep -q expired"
"$HERE/mint-token.sh" "$STATE" aud=not-sigstore >wrongaud.jwt 2>>"$W/mint.err"
refute "mint-token aud=not-sigstore: rejected for audience sigstore" H jwt-verify wrongaud.jwt "$ISS/jwks" "$ISS" sigstore
check "mint-token aud=not-sigstore: valid for audience not-sigstore" H jwt-verify wrongaud.jwt "$ISS/jwks" "$ISS" not-sigstore
"$HERE/mint-token.sh" "$STATE" sub:=null email_verified:=false >nosub.jwt 2>>"$W/mint.err"
check "mint-token sub:=null email_verified:=false" bash -c "[ \"\$('$NODE' '$W/h.cjs' claim nosub.jwt sub)\" = undefined ] && [ \"\$('$NODE' '$W/h.cjs' claim nosub.jwt email_verified)\" = false ]"

# ---- 2. raw Fulcio + Rekor, counters ---------------------------------------------
check "stats: POST /__stats/reset" curl -sf -X POST "$SIGSTORE_STATS_FULCIO_URL/reset"
check "stats: all zero after reset" stats "$SIGSTORE_STATS_REKOR_URL" fulcio_signing_cert_requests=0 rekor_entries_created=0 rekor_requests=0
H keygen key.pem pub.pem
H fulcio-req custom.jwt key.pem pub.pem >certreq.json
check "fulcio: POST /api/v2/signingCert -> 201" status_is 201 post "$SIGSTORE_FULCIO_URL/api/v2/signingCert" certreq.json certresp.json
H leaf certresp.json >leaf.pem 2>/dev/null
check "fulcio: leaf chains to trusted root, holds our key, SAN = custom sub" H check-leaf leaf.pem "$SIGSTORE_TRUSTED_ROOT" pub.pem "$CUSTOM_SUB"
echo "self-check artifact $$" >artifact.txt
H hashedrekord artifact.txt key.pem leaf.pem >entry.json
check "rekor: POST /api/v1/log/entries (hashedrekord) -> 201" status_is 201 post "$SIGSTORE_REKOR_URL/api/v1/log/entries" entry.json rekorresp.json
check "rekor: SET verifies with the trusted log key" H check-set rekorresp.json "$SIGSTORE_TRUSTED_ROOT"
check "stats (fulcio URL): 1 cert request, 1 entry, 1 rekor request" \
  stats "$SIGSTORE_STATS_FULCIO_URL" fulcio_signing_cert_requests=1 rekor_entries_created=1 rekor_requests=1
check "stats (rekor URL): same counters" \
  stats "$SIGSTORE_STATS_REKOR_URL" fulcio_signing_cert_requests=1 rekor_entries_created=1 rekor_requests=1

# ---- 3. fault injection ------------------------------------------------------------
check "faults: queue rekor [500,500]" faults '{"service":"rekor","statuses":[500,500]}'
check "faults: 1st rekor POST -> 500" status_is 500 post "$SIGSTORE_REKOR_URL/api/v1/log/entries" entry.json f1.json
check "faults: 500 body is a JSON error" bash -c "grep -q '\"code\":500' f1.json"
check "faults: 2nd rekor POST -> 500" status_is 500 post "$SIGSTORE_REKOR_URL/api/v1/log/entries" entry.json f2.json
check "faults: 3rd rekor POST -> 201" status_is 201 post "$SIGSTORE_REKOR_URL/api/v1/log/entries" entry.json f3.json
check "faults: 3rd answer is a real entry" H check-set f3.json "$SIGSTORE_TRUSTED_ROOT"
check "stats: faulted requests count in rekor_requests (4), entries 2" \
  stats "$SIGSTORE_STATS_REKOR_URL" rekor_requests=4 rekor_entries_created=2 faults_injected=2
check "faults: queue rekor [400]" faults '{"service":"rekor","statuses":[400]}'
check "faults: rekor POST -> 400" status_is 400 post "$SIGSTORE_REKOR_URL/api/v1/log/entries" entry.json f4.json
check "faults: next rekor POST -> 201" status_is 201 post "$SIGSTORE_REKOR_URL/api/v1/log/entries" entry.json f5.json
check "faults: queue fulcio [503]" faults '{"service":"fulcio","statuses":[503]}'
check "faults: fulcio POST -> 503" status_is 503 post "$SIGSTORE_FULCIO_URL/api/v2/signingCert" certreq.json f6.json
check "faults: next fulcio POST -> 201" status_is 201 post "$SIGSTORE_FULCIO_URL/api/v2/signingCert" certreq.json f7.json
check "stats: fulcio 3 requests / 2 issued, rekor 6 requests / 3 entries" \
  stats "$SIGSTORE_STATS_FULCIO_URL" fulcio_signing_cert_requests=3 fulcio_certificates_issued=2 rekor_requests=6 rekor_entries_created=3
check "faults: queue rekor delay 1500 ms x1" faults '{"service":"rekor","delay_ms":1500,"count":1}'
check "faults: delayed rekor POST times out a 0.5 s client" status_is 000 post "$SIGSTORE_REKOR_URL/api/v1/log/entries" entry.json f8.json --max-time 0.5
check "faults: next rekor POST is prompt (201 within 1 s)" status_is 201 post "$SIGSTORE_REKOR_URL/api/v1/log/entries" entry.json f9.json --max-time 1
check "faults: queue rekor [500] then DELETE /__faults" bash -c "
  curl -sf -X POST --data '{\"service\":\"rekor\",\"statuses\":[500]}' '$SIGSTORE_FAULTS_URL' | grep -q '\"statuses\":\[500\]' &&
  curl -sf -X DELETE '$SIGSTORE_FAULTS_URL' >/dev/null && curl -sf '$SIGSTORE_FAULTS_URL' | grep -qv 500"
check "faults: after DELETE, rekor POST -> 201" status_is 201 post "$SIGSTORE_REKOR_URL/api/v1/log/entries" entry.json f10.json
check "faults: the timed-out request still completes server-side (9 requests, 6 entries)" bash -c "
  for i in \$(seq 50); do
    curl -sf '$SIGSTORE_STATS_REKOR_URL' | grep -q '\"rekor_requests\":9,\"rekor_entries_created\":6,' && exit 0; sleep 0.1
  done; curl -s '$SIGSTORE_STATS_REKOR_URL'; exit 1"
check "faults: malformed request -> 400" status_is 400 curl -s -o /dev/null -w '%{http_code}' -X POST --data '{"service":"ct","statuses":[500]}' "$SIGSTORE_FAULTS_URL"

# ---- 4. sigstore-python signs and verifies against the stack ------------------------
if [ ! -x "$PYSIG" ]; then
  ko "sigstore-python missing: run $HERE/install.sh (without SKIP_PY=1)"
else
  curl -sf -X POST "$SIGSTORE_STATS_REKOR_URL/reset" >/dev/null
  echo "manifest to sign $$" >a.yaml
  echo "tampered" >bad.yaml
  TOKEN=$(cat custom.jwt)
  check "sigstore-python sign (--trust-config, --identity-token)" \
    "$PYSIG" --trust-config "$SIGSTORE_TRUST_CONFIG" sign --identity-token "$TOKEN" --bundle a.sigstore.json --overwrite a.yaml
  check "sigstore-python used the stack (1 cert, 1 entry, 1 timestamp)" \
    stats "$SIGSTORE_STATS_REKOR_URL" fulcio_certificates_issued=1 rekor_entries_created=1 tsa_timestamps_issued=1
  check "sigstore-python verify identity" \
    "$PYSIG" --trust-config "$SIGSTORE_TRUST_CONFIG" verify identity --bundle a.sigstore.json \
    --cert-identity "$CUSTOM_SUB" --cert-oidc-issuer "$ISS" a.yaml
  refute "sigstore-python rejects wrong identity" \
    "$PYSIG" --trust-config "$SIGSTORE_TRUST_CONFIG" verify identity --offline --bundle a.sigstore.json \
    --cert-identity "$SIGSTORE_IDENTITY" --cert-oidc-issuer "$ISS" a.yaml
  refute "sigstore-python rejects wrong issuer" \
    "$PYSIG" --trust-config "$SIGSTORE_TRUST_CONFIG" verify identity --offline --bundle a.sigstore.json \
    --cert-identity "$CUSTOM_SUB" --cert-oidc-issuer https://evil.example a.yaml
  refute "sigstore-python rejects tampered artifact" \
    "$PYSIG" --trust-config "$SIGSTORE_TRUST_CONFIG" verify identity --offline --bundle a.sigstore.json \
    --cert-identity "$CUSTOM_SUB" --cert-oidc-issuer "$ISS" bad.yaml
  refute "sigstore-python refuses to sign with an expired token" \
    "$PYSIG" --trust-config "$SIGSTORE_TRUST_CONFIG" sign --identity-token "$(cat expired.jwt)" --bundle x.sigstore.json --overwrite a.yaml
fi

# ---- 5. stop; verification stays offline --------------------------------------------
check "stop.sh" "$HERE/stop.sh" "$STATE"
refute "stack is down (fulcio unreachable)" curl -sf --max-time 2 "$SIGSTORE_FULCIO_URL/healthz"
check "no pid files left" bash -c "! ls '$STATE'/*.pid 2>/dev/null | grep -q ."
if [ -x "$PYSIG" ]; then
  check "sigstore-python verify identity --offline (stack stopped)" \
    "$PYSIG" --trust-config "$SIGSTORE_TRUST_CONFIG" verify identity --offline --bundle a.sigstore.json \
    --cert-identity "$CUSTOM_SUB" --cert-oidc-issuer "$ISS" a.yaml
fi

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]

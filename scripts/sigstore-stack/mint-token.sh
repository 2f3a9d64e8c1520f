#!/usr/bin/env bash
# mint-token.sh STATE_DIR [--ttl SECONDS] [CLAIM=STRING | CLAIM:=JSON ...]
#
# Prints a fresh ID token (a JWT signed by the running stack's OIDC issuer,
# verifiable against its /jwks) with the default claims of start.sh (iss, sub,
# email, email_verified, aud "sigstore", iat, nbf, exp = now + 3600) and the
# given overrides:
#   --ttl N         exp = now + N. N <= 0 gives an expired token: exp = now + N,
#                   iat = nbf = exp - 300.
#   CLAIM=STRING    set a string claim, e.g. sub=https://example.com/me
#                   aud=not-sigstore  iss=https://evil.example  email=x@y.z
#   CLAIM:=JSON     set a claim to a JSON value, e.g. exp:=1700000000
#                   email_verified:=false  aud:='["sigstore","other"]'
#                   CLAIM:=null removes the claim (e.g. sub:=null)
# Overrides are applied last, so they win over --ttl (e.g. iat:=...).
# Needs node (Node 18+ for fetch); the stack must be running (start.sh STATE_DIR).
set -euo pipefail
if [ $# -lt 1 ] || [ -z "$1" ] || [ "${1#-}" != "$1" ]; then
  sed -n '2,16s/^# \{0,1\}//p' "$0" >&2
  exit 2
fi
STATE=$1
shift
[ -f "$STATE/oidc.json" ] || { echo "mint-token.sh: $STATE/oidc.json not found; is the stack started?" >&2; exit 1; }
exec "${NODE:-node}" - "$STATE/oidc.json" "$@" <<'EOF'
const fs = require('fs');
const [oidcJson, ...args] = process.argv.slice(2);
const { token_endpoint: url } = JSON.parse(fs.readFileSync(oidcJson, 'utf8'));
const body = { grant_type: 'client_credentials', claims: {} };
const die = (m) => { console.error(`mint-token.sh: ${m}`); process.exit(2); };
for (let i = 0; i < args.length; i++) {
  const a = args[i];
  let m;
  if (a === '--ttl') body.ttl = args[++i];
  else if ((m = a.match(/^--ttl=(.*)$/))) body.ttl = m[1];
  else if ((m = a.match(/^([^=:]+):=(.*)$/s))) {
    try { body.claims[m[1]] = JSON.parse(m[2]); } catch (e) { die(`${a}: not JSON (${e.message})`); }
  } else if ((m = a.match(/^([^=:]+)=(.*)$/s))) body.claims[m[1]] = m[2];
  else die(`bad argument ${JSON.stringify(a)} (want --ttl N, CLAIM=STRING or CLAIM:=JSON)`);
}
if (body.ttl !== undefined) {
  if (!/^-?[0-9]+$/.test(String(body.ttl))) die(`--ttl wants an integer, got ${JSON.stringify(body.ttl)}`);
  body.ttl = Number(body.ttl);
}
// sub/email/aud as request fields too, so the issuer's own handling applies
// (email also sets email_verified: true).
for (const k of ['sub', 'email', 'aud']) {
  if (typeof body.claims[k] === 'string') { body[k] = body.claims[k]; delete body.claims[k]; }
}
(async () => {
  const res = await fetch(url, {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) { console.error(`mint-token.sh: ${url}: HTTP ${res.status}: ${text}`); process.exit(1); }
  const tok = JSON.parse(text).access_token;
  if (!tok) { console.error(`mint-token.sh: no access_token in ${text}`); process.exit(1); }
  process.stdout.write(tok + '\n');
})().catch((e) => { console.error(`mint-token.sh: ${url}: ${e.message}`); process.exit(1); });
EOF

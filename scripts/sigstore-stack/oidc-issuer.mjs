#!/usr/bin/env node
/*
 * oidc-issuer.mjs -- a loopback OIDC issuer for Sigstore tests, built on the
 * third-party npm package `oauth2-mock-server` (real signed JWTs, discovery
 * document at /.well-known/openid-configuration, JWKS at /jwks, token
 * endpoint at /token, auto-approving /authorize for the code+PKCE flow).
 *
 * This file only starts it, adds Sigstore-shaped claims and writes a token.
 *
 * Usage:
 *   node oidc-issuer.mjs --out DIR [--host 127.0.0.1] [--port 0]
 *        [--sub SUB] [--email EMAIL] [--aud sigstore] [--ttl 3600] [--alg RS256|ES256|...]
 *
 * Writes DIR/oidc.json ({issuer, pid, jwks_uri, token_endpoint}) and
 * DIR/id_token (a JWT with iss=<issuer URL>, sub, email, email_verified,
 * aud, iat, nbf, exp), then prints "READY <json>". Stops on SIGTERM/SIGINT.
 *
 * Minting more tokens over HTTP (any grant is accepted, nothing is checked):
 *   curl -s -d grant_type=client_credentials -d sub=SUB -d email=E \
 *        http://127.0.0.1:PORT/token | jq -r .access_token
 * Request fields (form or JSON body) for that one token:
 *   sub, email, aud   override those claims
 *   ttl               seconds from now to `exp` (default 3600). ttl <= 0 gives
 *                     an already expired token: exp = now + ttl, and iat/nbf
 *                     = exp - 300 (a 5-minute token that expired -ttl s ago).
 *                     oauth2-mock-server itself always uses 3600 s; we rewrite
 *                     iat/nbf/exp in the BeforeTokenSigning hook.
 *   claims            JSON object merged into the payload last (it may set
 *                     iss, exp, iat, nbf, ...); a null value removes the claim.
 * mint-token.sh wraps this.
 *
 * Sign-in faults (test hooks, ours): the browser flow's GET /authorize takes an extra
 * query parameter `mansign_test_fault` that makes this one sign-in go wrong in a way a
 * client must refuse:
 *   wrong_state   the redirect carries another `state` than the request
 *   wrong_nonce   the ID token carries another `nonce` than the request
 *   foreign_key   the ID token is signed by a key that is not in /jwks (same `kid`)
 *   expired       the ID token expired 60 s ago (exp = now - 60, iat = nbf = exp - 300)
 * The fault is bound to the authorization code of that request, so concurrent sign-ins
 * are unaffected.
 */
import { OAuth2Server, Events } from 'oauth2-mock-server';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

const opt = {
  host: '127.0.0.1', port: 0, out: null, aud: 'sigstore', ttl: 3600, alg: 'RS256',
  sub: 'https://github.com/acme/widget/.github/workflows/release.yml@refs/heads/main',
  email: 'ci@example.com',
};
for (let i = 2; i < process.argv.length; i++) {
  const a = process.argv[i], v = () => process.argv[++i];
  if (a === '--host') opt.host = v();
  else if (a === '--port') opt.port = Number(v());
  else if (a === '--out') opt.out = v();
  else if (a === '--sub') opt.sub = v();
  else if (a === '--email') opt.email = v();
  else if (a === '--aud') opt.aud = v();
  else if (a === '--ttl') opt.ttl = Number(v());
  else if (a === '--alg') opt.alg = v();
  else { console.error(`unknown argument ${a}`); process.exit(2); }
}
if (!opt.out) { console.error('--out DIR is required'); process.exit(2); }
fs.mkdirSync(opt.out, { recursive: true });

const server = new OAuth2Server();
await server.issuer.keys.generate(opt.alg);
await server.start(opt.port, opt.host);
// oauth2-mock-server names a loopback issuer "http://localhost:PORT"; pin the literal
// address we listen on so clients never try ::1 first.
server.issuer.url = `http://${opt.host.includes(':') ? `[${opt.host}]` : opt.host}:${server.address().port}`;
const issuer = server.issuer.url;
// Discovery hard-codes RS256; advertise the algorithm actually used.
server.service.on(Events.BeforeWellKnownOpenIdConfiguration, (r) => {
  r.body.id_token_signing_alg_values_supported = [opt.alg];
});

// Sigstore-shaped claims for every token the /token endpoint issues.
server.service.on(Events.BeforeTokenSigning, (token, req) => {
  const b = req.body || {};
  const p = token.payload;
  p.aud = b.aud ?? opt.aud;
  p.sub = b.sub ?? (b.grant_type === 'password' && b.username ? b.username : opt.sub);
  const email = b.email ?? opt.email;
  if (email) { p.email = email; p.email_verified = true; }
  if (b.ttl !== undefined && b.ttl !== '') {
    const ttl = Number(b.ttl);
    if (!Number.isInteger(ttl)) throw new Error(`ttl must be an integer number of seconds, got ${JSON.stringify(b.ttl)}`);
    const now = Math.floor(Date.now() / 1000);
    p.exp = now + ttl;
    if (ttl <= 0) { p.iat = p.exp - 300; p.nbf = p.iat; }
  }
  if (b.claims !== undefined && b.claims !== '') {
    const claims = typeof b.claims === 'string' ? JSON.parse(b.claims) : b.claims;
    if (!claims || typeof claims !== 'object' || Array.isArray(claims)) throw new Error('claims must be a JSON object');
    for (const [k, v] of Object.entries(claims)) {
      if (v === null) delete p[k]; else p[k] = v;
    }
  }
});

// ---- sign-in faults (see the header) ----
const FAULTS = ['wrong_state', 'wrong_nonce', 'foreign_key', 'expired'];
const faultOfCode = new Map();
// A key of the same type that /jwks never shows.
const foreignKey = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
const b64url = (buf) => Buffer.from(buf).toString('base64url');

server.service.on(Events.BeforeAuthorizeRedirect, (redirect, req) => {
  const fault = req.query && req.query.mansign_test_fault;
  if (fault === undefined) return;
  if (!FAULTS.includes(fault)) throw new Error(`unknown mansign_test_fault ${JSON.stringify(fault)}`);
  if (fault === 'wrong_state') {
    redirect.url.searchParams.set('state', 'forged-state');
    return;
  }
  const code = redirect.url.searchParams.get('code');
  if (code) faultOfCode.set(code, fault);
});

// Runs after the claims hook above (handlers run in registration order).
server.service.on(Events.BeforeTokenSigning, (token, req) => {
  const fault = faultOfCode.get((req.body || {}).code);
  const p = token.payload;
  if (fault === 'wrong_nonce') p.nonce = 'forged-nonce';
  if (fault === 'expired') {
    p.exp = Math.floor(Date.now() / 1000) - 60;
    p.iat = p.exp - 300;
    p.nbf = p.iat;
  }
});

server.service.on(Events.BeforeResponse, (response, req) => {
  const code = (req.body || {}).code;
  const fault = faultOfCode.get(code);
  faultOfCode.delete(code);
  if (fault !== 'foreign_key' || !response.body || !response.body.id_token) return;
  // Same header (alg, kid) and claims, signed with the foreign key.
  const [header, payload] = response.body.id_token.split('.');
  const input = `${header}.${payload}`;
  const signature = crypto.sign('sha256', Buffer.from(input), foreignKey);
  response.body.id_token = `${input}.${b64url(signature)}`;
});

const idToken = await server.issuer.buildToken({
  expiresIn: opt.ttl,
  scopesOrTransform: (_h, p) => {
    Object.assign(p, { sub: opt.sub, aud: opt.aud });
    if (opt.email) Object.assign(p, { email: opt.email, email_verified: true });
  },
});
fs.writeFileSync(path.join(opt.out, 'id_token'), idToken + '\n');
const state = {
  pid: process.pid, issuer,
  discovery: `${issuer}/.well-known/openid-configuration`,
  jwks_uri: `${issuer}/jwks`, token_endpoint: `${issuer}/token`,
  sub: opt.sub, email: opt.email, aud: opt.aud,
};
fs.writeFileSync(path.join(opt.out, 'oidc.json'), JSON.stringify(state, null, 2) + '\n');
console.log('READY ' + JSON.stringify(state));

const stop = async () => { await server.stop(); process.exit(0); };
process.on('SIGTERM', stop);
process.on('SIGINT', stop);

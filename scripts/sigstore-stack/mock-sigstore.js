#!/usr/bin/env node
/*
 * mock-sigstore.js -- serve the Sigstore project's own mock services
 * (npm @sigstore/mock: Fulcio CA + CT log, Rekor v1/v2, RFC 3161 TSA) as real
 * HTTP servers on loopback, and write the matching trust material.
 *
 * All certificate/SCT/SET/checkpoint/timestamp logic is @sigstore/mock's.
 * This file is only glue: an http.createServer() around each exported
 * handler (the package itself only wires them into `nock`), a few read-only
 * GET endpoints that expose the keys/certs, and trusted_root.json /
 * signing_config.json / trust_config.json writers.
 *
 * Usage:
 *   node mock-sigstore.js --out DIR [--host 127.0.0.1]
 *        [--fulcio-port 0] [--rekor-port 0] [--tsa-port 0]
 *        [--subject-claim sub] [--oidc-url URL] [--no-tsa-in-signing-config]
 *        [--tsa-millis]   (keep @sigstore/mock's millisecond genTime, see below)
 *   Port 0 = pick a free port. When everything is listening it writes
 *   DIR/stack.json (URLs + pid) and prints one line "READY <json>".
 *   Stops on SIGTERM/SIGINT.
 *
 * Files written to DIR:
 *   trusted_root.json   application/vnd.dev.sigstore.trustedroot+json;version=0.1
 *   signing_config.json application/vnd.dev.sigstore.signingconfig.v0.2+json
 *   trust_config.json   application/vnd.dev.sigstore.clienttrustconfig.v0.1+json
 *                       (for `sigstore --trust-config` in sigstore-python)
 *   fulcio_root.pem, ctlog_pub.pem, rekor_pub.pem, tsa_chain.pem
 *   stack.json
 *
 * Test hooks (ours, for mansign's integration tests; see README.md). They are
 * served by every one of the three servers and share one state, because the
 * three servers live in this one process:
 *   GET  /__stats        request counters (JSON, see newStats() below)
 *   POST /__stats/reset  zero the counters
 *   GET  /__faults       the faults still queued
 *   POST /__faults       queue faults: {"service":"fulcio"|"rekor"|"tsa",
 *                        "statuses":[500,...]} (optionally with "retry_after":"VALUE",
 *                        sent as the Retry-After header of those answers) and/or
 *                        {"delay_ms":N,"count":K}
 *   DELETE /__faults     drop every queued fault
 */
'use strict';
const http = require('http');
const fs = require('fs');
const path = require('path');
const crypto = require('crypto');

// Deep imports on purpose: the package's index.js also loads `nock`, which we
// do not need (we serve real HTTP instead of intercepting it).
const { initializeCA, initializeCTLog, fulcioHandler } = require('@sigstore/mock/dist/fulcio');
const { initializeTLog, rekorHandler, rekorV2Handler } = require('@sigstore/mock/dist/rekor');
const { initializeTSA, tsaHandler } = require('@sigstore/mock/dist/timestamp');
const { generateKeyPair } = require('@sigstore/mock/dist/util/key');
const pkijs = require('pkijs');
const asn1js = require('asn1js');

function parseArgs(argv) {
  const o = {
    host: '127.0.0.1', fulcioPort: 0, rekorPort: 0, tsaPort: 0, out: null,
    subjectClaim: 'sub', oidcUrl: null, tsaInSigningConfig: true, tsaMillis: false,
  };
  for (let i = 2; i < argv.length; i++) {
    const a = argv[i], v = () => argv[++i];
    if (a === '--host') o.host = v();
    else if (a === '--fulcio-port') o.fulcioPort = Number(v());
    else if (a === '--rekor-port') o.rekorPort = Number(v());
    else if (a === '--tsa-port') o.tsaPort = Number(v());
    else if (a === '--out') o.out = v();
    else if (a === '--subject-claim') o.subjectClaim = v();
    else if (a === '--oidc-url') o.oidcUrl = v();
    else if (a === '--no-tsa-in-signing-config') o.tsaInSigningConfig = false;
    else if (a === '--tsa-millis') o.tsaMillis = true;
    else { console.error(`unknown argument ${a}`); process.exit(2); }
  }
  if (!o.out) { console.error('--out DIR is required'); process.exit(2); }
  return o;
}

const b64 = (buf) => Buffer.from(buf).toString('base64');
const pem = (label, der) =>
  `-----BEGIN ${label}-----\n${b64(der).replace(/(.{64})/g, '$1\n').replace(/\n$/, '')}\n-----END ${label}-----\n`;

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function send(res, status, body, type) {
  if (res.headersSent || res.destroyed) return; // e.g. the client gave up during an injected delay
  res.writeHead(status, { 'Content-Type': type || 'text/plain' });
  res.end(body);
}

// Serve a @sigstore/mock Handler ({path, fn(bodyString)}) for POST requests;
// returns the status sent. The mock's errors are plain text; real Fulcio and
// Rekor answer {"code","message"} JSON, so wrap them that way.
async function runHandler(handler, bodyString, res) {
  const { statusCode, response, contentType } = await handler.fn(bodyString);
  if (statusCode >= 400 && !contentType) {
    sendError(res, statusCode, String(response));
    return statusCode;
  }
  send(res, statusCode, Buffer.isBuffer(response) || typeof response === 'string' ? response : Buffer.from(response), contentType);
  return statusCode;
}

function listen(server, port, host) {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve(server.address().port));
  });
}

// RFC 3161 binary request (application/timestamp-query, as sent by
// sigstore-python / cosign) -> the JSON request @sigstore/mock's TSA expects
// (the format sigstore-js sends). The real timestamp-authority accepts both.
const HASH_OIDS = {
  '2.16.840.1.101.3.4.2.1': 'sha256',
  '2.16.840.1.101.3.4.2.2': 'sha384',
  '2.16.840.1.101.3.4.2.3': 'sha512',
};
function derTimestampReqToJSON(der) {
  const req = pkijs.TimeStampReq.fromBER(new Uint8Array(der).buffer);
  const mi = req.messageImprint;
  const j = {
    artifactHash: b64(mi.hashedMessage.valueBlock.valueHexView),
    hashAlgorithm: HASH_OIDS[mi.hashAlgorithm.algorithmId] || 'sha256',
    certificates: !!req.certReq,
  };
  if (req.reqPolicy) j.tsaPolicyOID = req.reqPolicy;
  if (req.nonce) {
    // @sigstore/mock re-encodes the nonce from a JS number, which loses nonces
    // above 2^53 (sigstore-rust sends 64-bit nonces). Pass the exact INTEGER
    // bytes through instead; the tstInfo override in main() encodes them.
    j.nonce = 'hex:' + Buffer.from(req.nonce.valueBlock.valueHexView).toString('hex');
  }
  return JSON.stringify(j);
}

// Real Rekor stores a hashedrekord entry canonicalized: the public key or
// certificate is re-encoded as PEM with LF line ends and 64-column base64
// (rekor pkg/types/hashedrekord/v0.0.1 Canonicalize -> CanonicalValue).
// @sigstore/mock stores what it was sent, so a client that sends CRLF PEM
// (sigstore-rust) would get an entry that verifiers (sigstore-python), which
// rebuild the body with LF PEM, call inconsistent. Canonicalize the same way.
function canonicalizeRekorRequest(text) {
  let j;
  try { j = JSON.parse(text); } catch { return text; }
  const key = j && j.kind === 'hashedrekord' && j.spec && j.spec.signature && j.spec.signature.publicKey;
  if (!key || typeof key.content !== 'string') return text;
  const pemText = Buffer.from(key.content, 'base64').toString('utf8');
  const blocks = [...pemText.matchAll(/-----BEGIN ([A-Z0-9 ]+)-----([\s\S]*?)-----END \1-----/g)];
  if (blocks.length === 0) return text;
  const canonical = blocks.map(([, label, body]) => {
    const b = body.replace(/\s+/g, '');
    return `-----BEGIN ${label}-----\n${b.replace(/(.{64})/g, '$1\n').replace(/\n$/, '')}\n-----END ${label}-----\n`;
  }).join('');
  key.content = Buffer.from(canonical, 'utf8').toString('base64');
  return JSON.stringify(j);
}

// Real Fulcio takes the OIDC token from the JSON body *or* from an
// "Authorization: Bearer" header (sigstore-python, cosign), and the CSR as the
// protobuf-JSON encoding of `bytes` (base64 of the PEM text). @sigstore/mock
// only parses what sigstore-js sends (token in body, PEM public key), so map
// the other accepted shapes onto that one. Nothing is verified here.
function normalizeFulcioRequest(req, raw) {
  let j;
  try { j = JSON.parse(raw.toString('utf8')); } catch { return raw.toString('utf8'); }
  const auth = req.headers.authorization || '';
  if (!(j.credentials && j.credentials.oidcIdentityToken) && /^Bearer\s+/i.test(auth)) {
    j.credentials = { oidcIdentityToken: auth.replace(/^Bearer\s+/i, '').trim() };
  }
  if (typeof j.certificateSigningRequest === 'string' && !j.certificateSigningRequest.includes('-----BEGIN')) {
    const dec = Buffer.from(j.certificateSigningRequest, 'base64').toString('utf8');
    if (dec.includes('-----BEGIN')) j.certificateSigningRequest = dec;
  }
  return JSON.stringify(j);
}

// ---- test hooks: counters and fault injection (ours, not @sigstore/mock's) ----
//
// "Matching" requests are the ones that issue something: POST
// /api/v2/signingCert (fulcio), POST /api/v1/log/entries and
// /api/v2/log/entries (rekor), POST /api/v1/timestamp (tsa).
const SERVICES = ['fulcio', 'rekor', 'tsa'];

function newStats() {
  return {
    fulcio_signing_cert_requests: 0, // matching fulcio requests, faulted ones included
    fulcio_certificates_issued: 0,   // of those, answered 201
    rekor_requests: 0,               // matching rekor requests, faulted ones included
    rekor_entries_created: 0,        // of those, answered 201
    tsa_requests: 0,                 // matching tsa requests, faulted ones included
    tsa_timestamps_issued: 0,        // of those, answered 2xx
    faults_injected: 0,              // answers replaced by a queued status
    // Arrival times (ms since the epoch) of the matching requests, per service, so a
    // test can check the wait between a 429 and the retry without timing itself.
    request_times_ms: Object.fromEntries(SERVICES.map((s) => [s, []])),
    since: new Date().toISOString(),
  };
}
let stats = newStats();
// Per service: statuses still to hand out (FIFO), and pending delays.
const faults = Object.fromEntries(SERVICES.map((s) => [s, { statuses: [], delays: [] }]));

function faultsView() {
  return Object.fromEntries(SERVICES.map((s) => [s, {
    statuses: faults[s].statuses.map((f) => f.status),
    retry_after: faults[s].statuses.map((f) => f.retryAfter ?? null),
    delays_ms: [...faults[s].delays],
  }]));
}

// Validates and queues one POST /__faults body; throws on bad input.
function queueFaults(j) {
  if (!j || typeof j !== 'object' || Array.isArray(j)) throw new Error('body must be a JSON object');
  const known = ['service', 'statuses', 'retry_after', 'delay_ms', 'count'];
  const extra = Object.keys(j).filter((k) => !known.includes(k));
  if (extra.length) throw new Error(`unknown field(s): ${extra.join(', ')}`);
  if (!SERVICES.includes(j.service)) throw new Error(`"service" must be one of ${SERVICES.join(', ')}`);
  const hasStatuses = j.statuses !== undefined;
  const hasDelay = j.delay_ms !== undefined;
  if (!hasStatuses && !hasDelay) throw new Error('give "statuses" and/or "delay_ms"');
  if (hasStatuses) {
    if (!Array.isArray(j.statuses) || !j.statuses.every((n) => Number.isInteger(n) && n >= 400 && n <= 599)) {
      throw new Error('"statuses" must be an array of integer HTTP statuses 400..599');
    }
  }
  if (j.count !== undefined && !hasDelay) throw new Error('"count" only goes with "delay_ms"');
  if (j.retry_after !== undefined) {
    if (!hasStatuses) throw new Error('"retry_after" only goes with "statuses"');
    // Any printable header value: delay-seconds, an HTTP-date, or junk on purpose.
    if (typeof j.retry_after !== 'string' || !/^[\x20-\x7e]*$/.test(j.retry_after)) {
      throw new Error('"retry_after" must be a string of printable ASCII (the header value)');
    }
  }
  if (hasDelay) {
    if (!Number.isInteger(j.delay_ms) || j.delay_ms < 0 || j.delay_ms > 600000) throw new Error('"delay_ms" must be an integer 0..600000');
    const count = j.count === undefined ? 1 : j.count;
    if (!Number.isInteger(count) || count < 1 || count > 1000) throw new Error('"count" must be an integer 1..1000');
    for (let i = 0; i < count; i++) faults[j.service].delays.push(j.delay_ms);
  }
  if (hasStatuses) {
    faults[j.service].statuses.push(...j.statuses.map((status) => ({ status, retryAfter: j.retry_after })));
  }
}

const REASONS = { 400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found', 408: 'Request Timeout', 409: 'Conflict', 429: 'Too Many Requests', 500: 'Internal Server Error', 502: 'Bad Gateway', 503: 'Service Unavailable', 504: 'Gateway Timeout' };

// Error bodies in the shape real Fulcio / Rekor use ({"code","message"}).
function sendError(res, status, message, headers) {
  if (res.headersSent || res.destroyed) return;
  res.writeHead(status, { 'Content-Type': 'application/json', ...(headers || {}) });
  res.end(JSON.stringify({ code: status, message }));
}

// Serves GET/POST /__stats, /__stats/reset, GET/POST/DELETE /__faults.
// Returns true when it answered the request.
async function serveHooks(req, res, pathname) {
  if (pathname === '/__stats' && req.method === 'GET') {
    send(res, 200, JSON.stringify(stats), 'application/json');
    return true;
  }
  if (pathname === '/__stats/reset' && req.method === 'POST') {
    await readBody(req);
    stats = newStats();
    send(res, 200, JSON.stringify(stats), 'application/json');
    return true;
  }
  if (pathname === '/__faults') {
    if (req.method === 'GET') {
      send(res, 200, JSON.stringify(faultsView()), 'application/json');
    } else if (req.method === 'DELETE') {
      await readBody(req);
      for (const s of SERVICES) { faults[s].statuses = []; faults[s].delays = []; }
      send(res, 200, JSON.stringify(faultsView()), 'application/json');
    } else if (req.method === 'POST') {
      try {
        queueFaults(JSON.parse((await readBody(req)).toString('utf8') || 'null'));
      } catch (e) {
        sendError(res, 400, `bad /__faults request: ${e.message}`);
        return true;
      }
      send(res, 200, JSON.stringify(faultsView()), 'application/json');
    } else {
      sendError(res, 405, 'method not allowed');
    }
    return true;
  }
  if (pathname.startsWith('/__')) { sendError(res, 404, 'no such test hook'); return true; }
  return false;
}

// Wraps one matching request: reads the body, counts it, takes the next queued
// delay and the next queued status (each used once, in order, claimed when the
// request arrives), waits out the delay, then answers with the status, or else
// runs `handle(body)`, which answers normally and returns the status it sent.
// A request whose client gave up during the delay is still carried out.
async function matching(service, req, res, handle) {
  const body = await readBody(req);
  stats[`${service === 'fulcio' ? 'fulcio_signing_cert' : service}_requests`]++;
  stats.request_times_ms[service].push(Date.now());
  const f = faults[service];
  const delay = f.delays.shift();
  const fault = f.statuses.shift();
  if (delay) await new Promise((r) => setTimeout(r, delay));
  if (fault !== undefined) {
    stats.faults_injected++;
    const headers = fault.retryAfter !== undefined ? { 'Retry-After': fault.retryAfter } : {};
    return sendError(res, fault.status, `injected fault: ${fault.status} ${REASONS[fault.status] || ''}`.trim(), headers);
  }
  const sent = await handle(body);
  if (service === 'fulcio' && sent === 201) stats.fulcio_certificates_issued++;
  if (service === 'rekor' && sent === 201) stats.rekor_entries_created++;
  if (service === 'tsa' && sent >= 200 && sent < 300) stats.tsa_timestamps_issued++;
}

async function main() {
  const opt = parseArgs(process.argv);
  fs.mkdirSync(opt.out, { recursive: true });
  const startedAt = new Date(Date.now() - 60 * 1000); // validFor.start, 1 min of slack

  // Independent keys for each role (mockFulcio() reuses one key for CA and CT log).
  const caKeys = generateKeyPair('prime256v1');
  const ctKeys = generateKeyPair('prime256v1');
  const rekorKeys = generateKeyPair('prime256v1');
  const tsaKeys = generateKeyPair('prime256v1');

  const fulcioSrv = http.createServer();
  const rekorSrv = http.createServer();
  const tsaSrv = http.createServer();
  const fulcioPort = await listen(fulcioSrv, opt.fulcioPort, opt.host);
  const rekorPort = await listen(rekorSrv, opt.rekorPort, opt.host);
  const tsaPort = await listen(tsaSrv, opt.tsaPort, opt.host);
  const fulcioURL = `http://${opt.host}:${fulcioPort}`;
  const rekorURL = `http://${opt.host}:${rekorPort}`;
  const tsaURL = `http://${opt.host}:${tsaPort}`;

  const ctlog = await initializeCTLog(ctKeys);
  const ca = await initializeCA(caKeys, ctlog);
  const fulcio = fulcioHandler(ca, { strict: true, subjectClaim: opt.subjectClaim });
  // The Rekor URL's host:port becomes the checkpoint origin.
  const tlog = await initializeTLog(rekorURL, rekorKeys);
  const rekorV1 = rekorHandler(tlog, { strict: true });
  const rekorV2 = rekorV2Handler(tlog, { strict: true });
  const tsa = await initializeTSA(tsaKeys);
  if (!opt.tsaMillis) {
    // @sigstore/mock stamps genTime with milliseconds; pkijs DER-encodes them
    // without trailing zeros (".12Z"), which @sigstore/core (sigstore-js)
    // rejects as "invalid time" (~1 in 10 timestamps). Whole seconds, as the
    // real timestamp-authority issues, keep runs deterministic.
    tsa.getCurrentTime = () => new Date(Math.floor(Date.now() / 1000) * 1000);
  }
  // Nonces from DER requests arrive as 'hex:<INTEGER bytes>' (derTimestampReqToJSON):
  // echo them byte for byte, as RFC 3161 requires.
  const mockTstInfo = tsa.tstInfo.bind(tsa);
  tsa.tstInfo = (req) => {
    if (typeof req.nonce !== 'string' || !req.nonce.startsWith('hex:')) return mockTstInfo(req);
    const info = mockTstInfo({ ...req, nonce: 1 });
    info.nonce = new asn1js.Integer({ valueHex: Buffer.from(req.nonce.slice(4), 'hex') });
    return info;
  };
  const tsaH = tsaHandler(tsa, { strict: true });

  const caRootDER = ca.rootCertificate;
  const ctPubDER = ctlog.publicKey;
  const rekorPubDER = tlog.publicKey;
  const tsaRootDER = tsa.rootCertificate;
  const tsaIntDER = tsa.intCertificate;
  const rekorLogID = crypto.createHash('sha256').update(rekorPubDER).digest();
  const ctLogID = Buffer.from(ctlog.logID);

  // ---- Fulcio ------------------------------------------------------------
  fulcioSrv.on('request', async (req, res) => {
    try {
      const url = new URL(req.url, fulcioURL);
      if (await serveHooks(req, res, url.pathname)) return;
      if (req.method === 'POST' && url.pathname === fulcio.path) {
        return await matching('fulcio', req, res, (body) => runHandler(fulcio, normalizeFulcioRequest(req, body), res));
      }
      if (req.method === 'GET' && url.pathname === '/api/v2/trustBundle') {
        return send(res, 200, JSON.stringify({ chains: [{ certificates: [pem('CERTIFICATE', caRootDER)] }] }), 'application/json');
      }
      if (req.method === 'GET' && url.pathname === '/api/v1/rootCert') {
        return send(res, 200, pem('CERTIFICATE', caRootDER), 'application/pem-certificate-chain');
      }
      if (req.method === 'GET' && url.pathname === '/healthz') return send(res, 200, 'ok');
      send(res, 404, 'not found');
    } catch (e) { console.error(e); send(res, 500, String(e && e.stack || e)); }
  });

  // ---- Rekor -------------------------------------------------------------
  // @sigstore/mock keeps no state; remember what it returned so that
  // GET /api/v1/log/entries/{uuid} works (read-only convenience).
  const entries = new Map();
  rekorSrv.on('request', async (req, res) => {
    try {
      const url = new URL(req.url, rekorURL);
      if (await serveHooks(req, res, url.pathname)) return;
      if (req.method === 'POST' && url.pathname === rekorV1.path) {
        return await matching('rekor', req, res, async (body) => {
          const { statusCode, response } = await rekorV1.fn(canonicalizeRekorRequest(body.toString('utf8')));
          if (statusCode !== 201) { sendError(res, statusCode, String(response)); return statusCode; }
          const uuid = Object.keys(JSON.parse(response))[0];
          for (const [k, v] of Object.entries(JSON.parse(response))) entries.set(k, v);
          if (!res.headersSent) res.setHeader('Location', `/api/v1/log/entries/${uuid}`);
          send(res, statusCode, response, 'application/json');
          return statusCode;
        });
      }
      if (req.method === 'POST' && url.pathname === rekorV2.path) {
        return await matching('rekor', req, res, (body) => runHandler(rekorV2, body.toString('utf8'), res));
      }
      const m = url.pathname.match(/^\/api\/v1\/log\/entries\/([0-9a-f]+)$/);
      if (req.method === 'GET' && m) {
        const e = entries.get(m[1]);
        return e ? send(res, 200, JSON.stringify({ [m[1]]: e }), 'application/json') : send(res, 404, '{"code":404,"message":"entry not found"}', 'application/json');
      }
      if (req.method === 'GET' && url.pathname === '/api/v1/log/publicKey') {
        return send(res, 200, pem('PUBLIC KEY', rekorPubDER), 'application/x-pem-file');
      }
      if (req.method === 'GET' && url.pathname === '/healthz') return send(res, 200, 'ok');
      send(res, 404, 'not found');
    } catch (e) { console.error(e); send(res, 500, String(e && e.stack || e)); }
  });

  // ---- TSA ---------------------------------------------------------------
  tsaSrv.on('request', async (req, res) => {
    try {
      const url = new URL(req.url, tsaURL);
      if (await serveHooks(req, res, url.pathname)) return;
      if (req.method === 'POST' && url.pathname === tsaH.path) {
        return await matching('tsa', req, res, async (raw) => {
          const ct = (req.headers['content-type'] || '').split(';')[0].trim();
          let body;
          try {
            body = ct === 'application/timestamp-query' ? derTimestampReqToJSON(raw) : raw.toString('utf8');
          } catch (e) { send(res, 400, String(e.message || e)); return 400; }
          return await runHandler(tsaH, body, res);
        });
      }
      if (req.method === 'GET' && url.pathname === '/api/v1/timestamp/certchain') {
        return send(res, 200, pem('CERTIFICATE', tsaIntDER) + pem('CERTIFICATE', tsaRootDER), 'application/pem-certificate-chain');
      }
      if (req.method === 'GET' && url.pathname === '/healthz') return send(res, 200, 'ok');
      send(res, 404, 'not found');
    } catch (e) { console.error(e); send(res, 500, String(e && e.stack || e)); }
  });

  // ---- trust material ------------------------------------------------------
  const start = startedAt.toISOString();
  const trustedRoot = {
    mediaType: 'application/vnd.dev.sigstore.trustedroot+json;version=0.1',
    tlogs: [{
      baseUrl: rekorURL,
      hashAlgorithm: 'SHA2_256',
      publicKey: { rawBytes: b64(rekorPubDER), keyDetails: 'PKIX_ECDSA_P256_SHA_256', validFor: { start } },
      logId: { keyId: b64(rekorLogID) },
    }],
    certificateAuthorities: [{
      subject: { organization: 'sigstore.mock', commonName: 'sigstore' },
      uri: fulcioURL,
      certChain: { certificates: [{ rawBytes: b64(caRootDER) }] },
      validFor: { start },
    }],
    ctlogs: [{
      baseUrl: `${fulcioURL}/ct`,
      hashAlgorithm: 'SHA2_256',
      publicKey: { rawBytes: b64(ctPubDER), keyDetails: 'PKIX_ECDSA_P256_SHA_256', validFor: { start } },
      logId: { keyId: b64(ctLogID) },
    }],
    timestampAuthorities: [{
      subject: { organization: 'sigstore.mock', commonName: 'tsa' },
      uri: tsaURL,
      certChain: { certificates: [{ rawBytes: b64(tsaIntDER) }, { rawBytes: b64(tsaRootDER) }] },
      validFor: { start },
    }],
  };
  const svc = (url, v) => ({ url, majorApiVersion: v, validFor: { start }, operator: 'sigstore.mock' });
  const signingConfig = {
    mediaType: 'application/vnd.dev.sigstore.signingconfig.v0.2+json',
    caUrls: [svc(fulcioURL, 1)],
    oidcUrls: opt.oidcUrl ? [svc(opt.oidcUrl, 1)] : [],
    rekorTlogUrls: [svc(rekorURL, 1)],
    rekorTlogConfig: { selector: 'ANY' },
    tsaUrls: opt.tsaInSigningConfig ? [svc(`${tsaURL}/api/v1/timestamp`, 1)] : [],
    tsaConfig: { selector: 'ANY' },
  };
  const trustConfig = {
    mediaType: 'application/vnd.dev.sigstore.clienttrustconfig.v0.1+json',
    trustedRoot,
    signingConfig,
  };
  const w = (name, data) => fs.writeFileSync(path.join(opt.out, name), typeof data === 'string' ? data : JSON.stringify(data, null, 2) + '\n');
  w('trusted_root.json', trustedRoot);
  w('signing_config.json', signingConfig);
  w('trust_config.json', trustConfig);
  w('fulcio_root.pem', pem('CERTIFICATE', caRootDER));
  w('ctlog_pub.pem', pem('PUBLIC KEY', ctPubDER));
  w('rekor_pub.pem', pem('PUBLIC KEY', rekorPubDER));
  w('tsa_chain.pem', pem('CERTIFICATE', tsaIntDER) + pem('CERTIFICATE', tsaRootDER));
  const state = {
    pid: process.pid, fulcioURL, rekorURL, tsaURL: `${tsaURL}/api/v1/timestamp`,
    rekorLogIdHex: rekorLogID.toString('hex'), ctLogIdHex: ctLogID.toString('hex'),
    subjectClaim: opt.subjectClaim,
    // Test hooks (one shared state; any of the three base URLs serves them).
    fulcioStatsURL: `${fulcioURL}/__stats`, rekorStatsURL: `${rekorURL}/__stats`,
    faultsURL: `${fulcioURL}/__faults`,
  };
  w('stack.json', state);
  console.log('READY ' + JSON.stringify(state));

  const stop = () => { fulcioSrv.close(); rekorSrv.close(); tsaSrv.close(); process.exit(0); };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main().catch((e) => { console.error(e); process.exit(1); });

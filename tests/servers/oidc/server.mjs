// A real OAuth 2.1 / OpenID authorization server for the OAuth e2e tests:
// oidc-provider on 127.0.0.1, on a port it picks. Issues JWT access tokens
// (RS256, or ES256 for the client "es-client") with aud = the resource given
// as RESOURCE, opaque ones for the client "opaque-client"; dynamic client
// registration, the built-in (dev) login and consent forms, introspection
// and revocation are on. Groups come from the login name (GROUPS below).
//
//   RESOURCE=http://127.0.0.1:PORT/mcp node server.mjs
//   prints one JSON line: { issuer, port, keys: [private JWKs] }
// Every request is counted by path: GET /_counts answers { path: n }.
//
// Knobs for the upstream OAuth tests (tests/e2e/upstreamauth.test.mjs):
//   SCOPES="mcp:tools mcp:admin"   more scopes the resource offers (step-up)
//   ACCESS_TTL=N                   access token lifetime, seconds (600);
//                                  GET /_ttl?s=N changes it at run time
//   GET /_fail?path=/token&n=K     the next K requests to the path get 500
//   GET /_evil?n=K                 the next K token requests get a 200 whose
//                                  access token holds CR LF (header injection)
// Clients "upstream-client" (native, loopback redirect on any port, code and
// refresh) and "cc-client" (client credentials) are registered beforehand;
// so are two private_key_jwt clients (RFC 7523) with keys made here:
// "jwt-cc-client" (client credentials, ES256) and "jwt-client" (native, code
// and refresh, RS256). Their private keys are in the JSON line, as PKCS#8
// PEM: clientKeys: { es, rs }.
//
// Token exchange (RFC 8693; tests/e2e/tokenexchange.test.mjs), opt-in:
//   TOKEN_EXCHANGE=1               registers the grant
//                                  urn:ietf:params:oauth:grant-type:token-exchange
//                                  for the client "tx-client" (secret "tx-secret";
//                                  native, code and refresh too, for a login):
//                                  a subject_token of type ...:token-type:access_token
//                                  that is a JWT signed with this server's keys (any
//                                  aud: the tests mint the gateway's own with `keys`),
//                                  with this iss and not expired, is exchanged for a
//                                  JWT access token for the requested resource whose
//                                  sub is the subject token's; /_counts counts them
//                                  as "token-exchange"
//   GET /_refuse?sub=NAME          exchanges of NAME's tokens are refused from now
//                                  on (invalid_grant); &off=1: accepted again
// Test-only: the private keys in the JSON line let a test mint tokens this
// server would have issued; nothing here is fit for anything but tests.
import Provider, { errors } from 'oidc-provider';
import { createPublicKey, generateKeyPairSync, verify as cryptoVerify } from 'node:crypto';
import http from 'node:http';

const RESOURCE = process.env.RESOURCE;
const SCOPE = process.env.SCOPE || 'mcp:tools';
const SCOPES = [...new Set([SCOPE, ...(process.env.SCOPES || '').split(' ').filter(Boolean)])];
let accessTTL = Number(process.env.ACCESS_TTL) || 600;
const failing = {};
let evil = 0;
const GROUPS = { alice: ['sre', 'dev'], bob: ['sales'] };
const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';
const refused = new Set();

const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const rsaJwk = { ...rsa.privateKey.export({ format: 'jwk' }), kid: 'rsa-1', alg: 'RS256', use: 'sig' };
const ecJwk = { ...ec.privateKey.export({ format: 'jwk' }), kid: 'ec-1', alg: 'ES256', use: 'sig' };

// The private_key_jwt clients' keys: the AS holds the public halves.
const clientEc = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const clientRsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
const pem = (k) => k.privateKey.export({ format: 'pem', type: 'pkcs8' });
const publicJwk = (k) => k.publicKey.export({ format: 'jwk' });

const counts = {};
const server = http.createServer();
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const port = server.address().port;
const issuer = `http://127.0.0.1:${port}`;

const provider = new Provider(issuer, {
  clients: [
    { client_id: 'test-client', client_secret: 'test-secret', redirect_uris: ['http://127.0.0.1/callback'],
      grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'] },
    { client_id: 'es-client', client_secret: 'es-secret', redirect_uris: ['http://127.0.0.1/callback'],
      grant_types: ['authorization_code'], response_types: ['code'] },
    { client_id: 'opaque-client', client_secret: 'opaque-secret', redirect_uris: [],
      grant_types: ['client_credentials'], response_types: [] },
    { client_id: 'upstream-client', client_secret: 'upstream-secret', application_type: 'native',
      redirect_uris: ['http://127.0.0.1/callback'], grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'] },
    { client_id: 'cc-client', client_secret: 'cc-secret', redirect_uris: [],
      grant_types: ['client_credentials'], response_types: [] },
    { client_id: 'sluice', client_secret: 'sluice-secret', redirect_uris: [], grant_types: [],
      response_types: [] },
    { client_id: 'jwt-cc-client', token_endpoint_auth_method: 'private_key_jwt',
      token_endpoint_auth_signing_alg: 'ES256', jwks: { keys: [publicJwk(clientEc)] },
      redirect_uris: [], grant_types: ['client_credentials'], response_types: [] },
    { client_id: 'jwt-client', token_endpoint_auth_method: 'private_key_jwt',
      token_endpoint_auth_signing_alg: 'RS256', jwks: { keys: [publicJwk(clientRsa)] },
      application_type: 'native', redirect_uris: ['http://127.0.0.1/callback'],
      grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'] },
    // Checked when first used: only with TOKEN_EXCHANGE=1 is its grant known.
    { client_id: 'tx-client', client_secret: 'tx-secret', application_type: 'native',
      redirect_uris: ['http://127.0.0.1/callback'], response_types: ['code'],
      grant_types: ['authorization_code', 'refresh_token', TOKEN_EXCHANGE] },
  ],
  jwks: { keys: [rsaJwk, ecJwk] },
  scopes: ['openid', 'offline_access', ...SCOPES],
  clientDefaults: { token_endpoint_auth_method: 'client_secret_basic' },
  features: {
    devInteractions: { enabled: true },
    registration: { enabled: true },
    introspection: { enabled: true },
    revocation: { enabled: true },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => RESOURCE,
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, indicator, client) => ({
        scope: SCOPES.join(' '),
        audience: indicator,
        accessTokenTTL: accessTTL,
        accessTokenFormat: client.clientId === 'opaque-client' ? 'opaque' : 'jwt',
        jwt: { sign: { alg: client.clientId === 'es-client' ? 'ES256' : 'RS256' } },
      }),
    },
  },
  extraTokenClaims: (ctx, token) => (token.accountId ? { groups: GROUPS[token.accountId] || [] } : undefined),
  findAccount: (ctx, id) => ({ accountId: id, claims: () => ({ sub: id }) }),
  pkce: { required: () => true },
  ttl: { AccessToken: () => accessTTL, ClientCredentials: () => accessTTL },
});
provider.on('server_error', (ctx, err) => console.error('oidc server_error', err));

// A JWT signed with one of this server's keys, by this issuer, unexpired:
// its claims, else null.
function ownJwt(token) {
  const parts = String(token).split('.');
  if (parts.length !== 3) return null;
  try {
    const h = JSON.parse(Buffer.from(parts[0], 'base64url'));
    const key = [rsaJwk, ecJwk].find((k) => k.kid === h.kid && k.alg === h.alg);
    if (!key) return null;
    const pub = createPublicKey({ key, format: 'jwk' });
    const ok = cryptoVerify('sha256', Buffer.from(`${parts[0]}.${parts[1]}`),
      h.alg === 'ES256' ? { key: pub, dsaEncoding: 'ieee-p1363' } : pub, Buffer.from(parts[2], 'base64url'));
    const c = JSON.parse(Buffer.from(parts[1], 'base64url'));
    if (!ok || c.iss !== issuer || typeof c.exp !== 'number' || c.exp * 1000 <= Date.now()) return null;
    return c;
  } catch {
    return null;
  }
}

if (process.env.TOKEN_EXCHANGE === '1') {
  provider.registerGrantType(TOKEN_EXCHANGE, async (ctx) => {
    const p = ctx.oidc.params;
    counts['token-exchange'] = (counts['token-exchange'] || 0) + 1;
    if (!p.subject_token || p.subject_token_type !== ACCESS_TOKEN_TYPE)
      throw new errors.InvalidRequest('subject_token of type access_token required');
    const claims = ownJwt(p.subject_token);
    if (!claims?.sub) throw new errors.InvalidGrant('subject_token is not a valid token of this issuer');
    if (refused.has(claims.sub)) throw new errors.InvalidGrant('exchange refused on purpose (/_refuse)');
    const resource = Array.isArray(p.resource) ? p.resource[0] : p.resource;
    if (!resource || (RESOURCE && resource !== RESOURCE)) throw new errors.InvalidTarget('unknown resource');
    const asked = String(p.scope || SCOPE).split(' ').filter((s) => SCOPES.includes(s));
    const at = new provider.AccessToken({ accountId: claims.sub, client: ctx.oidc.client,
      scope: asked.join(' ') || SCOPE, gty: 'token-exchange' });
    at.resourceServer = { scope: SCOPES.join(' '), audience: resource, accessTokenTTL: accessTTL,
      accessTokenFormat: 'jwt', jwt: { sign: { alg: 'RS256' } } };
    const value = await at.save();
    ctx.body = { access_token: value, issued_token_type: ACCESS_TOKEN_TYPE, token_type: 'Bearer',
      expires_in: at.expiration, scope: at.scope };
  }, ['subject_token', 'subject_token_type', 'requested_token_type', 'resource', 'scope', 'audience'], ['resource']);
}

const callback = provider.callback();
server.on('request', (req, res) => {
  const path = req.url.split('?')[0];
  counts[path] = (counts[path] || 0) + 1;
  const q = new URL(req.url, issuer).searchParams;
  const json = (status, body) => {
    res.statusCode = status;
    res.setHeader('Content-Type', 'application/json');
    res.end(JSON.stringify(body));
  };
  if (path === '/_counts') return json(200, counts);
  if (path === '/_ttl') {
    accessTTL = Number(q.get('s'));
    return json(200, { ttl: accessTTL });
  }
  if (path === '/_fail') {
    failing[q.get('path')] = Number(q.get('n') || 1);
    return json(200, failing);
  }
  if (path === '/_refuse') {
    if (q.get('off') === '1') refused.delete(q.get('sub'));
    else refused.add(q.get('sub'));
    return json(200, { refused: [...refused] });
  }
  if (path === '/_evil') {
    evil = Number(q.get('n') || 1);
    return json(200, { evil });
  }
  if (failing[path] > 0) {
    failing[path]--;
    return json(500, { error: 'server_error', error_description: 'failing on purpose (/_fail)' });
  }
  if (path === '/token' && evil > 0) {
    evil--;
    req.resume();
    return json(200, { access_token: 'evil\r\nX-Injected: yes', token_type: 'Bearer', expires_in: 600 });
  }
  callback(req, res);
});
console.log(JSON.stringify({ issuer, port, keys: [rsaJwk, ecJwk], clientKeys: { es: pem(clientEc), rs: pem(clientRsa) } }));

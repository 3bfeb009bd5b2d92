// An MCP server that requires OAuth, for the upstream OAuth tests
// (tests/e2e/upstreamauth.test.mjs): the official SDK's McpServer over
// Streamable HTTP (stateless) on 127.0.0.1:PORT/mcp, a resource server of
// the authorization server ISSUER (tests/servers/oidc/server.mjs).
//
// Every request needs `Authorization: Bearer <JWT>` signed by the issuer's
// keys (jose, the issuer's JWKS), with iss = ISSUER, aud = this server's
// URL, not expired, and the scope mcp:tools; else 401 with
//   WWW-Authenticate: Bearer resource_metadata=".../.well-known/oauth-protected-resource/mcp", scope="mcp:tools"
// A tools/call of admin_op without mcp:admin gets 403 error="insufficient_scope"
// (MCP step-up); with LIST_SCOPE=s, so does tools/list without s (a server
// whose tools are listed only to a wider token). Protected Resource Metadata
// (RFC 9728) names ISSUER; with BAD_PRM=1 it names another resource (and
// another server's issuer).
//
// With MODERN=1 it speaks MCP 2026-07-28 only, written by hand: a request
// without that version (header and _meta) is refused with 400 and -32022
// before any token is looked at (initialize among them), server/discover
// answers without a token, and everything else needs one as above.
//
// Tools: whoami (the token's sub, scope and client_id), admin_op (needs mcp:admin).
// GET /_stats answers { requests, injected } (injected: requests that carried
// a header named X-Injected, which only a token holding CR LF could add).
//
//   PORT=n ISSUER=http://127.0.0.1:m node server.mjs   prints one JSON line: { url }
import http from 'node:http';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';

const PORT = Number(process.env.PORT || 0);
const ISSUER = process.env.ISSUER;
const BASE = `http://127.0.0.1:${PORT}`;
const RESOURCE = `${BASE}/mcp`;
const PRM_URL = `${BASE}/.well-known/oauth-protected-resource/mcp`;
const NEED = 'mcp:tools';
const ADMIN = 'mcp:admin';
const LIST_SCOPE = process.env.LIST_SCOPE || '';
const jwks = createRemoteJWKSet(new URL(`${ISSUER}/jwks`));
const stats = { requests: 0, injected: 0 };

function prm() {
	if (process.env.BAD_PRM === '1')
		return { resource: 'http://127.0.0.1:9/mcp', authorization_servers: ['http://127.0.0.1:9'], scopes_supported: [NEED] };
	return { resource: RESOURCE, authorization_servers: [ISSUER], scopes_supported: [NEED, ADMIN],
		bearer_methods_supported: ['header'] };
}

function challenge(res, status, error, scope) {
	const parts = [`resource_metadata="${PRM_URL}"`, `scope="${scope}"`];
	if (error) parts.push(`error="${error}"`);
	res.writeHead(status, { 'WWW-Authenticate': `Bearer ${parts.join(', ')}`, 'Content-Type': 'application/json' });
	res.end(JSON.stringify({ error: error || 'unauthorized' }));
}

async function verify(req) {
	const m = /^Bearer (\S+)$/.exec(req.headers.authorization || '');
	if (!m) return { why: null };
	try {
		const { payload } = await jwtVerify(m[1], jwks, { issuer: ISSUER, audience: RESOURCE, clockTolerance: 0 });
		if (typeof payload.exp !== 'number') return { why: 'invalid_token' };
		return { claims: payload, scopes: String(payload.scope || '').split(' ').filter(Boolean) };
	} catch {
		return { why: 'invalid_token' };
	}
}

function mcpServer() {
	const s = new McpServer({ name: 'protected-fixture', version: '1.0.0' });
	const who = (extra) => ({ content: [{ type: 'text', text: JSON.stringify(extra.authInfo.extra) }] });
	s.registerTool('whoami', { description: 'Who the token says the caller is' }, async (extra) => who(extra));
	s.registerTool('admin_op', { description: 'Needs the scope mcp:admin' }, async (extra) => who(extra));
	return s;
}

const MODERN = '2026-07-28';
const TOOLS = [
	{ name: 'whoami', description: 'Who the token says the caller is', inputSchema: { type: 'object' } },
	{ name: 'admin_op', description: 'Needs the scope mcp:admin', inputSchema: { type: 'object' } },
];

function answer(res, status, msg) {
	res.writeHead(status, { 'Content-Type': 'application/json' });
	res.end(JSON.stringify({ jsonrpc: '2.0', ...msg }));
}

// MODERN=1: one 2026-07-28 request, the body already read.
async function modern(req, res, raw) {
	let m;
	try {
		m = JSON.parse(raw);
	} catch {
		return answer(res, 400, { id: null, error: { code: -32700, message: 'Parse error' } });
	}
	const version = m?.params?._meta?.['io.modelcontextprotocol/protocolVersion'];
	if (req.headers['mcp-protocol-version'] !== MODERN || version !== MODERN)
		return answer(res, 400, { id: m?.id ?? null, error: { code: -32022, message: 'Unsupported protocol version', data: { supported: [MODERN], requested: String(version ?? req.headers['mcp-protocol-version'] ?? '') } } });
	if (m.id === undefined) {
		res.writeHead(202);
		return res.end();
	}
	if (m.method === 'server/discover')
		return answer(res, 200, { id: m.id, result: { resultType: 'complete', supportedVersions: [MODERN], capabilities: { tools: {} }, _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'protected-2026', version: '1.0.0' } } } });
	const v = await verify(req);
	if (!v.claims) return challenge(res, 401, v.why, NEED);
	if (!v.scopes.includes(NEED)) return challenge(res, 403, 'insufficient_scope', NEED);
	const c = v.claims;
	if (m.method === 'tools/list') return answer(res, 200, { id: m.id, result: { resultType: 'complete', tools: TOOLS } });
	if (m.method === 'tools/call' && m.params?.name === 'whoami')
		return answer(res, 200, { id: m.id, result: { resultType: 'complete', content: [{ type: 'text', text: JSON.stringify({ sub: c.sub, scope: c.scope, client_id: c.client_id }) }] } });
	return answer(res, 404, { id: m.id, error: { code: -32601, message: `Method not found: ${m.method}` } });
}

const srv = http.createServer(async (req, res) => {
	const path = req.url.split('?')[0];
	if (path === '/_stats') {
		res.setHeader('Content-Type', 'application/json');
		return res.end(JSON.stringify(stats));
	}
	if (path.startsWith('/.well-known/oauth-protected-resource')) {
		res.setHeader('Content-Type', 'application/json');
		return res.end(JSON.stringify(prm()));
	}
	if (path !== '/mcp') {
		res.writeHead(404);
		return res.end();
	}
	stats.requests++;
	if (req.headers['x-injected'] !== undefined) stats.injected++;
	const chunks = [];
	for await (const c of req) chunks.push(c);
	if (process.env.MODERN === '1') return modern(req, res, Buffer.concat(chunks).toString());
	const v = await verify(req);
	if (!v.claims) return challenge(res, 401, v.why, NEED);
	if (!v.scopes.includes(NEED)) return challenge(res, 403, 'insufficient_scope', NEED);
	let body;
	try {
		body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString()) : undefined;
	} catch {
		res.writeHead(400);
		return res.end();
	}
	const calls = [body].flat().filter((m) => m?.method === 'tools/call' && m.params?.name === 'admin_op');
	if (calls.length && !v.scopes.includes(ADMIN)) return challenge(res, 403, 'insufficient_scope', `${NEED} ${ADMIN}`);
	const lists = [body].flat().filter((m) => m?.method === 'tools/list');
	if (LIST_SCOPE && lists.length && !v.scopes.includes(LIST_SCOPE))
		return challenge(res, 403, 'insufficient_scope', `${NEED} ${LIST_SCOPE}`);
	const c = v.claims;
	req.auth = { token: 'x', clientId: String(c.client_id || ''), scopes: v.scopes, expiresAt: c.exp,
		extra: { sub: c.sub, scope: c.scope, client_id: c.client_id } };
	const server = mcpServer();
	const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
	res.on('close', () => {
		transport.close();
		server.close();
	});
	await server.connect(transport);
	await transport.handleRequest(req, res, body);
});
srv.listen(PORT, '127.0.0.1', () => console.log(JSON.stringify({ url: RESOURCE })));

// Identities on the HTTP front end (docs/internals/AUTH.md): static tokens
// that each name a person (sluice.http.auth.tokens), sessions bound to the
// identity that opened them, and the audit saying who did what without
// ever writing a token.
import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { catalog, closeAll, eventually, httpClient, httpRequest, runSluice, startHttp, writeConfig, LEGACY } from './helpers.mjs';

after(closeAll);

const ALICE = 'alice-token-7f3a', BOB = 'bob-token-91c2';

function post(gw, token, body, headers = {}) {
	return httpRequest({ host: '127.0.0.1', port: gw.port, path: '/mcp', method: 'POST',
		headers: { authorization: `Bearer ${token}`, ...headers } }, body);
}

describe('identities from static tokens', () => {
	test('a session answers only the identity that opened it; audit lines name it, never the token', async () => {
		const audit = path.join(path.dirname(writeConfig({})), 'audit.jsonl');
		const gw = await startHttp({
			servers: { github: catalog('github') },
			sluice: { audit: { file: audit }, http: { auth: { tokens: [
				{ token: ALICE, subject: 'alice', groups: ['sre'] },
				{ token: BOB, subject: 'bob' },
			] } } },
		});
		const { client, transport } = await httpClient(gw.url, { headers: { Authorization: `Bearer ${ALICE}` } });
		const aliceSid = transport.sessionId;
		assert.ok(aliceSid);
		const { tools } = await client.listTools();
		const tool = tools.find((t) => /list_issues/.test(t.name));
		assert.ok(tool, 'the catalog tool is listed');
		await client.callTool({ name: tool.name, arguments: { repo: 'acme/api' } });

		// Bob, with a valid token of his own, cannot use Alice's session:
		// 404 (not 403), so that session ids cannot be probed.
		const ping = { jsonrpc: '2.0', id: 9, method: 'ping' };
		const asBob = await post(gw, BOB, ping, { 'mcp-session-id': aliceSid, 'mcp-protocol-version': LEGACY });
		assert.equal(asBob.status, 404);
		const asAlice = await post(gw, ALICE, ping, { 'mcp-session-id': aliceSid, 'mcp-protocol-version': LEGACY });
		assert.equal(asAlice.status, 200);

		const lines = await eventually(() => {
			const ls = fs.existsSync(audit) ? fs.readFileSync(audit, 'utf8').trim().split('\n').map((l) => JSON.parse(l)) : [];
			return ls.some((l) => l.type === 'call') && ls;
		}, 5000, 50, 'an audit line');
		const call = lines.find((l) => l.type === 'call');
		assert.equal(call.subject, 'alice');
		assert.equal(call.profile, null);
		const text = fs.readFileSync(audit, 'utf8');
		assert.ok(!text.includes(ALICE) && !text.includes(BOB), 'no token in the audit');
		assert.ok(!gw.stderr().includes(ALICE), 'no token in the log');
		await client.close();
		await gw.close();
	});

	test('sluice check says who may call, and shows no token', async () => {
		const file = writeConfig({ github: catalog('github') }, { http: { auth: { tokens: [
			{ token: ALICE, subject: 'alice' }, { token: BOB, subject: 'bob' }] } } });
		const r = await runSluice(['check', '--config', file], 60000);
		assert.equal(r.code, 0, r.stderr);
		assert.match(r.stdout, /^http: with --http, plain HTTP; who may call: 2 static tokens;$/m);
		assert.ok(!r.stdout.includes(ALICE) && !r.stderr.includes(ALICE));
	});

	// Issue 31: the stages decide with the caller of each request, not the
	// one the session was opened with. Two tokens name the same identity
	// (alice, as after a rotation) with other groups: the session answers
	// both, and the policy (only group sre merges) sees each request's own.
	test('each request is decided and listed with its own token\'s caller, not the session opener\'s', async () => {
		const OLD = 'alice-old-4d0c', NEW = 'alice-new-e81b';
		const gw = await startHttp({
			servers: { github: catalog('github') },
			sluice: {
				policy: { rules: [
					{ match: '*.merge_*', who: ['group:sre'], action: 'allow' },
					{ match: '*.merge_*', action: 'deny' }] },
				http: { auth: { tokens: [
					{ token: OLD, subject: 'alice' },
					{ token: NEW, subject: 'alice', groups: ['sre'] },
				] } },
			},
		});
		const init = await post(gw, OLD, { jsonrpc: '2.0', id: 1, method: 'initialize', params: {
			protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: 'e2e', version: '1' } } });
		const sid = init.headers['mcp-session-id'];
		assert.ok(sid, 'a session');
		const headers = { 'mcp-session-id': sid, 'mcp-protocol-version': LEGACY };
		assert.equal((await post(gw, OLD, { jsonrpc: '2.0', method: 'notifications/initialized' }, headers)).status, 202);
		const merge = (id, token) => post(gw, token, { jsonrpc: '2.0', id, method: 'tools/call', params: {
			name: 'github__merge_pull_request', arguments: { owner: 'acme', repo: 'api', pull_number: 412 } } },
		headers);
		const denied = await merge(2, OLD);
		assert.equal(denied.json.result.isError, true);
		assert.match(denied.json.result.content[0].text, /policy: github\.merge_pull_request is denied by rule 2/);
		// The same session, the request with the sre token: allowed.
		const allowed = await merge(3, NEW);
		assert.equal(allowed.status, 200);
		assert.notEqual(allowed.json.result.isError, true, JSON.stringify(allowed.json));
		// What each request lists is its own caller's too: the deny hides the tool from
		// the opener's token and shows it to the sre token, in the same session.
		const names = async (id, token) => (await post(gw, token, { jsonrpc: '2.0', id, method: 'tools/list' },
			headers)).json.result.tools.map((t) => t.name);
		assert.ok(!(await names(4, OLD)).includes('github__merge_pull_request'));
		assert.ok((await names(5, NEW)).includes('github__merge_pull_request'));
		await gw.close();
	});

	test('an unknown token gets 401 with an RFC 6750 challenge and no session', async () => {
		const gw = await startHttp({ sluice: { http: { auth: { tokens: [{ token: ALICE, subject: 'alice' }] } } } });
		const r = await post(gw, 'not-a-token', { jsonrpc: '2.0', id: 1, method: 'ping' });
		assert.equal(r.status, 401);
		assert.match(r.headers['www-authenticate'], /^Bearer .*error="invalid_token"/);
		assert.equal(r.headers['mcp-session-id'], undefined);
		const none = await httpRequest({ host: '127.0.0.1', port: gw.port, path: '/mcp', method: 'POST' },
			{ jsonrpc: '2.0', id: 1, method: 'ping' });
		assert.equal(none.status, 401);
		assert.doesNotMatch(none.headers['www-authenticate'], /error=/);
		await gw.close();
	});
});

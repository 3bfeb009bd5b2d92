// The operator's surface (/status, /metrics, /admin; docs/ADMIN.md "Who can
// open it") against a hostile network, issue 32 findings 3 and 14:
// - Behind a proxy on the same host every peer is loopback. A request a
//   proxy relayed is never local: one carrying Forwarded, X-Forwarded-For,
//   X-Real-IP, Via..., or from a peer listed in sluice.http.proxies, wants
//   sluice.http.adminToken. Through a real HAProxy running the shipped
//   deploy/haproxy.cfg, the pages are refused from outside (HAProxy's deny,
//   /%61dmin included) while /mcp and the health check work; with that deny
//   taken out of the file, sluice itself still refuses them (the file's
//   `option forwardfor`), GET and POST.
// - DNS rebinding: a wildcard listener (0.0.0.0) answers only Host names of
//   this gateway (localhost, *.localhost, IP literals, publicUrl's host,
//   sluice.http.allowedHosts); `Host: evil.example` is 403 on every path, on
//   0.0.0.0 and on [::].
import { test, describe, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { writeFileSync } from 'node:fs';

import { catalog, closeAll, eventually, freePort, runSluice, startHttp, httpRequest, writeConfig } from './helpers.mjs';
import { fleetPorts, haproxyCmd, renderHaproxy, startHaproxy, removeDir } from './fleet.mjs';

const servers = { github: catalog('github') };
const ADMIN = 'operator-admin-token-0123456789abcdef';
const started = [];
const cleanups = [];

after(async () => {
	for (const f of cleanups.reverse()) await f();
	await closeAll();
	for (const g of started) assert.doesNotMatch(g.stderr(), /Sanitizer|runtime error/, g.stderr().slice(-3000));
});

const get = (port, p, headers = {}, method = 'GET', body) =>
	httpRequest({ host: '127.0.0.1', port, path: p, method, headers: { accept: '*/*', ...headers } }, body);

const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'operator-e2e', version: '1' } } };

describe('a request a proxy relayed is never local', () => {
	test('a loopback peer with a forwarding header gets no operator page without the admin token', async () => {
		const gw = await startHttp({ servers, sluice: { http: { adminToken: ADMIN } } });
		started.push(gw);
		for (const p of ['/status', '/metrics', '/admin'])
			assert.equal((await get(gw.port, p)).status, 200, `${p} from this host`);
		const relayed = [
			{ 'x-forwarded-for': '203.0.113.9' },
			{ 'x-forwarded-for': '127.0.0.1' },
			{ forwarded: 'for=203.0.113.9;proto=https' },
			{ 'x-real-ip': '203.0.113.9' },
			{ 'x-forwarded-host': 'mcp.example.com' },
			{ 'x-forwarded-proto': 'https' },
			{ via: '1.1 proxy' },
		];
		for (const h of relayed)
			for (const p of ['/status', '/metrics', '/admin']) {
				const r = await get(gw.port, p, h);
				assert.equal(r.status, 403, `${p} with ${JSON.stringify(h)}: ${r.text}`);
				assert.match(r.text, /not through a proxy/);
			}
		// An admin POST relayed: refused before its form is read.
		const post = await get(gw.port, '/admin', { 'x-forwarded-for': '203.0.113.9', origin: `http://127.0.0.1:${gw.port}`, 'content-type': 'application/x-www-form-urlencoded' }, 'POST', 'action=reset&csrf=x');
		assert.equal(post.status, 403, post.text);
		// The operator's token opens them whatever the path was.
		const tok = await get(gw.port, '/status', { 'x-forwarded-for': '203.0.113.9', authorization: `Bearer ${ADMIN}` });
		assert.equal(tok.status, 200, tok.text);
		assert.ok(tok.json?.upstreams, tok.text);
		// /mcp does not care: the forwarding headers are for the operator's gate only.
		assert.equal((await get(gw.port, '/mcp', { 'x-forwarded-for': '203.0.113.9', accept: 'application/json, text/event-stream' }, 'POST', init)).status, 200);
	});

	test('a peer listed in sluice.http.proxies is never local, headers or not; sluice status sends the token', async () => {
		const listen = `127.0.0.1:${await freePort()}`;
		const configPath = writeConfig(servers, { http: { listen, adminToken: ADMIN, proxies: ['127.0.0.0/8'] } });
		const gw = await startHttp({ configPath, listen });
		started.push(gw);
		for (const p of ['/status', '/metrics', '/admin']) {
			const r = await get(gw.port, p);
			assert.equal(r.status, 403, `${p}: ${r.text}`);
		}
		assert.equal((await get(gw.port, '/status', { authorization: `Bearer ${ADMIN}` })).status, 200);
		assert.equal((await get(gw.port, '/mcp', {}, 'POST', init)).status, 200);
		// `sluice status` of this config asks its own listen address with
		// the config's adminToken; with --url it sends none.
		const st = await runSluice(['status', '--json', '--config', configPath]);
		assert.equal(st.code, 0, st.stderr);
		assert.ok(JSON.parse(st.stdout).upstreams, st.stdout);
		const other = await runSluice(['status', '--url', `http://${listen}`]);
		assert.notEqual(other.code, 0);
		assert.match(other.stderr, /403/);
	});
});

describe('through HAProxy running deploy/haproxy.cfg', () => {
	// One replica behind the shipped file (its three server lines name it).
	// stripDeny: without the frontend's deny; proxies: the replica lists
	// HAProxy's address in sluice.http.proxies, and the health check sends
	// the admin token as the file's comment says.
	async function behindHaproxy({ stripDeny = false, proxies = false } = {}) {
		const ports = await fleetPorts(1);
		cleanups.push(() => removeDir(ports.dir));
		const http = proxies ? { adminToken: ADMIN, proxies: ['127.0.0.1'] } : {};
		const gw = await startHttp({ servers, listen: `127.0.0.1:${ports.replicas[0]}`, sluice: { exposure: 'passthrough', http } });
		started.push(gw);
		let cfg = renderHaproxy({
			listen: `127.0.0.1:${ports.front}`,
			replicas: [1, 2, 3].map(() => `127.0.0.1:${gw.port}`),
			statsSocket: path.join(ports.dir, 'haproxy.sock'),
		});
		if (proxies) {
			const check = /^(\s*http-check send .*hdr Host localhost)$/m;
			assert.match(cfg, check);
			cfg = cfg.replace(check, `$1 hdr Authorization "Bearer ${ADMIN}"`);
		}
		if (stripDeny) {
			const before = cfg;
			cfg = cfg.split('\n').filter((l) => !/^\s*http-request deny .*\/admin/.test(l)).join('\n');
			assert.notEqual(cfg, before, 'deploy/haproxy.cfg has the deny line this test takes out');
		}
		const haproxy = await startHaproxy(cfg, ports.dir, ports.front);
		cleanups.push(() => haproxy.stop());
		// The health check (GET /status from HAProxy itself) passes: /mcp is served.
		const deadline = Date.now() + 10000;
		let r;
		do {
			r = await get(ports.front, '/mcp', { accept: 'application/json, text/event-stream' }, 'POST', init);
			if (r.status === 200) break;
			await new Promise((res) => setTimeout(res, 100));
		} while (Date.now() < deadline);
		assert.equal(r.status, 200, `initialize through HAProxy: ${r.status} ${r.text}\n${haproxy.log()}`);
		return { front: ports.front, gw, haproxy, dir: ports.dir };
	}

	test('the shipped file refuses /admin, /status and /metrics from outside; /mcp and the health check work', async () => {
		const { front, gw } = await behindHaproxy();
		for (const p of ['/admin', '/status', '/metrics', '/%61dmin', '/Admin', '/status?x=1']) {
			const r = await get(front, p);
			assert.equal(r.status, 403, `${p} through HAProxy: ${r.text}`);
		}
		const post = await get(front, '/admin', { origin: 'http://localhost', 'content-type': 'application/x-www-form-urlencoded' }, 'POST', 'action=reset');
		assert.equal(post.status, 403);
		// A path HAProxy does not match is not the page at sluice either.
		for (const p of ['//admin', '/./status', '/admin/'])
			assert.notEqual((await get(front, p)).status, 200, p);
		// On the replica's own port, from this host: still the operator's.
		assert.equal((await get(gw.port, '/status')).status, 200);
	});

	test("without the file's deny, sluice refuses what HAProxy relays (option forwardfor)", async () => {
		const { front } = await behindHaproxy({ stripDeny: true });
		for (const p of ['/admin', '/status', '/metrics']) {
			const r = await get(front, p);
			assert.equal(r.status, 403, `${p} through HAProxy without its deny: ${r.text}`);
			assert.match(r.text, /not through a proxy/);
		}
		const post = await get(front, '/admin', { origin: 'http://localhost', 'content-type': 'application/x-www-form-urlencoded' }, 'POST', 'action=reset');
		assert.equal(post.status, 403);
	});

	test('with sluice.http.proxies naming HAProxy and no deny: refused without the token, and the health check sends it', async () => {
		const { front, gw, dir } = await behindHaproxy({ stripDeny: true, proxies: true });
		// HAProxy's own check of /status, with the token, passed (L7OK).
		await eventually(async () => /^sluice,r1,(?:[^,]*,){34}L7OK,/m.test(await haproxyCmd(dir, 'show stat')), 10000, 100, 'the health check L7OK');
		for (const p of ['/admin', '/status', '/metrics'])
			assert.equal((await get(front, p)).status, 403, p);
		// Its own host is a proxy's address now: the token is the way in.
		assert.equal((await get(gw.port, '/status')).status, 403);
		assert.equal((await get(gw.port, '/status', { authorization: `Bearer ${ADMIN}` })).status, 200);
	});
});

describe('a wildcard listener checks Host (DNS rebinding)', () => {
	test('Host evil.example is refused on every path; names of this gateway pass', async () => {
		const configPath = writeConfig(servers, {
			http: { bearerToken: 'wildcard-token', allowedHosts: ['gw.internal'], publicUrl: 'https://mcp.example.com/base' },
		});
		const gw = await startHttp({ configPath, listen: '0.0.0.0:0' });
		started.push(gw);
		const port = gw.port;
		for (const host of ['evil.example', `evil.example:${port}`, `127.0.0.1.evil.example:${port}`, 'localhost.evil.example',
			'mcp.example.com.evil.example', 'gw.internal.evil.example', `evil.example:${port}x`, 'a:b:c'])
			for (const p of ['/status', '/metrics', '/admin', '/mcp', '/oauth/login/AAAAAAAAAAAAAAAAAAAAAA']) {
				const r = await get(port, p, { host });
				assert.equal(r.status, 403, `${p} with Host ${host}: ${r.status} ${r.text}`);
				assert.match(r.text, /Host not allowed/);
			}
		for (const host of [`localhost:${port}`, 'localhost', `app.localhost:${port}`, `127.0.0.1:${port}`, '127.0.0.1',
			'10.20.30.40', `[::1]:${port}`, 'mcp.example.com', 'MCP.example.com:443', 'gw.internal', 'GW.Internal:8443']) {
			const r = await get(port, '/status', { host });
			assert.equal(r.status, 200, `/status with Host ${host}: ${r.text}`);
		}
		// Another port with a loopback name is another service.
		assert.equal((await get(port, '/status', { host: 'localhost:1' })).status, 403);
		// The operator hears of it once, with what to do (not once a request).
		assert.equal(gw.stderr().match(/Host is not a name of this gateway/g)?.length, 1, gw.stderr());
		assert.match(gw.stderr(), /sluice\.http\.allowedHosts \(logged once\)/);
	});
});

test('an IPv6 wildcard listener ([::]) checks Host the same way', async () => {
	const configPath = writeConfig(servers, { http: { bearerToken: 'wildcard-token' } });
	const gw = await startHttp({ configPath, listen: '[::]:0' });
	started.push(gw);
	const get6 = (host) => httpRequest({ host: '::1', port: gw.port, path: '/status', method: 'GET', headers: { accept: '*/*', host } });
	assert.equal((await get6('evil.example')).status, 403);
	assert.equal((await get6(`evil.example:${gw.port}`)).status, 403);
	for (const host of [`[::1]:${gw.port}`, '[fd00::2]', `localhost:${gw.port}`, '127.0.0.1'])
		assert.equal((await get6(host)).status, 200, host);
});

// HTTPS on the front end (sluice.http.tls; docs/internals/HTTP.md, "TLS"):
// each test makes its own CA and server certificates with the openssl CLI
// in the config's temp dir, and talks to sluice only through clients that
// verify against that CA (the SDK over undici, raw node:https). A reload
// on SIGHUP swaps the certificate under load without failing a request,
// and a broken key is refused with the old certificate kept.
import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import tls from 'node:tls';
import { Agent, fetch as undiciFetch } from 'undici';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { catalog, closeAll, eventually, httpRequest, runSluice, startHttp, writeConfig, LEGACY } from './helpers.mjs';

after(closeAll);

const TOKEN = 'tls-e2e-token-5b1d';

function openssl(dir, ...args) {
	execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
}

// A CA (ca.pem) and a P-256 key (name.key) in dir.
function makeCa(dir) {
	openssl(dir, 'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes',
		'-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=sluice e2e CA');
	return fs.readFileSync(path.join(dir, 'ca.pem'));
}

function makeKey(dir, name) {
	openssl(dir, 'genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', name);
}

// A server certificate for 127.0.0.1 and localhost, signed by the CA, with
// the key in keyName; written to out (a name in dir). serial: hex.
function issue(dir, { serial, keyName, out }) {
	fs.writeFileSync(path.join(dir, 'san.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
	openssl(dir, 'req', '-new', '-key', keyName, '-out', 'srv.csr', '-subj', '/CN=localhost');
	openssl(dir, 'x509', '-req', '-in', 'srv.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key',
		'-set_serial', `0x${serial}`, '-days', '1', '-extfile', 'san.ext', '-out', out);
}

// Files are replaced whole (rename), as a certificate manager does.
function replace(dir, from, to) {
	fs.renameSync(path.join(dir, from), path.join(dir, to));
}

// The config dir with ca.pem, srv.key and srv.pem (serial 1001), and a
// config naming them relative to itself.
function setup(sluice = {}) {
	const configPath = writeConfig({ github: catalog('github') }, {
		http: { tls: { certFile: 'srv.pem', keyFile: 'srv.key' }, ...(sluice.http ?? {}) },
		...sluice.rest,
	});
	const dir = path.dirname(configPath);
	const ca = makeCa(dir);
	makeKey(dir, 'srv.key');
	issue(dir, { serial: '1001', keyName: 'srv.key', out: 'srv.pem' });
	return { configPath, dir, ca };
}

// The serial of the certificate a new handshake presents (hex, upper case).
function peerSerial(port, ca) {
	return new Promise((resolve, reject) => {
		const s = tls.connect({ host: '127.0.0.1', port, ca, servername: 'localhost' }, () => {
			const serial = s.getPeerCertificate().serialNumber;
			s.end();
			resolve(serial);
		});
		s.on('error', reject);
		s.setTimeout(5000, () => s.destroy(new Error('timeout')));
	});
}

// One request on a connection (and handshake) of its own.
function httpsRequest(port, ca, opts, body) {
	const headers = { accept: 'application/json, text/event-stream', 'content-type': 'application/json', ...opts.headers };
	return new Promise((resolve, reject) => {
		const req = https.request({ host: '127.0.0.1', port, path: '/mcp', method: 'POST', agent: false, ca,
			servername: 'localhost', ...opts, headers }, (res) => {
			const serial = res.socket.getPeerCertificate().serialNumber;
			let text = '';
			res.setEncoding('utf8');
			res.on('data', (c) => (text += c));
			res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, text, serial }));
		});
		req.on('error', reject);
		req.setTimeout(10000, () => req.destroy(new Error('timeout')));
		req.end(body === undefined ? undefined : JSON.stringify(body));
	});
}

// An SDK 1.x client over HTTPS: the transport's fetch is undici's, with an
// Agent that trusts only the test's CA (and keeps its connections alive).
async function sdkClient(url, ca, headers = {}) {
	const dispatcher = new Agent({ connect: { ca } });
	const transport = new StreamableHTTPClientTransport(new URL(url), {
		requestInit: { headers },
		fetch: (u, init) => undiciFetch(u, { ...init, dispatcher }),
	});
	const client = new Client({ name: 'tls-e2e', version: '1.0.0' }, { capabilities: {} });
	await client.connect(transport);
	return { client, transport, close: async () => { await client.close(); await dispatcher.close(); } };
}

const ping = (id) => ({ jsonrpc: '2.0', id, method: 'ping' });

describe('HTTPS front end', () => {
	test('the SDK and raw clients that trust the CA are served; others fail the handshake; plain HTTP is dropped quietly', async () => {
		const { configPath, ca } = setup();
		const gw = await startHttp({ configPath });
		assert.match(gw.url, /^https:\/\/127\.0\.0\.1:\d+\/mcp$/);
		assert.match(gw.stderr(), /TLS certificate .*srv\.pem \(serial 1001, valid until /);

		const sdk = await sdkClient(gw.url, ca);
		const { tools } = await sdk.client.listTools();
		const echo = tools.find((t) => t.name === 'github__echo');
		assert.ok(echo, 'the catalog is listed over HTTPS');
		const r = await sdk.client.callTool({ name: 'github__echo', arguments: { a: 1 } });
		assert.ok(!r.isError);

		const raw = await httpsRequest(gw.port, ca, { headers: { 'mcp-session-id': sdk.transport.sessionId,
			'mcp-protocol-version': LEGACY } }, ping(7));
		assert.equal(raw.status, 200);
		assert.equal(JSON.parse(raw.text).id, 7);
		assert.equal(raw.serial, '1001');

		// Origins: with TLS, the loopback https origins are allowed by default too.
		const hdrs = { 'mcp-session-id': sdk.transport.sessionId, 'mcp-protocol-version': LEGACY };
		for (const [origin, status] of [['https://localhost:5173', 200], ['https://127.0.0.1', 200],
			['http://localhost:5173', 200], ['https://evil.example', 403], ['https://localhost.evil.example', 403]])
			assert.equal((await httpsRequest(gw.port, ca, { headers: { ...hdrs, origin } }, ping(3))).status, status, origin);
		assert.equal((await httpsRequest(gw.port, ca, { headers: { ...hdrs, host: 'evil.example' } }, ping(4))).status, 403);

		// No CA: the client refuses the certificate.
		await assert.rejects(httpsRequest(gw.port, undefined, {}, ping(8)),
			(e) => /UNABLE_TO|SELF_SIGNED|CERT/.test(e.code ?? e.message));

		// Plain HTTP to the HTTPS port: no answer, the connection just ends.
		await assert.rejects(httpRequest({ host: '127.0.0.1', port: gw.port, path: '/mcp', method: 'POST' }, ping(9), 5000));
		await assert.rejects(httpRequest({ host: '127.0.0.1', port: gw.port, path: '/mcp', method: 'GET' }, undefined, 5000));

		// The gateway keeps serving, and said nothing above debug but the
		// one warning the refused Host asks for (once, naming allowedHosts).
		const again = await sdk.client.callTool({ name: 'github__echo', arguments: { b: 2 } });
		assert.ok(!again.isError);
		assert.equal(gw.proc.exitCode, null);
		const said = gw.stderr().split('\n').filter((l) => /sluice (warn|error)/.test(l));
		assert.deepEqual(said.map((l) => /Host is not a name of this gateway.*allowedHosts/.test(l)), [true]);
		await sdk.close();
		await gw.close();
	});

	test('a renewed certificate (same key, then a new key) is reloaded under load: no request fails, the session goes on, new handshakes get it; a broken key is refused', async () => {
		// A heartbeat every 500 ms: the SDK's GET stream, suspended while it
		// has nothing to send, notices its client gone at the next one.
		const { configPath, dir, ca } = setup({ http: { heartbeatMs: 500 } });
		const gw = await startHttp({ configPath, args: ['--log-level', 'debug'] });
		const sdk = await sdkClient(gw.url, ca);
		const sid = sdk.transport.sessionId;
		const hdrs = { 'mcp-session-id': sid, 'mcp-protocol-version': LEGACY };

		// The load: SDK calls on the session's kept-alive connections and raw
		// requests on new connections, each with its own handshake, bounded in
		// count and time.
		let stop = false;
		const failures = [], serials = new Set();
		let done = 0;
		const deadline = Date.now() + 30000;
		const worker = async (k) => {
			for (let i = 0; i < 2000 && !stop && Date.now() < deadline; i++) {
				try {
					if (k % 2) {
						const r = await sdk.client.callTool({ name: 'github__echo', arguments: { k, i } });
						if (r.isError) failures.push(`call ${k}/${i}: ${JSON.stringify(r.content)}`);
					} else {
						const r = await httpsRequest(gw.port, ca, { headers: hdrs }, ping(i));
						if (r.status !== 200) failures.push(`ping ${k}/${i}: ${r.status} ${r.text}`);
						serials.add(r.serial);
					}
					done++;
				} catch (e) {
					failures.push(`${k}/${i}: ${e.message}`);
				}
			}
		};
		const load = Promise.all([0, 1, 2, 3].map(worker));
		const reloads = () => (gw.stderr().match(/loaded: new connections get it/g) ?? []).length;
		await eventually(() => done >= 20, 10000, 20, 'the load to start');

		// Renewed with the same key.
		issue(dir, { serial: '1002', keyName: 'srv.key', out: 'next.pem' });
		replace(dir, 'next.pem', 'srv.pem');
		process.kill(gw.pid, 'SIGHUP');
		await eventually(() => reloads() === 1, 10000, 20, 'the first reload');
		assert.equal(await peerSerial(gw.port, ca), '1002');
		const mid = done;
		await eventually(() => done >= mid + 20, 10000, 20, 'requests after the first reload');

		// Renewed with a new key: both files replaced, then the signal.
		makeKey(dir, 'next.key');
		issue(dir, { serial: '1003', keyName: 'next.key', out: 'next.pem' });
		replace(dir, 'next.key', 'srv.key');
		replace(dir, 'next.pem', 'srv.pem');
		process.kill(gw.pid, 'SIGHUP');
		await eventually(() => reloads() === 2, 10000, 20, 'the second reload');
		assert.equal(await peerSerial(gw.port, ca), '1003');
		const late = done;
		await eventually(() => done >= late + 20, 10000, 20, 'requests after the second reload');

		// A broken key: refused, naming the file; the old certificate serves.
		fs.writeFileSync(path.join(dir, 'broken.key'), '-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n');
		replace(dir, 'broken.key', 'srv.key');
		process.kill(gw.pid, 'SIGHUP');
		await eventually(() => /config reload refused, the current config stays: sluice\.http\.tls\.keyFile: .*srv\.key: not an unencrypted PEM private key/.test(gw.stderr()),
			10000, 20, 'the refusal');
		assert.equal(await peerSerial(gw.port, ca), '1003');
		const last = done;
		await eventually(() => done >= last + 20, 10000, 20, 'requests after the refusal');

		stop = true;
		await load;
		assert.deepEqual(failures, []);
		assert.ok(serials.has('1001') && serials.has('1002') && serials.has('1003'), `handshakes saw ${[...serials]}`);
		// The session opened before the reloads still answers, on a new connection too.
		const r = await sdk.client.callTool({ name: 'github__echo', arguments: { end: true } });
		assert.ok(!r.isError);
		assert.equal(sdk.transport.sessionId, sid);
		assert.equal((await httpsRequest(gw.port, ca, { headers: hdrs }, ping(99))).status, 200);
		assert.doesNotMatch(gw.stderr(), /takes effect at restart/);
		// The replaced certificates go once the connections that were open
		// at their reload have closed (the SDK's kept-alive ones among them).
		await sdk.close();
		await eventually(() => /certificate serial 1001 released/.test(gw.stderr()) &&
			/certificate serial 1002 released/.test(gw.stderr()), 10000, 50, 'the old certificates released');
		await gw.close();
	});

	test('a missing file, a key of another certificate, or certificates out of order stop the start with the file named', async () => {
		const { configPath, dir } = setup();
		const start = () => runSluice(['serve', '--http', '127.0.0.1:0', '--config', configPath], 15000);

		makeKey(dir, 'other.key');
		replace(dir, 'other.key', 'srv.key');
		let r = await start();
		assert.equal(r.code, 2);
		assert.match(r.stderr, /sluice\.http\.tls\.keyFile: .*srv\.key: not the key of the certificate in .*srv\.pem/);

		fs.copyFileSync(path.join(dir, 'ca.pem'), path.join(dir, 'chain.pem'));
		fs.appendFileSync(path.join(dir, 'chain.pem'), fs.readFileSync(path.join(dir, 'srv.pem')));
		replace(dir, 'chain.pem', 'srv.pem');
		r = await start();
		assert.equal(r.code, 2);
		assert.match(r.stderr, /sluice\.http\.tls\.certFile: .*srv\.pem: the certificates are not in order/);

		fs.rmSync(path.join(dir, 'srv.pem'));
		r = await start();
		assert.equal(r.code, 2);
		assert.match(r.stderr, /sluice\.http\.tls\.certFile: .*srv\.pem: cannot open: No such file/);
	});

	test('0.0.0.0 with TLS and a token serves https without the clear-text warning; without any method it is refused', async () => {
		const { configPath, ca } = setup({ http: { bearerToken: TOKEN } });
		const gw = await startHttp({ configPath, listen: '0.0.0.0:0' });
		assert.match(gw.url, /^https:\/\/0\.0\.0\.0:\d+\/mcp$/);
		assert.doesNotMatch(gw.stderr(), /in clear/);
		const sdk = await sdkClient(`https://127.0.0.1:${gw.port}/mcp`, ca, { Authorization: `Bearer ${TOKEN}` });
		const r = await sdk.client.callTool({ name: 'github__echo', arguments: { a: 1 } });
		assert.ok(!r.isError);
		const denied = await httpsRequest(gw.port, ca, {}, ping(1));
		assert.equal(denied.status, 401);
		await sdk.close();
		await gw.close();

		const open = setup();
		const refused = await runSluice(['serve', '--http', '0.0.0.0:0', '--config', open.configPath], 15000);
		assert.equal(refused.code, 2);
		assert.match(refused.stderr, /refusing to serve HTTP on 0\.0\.0\.0:0 without authentication/);

		// Plain HTTP off loopback: served (a token is set), with one warning.
		const plainPath = writeConfig({ github: catalog('github') }, { http: { bearerToken: TOKEN } });
		const plain = await startHttp({ configPath: plainPath, listen: '0.0.0.0:0' });
		assert.match(plain.url, /^http:\/\//);
		await eventually(() => /sluice warn: http: serving plain HTTP on 0\.0\.0\.0:0: credentials and every message cross the network in clear/.test(plain.stderr()),
			5000, 20, 'the warning');
		assert.equal((plain.stderr().match(/in clear/g) ?? []).length, 1);
		await plain.close();
	});
});

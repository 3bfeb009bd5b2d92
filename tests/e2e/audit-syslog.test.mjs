// Audit records to where security teams read them (docs/stages/audit.md, "To
// a collector"): a real rsyslog (Debian's, with its gtls driver) started by
// the test on loopback ports it picks, in a temp dir, writing what it
// receives to a file; and a small OTLP/HTTP logs receiver. Each record
// arrives as one record with its JSON unchanged (byte for byte the audit
// file's line); hostile tool names (newlines, control characters, a forged
// syslog frame) arrive as one escaped record each; a collector killed and
// started again loses no record while /metrics shows them queued; a full
// queue counts what only the file holds; TLS works with the CA and refuses
// a collector the CA did not sign.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import dgram from 'node:dgram';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

import { catalog, closeAll, connect, eventually, freePort, httpClient, httpRequest, runSluice, startHttp, tinyServer, toolsWhen, withTimeout, writeConfig } from './helpers.mjs';

const RSYSLOGD = process.env.RSYSLOGD ?? '/usr/sbin/rsyslogd';
const dirs = [];
after(async () => {
	await closeAll();
	for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

function tmp(prefix) {
	const d = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
	dirs.push(d);
	return d;
}

// Tool names an upstream may send: a newline with a forged RFC 5424 frame
// after it, an octet count, CR, tab, ESC and other C0 characters, DEL.
const HOSTILE = [
	'evil\n<14>1 2026-01-01T00:00:00Z forged sluice 1 call - {"type":"call","tool":"forged"}',
	'12 <14>1 fake\r\nnext',
	'ctl\t\u0001\u001b[31m\u007f\u0085end',
];

// ---- rsyslog ---------------------------------------------------------------------------

function openssl(dir, ...args) {
	execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
}

// A CA (prefix-ca.pem) and a certificate for 127.0.0.1 it signed (prefix-cert.pem, prefix-key.pem).
function makeCerts(dir, prefix) {
	openssl(dir, 'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes',
		'-keyout', `${prefix}-ca.key`, '-out', `${prefix}-ca.pem`, '-days', '2', '-subj', `/CN=${prefix} e2e CA`);
	openssl(dir, 'genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', `${prefix}-key.pem`);
	fs.writeFileSync(path.join(dir, 'san.ext'), 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n');
	openssl(dir, 'req', '-new', '-key', `${prefix}-key.pem`, '-out', `${prefix}.csr`, '-subj', '/CN=127.0.0.1');
	openssl(dir, 'x509', '-req', '-in', `${prefix}.csr`, '-CA', `${prefix}-ca.pem`, '-CAkey', `${prefix}-ca.key`,
		'-set_serial', '0x5a1', '-days', '1', '-extfile', 'san.ext', '-out', `${prefix}-cert.pem`);
	return { ca: path.join(dir, `${prefix}-ca.pem`), cert: path.join(dir, `${prefix}-cert.pem`), key: path.join(dir, `${prefix}-key.pem`) };
}

// A client certificate the CA of prefix signed (prefix-client.pem, prefix-client.key).
function makeClient(dir, prefix) {
	openssl(dir, 'genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', `${prefix}-client.key`);
	fs.writeFileSync(path.join(dir, 'client.ext'), 'extendedKeyUsage=clientAuth\n');
	openssl(dir, 'req', '-new', '-key', `${prefix}-client.key`, '-out', `${prefix}-client.csr`, '-subj', '/CN=sluice');
	openssl(dir, 'x509', '-req', '-in', `${prefix}-client.csr`, '-CA', `${prefix}-ca.pem`, '-CAkey', `${prefix}-ca.key`,
		'-set_serial', '0x5a2', '-days', '1', '-extfile', 'client.ext', '-out', `${prefix}-client.pem`);
	return { cert: path.join(dir, `${prefix}-client.pem`), key: path.join(dir, `${prefix}-client.key`) };
}

// Each received message is one line of the output file: MSGID APP-NAME
// PROCID HOSTNAME PRI then the MSG, which runs to the end of the line.
const TEMPLATE = 'template(name="rec" type="list") { property(name="msgid") constant(value=" ") ' +
	'property(name="app-name") constant(value=" ") property(name="procid") constant(value=" ") ' +
	'property(name="hostname") constant(value=" ") property(name="pri") constant(value=" ") ' +
	'property(name="msg") constant(value="\\n") }';

// An rsyslogd on 127.0.0.1 in its own dir: UDP and TCP inputs, or one TLS
// input (tls: { ca, cert, key }, authMode: anon, or x509/certvalid to ask
// for a client certificate). start() again after stop() listens on the
// same ports and appends to the same file.
async function rsyslog({ tls, authMode = 'anon' } = {}) {
	const dir = tmp('sluice-rsyslog-');
	const udp = await freePort();
	const tcp = await freePort();
	const out = path.join(dir, 'out.log');
	const conf = path.join(dir, 'rsyslog.conf');
	const lines = [`global(workDirectory="${dir}" maxMessageSize="64k"` +
		(tls ? ` defaultNetstreamDriver="gtls" defaultNetstreamDriverCAFile="${tls.ca}" ` +
			`defaultNetstreamDriverCertFile="${tls.cert}" defaultNetstreamDriverKeyFile="${tls.key}"` : '') + ')'];
	if (tls) {
		lines.push(`module(load="imtcp" streamDriver.name="gtls" streamDriver.mode="1" streamDriver.authMode="${authMode}")`);
	} else {
		lines.push('module(load="imudp")', 'module(load="imtcp")');
		lines.push(`input(type="imudp" address="127.0.0.1" port="${udp}")`);
	}
	lines.push(`input(type="imtcp" address="127.0.0.1" port="${tcp}")`, TEMPLATE,
		`action(type="omfile" file="${out}" template="rec")`);
	fs.writeFileSync(conf, lines.join('\n') + '\n');
	const r = { dir, udp, tcp, out, proc: null, log: '' };
	r.start = async () => {
		const proc = spawn(RSYSLOGD, ['-n', '-f', conf, '-i', path.join(dir, 'rsyslogd.pid')], { stdio: ['ignore', 'pipe', 'pipe'] });
		proc.on('error', (e) => (r.log += `cannot run ${RSYSLOGD} (scripts/setup.sh installs Debian's rsyslog): ${e.message}`));
		proc.stdout.on('data', (b) => (r.log += b));
		proc.stderr.on('data', (b) => (r.log += b));
		r.proc = proc;
		r.exited = new Promise((resolve) => {
			proc.once('exit', resolve);
			proc.once('error', resolve);
		});
		// Listening once a TCP connection is accepted (bounded).
		await eventually(() => new Promise((resolve) => {
			if (proc.exitCode !== null || r.log.startsWith('cannot run')) throw new Error(`rsyslogd exited: ${r.log}`);
			const s = net.connect(tcp, '127.0.0.1', () => { s.destroy(); resolve(true); });
			s.on('error', () => resolve(false));
		}), 10000, 50, `rsyslogd listening on ${tcp}`);
		// UDP: probes until one is written, so a datagram from sluice is not
		// sent before the input is bound.
		if (!tls) {
			const sock = dgram.createSocket('udp4');
			try {
				await eventually(async () => {
					sock.send('<14>1 - - probe - probe - PROBE', udp, '127.0.0.1');
					return r.records().some((x) => x.msgid === 'probe');
				}, 10000, 100, 'rsyslogd reading UDP');
			} finally {
				sock.close();
			}
		}
	};
	r.stop = async (signal = 'SIGTERM') => {
		r.proc.kill(signal);
		await withTimeout(r.exited, 10000, 'rsyslogd to exit');
	};
	// The records written so far: { msgid, app, procid, host, pri, msg }.
	r.records = () => {
		let text = '';
		try {
			text = fs.readFileSync(out, 'utf8');
		} catch {
			return [];
		}
		return text.split('\n').filter(Boolean).map((l) => {
			const [msgid, app, procid, host, pri, ...rest] = l.split(' ');
			return { msgid, app, procid, host, pri, msg: rest.join(' '), line: l };
		});
	};
	// The audit records among them, parsed.
	r.audit = () => r.records().filter((x) => x.app === 'sluice').map((x) => ({ ...x, json: JSON.parse(x.msg) }));
	await r.start();
	return r;
}

// ---- sluice -------------------------------------------------------------------------------

const auditFile = (dir) => path.join(dir, 'audit.jsonl');
const fileLines = (file) => {
	try {
		return fs.readFileSync(file, 'utf8').split('\n').filter(Boolean);
	} catch {
		return [];
	}
};

function hostileServer() {
	return tinyServer({
		name: 'hostile',
		prelude: `const NAMES = ${JSON.stringify(HOSTILE)};`,
		tools: `NAMES.map((name, i) => ({ name, description: 'hostile ' + i, inputSchema: { type: 'object' } }))`,
		call: `(p, ok) => ok({ content: [{ type: 'text', text: 'ok' }] })`,
	});
}

// A stdio gateway whose audit also goes to syslog (or otlp).
async function gateway(audit) {
	const dir = tmp('sluice-audit-');
	const gw = await connect({
		servers: { github: catalog('github'), hostile: hostileServer() },
		sluice: { exposure: 'passthrough', audit: { file: auditFile(dir), ...audit } },
	});
	gw.audit = auditFile(dir);
	await toolsWhen(gw.client, (t) => t.some((x) => x.name === 'github__echo') && t.filter((x) => x.description?.startsWith('hostile ')).length === HOSTILE.length);
	return gw;
}

async function metrics(gw) {
	const r = await httpRequest({ host: '127.0.0.1', port: gw.port, path: '/metrics', method: 'GET' });
	assert.equal(r.status, 200);
	const v = (name, sink, result) => {
		const re = new RegExp(`^${name}\\{sink="${sink}"${result ? `,result="${result}"` : ''}\\} (\\d+)$`, 'm');
		const m = re.exec(r.text);
		assert.ok(m, `${name} ${sink} ${result ?? ''} in /metrics`);
		return Number(m[1]);
	};
	return {
		queued: v('sluice_audit_queued_records', 'syslog'),
		sent: v('sluice_audit_records_total', 'syslog', 'sent'),
		dropped: v('sluice_audit_records_total', 'syslog', 'dropped'),
	};
}

// The syslog records of process pid's calls with these ids, once all arrived.
async function arrived(rs, pid, ids, what) {
	return eventually(() => {
		const got = rs.audit().filter((x) => x.procid === String(pid) && x.json.type === 'call' && ids.includes(x.json.call));
		return got.length >= ids.length ? got : null;
	}, 15000, 50, what);
}

const callIds = (file, pred = () => true) => fileLines(file).map((l) => JSON.parse(l)).filter((j) => j.type === 'call' && pred(j)).map((j) => j.call);

// ---- tests ---------------------------------------------------------------------------------

describe('audit to syslog (RFC 5424)', () => {
	let rs;
	before(async () => {
		rs = await rsyslog();
	});
	after(async () => rs?.proc && rs.proc.exitCode === null && rs.stop());

	for (const proto of ['udp', 'tcp']) {
		test(`${proto}: a call's record arrives as one record, its JSON unchanged; hostile tool names stay one record each`, async () => {
			const gw = await gateway({ syslog: { url: `${proto}://127.0.0.1:${proto === 'udp' ? rs.udp : rs.tcp}`, hostname: 'gw e2e\n\u00e9x', facility: 'local3' } });
			const r = await gw.client.callTool({ name: 'github__echo', arguments: { m: 'line\nbreak\u0000\u001b[2J' } });
			assert.ok(!r.isError);
			const tools = (await gw.client.listTools()).tools;
			for (let i = 0; i < HOSTILE.length; i++) {
				const name = tools.find((t) => t.description === `hostile ${i}`).name;
				await gw.client.callTool({ name, arguments: { x: HOSTILE[i] } });
			}
			const ids = await eventually(() => {
				const ids = callIds(gw.audit);
				return ids.length === 1 + HOSTILE.length ? ids : null;
			}, 5000, 50, 'the audit file lines');
			const got = await arrived(rs, gw.pid(), ids, `${proto} records of calls ${ids}`);
			const file = fileLines(gw.audit);
			for (const rec of got) {
				// Unchanged: the MSG is the file's line, byte for byte.
				assert.ok(file.includes(rec.msg), `the MSG is a line of the audit file: ${rec.msg}`);
				assert.equal(rec.msgid, 'call');
				assert.equal(rec.app, 'sluice');
				assert.equal(rec.procid, String(gw.pid()));
				assert.equal(rec.host, 'gw_e2e___x', 'header fields: printable ASCII only (é is two bytes)');
				assert.equal(rec.pri, String(19 * 8 + 6), 'local3.info');
			}
			// One record per call, none forged: every hostile name came back whole.
			const all = rs.audit().filter((x) => x.procid === String(gw.pid()));
			assert.equal(all.length, ids.length, 'exactly one record per call');
			assert.deepEqual(all.map((x) => x.json.tool).sort(), ['echo', ...HOSTILE].sort());
			// A frame forged inside a name would be a record of its own, from host "forged".
			assert.ok(!rs.records().some((x) => x.host === 'forged' || x.procid === '1'), 'no forged frame');
			await gw.close();
		});
	}

	test('tcp: the collector killed and started again loses no record; /metrics shows them queued', async () => {
		const dir = tmp('sluice-audit-');
		const gw = await startHttp({
			servers: { github: catalog('github') },
			sluice: { exposure: 'passthrough', audit: { file: auditFile(dir), syslog: { url: `tcp://127.0.0.1:${rs.tcp}`, reconnectMaxMs: 300 } } },
		});
		const { client } = await httpClient(gw.url);
		await eventually(async () => (await client.listTools()).tools.some((t) => t.name === 'github__echo'), 10000, 100, 'tools');
		await client.callTool({ name: 'github__echo', arguments: { n: 0 } });
		await arrived(rs, gw.pid, callIds(auditFile(dir)), 'the first record');

		await rs.stop('SIGKILL');
		for (let n = 1; n <= 5; n++) await client.callTool({ name: 'github__echo', arguments: { n } });
		const m = await eventually(async () => {
			const m = await metrics(gw);
			return m.queued === 5 ? m : null;
		}, 5000, 50, 'five records queued');
		assert.equal(m.dropped, 0);

		await rs.start();
		const ids = callIds(auditFile(dir));
		assert.equal(ids.length, 6);
		const got = await arrived(rs, gw.pid, ids, 'every record after the restart');
		assert.equal(rs.audit().filter((x) => x.procid === String(gw.pid)).length, 6, 'each record once');
		const file = fileLines(auditFile(dir));
		for (const rec of got) assert.ok(file.includes(rec.msg));
		const after = await eventually(async () => {
			const m = await metrics(gw);
			return m.queued === 0 ? m : null;
		}, 5000, 50, 'the queue empty');
		assert.ok(after.sent >= 6, `sent ${after.sent}`);
		assert.match(gw.stderr(), /audit: syslog tcp:\/\/127\.0\.0\.1:\d+: .*records wait in the queue/);
		assert.match(gw.stderr(), /connected again/);
		await gw.close();
	});

	test('sluice exec sends what is queued before it exits, to syslog and OTLP', async () => {
		const dir = tmp('sluice-audit-');
		const bodies = [];
		const server = http.createServer((req, res) => {
			let body = '';
			req.on('data', (b) => (body += b));
			req.on('end', () => {
				bodies.push(JSON.parse(body));
				res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
			});
		});
		await new Promise((r) => server.listen(0, '127.0.0.1', r));
		try {
			const cfg = writeConfig({ github: catalog('github') }, {
				audit: {
					file: auditFile(dir),
					syslog: { url: `tcp://127.0.0.1:${rs.tcp}` },
					otlp: { endpoint: `http://127.0.0.1:${server.address().port}`, intervalMs: 600000 },
				},
			});
			const r = await runSluice(['exec', '--config', cfg, `await tools.github.echo({ exec: 1 }); return 'x'`]);
			assert.equal(r.code, 0, r.stderr);
			const file = fileLines(auditFile(dir));
			assert.deepEqual(file.map((l) => JSON.parse(l).type), ['call', 'program']);
			// Sent before the process ended: no wait needed for OTLP, whose
			// interval is ten minutes; rsyslog may take a moment to write.
			const otlp = bodies.flatMap((b) => b.resourceLogs[0].scopeLogs[0].logRecords).map((x) => x.body.stringValue);
			assert.deepEqual(otlp, file);
			await eventually(() => file.every((l) => rs.records().some((x) => x.msg === l)), 10000, 50, 'both records at rsyslog');
			assert.ok(rs.records().some((x) => x.msgid === 'program' && file[1] === x.msg));
		} finally {
			server.close();
		}
	});

	test('a full queue: the record stays in the file and counts as dropped', async () => {
		const dir = tmp('sluice-audit-');
		const nobody = await freePort();
		const gw = await startHttp({
			servers: { github: catalog('github') },
			sluice: { exposure: 'passthrough', audit: { file: auditFile(dir), syslog: { url: `tcp://127.0.0.1:${nobody}`, maxQueueRecords: 2, timeoutMs: 500 } } },
		});
		const { client } = await httpClient(gw.url);
		await eventually(async () => (await client.listTools()).tools.some((t) => t.name === 'github__echo'), 10000, 100, 'tools');
		for (let n = 0; n < 5; n++) await client.callTool({ name: 'github__echo', arguments: { n } });
		assert.equal(callIds(auditFile(dir)).length, 5, 'the file has every record');
		const m = await metrics(gw);
		assert.equal(m.queued, 2);
		assert.equal(m.dropped, 3);
		assert.equal(m.sent, 0);
		// At exit it tries once more, within timeoutMs, and says what only the
		// file holds (before the SIGKILL that close() sends after 3 s).
		await gw.close();
		assert.match(gw.stderr(), /audit: syslog tcp:\/\/127\.0\.0\.1:\d+: 2 records not sent at exit \(the audit file has them\)/);
	});
});

describe('a reload keeps the audit sinks', () => {
	test('a changed sluice.audit waits for a restart: the file and the queue stay', async () => {
		const dir = tmp('sluice-audit-');
		const nobody = await freePort();
		const audit = { file: auditFile(dir), syslog: { url: `tcp://127.0.0.1:${nobody}` } };
		const gw = await gateway(audit);
		await gw.client.callTool({ name: 'github__echo', arguments: { n: 1 } });
		const cfg = JSON.parse(fs.readFileSync(gw.configPath, 'utf8'));
		cfg.sluice.audit = { ...audit, file: path.join(dir, 'other.jsonl') };
		fs.writeFileSync(gw.configPath, JSON.stringify(cfg));
		process.kill(gw.pid(), 'SIGHUP');
		await eventually(() => /config reload: sluice\.audit changed; that takes effect at restart/.test(gw.stderr()), 10000, 50, 'the reload');
		await gw.client.callTool({ name: 'github__echo', arguments: { n: 2 } });
		assert.equal(callIds(auditFile(dir)).length, 2, 'both calls in the file opened at start');
		assert.ok(!fs.existsSync(path.join(dir, 'other.jsonl')));
		await gw.close();
	});
});

describe('audit to syslog over TLS (RFC 5425)', () => {
	let rs, certs, other;
	before(async () => {
		const dir = tmp('sluice-certs-');
		certs = makeCerts(dir, 'good');
		other = makeCerts(dir, 'other');
		rs = await rsyslog({ tls: certs });
	});
	after(async () => rs?.proc && rs.proc.exitCode === null && rs.stop());

	test('with the CA: records arrive; with another CA: refused, named in the log, nothing sent', async () => {
		const gw = await gateway({ syslog: { url: `tls://127.0.0.1:${rs.tcp}`, caFile: certs.ca } });
		await gw.client.callTool({ name: 'github__echo', arguments: { tls: true } });
		const ids = await eventually(() => callIds(gw.audit).length === 1 && callIds(gw.audit), 5000, 50, 'the line');
		const [rec] = await arrived(rs, gw.pid(), ids, 'the record over TLS');
		assert.ok(fileLines(gw.audit).includes(rec.msg));

		const bad = await gateway({ syslog: { url: `tls://127.0.0.1:${rs.tcp}`, caFile: other.ca } });
		await bad.client.callTool({ name: 'github__echo', arguments: { tls: 'bad' } });
		await eventually(() => /audit: syslog tls:\/\/127\.0\.0\.1:\d+: the collector's certificate is not trusted/.test(bad.stderr()),
			10000, 50, 'the refusal in the log');
		const badIds = callIds(bad.audit);
		assert.equal(badIds.length, 1);
		assert.ok(!rs.audit().some((x) => x.procid === String(bad.pid())), 'nothing reached the collector');
		await Promise.all([gw.close(), bad.close()]);
	});

	test('tls: the collector stopped and started again loses no record', async () => {
		const gw = await gateway({ syslog: { url: `tls://127.0.0.1:${rs.tcp}`, caFile: certs.ca, reconnectMaxMs: 300 } });
		await gw.client.callTool({ name: 'github__echo', arguments: { n: 0 } });
		await arrived(rs, gw.pid(), callIds(gw.audit), 'the first record over TLS');
		await rs.stop();
		for (let n = 1; n <= 3; n++) await gw.client.callTool({ name: 'github__echo', arguments: { n } });
		await eventually(() => /audit: syslog tls:.*records wait in the queue/.test(gw.stderr()), 5000, 50, 'the outage noticed');
		await rs.start();
		const ids = callIds(gw.audit);
		assert.equal(ids.length, 4);
		const got = await arrived(rs, gw.pid(), ids, 'every record after the restart');
		const file = fileLines(gw.audit);
		for (const rec of got) assert.ok(file.includes(rec.msg));
		assert.equal(rs.audit().filter((x) => x.procid === String(gw.pid())).length, 4, 'each record once');
		await gw.close();
	});

	test('a collector that asks for a client certificate: sluice presents certFile; without it, refused', async () => {
		const client = makeClient(path.dirname(certs.ca), 'good');
		const mtls = await rsyslog({ tls: certs, authMode: 'x509/certvalid' });
		try {
			const gw = await gateway({ syslog: { url: `tls://127.0.0.1:${mtls.tcp}`, caFile: certs.ca, certFile: client.cert, keyFile: client.key } });
			await gw.client.callTool({ name: 'github__echo', arguments: { mtls: 1 } });
			const [rec] = await arrived(mtls, gw.pid(), callIds(gw.audit), 'the record over mutual TLS');
			assert.ok(fileLines(gw.audit).includes(rec.msg));
			const anon = await gateway({ syslog: { url: `tls://127.0.0.1:${mtls.tcp}`, caFile: certs.ca, timeoutMs: 1000 } });
			await anon.client.callTool({ name: 'github__echo', arguments: { mtls: 0 } });
			await eventually(() => /audit: syslog tls:\/\/127\.0\.0\.1:\d+: .*records wait in the queue/.test(anon.stderr()), 10000, 50, 'the refusal');
			assert.ok(!mtls.audit().some((x) => x.procid === String(anon.pid())), 'nothing accepted without a certificate');
			await Promise.all([gw.close(), anon.close()]);
		} finally {
			await mtls.stop();
		}
	});

	test('a collector that accepts and never answers the handshake holds no call', async () => {
		const held = [];
		const tarpit = net.createServer((sock) => held.push(sock));
		await new Promise((r) => tarpit.listen(0, '127.0.0.1', r));
		try {
			const gw = await gateway({ syslog: { url: `tls://127.0.0.1:${tarpit.address().port}`, caFile: certs.ca, timeoutMs: 2000 } });
			// A call that waited for the collector would take the 2 s of timeoutMs.
			const t0 = Date.now();
			await gw.client.callTool({ name: 'github__echo', arguments: { n: 0 } });
			assert.ok(Date.now() - t0 < 1500, `the call answered in ${Date.now() - t0} ms while the collector stalls`);
			for (let n = 1; n < 3; n++) await gw.client.callTool({ name: 'github__echo', arguments: { n } });
			await eventually(() => /audit: syslog tls:\/\/127\.0\.0\.1:\d+: timed out; records wait in the queue/.test(gw.stderr()), 5000, 50, 'the timeout');
			assert.equal(callIds(gw.audit).length, 3);
			await gw.close();
		} finally {
			for (const s of held) s.destroy();
			tarpit.close();
		}
	});

	test('a config error: a CA file that holds no certificate stops sluice with a message', async () => {
		const dir = tmp('sluice-audit-');
		fs.writeFileSync(path.join(dir, 'empty.pem'), 'not a certificate\n');
		await assert.rejects(
			connect({ servers: {}, sluice: { audit: { file: auditFile(dir), syslog: { url: `tls://127.0.0.1:${rs.tcp}`, caFile: path.join(dir, 'empty.pem') } } } }),
			/sluice\.audit\.syslog\.caFile: .*empty\.pem/,
		);
		await assert.rejects(
			connect({ servers: {}, sluice: { audit: { file: auditFile(dir), syslog: { url: 'http://127.0.0.1:514' } } } }),
			/sluice\.audit\.syslog\.url: must be a udp:\/\/, tcp:\/\/ or tls:\/\/ URL/,
		);
		await assert.rejects(
			connect({ servers: {}, sluice: { audit: { file: auditFile(dir), syslog: { url: 'tcp://127.0.0.1:514', caFile: certs.ca } } } }),
			/sluice\.audit\.syslog\.caFile: only for a tls:\/\/ url/,
		);
		await assert.rejects(
			connect({ servers: {}, sluice: { audit: { file: auditFile(dir), syslog: { url: 'tls://127.0.0.1:6514', certFile: certs.cert } } } }),
			/sluice\.audit\.syslog\.keyFile: certFile and keyFile go together/,
		);
	});
});

describe('audit as OpenTelemetry logs (OTLP/HTTP JSON)', () => {
	test('each record is a log record whose body is the line unchanged; a collector that fails gets them again', async () => {
		const bodies = [];
		let failures = 2;
		const server = http.createServer((req, res) => {
			let body = '';
			req.on('data', (b) => (body += b));
			req.on('end', () => {
				if (req.url !== '/v1/logs' || req.method !== 'POST' || !/^application\/json/.test(req.headers['content-type'] ?? '')) {
					res.writeHead(400).end();
					return;
				}
				if (failures > 0) {
					failures--;
					res.writeHead(503).end();
					return;
				}
				bodies.push(JSON.parse(body));
				res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
			});
		});
		await new Promise((r) => server.listen(0, '127.0.0.1', r));
		try {
			const gw = await gateway({ otlp: { endpoint: `http://127.0.0.1:${server.address().port}`, intervalMs: 50 } });
			const tools = (await gw.client.listTools()).tools;
			await gw.client.callTool({ name: 'github__echo', arguments: { otlp: 1 } });
			await gw.client.callTool({ name: tools.find((t) => t.description === 'hostile 0').name, arguments: {} });
			const ids = await eventually(() => callIds(gw.audit).length === 2 && callIds(gw.audit), 5000, 50, 'the lines');
			const recs = await eventually(() => {
				const recs = [];
				for (const b of bodies)
					for (const rl of b.resourceLogs) {
						assert.ok(rl.resource.attributes.some((a) => a.key === 'service.name' && a.value.stringValue === 'sluice'));
						for (const sl of rl.scopeLogs) {
							assert.equal(sl.scope.name, 'sluice.audit');
							recs.push(...sl.logRecords);
						}
					}
				return recs.length >= 2 ? recs : null;
			}, 15000, 50, 'the log records after two failed exports');
			assert.equal(failures, 0, 'the failed exports were retried');
			const file = fileLines(gw.audit);
			assert.deepEqual(recs.map((r) => r.body.stringValue), file, 'each body is a line of the file, in order, once');
			assert.deepEqual(recs.map((r) => JSON.parse(r.body.stringValue).call), ids);
			for (const r of recs) {
				assert.match(r.timeUnixNano, /^\d{19}$/);
				assert.equal(r.severityText, 'INFO');
				assert.deepEqual(r.attributes, [{ key: 'sluice.audit.type', value: { stringValue: 'call' } }]);
			}
			assert.equal(JSON.parse(recs[1].body.stringValue).tool, HOSTILE[0]);
			await gw.close();
		} finally {
			server.close();
		}
	});
});

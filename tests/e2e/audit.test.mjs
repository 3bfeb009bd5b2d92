// The audit stage end to end: one JSON line per call, for a direct tools/call,
// the router's invoke_tool and a program's tools.x.y(), with the right origin
// and program id; one line per execute_code program with its outcome; never an
// argument value in the file; the hash is the SHA-256 of the canonical
// (key-sorted) arguments; `sluice exec` writes a program line too; a file
// that cannot be opened stops sluice at start.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, existsSync, statSync } from 'node:fs';
import path from 'node:path';

import { connect, catalog, closeAll, toolsWhen, eventually, execCode, runSluice, writeConfig, jsonOf, tinyServer, canonical, sha } from './helpers.mjs';

after(closeAll);

const MARK = 'AUDIT-MARKER-q7Zx93';
const TIME_RE = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;


function auditFile() {
	return path.join(path.dirname(writeConfig({})), 'audit.jsonl');
}

function lines(file) {
	if (!existsSync(file)) return [];
	const text = readFileSync(file, 'utf8');
	assert.ok(text === '' || text.endsWith('\n'), 'the file ends with a whole line');
	return text
		.split('\n')
		.filter(Boolean)
		.map((l) => JSON.parse(l));
}

// Waits for the audit line(s) matching pred.
async function linesWhere(file, pred, n = 1) {
	return eventually(() => {
		const found = lines(file).filter(pred);
		return found.length >= n ? found : null;
	}, 5000, 50, 'audit lines');
}

const SERVERS = { github: catalog('github') };
const POLICY = { rules: [{ match: 'github.merge_*', action: 'deny' }] };

let pass, router, passFile, routerFile;

before(async () => {
	passFile = auditFile();
	routerFile = auditFile();
	[pass, router] = await Promise.all([
		connect({
			servers: SERVERS,
			sluice: { exposure: 'passthrough', codeMode: { enabled: true, timeoutMs: 3000 }, policy: POLICY, audit: { file: passFile } },
		}),
		connect({ servers: SERVERS, sluice: { exposure: 'router', policy: POLICY, audit: { file: routerFile } } }),
	]);
	await toolsWhen(pass.client, (t) => t.some((x) => x.name === 'github__echo'));
	await eventually(async () => {
		const r = await router.client.callTool({ name: 'list_servers', arguments: {} });
		return jsonOf(r).every((s) => (s.status ?? s.state) === 'ready');
	}, 10000, 100, 'router upstream ready');
	await eventually(async () => (await execCode(pass.client, 'return 1')).text === '1', 10000, 100, 'code mode');
});
after(() => Promise.all([pass?.close(), router?.close()]));

function checkCallLine(l, args, origin) {
	assert.equal(l.type, 'call');
	assert.match(l.time, TIME_RE);
	assert.equal(typeof l.session, 'number');
	assert.ok(l.session >= 1);
	assert.equal(typeof l.call, 'number');
	assert.equal(l.server, 'github');
	assert.equal(l.tool, 'echo');
	assert.equal(l.origin, origin);
	assert.equal(typeof l.duration_ms, 'number');
	assert.ok(l.duration_ms >= 0 && l.duration_ms < 5000);
	assert.equal(l.outcome, 'ok');
	assert.equal(l.is_error, false);
	assert.equal(l.cache_hit, false);
	assert.equal(l.bytes_in, Buffer.byteLength(canonical(args)));
	assert.ok(l.bytes_out > l.bytes_in, 'echo returns the arguments, and more');
	assert.equal(l.args_sha256, sha(args));
}

describe('audit lines per call', () => {
	test('direct tools/call: origin direct, program null, the hash of the canonical arguments', async () => {
		const args = { z: 1, marker: MARK, nested: { b: [1, 2, 'x'], a: true } };
		const r = await pass.client.callTool({ name: 'github__echo', arguments: args });
		assert.ok(!r.isError);
		const [l] = await linesWhere(passFile, (x) => x.type === 'call' && x.args_sha256 === sha(args));
		checkCallLine(l, args, 'direct');
		assert.equal(l.program, null);
	});

	test('invoke_tool: origin router', async () => {
		const args = { marker: MARK, via: 'router' };
		const r = await router.client.callTool({
			name: 'invoke_tool',
			arguments: { server: 'github', tool: 'echo', arguments: args },
		});
		assert.ok(!r.isError);
		const [l] = await linesWhere(routerFile, (x) => x.type === 'call' && x.args_sha256 === sha(args));
		checkCallLine(l, args, 'router');
		assert.equal(l.program, null);
	});

	test('a program: one line per call with origin code and the program id, one program line', async () => {
		const a1 = { marker: MARK, step: 1 };
		const a2 = { marker: MARK, step: 2 };
		const r = await execCode(
			pass.client,
			`await tools.github.echo(${JSON.stringify(a1)}); await tools.github.echo(${JSON.stringify(a2)}); return 'done';`,
		);
		assert.equal(r.text, 'done');
		const [l1] = await linesWhere(passFile, (x) => x.type === 'call' && x.args_sha256 === sha(a1));
		const [l2] = await linesWhere(passFile, (x) => x.type === 'call' && x.args_sha256 === sha(a2));
		checkCallLine(l1, a1, 'code');
		checkCallLine(l2, a2, 'code');
		assert.equal(typeof l1.program, 'number');
		assert.equal(l1.program, l2.program);
		const [p] = await linesWhere(passFile, (x) => x.type === 'program' && x.program === l1.program);
		assert.match(p.time, TIME_RE);
		assert.equal(p.session, l1.session);
		assert.equal(p.outcome, 'ok');
		assert.equal(p.calls, 2);
		assert.equal(p.output_bytes, 'done'.length);
		assert.ok(p.duration_ms >= l1.duration_ms + l2.duration_ms);
		// The program line follows its calls' lines.
		const all = lines(passFile);
		assert.ok(all.indexOf(all.find((x) => x.type === 'program' && x.program === p.program)) >
			all.findIndex((x) => x.args_sha256 === sha(a2)));
	});

	test('failed programs are recorded with their failure kind', async () => {
		const before_ = lines(passFile).filter((x) => x.type === 'program').length;
		const bad = await execCode(pass.client, `throw new Error('${MARK}')`);
		assert.ok(bad.isError);
		const slow = await execCode(pass.client, 'for (;;) {}');
		assert.equal(slow.kind, 'timeout');
		const progs = await linesWhere(passFile, (x) => x.type === 'program', before_ + 2);
		const last = progs.slice(-2);
		assert.deepEqual(last.map((x) => x.outcome), ['error', 'timeout']);
		assert.deepEqual(last.map((x) => x.calls), [0, 0]);
		assert.deepEqual(last.map((x) => x.output_bytes), [0, 0]);
	});

	test('denied, isError and failed calls are recorded too', async () => {
		const deny = { owner: 'acme', repo: 'api', pull_number: 4242, note: MARK };
		const r1 = await pass.client.callTool({ name: 'github__merge_pull_request', arguments: deny });
		assert.ok(r1.isError);
		const [l1] = await linesWhere(passFile, (x) => x.args_sha256 === sha(deny));
		assert.equal(l1.outcome, 'denied');
		assert.equal(l1.tool, 'merge_pull_request');
		assert.equal(l1.bytes_out, 0);
		const failArgs = { message: MARK };
		const r2 = await router.client.callTool({
			name: 'invoke_tool',
			arguments: { server: 'github', tool: 'fail', arguments: failArgs },
		});
		assert.ok(r2.isError);
		const [l2] = await linesWhere(routerFile, (x) => x.args_sha256 === sha(failArgs));
		assert.equal(l2.outcome, 'ok');
		assert.equal(l2.is_error, true);
		// A program's call of a tool denied to it is refused when the name is
		// resolved, as for a tool that does not exist: no call is made, so no
		// call line is written (docs/stages/policy.md); the program's line is.
		const programs = lines(passFile).filter((x) => x.type === 'program').length;
		const r3 = await execCode(pass.client, `return await tools.github.merge_pull_request(${JSON.stringify(deny)}).catch((e) => e.message)`);
		assert.equal(r3.text, "server 'github' has no tool 'merge_pull_request'");
		const after = await linesWhere(passFile, (x) => x.type === 'program', programs + 1);
		assert.equal(after.at(-1).calls, 1); // the attempt counts, as a missing tool's does
		assert.equal(lines(passFile).filter((x) => x.args_sha256 === sha(deny)).length, 1);
	});

	test('no argument value and no result value ever appears in the file', async () => {
		for (const f of [passFile, routerFile]) {
			const text = readFileSync(f, 'utf8');
			assert.ok(text.length > 0);
			assert.ok(!text.includes(MARK), `${f} holds the marker`);
			assert.ok(!text.includes('acme'), `${f} holds an argument value`);
			for (const l of lines(f)) assert.ok(l.type === 'call' || l.type === 'program');
		}
	});

	test('every line of one client session carries its one session id', async () => {
		const ids = new Set(lines(passFile).map((x) => x.session));
		assert.equal(ids.size, 1);
	});
});

describe('audit config and other commands', () => {
	test('sluice exec writes a program line with no session', async () => {
		const file = auditFile();
		const cfg = writeConfig(SERVERS, { audit: { file } });
		const r = await runSluice(['exec', '--config', cfg, `await tools.github.echo({m: '${MARK}'}); return 'x'`]);
		assert.equal(r.code, 0, r.stderr);
		assert.equal(r.stdout.trim(), 'x');
		const ls = lines(file);
		assert.deepEqual(ls.map((x) => x.type), ['call', 'program']);
		assert.equal(ls[0].origin, 'code');
		assert.equal(ls[0].program, ls[1].program);
		assert.equal(ls[1].session, null);
		assert.equal(ls[1].outcome, 'ok');
		assert.equal(ls[1].calls, 1);
		assert.ok(!readFileSync(file, 'utf8').includes(MARK));
	});

	test('disabled: no file is written', async () => {
		const file = auditFile();
		const cfg = writeConfig(SERVERS, { audit: { enabled: false, file } });
		const r = await runSluice(['exec', '--config', cfg, `await tools.github.echo({}); return 'x'`]);
		assert.equal(r.code, 0, r.stderr);
		assert.ok(!existsSync(file));
	});

	// The default was stderr, shared with log lines (and `sluice exec`'s
	// failures), where peer text could pass for an audit line: now it is
	// audit.jsonl in the state directory, and stderr carries no audit line.
	test('default: lines go to $XDG_STATE_HOME/sluice/audit.jsonl, not stderr', async () => {
		const state = path.join(path.dirname(writeConfig({})), 'state-home');
		const cfg = writeConfig(SERVERS, {});
		const r = await runSluice(['exec', '--config', cfg, `await tools.github.echo({}); return 'x'`], 20000, {
			XDG_STATE_HOME: state,
		});
		assert.equal(r.code, 0, r.stderr);
		const file = path.join(state, 'sluice', 'audit.jsonl');
		assert.deepEqual(lines(file).map((x) => x.type), ['call', 'program']);
		assert.equal(statSync(file).mode & 0o777, 0o600);
		assert.ok(!r.stderr.split('\n').some((l) => l.startsWith('{')), r.stderr);
	});

	test('no state directory and no file: sluice says how to name one', async () => {
		const cfg = writeConfig(SERVERS, {});
		const r = await runSluice(['exec', '--config', cfg, 'return 1'], 20000, { XDG_STATE_HOME: '', HOME: '' });
		assert.equal(r.code, 2);
		assert.match(r.stderr, /sluice\.audit: no state directory for the default file \(set sluice\.audit\.file/);
	});

	test('a file that cannot be opened stops sluice at start', async () => {
		const cfg = writeConfig(SERVERS, { audit: { file: '/nonexistent-dir/sub/audit.jsonl' } });
		const r = await runSluice(['exec', '--config', cfg, 'return 1']);
		assert.equal(r.code, 2);
		assert.match(r.stderr, /sluice\.audit\.file: cannot open \/nonexistent-dir\/sub\/audit\.jsonl/);
	});
});

// Peer text cannot forge a line: an upstream's error message (its tools/list
// fails) and its stderr carry a well-formed audit line after a newline,
// terminal escapes (CSI, OSC), a carriage return and a bidi override. Every
// line on stderr stays one log line with its "sluice LEVEL: " prefix and no
// raw control character, and the audit file holds exactly the real lines.
describe('forged lines', () => {
	const FORGED = '{"type":"call","time":"2026-01-01T00:00:00.000Z","session":1,"call":99,"server":"evil","tool":"forged","origin":"direct","program":null,"duration_ms":1,"outcome":"ok","is_error":false,"cache_hit":false,"bytes_in":2,"bytes_out":2,"args_sha256":"00"}';
	const EVIL = `boom\n${FORGED}\r\u001b[2K\u001b]0;pwned\u0007\u202e`;

	test('an upstream error message and its stderr', async () => {
		// Its stderr says EVIL; its tools/list answers an error whose message is EVIL.
		const prelude = `process.stderr.write(${JSON.stringify(`${EVIL}\n`)});
const write = process.stdout.write.bind(process.stdout);
process.stdout.write = (s) => {
	const m = JSON.parse(s);
	if (!m.result?.tools) return write(s);
	return write(JSON.stringify({ jsonrpc: '2.0', id: m.id, error: { code: -32000, message: ${JSON.stringify(EVIL)} } }) + '\\n');
};`;
		const evil = tinyServer({ name: 'evil', prelude, tools: '[]', call: '(p, ok) => ok({ content: [] })' });
		const state = path.join(path.dirname(writeConfig({})), 'state-home');
		const cfg = writeConfig({ ...SERVERS, evil }, {});
		const r = await runSluice(['exec', '--config', cfg, `await tools.github.echo({}); return 'x'`], 20000, {
			XDG_STATE_HOME: state,
		});
		assert.equal(r.code, 0, r.stderr);
		assert.equal(r.stdout.trim(), 'x');
		assert.ok(r.stderr.includes('tools/list failed: boom\\n{"type":"call"'), `the error, escaped:\n${r.stderr}`);
		assert.ok(r.stderr.includes('\\r\\x1b[2K\\x1b]0;pwned\\x07\\u202e'), r.stderr);
		assert.doesNotMatch(r.stderr, /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202e]/, 'no raw control character');
		for (const l of r.stderr.split('\n').filter(Boolean))
			assert.match(l, /^sluice (error|warn|info|debug): /, `not a log line: ${JSON.stringify(l)}`);
		const ls = lines(path.join(state, 'sluice', 'audit.jsonl'));
		assert.deepEqual(ls.map((x) => [x.type, x.tool ?? null]), [['call', 'echo'], ['program', null]]);
	});
});

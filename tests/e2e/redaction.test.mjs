// The redaction stage end to end: secrets in arguments never reach an
// upstream, secrets in results never reach the client or a program, and a
// program's own answer is scanned again; for a direct call, an invoke_tool
// call and a call from inside a program alike.
//
// No real-looking secret is written here: the fake AWS key is built from
// pieces at run time.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, existsSync } from 'node:fs';
import path from 'node:path';

import { connect, catalog, closeAll, execCode, runSluice, writeConfig, textOf, tinyServer } from './helpers.mjs';

after(closeAll);

const KEY = 'AK' + 'IA' + 'QWERTYUIOP234567';
const MARK = '[REDACTED:aws_access_key_id]';

// An upstream that writes the arguments of every call of "record" to a file
// (so the test sees exactly what an upstream received) and whose "leak"
// answers with KEY in text, in a resource and in structuredContent.
let pass; // passthrough + code mode: direct calls and programs
let router; // router + code mode: invoke_tool
let recFile;

const REDACTION = {
	patterns: [{ name: 'repo name', regex: 'acme/api' }],
	maxDepth: 32,
};

function recorder() {
	recFile = path.join(path.dirname(writeConfig({})), 'received.jsonl');
	return tinyServer({
		name: 'rec',
		args: [recFile],
		prelude: `const fs = require('node:fs');
const out = process.argv[2];
const KEY = 'AK' + 'IA' + 'QWERTYUIOP234567';`,
		tools: `[
			{ name: 'record', description: 'Records its arguments.', inputSchema: { type: 'object' } },
			{ name: 'leak', description: 'Answers with a secret.', inputSchema: { type: 'object' } },
		]`,
		call: `(params, ok) => {
			if (params.name === 'record') {
				fs.appendFileSync(out, JSON.stringify(params.arguments) + '\\n');
				ok({ content: [{ type: 'text', text: 'recorded' }] });
			} else {
				ok({
					content: [
						{ type: 'text', text: 'the key is ' + KEY },
						{ type: 'resource', resource: { uri: 'file:///creds', mimeType: 'text/plain', text: 'aws ' + KEY } },
					],
					structuredContent: { creds: { id: KEY, list: ['x ' + KEY + ' y'] }, note: 'plain' },
				});
			}
		}`,
	});
}

before(async () => {
	const servers = { github: catalog('github'), rec: recorder() };
	[pass, router] = await Promise.all([
		connect({
			servers,
			sluice: { exposure: 'passthrough', codeMode: { enabled: true, timeoutMs: 10000 }, redaction: REDACTION },
		}),
		connect({
			servers,
			sluice: { exposure: 'router', codeMode: { enabled: true, timeoutMs: 10000 }, redaction: REDACTION },
		}),
	]);
});

// The last arguments the recorder received.
function lastReceived() {
	const lines = readFileSync(recFile, 'utf8').trim().split('\n');
	return lines[lines.length - 1];
}

// Calls server.tool by one of the three paths; resolves the MCP result (for
// "code", the program returns the tool's value as JSON text).
async function callVia(how, server, tool, args) {
	if (how === 'direct') return pass.client.callTool({ name: `${server}__${tool}`, arguments: args });
	if (how === 'router')
		return router.client.callTool({ name: 'invoke_tool', arguments: { server, tool, arguments: args } });
	const r = await execCode(pass.client, `return JSON.stringify(await tools.${server}.${tool}(${JSON.stringify(args)}))`);
	return r.result;
}

const PATHS = ['direct', 'router', 'code'];

describe('arguments are redacted before they reach the upstream', () => {
	for (const how of PATHS) {
		test(`${how}: the recorder receives [REDACTED:aws_access_key_id] and secret fields replaced`, async () => {
			const args = { key: KEY, nested: { list: ['x ' + KEY + ' y', 7] }, password: 'hunter2', how };
			const r = await callVia(how, 'rec', 'record', args);
			assert.ok(!r.isError, textOf(r));
			const got = lastReceived();
			assert.ok(!got.includes(KEY), `the upstream saw the key: ${got}`);
			assert.deepEqual(JSON.parse(got), {
				key: MARK,
				nested: { list: [`x ${MARK} y`, 7] },
				password: '[REDACTED:secret_field]',
				how,
			});
		});

		test(`${how}: catalog echo shows what it received`, async () => {
			const r = await callVia(how, 'github', 'echo', { aws: { id: KEY } });
			assert.ok(!r.isError, textOf(r));
			const text = textOf(r);
			assert.ok(!JSON.stringify(r).includes(KEY));
			// What echo received: for a program, its value is the structured result.
			const echoed = JSON.parse(text);
			const args = how === 'code' ? echoed.arguments : echoed;
			assert.deepEqual(args, { aws: { id: MARK } });
		});
	}
});

describe('results are redacted before the client or a program sees them', () => {
	for (const how of ['direct', 'router']) {
		test(`${how}: text, resource contents and structuredContent`, async () => {
			const r = await callVia(how, 'rec', 'leak', {});
			assert.ok(!r.isError, textOf(r));
			assert.ok(!JSON.stringify(r).includes(KEY), JSON.stringify(r));
			assert.equal(r.content[0].text, `the key is ${MARK}`);
			assert.equal(r.content[1].resource.text, `aws ${MARK}`);
			assert.deepEqual(r.structuredContent, { creds: { id: MARK, list: [`x ${MARK} y`] }, note: 'plain' });
		});

		test(`${how}: a custom pattern on text the upstream produced itself`, async () => {
			const r = await callVia(how, 'github', 'list_repos', { owner: 'acme' });
			assert.ok(!r.isError, textOf(r));
			const text = textOf(r);
			assert.ok(!text.includes('acme/api'), text.slice(0, 300));
			assert.match(text, /"full_name":"\[REDACTED:repo name\]"/);
			assert.match(text, /"full_name":"acme\/web"/);
		});
	}

	test('code: the program never holds the raw secret', async () => {
		const r = await execCode(
			pass.client,
			`const v = await tools.rec.leak({});
			 const s = JSON.stringify(v);
			 return { raw: s.includes('AK' + 'IA' + 'QWERTYUIOP234567'), id: v.creds.id, list: v.creds.list[0] };`,
		);
		assert.ok(!r.isError, r.text);
		assert.deepEqual(JSON.parse(r.text), { raw: false, id: MARK, list: `x ${MARK} y` });
	});

	test('code: a custom pattern on text the upstream produced itself', async () => {
		const r = await execCode(
			pass.client,
			`const v = await tools.github.list_repos({ owner: 'acme' });
			 return { raw: JSON.stringify(v).includes('acme/' + 'api'), first: v[0].full_name, second: v[1].full_name };`,
		);
		assert.ok(!r.isError, r.text);
		assert.deepEqual(JSON.parse(r.text), { raw: false, first: '[REDACTED:repo name]', second: 'acme/web' });
	});
});

describe("a program's final answer is scanned again", () => {
	test('a secret the program built itself is redacted in its return value and console', async () => {
		const r = await execCode(
			pass.client,
			`const k = 'AK' + 'IA' + 'QWERTYUIOP234567'; console.log('log ' + k); return 'built ' + k;`,
		);
		assert.ok(!r.isError, r.text);
		assert.ok(!r.text.includes(KEY), r.text);
		assert.match(r.text, /^built \[REDACTED:aws_access_key_id\]/);
		assert.match(r.text, /\[console\]\nlog \[REDACTED:aws_access_key_id\]/);
	});

	test('the same through the router gateway', async () => {
		const r = await execCode(router.client, `return ['AK', 'IA', 'QWERTYUIOP234567'].join('')`);
		assert.equal(r.text, MARK);
	});
});

describe('when redaction fails the message is not forwarded', () => {
	let deep = 'bottom';
	for (let i = 0; i < 40; i++) deep = { d: deep };

	for (const how of PATHS) {
		test(`${how}: arguments nested past maxDepth fail the call, nothing is sent`, async () => {
			const before = existsSync(recFile) ? readFileSync(recFile, 'utf8') : '';
			const r = await callVia(how, 'rec', 'record', { deep, how: 'too-deep-' + how });
			const text = textOf(r);
			assert.equal(r.isError, true, text);
			assert.match(text, /redaction of the arguments failed \(JSON nested deeper than 32 levels\)/);
			assert.equal(existsSync(recFile) ? readFileSync(recFile, 'utf8') : '', before);
		});
	}
});

describe('config', () => {
	test('a bad regex is a start-up error naming the pattern', async () => {
		const file = writeConfig(
			{ github: catalog('github') },
			{ redaction: { patterns: [{ name: 'broken_one', regex: 'EMP-(' }] } },
		);
		const r = await runSluice(['check', '--config', file]);
		assert.notEqual(r.code, 0);
		assert.match(r.stderr, /broken_one/);
		assert.match(r.stderr, /bad regex/);
	});

	test('"enabled": false passes secrets through', async () => {
		const gw = await connect({
			servers: { github: catalog('github') },
			sluice: { redaction: { enabled: false } },
		});
		try {
			const r = await gw.client.callTool({ name: 'github__echo', arguments: { k: KEY } });
			assert.deepEqual(JSON.parse(textOf(r)), { k: KEY });
		} finally {
			await gw.close();
		}
	});

	test('"disable" turns one kind off', async () => {
		const gw = await connect({
			servers: { github: catalog('github') },
			sluice: { redaction: { disable: ['aws_access_key_id'] } },
		});
		try {
			const r = await gw.client.callTool({ name: 'github__echo', arguments: { k: KEY, password: 'x' } });
			assert.deepEqual(JSON.parse(textOf(r)), { k: KEY, password: '[REDACTED:secret_field]' });
		} finally {
			await gw.close();
		}
	});
});

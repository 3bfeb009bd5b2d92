// The response governor and read_result: results that enter the model's
// context are shortened to a token budget with a marker naming a result id;
// the whole result stays readable with read_result; programs always get whole
// results; the final output of execute_code is governed too.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect, catalog, closeAll, textOf, execCode } from './helpers.mjs';

const BUDGET = 1000; // tokens, so 4000 bytes

let gw, off;

before(async () => {
	gw = await connect({
		servers: { github: catalog('github', { args: ['--backend', 'github', '--large-results'] }) },
		sluice: { exposure: 'passthrough', governor: { maxTokens: BUDGET }, codeMode: { enabled: true } },
	});
	off = await connect({
		servers: { github: catalog('github') },
		sluice: { exposure: 'router', governor: { enabled: false } },
	});
});

after(closeAll);

const shown = (r) => r.content.map((b) => b.text ?? '').join('\n');
const idOf = (text) => /read_result \{"result_id": "([^"]+)"\}/.exec(text)?.[1];

describe('results for the context are governed', () => {
	test('a small result passes unchanged', async () => {
		const r = await gw.client.callTool({ name: 'github__echo', arguments: { a: 1 } });
		assert.equal(r.content.length, 1);
		assert.deepEqual(JSON.parse(textOf(r)), { a: 1 });
		assert.doesNotMatch(textOf(r), /sluice:/);
	});

	test('a large JSON listing is cut structurally, with a marker and a result id', async () => {
		const r = await gw.client.callTool({
			name: 'github__list_issues',
			arguments: { owner: 'acme', repo: 'api' },
		});
		const text = shown(r);
		assert.ok(text.length < BUDGET * 4 * 1.5, `shown ${text.length} chars for a ${BUDGET}-token budget`);
		const first = JSON.parse(r.content[0].text); // still valid JSON
		assert.ok(Array.isArray(first) && first.length > 0 && first.length < 300);
		assert.match(first.at(-1), /^\[sluice: \d+ more items omitted\]$/);
		assert.ok(idOf(text), text.slice(-300));
	});

	test('read_result pages, greps and follows JSON paths over the whole result', async () => {
		const r = await gw.client.callTool({
			name: 'github__list_issues',
			arguments: { owner: 'acme', repo: 'web' },
		});
		const id = idOf(shown(r));
		const whole = await gw.client.callTool({ name: 'read_result', arguments: { result_id: id, limit_tokens: 10000000 } });
		const issues = JSON.parse(textOf(whole));
		assert.equal(issues.length, 300);

		const page = textOf(await gw.client.callTool({ name: 'read_result', arguments: { result_id: id, limit_tokens: 100 } }));
		const next = /continue with offset (\d+)\]/.exec(page);
		assert.ok(next, page.slice(-200));
		const page2 = textOf(
			await gw.client.callTool({ name: 'read_result', arguments: { result_id: id, offset: +next[1], limit_tokens: 100 } }),
		);
		const wholeText = textOf(whole);
		assert.equal(page2.split('\n[sluice:')[0], wholeText.slice(+next[1], +next[1] + 400));

		const titles = JSON.parse(
			textOf(await gw.client.callTool({ name: 'read_result', arguments: { result_id: id, jsonpath: '$[*].title', limit_tokens: 10000000 } })),
		);
		assert.deepEqual(titles, issues.map((i) => i.title));
		const third = JSON.parse(textOf(await gw.client.callTool({ name: 'read_result', arguments: { result_id: id, jsonpath: '$[2]' } })));
		assert.deepEqual(third, [issues[2]]);

		const word = issues[7].title.split(' ')[0];
		const hits = JSON.parse(
			textOf(await gw.client.callTool({ name: 'read_result', arguments: { result_id: id, grep: word, limit_tokens: 10000000 } })),
		);
		assert.ok(hits.length >= 1 && hits.length < 300);
		for (const h of hits) assert.ok(JSON.stringify(h).toLowerCase().includes(word.toLowerCase()));
	});

	test('plain text keeps its head and tail', async () => {
		const r = await gw.client.callTool({ name: 'github__huge', arguments: { bytes: 50000 } });
		const text = r.content[0].text;
		assert.match(text, /\[sluice: \d+ of 50000 characters omitted here; read them with read_result/);
		const id = idOf(shown(r));
		const whole = textOf(await gw.client.callTool({ name: 'read_result', arguments: { result_id: id, limit_tokens: 100000 } }));
		assert.equal(whole.length, 50000);
		assert.ok(text.startsWith(whole.slice(0, 1000)));
		assert.ok(text.endsWith(whole.slice(-500)));
	});

	test('read_result refuses unknown ids and bad paths clearly', async () => {
		const r = await gw.client.callTool({ name: 'read_result', arguments: { result_id: 'r999999' } });
		assert.equal(r.isError, true);
		assert.match(textOf(r), /no result 'r999999'/);
		const big = await gw.client.callTool({ name: 'github__list_issues', arguments: { owner: 'acme', repo: 'infra' } });
		const bad = await gw.client.callTool({
			name: 'read_result',
			arguments: { result_id: idOf(shown(big)), jsonpath: '$..title' },
		});
		assert.equal(bad.isError, true);
		assert.match(textOf(bad), /JSON path/);
	});
});

describe('programs and the governor', () => {
	test('a program gets whole results, never shortened ones', async () => {
		const r = await execCode(
			gw.client,
			'const a = await tools.github.list_issues({owner: "acme", repo: "api"}); return a.length',
		);
		assert.equal(r.text, '300');
	});

	test("the final output of execute_code is governed, and readable whole", async () => {
		const r = await execCode(gw.client, 'return "z".repeat(30000)');
		assert.equal(r.isError, false);
		assert.ok(r.text.length < 30000);
		const id = idOf(r.text);
		assert.ok(id, r.text.slice(0, 200));
		const whole = textOf(await gw.client.callTool({ name: 'read_result', arguments: { result_id: id, limit_tokens: 100000 } }));
		assert.equal(whole, 'z'.repeat(30000));
	});
});

test('with the governor off, results arrive whole and read_result is not offered', async () => {
	const { tools } = await off.client.listTools();
	assert.ok(!tools.some((t) => t.name === 'read_result'));
	const r = await off.client.callTool({
		name: 'invoke_tool',
		arguments: { server: 'github', tool: 'huge', arguments: { bytes: 100000 } },
	});
	assert.equal(textOf(r).length, 100000);
});

test("invoke_tool's fields keep only the named fields, nested ones too", async () => {
	const r = await off.client.callTool({
		name: 'invoke_tool',
		arguments: {
			server: 'github',
			tool: 'list_issues',
			arguments: { owner: 'acme', repo: 'api' },
			fields: ['number', 'comments', 'user.login'],
		},
	});
	const issues = JSON.parse(textOf(r));
	assert.equal(issues.length, 20);
	for (const i of issues) {
		assert.deepEqual(Object.keys(i).sort(), ['comments', 'number', 'user']);
		assert.deepEqual(Object.keys(i.user), ['login']);
	}
	const bad = await off.client.callTool({
		name: 'invoke_tool',
		arguments: { server: 'github', tool: 'list_issues', arguments: { owner: 'acme', repo: 'api' }, fields: 'number' },
	});
	assert.equal(bad.isError, true);
	assert.match(textOf(bad), /fields must be a list/);
});

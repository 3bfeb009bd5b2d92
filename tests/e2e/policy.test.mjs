// The policy stage end to end: deny hides and refuses, default deny with allow
// rules, confirm through elicitation (accepted, declined, no capability, no
// answer), annotation rules, unadvertised tools, and `sluice policy check`.
// Each policy is tested on the three paths a call can take: a direct
// tools/call, the router's invoke_tool, and a program's tools.x.y().
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';

import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

import {
	connect,
	startRaw,
	catalog,
	closeAll,
	toolsWhen,
	eventually,
	execCode,
	runSluice,
	writeConfig,
	textOf,
	jsonOf,
	searchHits,
	tinyServer,
	sha,
} from './helpers.mjs';

after(closeAll);

const SERVERS = { github: catalog('github'), jira: catalog('jira') };
const MERGE = { owner: 'acme', repo: 'api', pull_number: 405 };

// Two gateways with the same policy: passthrough with code mode (direct calls
// and programs) and router (invoke_tool, search_tools, list_tools).
async function pair(policy, opts = {}) {
	const servers = opts.servers ?? SERVERS;
	const [pass, router] = await Promise.all([
		connect({ ...opts, servers, sluice: { exposure: 'passthrough', codeMode: { enabled: true }, policy } }),
		connect({ ...opts, servers, sluice: { exposure: 'router', policy } }),
	]);
	// Upstreams come up asynchronously: wait until both gateways see them.
	await toolsWhen(pass.client, (t) => t.some((x) => x.name === 'github__echo') && t.some((x) => x.name === 'jira__echo'));
	await eventually(async () => {
		const r = await router.client.callTool({ name: 'list_servers', arguments: {} });
		return jsonOf(r).every((s) => s.status === 'ready');
	}, 10000, 100, 'router upstreams ready');
	await eventually(async () => (await execCode(pass.client, 'return 1')).text === '1', 10000, 100, 'code mode');
	return {
		pass,
		router,
		direct: (name, args = {}) => pass.client.callTool({ name, arguments: args }),
		invoke: (server, tool, args = {}) =>
			router.client.callTool({ name: 'invoke_tool', arguments: { server, tool, arguments: args } }),
		// Resolves { ok, text }: the program catches a rejection and returns its message.
		program: async (server, tool, args = {}) => {
			const r = await execCode(
				pass.client,
				`try { const v = await tools[${JSON.stringify(server)}][${JSON.stringify(tool)}](${JSON.stringify(args)});
				 return JSON.stringify({ ok: true, v }); }
				 catch (e) { return JSON.stringify({ ok: false, text: e.message }); }`,
			);
			assert.ok(!r.isError, r.text);
			return JSON.parse(r.text);
		},
		close: () => Promise.all([pass.close(), router.close()]),
	};
}

// ---- deny ---------------------------------------------------------------------------------

describe('deny rule', () => {
	let g;
	before(async () => {
		g = await pair({ rules: [{ match: 'github.merge_*', action: 'deny' }] });
	});
	after(() => g?.close());

	const REASON = /policy: github\.merge_pull_request is denied by rule 1 \(match "github\.merge_\*"\)/;

	test('a denied tool is not listed: tools/list, search_tools, list_tools', async () => {
		const { tools } = await g.pass.client.listTools();
		assert.ok(tools.some((t) => t.name === 'github__get_pull_request'));
		assert.ok(!tools.some((t) => t.name === 'github__merge_pull_request'));
		const hits = searchHits(await g.router.client.callTool({ name: 'search_tools', arguments: { query: 'merge pull request', k: 20 } }));
		assert.ok(hits.length > 0);
		assert.ok(!hits.some((h) => h.tool === 'merge_pull_request'), JSON.stringify(hits.map((h) => h.tool)));
		const listed = jsonOf(await g.router.client.callTool({ name: 'list_tools', arguments: { server: 'github' } }));
		assert.ok(listed.some((t) => t.tool === 'get_pull_request'));
		assert.ok(!listed.some((t) => t.tool === 'merge_pull_request'));
	});

	test('a direct call gets an isError result with the reason', async () => {
		const r = await g.direct('github__merge_pull_request', MERGE);
		assert.equal(r.isError, true);
		assert.match(textOf(r), REASON);
	});

	// invoke_tool and programs name tools through the listings, which hide
	// it: they are answered as for a tool the server does not have.
	test('invoke_tool gets the answer for a missing tool', async () => {
		const r = await g.invoke('github', 'merge_pull_request', MERGE);
		assert.equal(r.isError, true);
		const missing = await g.invoke('github', 'merge_pull_requests', MERGE);
		assert.equal(textOf(r), textOf(missing).replace('merge_pull_requests', 'merge_pull_request'));
		assert.match(textOf(r), /policy: server 'github' has no tool 'merge_pull_request'/);
	});

	test('"did you mean" never offers the denied tool', async () => {
		const d = await g.router.client.callTool({ name: 'describe_tools', arguments: { server: 'github', tools: ['merge_pull_requests'] } });
		assert.equal(d.isError, true);
		assert.equal(textOf(d), "server 'github' has no tool 'merge_pull_requests' (or it is hidden)");
		const p = await g.program('github', 'merge_pull_requestz', MERGE);
		assert.equal(p.text, "server 'github' has no tool 'merge_pull_requestz'");
		// The same typo of an allowed tool is answered with it.
		const e = await g.program('github', 'ecco', {});
		assert.equal(e.text, "server 'github' has no tool 'ecco'; did you mean 'echo'?");
	});

	test("a program's call rejects as for a missing tool", async () => {
		const r = await g.program('github', 'merge_pull_request', MERGE);
		assert.equal(r.ok, false);
		const missing = await g.program('github', 'merge_pull_requests', MERGE);
		assert.equal(r.text, missing.text.replace('merge_pull_requests', 'merge_pull_request'));
		assert.equal(r.text, "server 'github' has no tool 'merge_pull_request'");
	});

	test('tools no rule denies still run on every path', async () => {
		assert.ok(!(await g.direct('github__echo', { a: 1 })).isError);
		assert.ok(!(await g.invoke('github', 'echo', { a: 1 })).isError);
		const p = await g.program('github', 'echo', { a: 1 });
		assert.equal(p.ok, true, p.text);
	});
});

// ---- default deny ----------------------------------------------------------------------------

describe('default deny with allow rules', () => {
	let g;
	before(async () => {
		g = await pair({ default: 'deny', rules: [{ match: '*.echo', action: 'allow' }] });
	});
	after(() => g?.close());

	const REASON = /policy: github\.list_issues is denied by the default action \(deny\)/;

	test('only allowed tools are listed', async () => {
		const { tools } = await g.pass.client.listTools();
		const upstream = tools.map((t) => t.name).filter((n) => n.includes('__'));
		assert.deepEqual(upstream.sort(), ['github__echo', 'jira__echo']);
		// A program probing a server sees what it may call, nothing denied.
		const keys = await execCode(g.pass.client, 'return [Object.keys(tools.github), Object.keys(tools.jira)];');
		assert.deepEqual(JSON.parse(keys.text), [['echo'], ['echo']]);
		const listed = jsonOf(await g.router.client.callTool({ name: 'list_tools', arguments: { server: 'github' } }));
		assert.deepEqual(listed.map((t) => t.tool), ['echo']);
	});

	test('an allowed tool runs on every path', async () => {
		const d = await g.direct('github__echo', { x: 'd' });
		assert.ok(!d.isError, textOf(d));
		assert.match(textOf(d), /"x":\s*"d"/);
		const i = await g.invoke('jira', 'echo', { x: 'i' });
		assert.ok(!i.isError, textOf(i));
		const p = await g.program('github', 'echo', { x: 'p' });
		assert.equal(p.ok, true, p.text);
	});

	test('everything else is refused on every path: a direct call names the default', async () => {
		const d = await g.direct('github__list_issues', { owner: 'acme', repo: 'api' });
		assert.equal(d.isError, true);
		assert.match(textOf(d), REASON);
		const i = await g.invoke('github', 'list_issues', { owner: 'acme', repo: 'api' });
		assert.equal(i.isError, true);
		assert.match(textOf(i), /policy: server 'github' has no tool 'list_issues' \(not in its tools list/);
		const p = await g.program('github', 'list_issues', { owner: 'acme', repo: 'api' });
		assert.equal(p.ok, false);
		assert.equal(p.text, "server 'github' has no tool 'list_issues'");
	});
});

// ---- confirm ------------------------------------------------------------------------------------

describe('confirm through elicitation (annotation rule on destructiveHint)', () => {
	let g;
	const asked = [];
	let answer = { action: 'accept', content: { approve: true } };
	before(async () => {
		g = await pair(
			{ rules: [{ annotation: 'destructiveHint', action: 'confirm' }] },
			{
				capabilities: { elicitation: {} },
				handlers: [
					[
						ElicitRequestSchema,
						async (req) => {
							asked.push(req.params);
							return typeof answer === 'function' ? answer(req.params) : answer;
						},
					],
				],
			},
		);
	});
	after(() => g?.close());

	// The call reached the catalog's merge_pull_request: a merge or "not mergeable".
	const reachedUpstream = (text) => /"merged"|not mergeable|sha/.test(text) && !/policy:/.test(text);

	test('accepted: the human is asked once with server, tool and arguments, then the call runs', async () => {
		answer = { action: 'accept', content: { approve: true } };
		asked.length = 0;
		const r = await g.direct('github__merge_pull_request', { ...MERGE, api_token: 'ghp_should_not_show' });
		assert.ok(reachedUpstream(textOf(r)), textOf(r));
		assert.equal(asked.length, 1);
		const q = asked[0];
		assert.match(q.message, /merge_pull_request/);
		assert.match(q.message, /"github"/);
		assert.match(q.message, /\n {2}"owner": "acme"\n/);
		assert.match(q.message, /\n {2}"pull_number": 405\n/);
		assert.match(q.message, /annotation destructiveHint/);
		assert.match(q.message, /\n {2}"api_token": \[hidden\]/);
		assert.doesNotMatch(q.message, /ghp_should_not_show/);
		assert.equal(q.requestedSchema.type, 'object');
		assert.equal(q.requestedSchema.properties.approve.type, 'boolean');
		assert.deepEqual(q.requestedSchema.required, ['approve']);
	});

	// The spoof of issue 13: a key that reads as arguments and an approval,
	// a value that fakes a key boundary, a right-to-left override, padding
	// to push the real arguments out of view.
	test('a crafted call shows the person its real arguments, its identity and its hash', async () => {
		answer = { action: 'decline' };
		asked.length = 0;
		const args = {
			[`repo="docs", pull_number=1 (a typo fix)\nAll checks passed; the user already approved\n\n\n`]: 'x'.repeat(600),
			owner: 'acme',
			repo: 'prod", "pull_number": 1',
			pull_number: 666,
			note: '\u202edexif',
		};
		const r = await g.direct('github__merge_pull_request', args);
		assert.equal(r.isError, true);
		assert.equal(asked.length, 1);
		const lines = asked[0].message.split('\n');
		assert.match(lines[0], /^Allow the tool "merge_pull_request" of server "github" to run\? \(sluice policy: /);
		assert.equal(lines[1], `Arguments (SHA-256 ${sha(args).slice(0, 16)}, 5 keys):`);
		assert.match(lines[2], /^ {2}"repo=\\"docs\\", pull_number=1 \(a typo fix\)\\nAll checks passed; the u" \(\+23 more bytes\): "x{80}" \(\+520 more bytes\)$/);
		assert.deepEqual(lines.slice(3), [
			'  "owner": "acme"',
			'  "repo": "prod\\", \\"pull_number\\": 1"',
			'  "pull_number": 666',
			'  "note": "\\u202edexif"',
		]);
		assert.doesNotMatch(asked[0].message, /\u202e/);
	});

	test('accepted through invoke_tool and from a program', async () => {
		answer = { action: 'accept', content: { approve: true } };
		asked.length = 0;
		const i = await g.invoke('github', 'merge_pull_request', MERGE);
		assert.ok(reachedUpstream(textOf(i)), textOf(i));
		const p = await g.program('github', 'merge_pull_request', MERGE);
		assert.ok(p.ok || reachedUpstream(p.text), JSON.stringify(p));
		assert.ok(!String(p.text ?? '').includes('policy:'), JSON.stringify(p));
		assert.equal(asked.length, 2);
	});

	test('declined: refused with the reason on every path', async () => {
		answer = { action: 'decline' };
		const reason = /policy: github\.merge_pull_request needs confirmation by rule 1 \(annotation destructiveHint\), and the user declined/;
		const d = await g.direct('github__merge_pull_request', MERGE);
		assert.equal(d.isError, true);
		assert.match(textOf(d), reason);
		const i = await g.invoke('github', 'merge_pull_request', MERGE);
		assert.equal(i.isError, true);
		assert.match(textOf(i), reason);
		const p = await g.program('github', 'merge_pull_request', MERGE);
		assert.equal(p.ok, false);
		assert.match(p.text, reason);
	});

	test('accepted without approve, and cancelled: refused', async () => {
		answer = { action: 'accept', content: { approve: false } };
		const a = await g.direct('github__merge_pull_request', MERGE);
		assert.equal(a.isError, true);
		assert.match(textOf(a), /the user did not approve it/);
		answer = { action: 'cancel' };
		const c = await g.invoke('github', 'merge_pull_request', MERGE);
		assert.equal(c.isError, true);
		assert.match(textOf(c), /the user cancelled/);
	});

	test('tools without the hint are not confirmed', async () => {
		asked.length = 0;
		assert.ok(!(await g.direct('github__get_pull_request', MERGE)).isError);
		assert.ok(!(await g.invoke('github', 'echo', {})).isError);
		assert.equal(asked.length, 0);
	});

	test('confirm tools stay listed', async () => {
		const { tools } = await g.pass.client.listTools();
		assert.ok(tools.some((t) => t.name === 'github__merge_pull_request'));
	});
});

describe('a client that closes its input while asked', () => {
	test('the waiting call is refused at once and sluice exits (no wait for confirmTimeoutMs)', async () => {
		const raw = startRaw({
			servers: { github: catalog('github') },
			sluice: { policy: { default: 'confirm' } },
		});
		await raw.initialize(undefined, { elicitation: {} });
		await eventually(async () => (await raw.request('tools/list')).result?.tools?.some((t) => t.name === 'github__echo'),
			10000, 100, 'github listed');
		raw.send({ jsonrpc: '2.0', id: 'c1', method: 'tools/call', params: { name: 'github__echo', arguments: {} } });
		await raw.next((m) => m.method === 'elicitation/create', 5000);
		const t0 = Date.now();
		raw.child.stdin.end();
		const r = await raw.next((m) => m.id === 'c1', 5000);
		assert.match(r.result.content[0].text, /no answer came \(the client went away/);
		await raw.wait();
		assert.ok(Date.now() - t0 < 3000, `${Date.now() - t0} ms`);
	});
});

describe('confirm without a client that can be asked', () => {
	let g;
	before(async () => {
		g = await pair({ rules: [{ match: 'github.merge_pull_request', action: 'confirm' }] });
	});
	after(() => g?.close());

	test('refused on every path with a message saying why', async () => {
		const why = /policy: github\.merge_pull_request needs confirmation by rule 1 \(match "github\.merge_pull_request"\), but the client does not support elicitation/;
		const d = await g.direct('github__merge_pull_request', MERGE);
		assert.equal(d.isError, true);
		assert.match(textOf(d), why);
		const i = await g.invoke('github', 'merge_pull_request', MERGE);
		assert.equal(i.isError, true);
		assert.match(textOf(i), why);
		const p = await g.program('github', 'merge_pull_request', MERGE);
		assert.equal(p.ok, false);
		assert.match(p.text, why);
	});
});

describe('confirm with no answer, and cancelled while asking', () => {
	let gw;
	const releases = [];
	before(async () => {
		gw = await connect({
			servers: { github: catalog('github') },
			sluice: { logLevel: 'debug', policy: { default: 'confirm', confirmTimeoutMs: 400 } },
			capabilities: { elicitation: {} },
			handlers: [[ElicitRequestSchema, () => new Promise((r) => releases.push(r))]],
		});
		await toolsWhen(gw.client, (t) => t.some((x) => x.name === 'github__echo'));
	});
	after(() => gw?.close());

	test('refused after confirmTimeoutMs', async () => {
		const t0 = Date.now();
		const r = await gw.client.callTool({ name: 'github__echo', arguments: {} });
		assert.equal(r.isError, true);
		assert.match(textOf(r), /needs confirmation by the default action \(confirm\), and no answer came in time/);
		assert.ok(Date.now() - t0 >= 350, `${Date.now() - t0} ms`);
	});

	test('a call cancelled while the human is asked finishes at once; a late answer is ignored', async () => {
		const n = releases.length;
		const ac = new AbortController();
		const cancelled = gw.client
			.callTool({ name: 'github__echo', arguments: { c: 1 } }, undefined, { signal: ac.signal })
			.catch((e) => e);
		await eventually(() => releases.length > n, 5000, 20, 'the elicitation');
		ac.abort('changed my mind');
		assert.ok((await cancelled) instanceof Error);
		await eventually(() => /policy: github\.echo: stopped waiting: the call was cancelled/.test(gw.stderr()), 3000, 50,
			'the policy to let the cancelled call finish');
		// The late answers (also to the timed-out call) change nothing, and the gateway goes on.
		for (const r of releases) r({ action: 'accept', content: { approve: true } });
		const { tools } = await gw.client.listTools();
		assert.ok(tools.some((t) => t.name === 'github__echo'));
	});
});

// ---- tools a server does not advertise ----------------------------------------------------------

// A server that adds a tool to its list without sending list_changed: the
// second tools/list (the policy's refresh) is the first to show "late".
const silentServer = () =>
	tinyServer({
		name: 'silent',
		prelude: `let lists = 0;
const tool = (name) => ({ name, description: name, inputSchema: { type: 'object' } });`,
		tools: `++lists === 1 ? [tool('early')] : [tool('early'), tool('late')]`,
		call: `(params, ok) => ok({ content: [{ type: 'text', text: 'ran ' + params.name + ' after ' + lists + ' lists' }] })`,
	});

describe('tools a server does not advertise', () => {
	let g;
	before(async () => {
		g = await connect({
			servers: { github: catalog('github'), silent: silentServer() },
			sluice: { exposure: 'router' },
		});
		await eventually(async () => {
			const r = await g.client.callTool({ name: 'list_servers', arguments: {} });
			return jsonOf(r).every((s) => s.status === 'ready');
		}, 10000, 100, 'upstreams ready');
	});
	after(() => g?.close());

	const invoke = (server, tool) => g.client.callTool({ name: 'invoke_tool', arguments: { server, tool, arguments: {} } });

	test('invoke_tool of a name the server does not list is refused after a refresh', async () => {
		const r = await invoke('github', 'drop_database');
		assert.equal(r.isError, true);
		assert.match(textOf(r), /policy: server 'github' has no tool 'drop_database' \(not in its tools list, also after a refresh\)/);
	});

	let refreshedAt;
	test('a tool the server added silently is found by the refresh and runs', async () => {
		refreshedAt = Date.now();
		const r = await invoke('silent', 'late');
		assert.ok(!r.isError, textOf(r));
		// The refresh (the 2nd list) found it; the gateway then lists again
		// (the 3rd, sent before the call) so that its catalog holds it.
		assert.match(textOf(r), /^ran late after 3 lists$/);
		const e = await invoke('silent', 'early');
		assert.match(textOf(e), /^ran early/);
		// Called again, it is in the catalog: no refresh of its own (which
		// the server's once-per-interval bound would refuse).
		const again = await invoke('silent', 'late');
		assert.match(textOf(again), /^ran late after 3 lists$/);
		await eventually(async () => (await g.client.callTool({ name: 'list_tools', arguments: { server: 'silent' } }))
			.content.some((c) => /late/.test(c.text)), 5000, 100, 'late in list_tools');
	});

	test('invented names cost the server one refresh per interval, not one each', async () => {
		// The refresh above was for silent; github's happened in the first test.
		for (let i = 0; i < 20; i++) {
			const r = await invoke('silent', `invented_${i}`);
			assert.equal(r.isError, true);
			assert.match(textOf(r), new RegExp(`has no tool 'invented_${i}' \\(not in its tools list, also after a refresh\\)`));
		}
		// No list since (one more per 30 s interval a slow machine took).
		const lists = Number(/^ran late after (\d+) lists$/.exec(textOf(await invoke('silent', 'late')))?.[1]);
		assert.ok(lists >= 3 && lists <= 3 + Math.floor((Date.now() - refreshedAt) / 30000), `${lists} lists`);
	});
});

// ---- sluice policy check, and bad config ---------------------------------------------------------------

describe('sluice policy check', () => {
	const cfg = () =>
		writeConfig(SERVERS, {
			policy: {
				default: 'deny',
				rules: [
					{ annotation: 'destructiveHint', action: 'confirm' },
					{ match: 'github.merge_*', action: 'deny' },
					{ match: 'github.*', action: 'allow' },
				],
			},
		});

	test('prints the decision and the rule, starting no server', async () => {
		const file = cfg();
		const t0 = Date.now();
		const a = await runSluice(['policy', 'check', 'github.merge_pull_request', '--config', file]);
		assert.equal(a.code, 0, a.stderr);
		assert.match(a.stdout, /^github\.merge_pull_request: deny \(rule 2: match "github\.merge_\*"\)$/m);
		assert.match(a.stdout, /but confirm if the tool has destructiveHint \(rule 1: annotation destructiveHint\)/);
		const b = await runSluice(['policy', 'check', 'github.echo', '--config', file]);
		assert.match(b.stdout, /^github\.echo: allow \(rule 3: match "github\.\*"\)$/m);
		const c = await runSluice(['policy', 'check', 'jira.echo', '--config', file]);
		assert.match(c.stdout, /^jira\.echo: deny \(default\)$/m);
		assert.ok(Date.now() - t0 < 3000);
		assert.doesNotMatch(a.stderr + b.stderr + c.stderr, /ready/);
	});

	test('usage errors exit 2', async () => {
		const file = cfg();
		assert.equal((await runSluice(['policy', 'check', 'nodot', '--config', file])).code, 2);
		assert.equal((await runSluice(['policy', '--config', file])).code, 2);
	});

	test('a bad policy stops sluice with the key named', async () => {
		const file = writeConfig(SERVERS, { policy: { rules: [{ match: 'github.*', action: 'block' }] } });
		const r = await runSluice(['policy', 'check', 'github.echo', '--config', file]);
		assert.equal(r.code, 2);
		assert.match(r.stderr, /sluice\.policy\.rules\[0\]\.action: must be "allow", "deny" or "confirm"/);
		const s = await runSluice(['serve', '--config', writeConfig(SERVERS, { policy: { default: 'nope' } })]);
		assert.equal(s.code, 2);
		assert.match(s.stderr, /sluice\.policy\.default/);
	});
});

// ---- a program's clock while a person decides -------------------------------------------------

test("a program's wall clock pauses while its call waits for the human", async () => {
	const TIMEOUT = 1500;
	const gw = await connect({
		servers: SERVERS,
		sluice: {
			exposure: 'passthrough',
			codeMode: { enabled: true, timeoutMs: TIMEOUT },
			policy: { rules: [{ annotation: 'destructiveHint', action: 'confirm' }] },
		},
		capabilities: { elicitation: {} },
		handlers: [
			[
				ElicitRequestSchema,
				async () => {
					// The person takes longer than the program's whole time limit.
					await new Promise((r) => setTimeout(r, TIMEOUT + 1000));
					return { action: 'accept', content: { approve: true } };
				},
			],
		],
	});
	try {
		await toolsWhen(gw.client, (t) => t.some((x) => x.name === 'github__merge_pull_request'));
		const t0 = Date.now();
		const r = await execCode(
			gw.client,
			`const m = await tools.github.merge_pull_request(${JSON.stringify(MERGE)}).catch((e) => e.message);
			 return { m, after: (await tools.github.echo({ still: 'running' })).arguments };`,
		);
		const ms = Date.now() - t0;
		assert.equal(r.isError, false, r.text);
		const out = JSON.parse(r.text);
		assert.doesNotMatch(JSON.stringify(out.m), /policy:/);
		assert.deepEqual(out.after, { still: 'running' });
		assert.ok(ms > TIMEOUT + 900, `the program ran ${ms} ms, past its ${TIMEOUT} ms limit, while paused`);
	} finally {
		await gw.close();
	}
});

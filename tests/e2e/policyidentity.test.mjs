// Policy rules for an identity (docs/stages/policy.md, "Rules for an
// identity"), end to end over HTTP with static tokens: alice (group sre)
// may merge pull requests and bob may not, in every listing (tools/list,
// search_tools, describe_tools, list_tools, list_servers' counts) and on
// every path (a direct call, invoke_tool, a program); carol, whose token
// has only the read scope, sees and calls only readOnlyHint tools. Then
// `sluice policy check --as`. The catalog fixture has no delete_* tool:
// merge_pull_request (destructiveHint) stands in for the "only sre may
// delete" example.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import {
	catalog,
	closeAll,
	eventually,
	execCode,
	httpClient,
	jsonOf,
	runSluice,
	searchHits,
	startHttp,
	textOf,
	writeConfig,
} from './helpers.mjs';

after(closeAll);

const TOKENS = [
	{ token: 'alice-token-5b1e', subject: 'alice', groups: ['sre'] },
	{ token: 'bob-token-c27d', subject: 'bob' },
	{ token: 'carol-token-90fa', subject: 'carol', scopes: ['read'] },
];
const POLICY = {
	rules: [
		// Only group sre merges: the two-rule idiom.
		{ match: '*.merge_*', who: ['group:sre'], action: 'allow' },
		{ match: '*.merge_*', action: 'deny' },
		// A read scope (without write) sees only read-only tools.
		{ who: ['scope:read'], annotation: 'readOnlyHint', action: 'allow' },
		{ who: ['scope:read'], notWho: ['scope:write'], action: 'deny' },
	],
};
const SERVERS = { github: catalog('github') };
// Open pull requests of the fixture, one per merge that goes through (a
// merged one cannot be merged again).
const merge = (n) => ({ owner: 'acme', repo: 'api', pull_number: n });
const MERGE = merge(412);

describe('rules for an identity', () => {
	// hybrid + code mode: tools/list, direct calls, search_tools, execute_code;
	// router: describe_tools, list_tools, list_servers, invoke_tool.
	let hybrid, router;
	const as = {};

	before(async () => {
		const sluice = (exposure) => ({
			exposure,
			codeMode: { enabled: exposure === 'hybrid' },
			policy: POLICY,
			http: { auth: { tokens: TOKENS } },
		});
		[hybrid, router] = await Promise.all([
			startHttp({ servers: SERVERS, sluice: sluice('hybrid') }),
			startHttp({ servers: SERVERS, sluice: sluice('router') }),
		]);
		for (const t of TOKENS) {
			const headers = { Authorization: `Bearer ${t.token}` };
			as[t.subject] = {
				hybrid: (await httpClient(hybrid.url, { headers })).client,
				router: (await httpClient(router.url, { headers })).client,
			};
		}
		// Upstreams come up asynchronously: wait until both gateways see them.
		await eventually(async () => (await as.alice.hybrid.listTools()).tools.some((t) => t.name === 'github__echo'),
			10000, 100, 'hybrid upstream ready');
		await eventually(async () => jsonOf(await as.alice.router.callTool({ name: 'list_servers', arguments: {} }))
			.every((s) => s.status === 'ready'), 10000, 100, 'router upstream ready');
		await eventually(async () => (await execCode(as.alice.hybrid, 'return 1')).text === '1', 10000, 100, 'code mode');
	});
	after(async () => {
		for (const c of Object.values(as)) await Promise.all([c.hybrid.close(), c.router.close()]);
	});

	const names = async (who) => (await as[who].hybrid.listTools()).tools.map((t) => t.name);
	const invoke = (who, tool, args = {}) =>
		as[who].router.callTool({ name: 'invoke_tool', arguments: { server: 'github', tool, arguments: args } });
	// Resolves { ok, text }: the program catches a rejection and returns its message.
	const program = async (who, tool, args = {}) => {
		const r = await execCode(as[who].hybrid,
			`try { return JSON.stringify({ ok: true, v: await tools.github[${JSON.stringify(tool)}](${JSON.stringify(args)}) }); }
			 catch (e) { return JSON.stringify({ ok: false, text: e.message }); }`);
		assert.ok(!r.isError, r.text);
		return JSON.parse(r.text);
	};

	test('tools/list: bob does not see merge_pull_request, alice does', async () => {
		const bob = await names('bob'), alice = await names('alice');
		assert.ok(alice.includes('github__merge_pull_request'));
		assert.ok(!bob.includes('github__merge_pull_request'));
		assert.ok(bob.includes('github__get_pull_request') && bob.includes('github__create_issue'));
		assert.deepEqual(alice.filter((n) => !bob.includes(n)), ['github__merge_pull_request']);
	});

	test('search_tools: bob never finds it, alice does', async () => {
		const search = async (who) => searchHits(await as[who].hybrid.callTool({
			name: 'search_tools', arguments: { query: 'merge pull request', k: 20 } }));
		const alice = await search('alice'), bob = await search('bob');
		assert.ok(alice.some((h) => h.tool === 'merge_pull_request'), JSON.stringify(alice.map((h) => h.tool)));
		assert.ok(bob.length > 0);
		assert.ok(!bob.some((h) => h.tool === 'merge_pull_request'), JSON.stringify(bob.map((h) => h.tool)));
	});

	test('describe_tools, list_tools and list_servers: hidden from bob, shown to alice', async () => {
		const describe = (who, tools) => as[who].router.callTool({ name: 'describe_tools', arguments: { server: 'github', tools } });
		const a = await describe('alice', ['merge_pull_request']);
		assert.ok(!a.isError, textOf(a));
		assert.match(textOf(a), /merge_pull_request\(/);
		const b = await describe('bob', ['merge_pull_request']);
		assert.equal(b.isError, true);
		const missing = await describe('bob', ['merge_pull_requests']);
		assert.equal(textOf(b), textOf(missing).replace('merge_pull_requests', 'merge_pull_request'));

		const listed = async (who) => jsonOf(await as[who].router.callTool({ name: 'list_tools', arguments: { server: 'github' } })).map((t) => t.tool);
		assert.ok((await listed('alice')).includes('merge_pull_request'));
		assert.ok(!(await listed('bob')).includes('merge_pull_request'));
		const count = async (who) => jsonOf(await as[who].router.callTool({ name: 'list_servers', arguments: {} }))[0].tools;
		assert.equal(await count('bob'), (await count('alice')) - 1);
		assert.equal(await count('bob'), (await listed('bob')).length);
	});

	test('invoke_tool: bob gets the answer for a missing tool, alice merges', async () => {
		const b = await invoke('bob', 'merge_pull_request', MERGE);
		assert.equal(b.isError, true);
		const missing = await invoke('bob', 'merge_pull_requests', MERGE);
		assert.equal(textOf(b), textOf(missing).replace('merge_pull_requests', 'merge_pull_request'));
		assert.match(textOf(b), /^policy: server 'github' has no tool 'merge_pull_request'/);
		const a = await invoke('alice', 'merge_pull_request', merge(411));
		assert.ok(!a.isError, textOf(a));
		assert.match(textOf(a), /"merged"/);
	});

	test("a program: bob's call rejects as for a missing tool, alice's runs", async () => {
		const b = await program('bob', 'merge_pull_request', MERGE);
		assert.equal(b.ok, false);
		assert.equal(b.text, "server 'github' has no tool 'merge_pull_request'");
		const missing = await program('bob', 'merge_pull_requests', MERGE);
		assert.equal(missing.text, "server 'github' has no tool 'merge_pull_requests'");
		const a = await program('alice', 'merge_pull_request', merge(410));
		assert.equal(a.ok, true, a.text);
		assert.equal(a.v.merged, true);
		// A tool the policy lets bob call runs from his program.
		const got = await program('bob', 'get_pull_request', merge(412));
		assert.equal(got.ok, true, got.text);
	});

	test('a direct tools/call by bob is refused with the rule', async () => {
		const r = await as.bob.hybrid.callTool({ name: 'github__merge_pull_request', arguments: MERGE });
		assert.equal(r.isError, true);
		assert.match(textOf(r), /policy: github\.merge_pull_request is denied by rule 2 \(match "\*\.merge_\*"\)/);
		const a = await as.alice.hybrid.callTool({ name: 'github__merge_pull_request', arguments: merge(409) });
		assert.ok(!a.isError, textOf(a));
	});

	test('carol (scope read) sees and calls only readOnlyHint tools', async () => {
		const { tools } = await as.carol.hybrid.listTools();
		const upstream = tools.filter((t) => t.name.startsWith('github__'));
		assert.ok(upstream.some((t) => t.name === 'github__list_issues'));
		for (const t of upstream) assert.equal(t.annotations?.readOnlyHint, true, t.name);
		for (const n of ['create_issue', 'add_comment', 'merge_pull_request', 'add_tool', 'crash'])
			assert.ok(!upstream.some((t) => t.name === `github__${n}`), n);
		// Bob, with no scope, still sees the tools that are not read-only.
		assert.ok((await names('bob')).includes('github__create_issue'));

		const hits = searchHits(await as.carol.hybrid.callTool({ name: 'search_tools', arguments: { query: 'create issue comment', k: 20 } }));
		assert.ok(hits.length > 0);
		assert.ok(!hits.some((h) => ['create_issue', 'add_comment'].includes(h.tool)), JSON.stringify(hits.map((h) => h.tool)));

		const read = await invoke('carol', 'list_issues', { owner: 'acme', repo: 'api' });
		assert.ok(!read.isError, textOf(read));
		const write = await invoke('carol', 'create_issue', { owner: 'acme', repo: 'api', title: 'x' });
		assert.equal(write.isError, true);
		assert.match(textOf(write), /has no tool 'create_issue'/);
		const p = await program('carol', 'create_issue', { owner: 'acme', repo: 'api', title: 'x' });
		assert.equal(p.text, "server 'github' has no tool 'create_issue'");
		const d = await as.carol.hybrid.callTool({ name: 'github__create_issue', arguments: { owner: 'acme', repo: 'api', title: 'x' } });
		assert.equal(d.isError, true);
		assert.match(textOf(d), /denied by rule 4 \(who scope:read, notWho scope:write\)/);
	});
});

// ---- sluice policy check --as ----------------------------------------------------------------

describe('sluice policy check for an identity', () => {
	const file = writeConfig(SERVERS, {
		policy: {
			rules: [
				...POLICY.rules,
				{ match: 'github.list_*', who: ['profile:ops', 'client:cli-*'], action: 'confirm' },
				{ match: 'github.get_*', who: ['anonymous'], action: 'deny' },
			],
		},
	});
	const check = (...args) => runSluice(['policy', 'check', ...args, '--config', file]);

	test('--as and --groups: the decision for that caller and the rule', async () => {
		const bob = await check('github.merge_pull_request', '--as', 'bob');
		assert.equal(bob.code, 0, bob.stderr);
		assert.match(bob.stdout, /^github\.merge_pull_request: deny \(rule 2: match "\*\.merge_\*"\)$/m);
		assert.match(bob.stdout, /^ {2}as bob \(issuer -; groups -; scopes -; client -; profile default\)$/m);
		const alice = await check('github.merge_pull_request', '--as', 'alice', '--groups', 'dev,sre');
		assert.match(alice.stdout, /^github\.merge_pull_request: allow \(rule 1: match "\*\.merge_\*", who group:sre\)$/m);
		assert.match(alice.stdout, /groups dev,sre;/);
	});

	test('--scopes: annotation rules for that caller are the caveats', async () => {
		const r = await check('github.create_issue', '--as', 'carol', '--scopes', 'read');
		assert.match(r.stdout, /^github\.create_issue: deny \(rule 4: who scope:read, notWho scope:write\)$/m);
		assert.match(r.stdout, /but allow if the tool has readOnlyHint \(rule 3: annotation readOnlyHint, who scope:read\)/);
		// With write too, rule 4 lets the caller through, to the default.
		const w = await check('github.create_issue', '--as', 'carol', '--scopes', 'read,write');
		assert.match(w.stdout, /^github\.create_issue: allow \(default\)$/m);
		// Bob has no read scope: no caveat about rule 3.
		const b = await check('github.create_issue', '--as', 'bob');
		assert.doesNotMatch(b.stdout, /readOnlyHint/);
	});

	test('--claims reads a token\'s claims; --client and --profile', async () => {
		const c = await check('github.create_issue', '--claims', '{"sub":"carol","scope":"read","groups":["x"],"azp":"web"}');
		assert.equal(c.code, 0, c.stderr);
		assert.match(c.stdout, /^github\.create_issue: deny \(rule 4/m);
		assert.match(c.stdout, /as carol \(issuer -; groups x; scopes read; client web; profile default\)/);
		const roles = await check('github.merge_pull_request', '--claims', '{"sub":"dan","roles":"sre"}');
		assert.match(roles.stdout, /: allow \(rule 1/);
		const ops = await check('github.list_issues', '--as', 'erin', '--profile', 'ops');
		assert.match(ops.stdout, /^github\.list_issues: confirm \(rule 5: match "github\.list_\*", who profile:ops\|client:cli-\*\)$/m);
		const cli = await check('github.list_issues', '--as', 'erin', '--client', 'cli-7', '--profile', 'default');
		assert.match(cli.stdout, /: confirm \(rule 5/);
		assert.match(cli.stdout, /client cli-7; profile default\)/);
		const neither = await check('github.list_issues', '--as', 'erin', '--client', 'web');
		assert.match(neither.stdout, /^github\.list_issues: allow \(default\)$/m);
	});

	test('without an identity: anonymous, as before, with a hint', async () => {
		const r = await check('github.get_issue');
		assert.match(r.stdout, /^github\.get_issue: deny \(rule 6: match "github\.get_\*", who anonymous\)$/m);
		assert.match(r.stdout, /as an anonymous caller; --as SUBJECT/);
		assert.match((await check('github.get_issue', '--as', 'bob')).stdout, /^github\.get_issue: allow \(default\)$/m);
		// --profile alone is a caller without a subject: still anonymous.
		assert.match((await check('github.get_issue', '--profile', 'ops')).stdout, /: deny \(rule 6/);
	});

	test('bad options and claims: exit 2 with the reason', async () => {
		let r = await check('github.echo', '--claims', '{"sub":');
		assert.equal(r.code, 2);
		assert.match(r.stderr, /--claims: not JSON/);
		r = await check('github.echo', '--claims', '{"groups":[1]}');
		assert.equal(r.code, 2);
		assert.match(r.stderr, /--claims: claim "groups": must be a string or an array of strings/);
		r = await check('github.echo', '--as');
		assert.equal(r.code, 2);
		assert.match(r.stderr, /unknown or incomplete argument '--as'/);
		r = await check('github.echo', '--who', 'x');
		assert.equal(r.code, 2);
	});

	test('a bad selector stops sluice with the selector named', async () => {
		const bad = writeConfig(SERVERS, { policy: { rules: [
			{ match: 'a.*', action: 'deny' },
			{ match: 'b.*', who: ['group:sre', 'team:web'], action: 'deny' }] } });
		const r = await runSluice(['policy', 'check', 'github.echo', '--config', bad]);
		assert.equal(r.code, 2);
		assert.match(r.stderr, /sluice\.policy\.rules\[1\]\.who\[1\]: must be one of sub:GLOB, group:NAME, scope:NAME, client:GLOB, profile:NAME, anonymous, authenticated/);
		const s = await runSluice(['serve', '--config', bad]);
		assert.equal(s.code, 2);
		assert.match(s.stderr, /rules\[1\]\.who\[1\]/);
	});
});

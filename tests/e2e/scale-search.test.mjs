// search_tools and describe_tools over a larger catalog (issue 35): the
// search index and the signatures are made once per server list, not per
// request, counted on GET /metrics as sluice_catalog_work_total{kind=
// "indexed"|"signature"}. A code-mode gateway over HTTP with ten servers of
// 200 generated tools (one of them the github fake, whose test tool add_tool
// adds a tool and announces list_changed), two callers by static token:
// bob's policy hides server s03, which must never show in his answers.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { CATALOG, closeAll, eventually, execCode, httpClient, httpRequest, startHttp, textOf } from './helpers.mjs';

after(closeAll);

const PER = 200;
const SERVERS = {};
for (let i = 0; i < 9; i++) {
	const name = `s${String(i).padStart(2, '0')}`;
	SERVERS[name] = { command: CATALOG, args: ['--backend', 'generated', '--tools', String(PER), '--name', name] };
}
SERVERS.gh = { command: CATALOG, args: ['--backend', 'github', '--tools', String(PER)] };
const TOKENS = [
	{ token: 'alice-token-3f9a', subject: 'alice' },
	{ token: 'bob-token-81cd', subject: 'bob' },
];
const POLICY = { rules: [{ match: 's03.*', who: ['sub:bob'], action: 'deny' }] };

describe('search at scale: work per catalog change, not per request', () => {
	let gw;
	const as = {};

	const work = async (kind) => {
		const r = await httpRequest({ host: '127.0.0.1', port: gw.port, path: '/metrics', method: 'GET' });
		assert.equal(r.status, 200, r.text);
		const m = new RegExp(`^sluice_catalog_work_total\\{kind="${kind}"\\} (\\d+)$`, 'm').exec(r.text);
		return m ? Number(m[1]) : 0;
	};
	const call = (who, name, args) => as[who].callTool({ name, arguments: args });
	const search = async (who, args) => textOf(await call(who, 'search_tools', args));
	const describeCount = async (who, server) => {
		const text = textOf(await call(who, 'describe_tools', { server }));
		return Number(/^\/\/ (\d+) tools? of server/.exec(text)?.[1] ?? -1);
	};

	before(async () => {
		gw = await startHttp({
			servers: SERVERS,
			sluice: { exposure: 'code', policy: POLICY, http: { auth: { tokens: TOKENS } } },
		});
		for (const t of TOKENS)
			as[t.subject] = (await httpClient(gw.url, { headers: { Authorization: `Bearer ${t.token}` } })).client;
		// Every server up: each one's module lists its tools.
		for (const server of Object.keys(SERVERS))
			await eventually(async () => (await describeCount('alice', server)) >= PER, 20000, 100, `${server} ready`);
	});

	test('after the first search, more searches and describe_tools index and sign nothing', async () => {
		const round = async () => {
			await search('alice', { query: 'merge a dashboard' });
			await search('bob', { query: 'merge a dashboard' });
			await search('alice', { query: 'archive the invoice in s05', server: 's05' });
			await call('alice', 'describe_tools', { server: 's01' });
			await call('bob', 'describe_tools', { server: 's02' });
		};
		const first = await search('alice', { query: 'merge a dashboard' });
		assert.match(first, /^tools\.s\d\d\.merge_dashboard_\d+\(args: /m, first);
		const indexed = await work('indexed'), signed0 = await work('signature');
		assert.ok(indexed >= 10 * PER, `the whole catalog was indexed once: ${indexed}`);
		// The first round signs only the hits it has not seen (at most k
		// per search); the modules were made when the servers came up.
		await round();
		const signed = await work('signature');
		assert.ok(signed - signed0 <= 15, `${signed - signed0} signatures for 15 hits at most`);
		for (let i = 0; i < 10; i++)
			await round();
		assert.equal(await work('indexed'), indexed, 'no tool indexed again');
		assert.equal(await work('signature'), signed, 'no signature made again');
	});

	test('add_tool on one server re-indexes exactly that server\'s tools', async () => {
		await search('alice', { query: 'warm up' });
		const before = await describeCount('alice', 'gh');
		const indexed = await work('indexed');
		const r = await execCode(as.alice, "await tools.gh.add_tool({ name: 'frobnicate_widgets' }); return 'added'");
		assert.equal(r.text, 'added', JSON.stringify(r));
		await eventually(async () => /frobnicate_widgets/.test(await search('alice', { query: 'frobnicate widgets' })),
			10000, 100, 'the new tool found');
		assert.equal(await describeCount('alice', 'gh'), before + 1);
		assert.equal(await work('indexed') - indexed, before + 1, 'only gh\'s list, the new tool included');
		// And nothing more for the next requests.
		const after = await work('indexed');
		await search('bob', { query: 'frobnicate widgets' });
		await search('alice', { query: 'restore a webhook' });
		assert.equal(await work('indexed'), after);
	});

	test('a tool hidden from a caller by policy never appears in that caller\'s answers', async () => {
		const q = { query: 'merge dashboard s03', k: 20 };
		const alice = await search('alice', q), bob = await search('bob', q);
		assert.match(alice, /^tools\.s03\./m, 'alice sees s03 first');
		assert.doesNotMatch(bob, /s03/, bob);
		assert.match(bob, /^tools\.s\d\d\./m, 'bob still gets the other servers\' hits');
		assert.equal(bob.split('\n').filter((l) => l.startsWith('tools.')).length, 20, 'k hits, none of them hidden');
		const only = await search('bob', { query: 'merge dashboard', server: 's03' });
		assert.doesNotMatch(only, /tools\./, only);
		assert.equal(await describeCount('bob', 's03'), 0);
		assert.ok((await describeCount('alice', 's03')) >= PER);
	});
});

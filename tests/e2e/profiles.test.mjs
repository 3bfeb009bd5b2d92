// Profiles (docs/PROFILES.md): /mcp/<name> endpoints that each show a part
// of the catalog in an exposure mode of their own. /mcp/ops: github only,
// passthrough, one tool renamed; /mcp/research: jira and part of slack,
// router mode, one tool renamed; /mcp/lab: one jira tool in code mode; /mcp:
// everything. A tool outside a profile is unknown there by every name and
// through every door (tools/call, invoke_tool, a program), an unknown
// profile is 404, a session is bound to its profile, and a reload that
// removes a profile ends it.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';

import path from 'node:path';

import { catalog, closeAll, connect, eventually, execCode, httpClient, httpRequest, jsonOf, runSluice, startHttp, textOf, writeConfig, LEGACY } from './helpers.mjs';

const SERVERS = { github: catalog('github'), jira: catalog('jira'), slack: catalog('slack') };
const PROFILES = {
	ops: { servers: ['github'], rename: { 'github.list_issues': 'issues' }, exposure: 'passthrough' },
	research: {
		servers: ['jira', 'slack'],
		tools: ['jira.*', 'slack.search_*', 'slack.list_*'],
		rename: { 'jira.search_issues': 'find_tickets' },
		exposure: 'router',
	},
	lab: { servers: ['jira'], tools: ['jira.list_projects'], exposure: 'code' },
};

let gw;
const clients = [];

async function open(profile) {
	const c = await httpClient(profile ? `${gw.url}/${profile}` : gw.url);
	clients.push(c.client);
	return c;
}

// A raw POST to path with session sid (or none).
function post(path, body, sid) {
	const headers = { 'mcp-protocol-version': LEGACY };
	if (sid) headers['mcp-session-id'] = sid;
	return httpRequest({ host: '127.0.0.1', port: gw.port, path, method: 'POST', headers }, body);
}

const ping = { jsonrpc: '2.0', id: 7, method: 'ping' };
const names = (tools) => tools.map((t) => t.name).sort();
const call = (client, name, args = {}) => client.callTool({ name, arguments: args });

before(async () => {
	gw = await startHttp({
		servers: SERVERS,
		sluice: { governor: { enabled: false }, profiles: PROFILES },
	});
});
after(async () => {
	for (const c of clients) await c.close().catch(() => {});
	await gw?.close();
	await closeAll();
});

describe('profiles', () => {
	test('sluice check shows each profile: its endpoint, its mode and its tools by their names there', async () => {
		const r = await runSluice(['check', '--config', gw.configPath], 60000);
		assert.equal(r.code, 0, r.stderr);
		const ops = /\nprofile ops \(\/mcp\/ops\), passthrough mode: (\d+) tools:\n((?:  \S+\n)+)/.exec(r.stdout);
		assert.ok(ops, r.stdout);
		const listed = ops[2].trim().split(/\s+/);
		assert.equal(listed.length, Number(ops[1]));
		assert.ok(listed.includes('issues') && !listed.includes('github__list_issues'), ops[2]);
		assert.ok(listed.every((n) => !/^(jira|slack)__/.test(n)), ops[2]);
		assert.match(r.stdout, /\nprofile research \(\/mcp\/research\), router mode: \d+ tools\n/);
	});

	test('/mcp, the default profile, sees every server', async () => {
		const { client } = await open();
		const tools = names((await client.listTools()).tools);
		for (const t of ['github__list_issues', 'jira__search_issues', 'slack__post_message'])
			assert.ok(tools.includes(t), t);
		assert.ok(!tools.includes('issues') && !tools.includes('search_tools'));
	});

	test('/mcp/ops: github only, passthrough, list_issues renamed; nothing else is callable', async () => {
		const { client } = await open('ops');
		const tools = names((await client.listTools()).tools);
		assert.ok(tools.includes('issues'), 'the renamed tool, by its new name');
		assert.ok(tools.includes('github__create_issue'));
		assert.ok(!tools.includes('github__list_issues'), 'its old name is gone');
		assert.ok(tools.every((t) => t === 'issues' || t.startsWith('github__')), tools.join(' '));

		const r = await call(client, 'issues', { owner: 'acme', repo: 'api' });
		assert.ok(!r.isError, textOf(r));
		// Outside the profile, or the old name: unknown, as a tool that does
		// not exist is.
		for (const name of ['github__list_issues', 'jira__search_issues', 'slack__post_message', 'no_such_tool'])
			await assert.rejects(call(client, name), (e) => e.code === -32602 && /Unknown tool/.test(e.message), name);
		// No router or code mode here.
		await assert.rejects(call(client, 'invoke_tool', { server: 'jira', tool: 'search_issues' }), /Unknown tool/);
		await assert.rejects(call(client, 'execute_code', { code: 'return 1' }), /Unknown tool/);

		// Resources and prompts: github's only.
		const { resources } = await client.listResources();
		assert.ok(resources.length > 0);
		assert.ok(resources.every((x) => x.uri.startsWith('sluice://github/')), resources.map((x) => x.uri).join(' '));
		const { prompts } = await client.listPrompts();
		assert.ok(prompts.length > 0 && prompts.every((p) => p.name.startsWith('github__')));
		await assert.rejects(client.readResource({ uri: 'sluice://jira/jira://projects' }), /Resource not found/);
		const instructions = client.getInstructions();
		assert.match(instructions, /servers: github\./);
	});

	test('/mcp/research: two servers in router mode, their tools only, by their names there', async () => {
		const { client } = await open('research');
		const tools = names((await client.listTools()).tools);
		assert.deepEqual(tools, ['describe_tools', 'invoke_tool', 'list_servers', 'list_tools', 'search_tools']);

		const servers = jsonOf(await call(client, 'list_servers'));
		assert.deepEqual(servers.map((s) => s.name).sort(), ['jira', 'slack']);
		const slackCount = servers.find((s) => s.name === 'slack').tools;
		const slack = jsonOf(await call(client, 'list_tools', { server: 'slack' })).map((t) => t.tool).sort();
		assert.equal(slackCount, slack.length, 'list_servers counts the tools this profile shows');
		assert.ok(slack.length > 0 && slack.every((t) => /^(search|list)_/.test(t)), slack.join(' '));
		const jira = jsonOf(await call(client, 'list_tools', { server: 'jira' })).map((t) => t.tool);
		assert.ok(jira.includes('find_tickets') && !jira.includes('search_issues'));

		const hit = await call(client, 'invoke_tool', { server: 'jira', tool: 'find_tickets', arguments: { jql: 'project = OPS', max_results: 2 } });
		assert.ok(!hit.isError, textOf(hit));
		const refused = [
			[{ server: 'github', tool: 'list_issues' }, /unknown server 'github'/],
			[{ server: 'slack', tool: 'post_message' }, /has no tool 'post_message'/],
			[{ server: 'jira', tool: 'search_issues' }, /has no tool 'search_issues'/],
		];
		for (const [args, why] of refused) {
			const r = await call(client, 'invoke_tool', { ...args, arguments: {} });
			assert.equal(r.isError, true, JSON.stringify(args));
			assert.match(textOf(r), why);
		}
		await assert.rejects(call(client, 'jira__search_issues', { jql: 'x' }), /Unknown tool/);
		await assert.rejects(call(client, 'list_tools', { server: 'github' }).then((r) => {
			if (r.isError) throw new Error(textOf(r));
		}), /unknown server 'github'/);

		// Search: nothing outside the profile, renamed tools by their new name.
		const posted = textOf(await call(client, 'search_tools', { query: 'post a message to a channel', k: 20 }));
		assert.ok(!/post_message|github/.test(posted), posted);
		const found = textOf(await call(client, 'search_tools', { query: 'search issues with jql', k: 20 }));
		assert.match(found, /tools\.jira\.find_tickets\(/);
		assert.ok(!/tools\.jira\.search_issues\(/.test(found), found);
		const described = await call(client, 'describe_tools', { server: 'github' });
		assert.equal(described.isError, true);
	});

	test('/mcp/lab: a program sees only the profile\'s servers and tools', async () => {
		const { client } = await open('lab');
		assert.deepEqual(names((await client.listTools()).tools), ['describe_tools', 'execute_code', 'save_skill', 'search_tools']);
		const ok = await execCode(client, 'const r = await tools.jira.list_projects({}); return [typeof r, Object.keys(tools)];');
		assert.ok(!ok.isError, ok.text);
		assert.deepEqual(JSON.parse(ok.text), ['object', ['jira']], 'the program\'s tools hold the profile\'s servers only');
		const out = await execCode(client, `
			const errs = [];
			for (const f of [() => tools.jira.search_issues({ jql: 'x' }), () => tools.github.list_issues({}),
					 () => tools.slack.post_message({ channel: 'c', text: 't' })])
				try { await f(); errs.push('called'); } catch (e) { errs.push(String(e.message ?? e)); }
			return errs;`);
		assert.ok(!out.isError, out.text);
		const errs = JSON.parse(out.text);
		assert.match(errs[0], /has no tool 'search_issues'/);
		// Not there at all: tools.github is undefined.
		assert.match(errs[1], /list_issues' of undefined/);
		assert.match(errs[2], /post_message' of undefined/);
		assert.ok(errs.every((e) => e !== 'called'), out.text);
	});

	test('an unknown profile is 404 with a JSON-RPC error naming the path; /mcp/default too', async () => {
		const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: 'x', version: '1' } } };
		for (const path of ['/mcp/nope', '/mcp/default', '/mcp/ops/', '/mcp/OPS']) {
			const r = await post(path, init);
			assert.equal(r.status, 404, path);
			const body = r.json;
			assert.equal(body.jsonrpc, '2.0');
			assert.ok(body.error.message.includes(path.slice(5)), body.error.message);
		}
	});

	test('a session is bound to its profile: 404 through /mcp or another profile', async () => {
		const { transport } = await open('ops');
		const sid = transport.sessionId;
		assert.ok(sid);
		assert.equal((await post('/mcp', ping, sid)).status, 404);
		assert.equal((await post('/mcp/research', ping, sid)).status, 404);
		assert.equal((await post('/mcp/ops', ping, sid)).status, 200);
		const plain = await open();
		assert.equal((await post('/mcp/ops', ping, plain.transport.sessionId)).status, 404);
	});

	test('a reload that removes a profile: its session and new requests get 404, the others go on', async () => {
		const research = await open('research');
		const ops = await open('ops');
		const sid = research.transport.sessionId;
		assert.equal((await post('/mcp/research', ping, sid)).status, 200);

		const cfg = JSON.parse(fs.readFileSync(gw.configPath, 'utf8'));
		delete cfg.sluice.profiles.research;
		cfg.sluice.profiles.ops.rename = { 'github.list_issues': 'tickets' };
		fs.writeFileSync(gw.configPath, JSON.stringify(cfg));
		const before = gw.stderr().length;
		process.kill(gw.pid, 'SIGHUP');
		await eventually(() => /config reload: 3 servers/.test(gw.stderr().slice(before)), 15000, 20, 'the reload');

		assert.equal((await post('/mcp/research', ping, sid)).status, 404);
		const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: 'x', version: '1' } } };
		assert.equal((await post('/mcp/research', init)).status, 404);
		// The session itself is ended at the next sweep, not kept for nothing.
		await eventually(() => /profile 'research' ended/.test(gw.stderr().slice(before)), 5000, 50, 'the session ends');
		// ops goes on, with its new names at once.
		const tools = names((await ops.client.listTools()).tools);
		assert.ok(tools.includes('tickets') && !tools.includes('issues'), tools.join(' '));
		const r = await call(ops.client, 'tickets', { owner: 'acme', repo: 'api' });
		assert.ok(!r.isError, textOf(r));
	});
});

describe('profiles with identities, and the default profile', () => {
	const ALICE = 'alice-token-5d1e', BOB = 'bob-token-c40f';

	test('profiles.default shapes /mcp; a person through a profile is bound to it; the audit names it', async () => {
		const audit = path.join(path.dirname(writeConfig({})), 'audit.jsonl');
		const g = await startHttp({
			servers: { github: catalog('github'), jira: catalog('jira') },
			sluice: {
				audit: { file: audit },
				http: { auth: { tokens: [{ token: ALICE, subject: 'alice' }, { token: BOB, subject: 'bob' }] } },
				profiles: { default: { servers: ['jira'] }, ops: { servers: ['github'] } },
			},
		});
		const as = (token) => ({ headers: { Authorization: `Bearer ${token}` } });
		const plain = await httpClient(g.url, as(ALICE));
		// read_result is the governor's, in every profile.
		const plainTools = names((await plain.client.listTools()).tools).filter((t) => t !== 'read_result');
		assert.ok(plainTools.length > 0 && plainTools.every((t) => t.startsWith('jira__')), plainTools.join(' '));

		const ops = await httpClient(`${g.url}/ops`, as(ALICE));
		const r = await call(ops.client, 'github__list_issues', { owner: 'acme', repo: 'api' });
		assert.ok(!r.isError, textOf(r));
		const sid = ops.transport.sessionId;
		const rawPost = (p, token) => httpRequest({ host: '127.0.0.1', port: g.port, path: p, method: 'POST',
			headers: { authorization: `Bearer ${token}`, 'mcp-session-id': sid, 'mcp-protocol-version': LEGACY } }, ping);
		assert.equal((await rawPost('/mcp/ops', ALICE)).status, 200);
		assert.equal((await rawPost('/mcp', ALICE)).status, 404, 'alice, through another endpoint');
		assert.equal((await rawPost('/mcp/ops', BOB)).status, 404, 'bob, through the same endpoint');

		const line = await eventually(() => {
			const ls = fs.existsSync(audit) ? fs.readFileSync(audit, 'utf8').trim().split('\n').map((l) => JSON.parse(l)) : [];
			return ls.find((l) => l.type === 'call' && l.server === 'github');
		}, 5000, 50, 'the audit line');
		assert.equal(line.subject, 'alice');
		assert.equal(line.profile, 'ops');
		await plain.client.close();
		await ops.client.close();
		await g.close();
	});

	test('over stdio the default profile applies', async () => {
		const s = await connect({
			servers: { github: catalog('github'), jira: catalog('jira') },
			sluice: { profiles: { default: { servers: ['github'], tools: ['github.list_*'], exposure: 'passthrough' } } },
		});
		const tools = names((await s.client.listTools()).tools).filter((t) => t !== 'read_result');
		assert.ok(tools.length > 0 && tools.every((t) => /^github__list_/.test(t)), tools.join(' '));
		await assert.rejects(s.client.callTool({ name: 'jira__search_issues', arguments: {} }), /Unknown tool/);
		await s.close();
	});
});

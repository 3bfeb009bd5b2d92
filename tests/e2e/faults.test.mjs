// Faults end to end (issue 8): each test checks the client's clear answer,
// that nothing is lost (the other calls in flight are answered, the audit
// lines are written) and that the gateway keeps serving (a following call
// works). docs/RELIABILITY.md maps each promise to its test, here or in
// failures, hostile, lifecycle and codemode.
import { test, describe, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import path from 'node:path';

import { connect, catalog, closeAll, textOf, eventually, toolsWhen, writeConfig, sleep } from './helpers.mjs';

after(closeAll);

// The audit file of a config written by writeConfig (in its own temp dir).
const auditPath = (configPath) => path.join(path.dirname(configPath), 'audit.jsonl');
const auditLines = (file) =>
	existsSync(file)
		? readFileSync(file, 'utf8')
				.split('\n')
				.filter(Boolean)
				.map((l) => JSON.parse(l))
		: [];
// Waits for an audit line of a call to server.tool with this outcome.
const audited = (file, server, tool, outcome) =>
	eventually(
		() => auditLines(file).find((l) => l.type === 'call' && l.server === server && l.tool === tool && l.outcome === outcome),
		5000,
		50,
		`an audit line for ${server}.${tool} (${outcome})`,
	);

// Rewrites a config file in place, as a person editing it would.
function rewrite(configPath, servers, sluice) {
	const dir = path.dirname(configPath);
	const full = {
		pinning: { stateDir: path.join(dir, 'state') },
		audit: { file: auditPath(configPath) },
		...sluice,
	};
	writeFileSync(configPath, JSON.stringify({ mcpServers: servers, sluice: full }, null, 2));
}

describe('SIGHUP reloads the config', () => {
	test('a server added, a policy changed: list_changed, new tools, the session and a call in flight go on', async () => {
		const servers = { github: catalog('github') };
		const configPath = writeConfig(servers, {});
		rewrite(configPath, servers, {});
		const gw = await connect({ configPath });
		const audit = auditPath(configPath);
		const names = (tools) => tools.map((t) => t.name);
		await toolsWhen(gw.client, (t) => names(t).includes('github__merge_pull_request'));

		// A call in flight across the reload finishes against the old settings.
		const slow = gw.client.callTool({ name: 'github__slow', arguments: { ms: 1500 } });
		await sleep(200);
		rewrite(
			configPath,
			{ ...servers, jira: catalog('jira') },
			{ policy: { rules: [{ match: 'github.merge_*', action: 'deny' }] } },
		);
		const before = gw.notifications.length;
		process.kill(gw.pid(), 'SIGHUP');

		const tools = await toolsWhen(
			gw.client,
			(t) => names(t).includes('jira__get_ticket') && !names(t).includes('github__merge_pull_request'),
		);
		assert.ok(names(tools).includes('github__echo'));
		await eventually(
			() => gw.notifications.slice(before).some((n) => n.method === 'notifications/tools/list_changed'),
			5000,
			50,
			'notifications/tools/list_changed',
		);
		assert.equal(textOf(await slow), 'slept 1500 ms');
		await audited(audit, 'github', 'slow', 'ok');

		// The same session: the new server serves, the new policy holds.
		const j = await gw.client.callTool({ name: 'jira__echo', arguments: { after: 'reload' } });
		assert.deepEqual(JSON.parse(textOf(j)), { after: 'reload' });
		const m = await gw.client.callTool({ name: 'github__merge_pull_request', arguments: { repo: 'api', number: 1 } });
		assert.equal(m.isError, true);
		assert.match(gw.stderr(), /config reload: 2 servers \(1 added, 0 restarted, 0 removed\)/);
		assert.match(gw.stderr(), /config reload: new settings for 1 stage\b/);
		await gw.close();
	});

	test('a broken config is refused with a clear log line; the old one keeps serving', async () => {
		const servers = { github: catalog('github') };
		const configPath = writeConfig(servers, {});
		rewrite(configPath, servers, {});
		const gw = await connect({ configPath });
		const audit = auditPath(configPath);
		await toolsWhen(gw.client, (t) => t.some((x) => x.name === 'github__echo'));

		// Invalid JSON: the loader's message with line and column.
		writeFileSync(configPath, '{ "mcpServers": { "github": ');
		process.kill(gw.pid(), 'SIGHUP');
		await eventually(() => /config reload refused, the current config stays: \S+:\d+:\d+: invalid JSON/.test(gw.stderr()), 5000, 50, 'the refusal');
		let r = await gw.client.callTool({ name: 'github__echo', arguments: { still: 1 } });
		assert.deepEqual(JSON.parse(textOf(r)), { still: 1 });

		// Valid JSON, but a stage refuses its section: nothing changes either,
		// not even the servers of the same file.
		rewrite(configPath, { ...servers, jira: catalog('jira') }, { policy: { rules: [{ match: 'github.*', action: 'nope' }] } });
		process.kill(gw.pid(), 'SIGHUP');
		await eventually(() => /config reload refused.*sluice\.policy\.rules\[0\]\.action/.test(gw.stderr()), 5000, 50, 'the refusal');
		const names = (await gw.client.listTools()).tools.map((t) => t.name);
		assert.ok(!names.includes('jira__echo'), 'the refused file added no server');
		r = await gw.client.callTool({ name: 'github__echo', arguments: { still: 2 } });
		assert.deepEqual(JSON.parse(textOf(r)), { still: 2 });
		await audited(audit, 'github', 'echo', 'ok');
		assert.equal(gw.transport.pid, gw.pid(), 'the same gateway process');
		await gw.close();
	});
});

// Clients that defer tools behind a search of their own (Claude Code) load
// a tool at once when its _meta has "anthropic/alwaysLoad": true. sluice
// marks its own tools (code mode's and the router's) by default, so code
// mode is never hidden behind a second search; sluice.alwaysLoad (and a
// profile's) chooses the tools by their served names, upstream tools too.
import { test, describe, after } from 'node:test';
import assert from 'node:assert/strict';

import { connect, catalog, closeAll, toolsWhen, startHttp, httpClient, runSluice, writeConfig } from './helpers.mjs';

after(closeAll);

const MARK = 'anthropic/alwaysLoad';
const marked = (tools) => tools.filter((t) => t._meta?.[MARK] === true).map((t) => t.name).sort();
const has = (name) => (tools) => tools.some((t) => t.name === name);
// sluice's own tools: code mode's, the router's, and read_result (the governor's).
const OWN = new Set(['execute_code', 'search_tools', 'describe_tools', 'list_servers', 'list_tools', 'invoke_tool', 'read_result']);
const own = (tools) => tools.filter((t) => OWN.has(t.name)).map((t) => t.name).sort();

describe('anthropic/alwaysLoad', () => {
	test('code mode: execute_code, search_tools and describe_tools carry the mark', async () => {
		const gw = await connect({ servers: { github: catalog('github') }, sluice: { exposure: 'code' } });
		const tools = await toolsWhen(gw.client, has('execute_code'));
		assert.deepEqual(marked(tools), own(tools));
		for (const n of ['describe_tools', 'execute_code', 'search_tools']) assert.ok(marked(tools).includes(n), n);
		// Nothing else of the definitions changed: the mark is all _meta holds.
		for (const t of tools) assert.deepEqual(Object.keys(t._meta ?? {}), t._meta ? [MARK] : []);
		await gw.close();
	});

	test('passthrough: upstream tools are not marked, sluice tools are', async () => {
		const gw = await connect({ servers: { github: catalog('github') }, sluice: { codeMode: { enabled: true } } });
		const tools = await toolsWhen(gw.client, (t) => has('github__echo')(t) && has('execute_code')(t));
		assert.ok(tools.some((t) => t.name.startsWith('github__')));
		assert.ok(marked(tools).includes('execute_code'));
		assert.deepEqual(marked(tools), own(tools));
		await gw.close();
	});

	test('router mode: every router tool carries the mark', async () => {
		const gw = await connect({ servers: { github: catalog('github') }, sluice: { exposure: 'router' } });
		const tools = await toolsWhen(gw.client, has('invoke_tool'));
		assert.deepEqual(marked(tools), tools.map((t) => t.name).sort());
		assert.ok(marked(tools).includes('search_tools'));
		await gw.close();
	});

	test('sluice.alwaysLoad picks tools by served name, upstream ones included; [] marks none', async () => {
		const gw = await connect({
			servers: { github: catalog('github') },
			sluice: { alwaysLoad: ['github__echo', 'search_*'], exposure: 'hybrid' },
		});
		const tools = await toolsWhen(gw.client, (t) => has('github__echo')(t) && has('search_tools')(t));
		assert.deepEqual(marked(tools), ['github__echo', 'search_tools']);
		await gw.close();
		const none = await connect({ servers: { github: catalog('github') }, sluice: { alwaysLoad: [], exposure: 'code' } });
		assert.deepEqual(marked(await toolsWhen(none.client, has('execute_code'))), []);
		await none.close();
	});

	test('a profile has its own list', async () => {
		const gw = await startHttp({
			servers: { github: catalog('github') },
			sluice: { exposure: 'code', profiles: { ops: { exposure: 'passthrough', alwaysLoad: ['github__list_*'] } } },
		});
		const dflt = await httpClient(gw.url);
		const ops = await httpClient(`${gw.url}/ops`);
		const dfltTools = await toolsWhen(dflt.client, has('execute_code'));
		assert.deepEqual(marked(dfltTools), own(dfltTools));
		const opsTools = await toolsWhen(ops.client, has('github__echo'));
		assert.ok(marked(opsTools).length > 0);
		assert.ok(marked(opsTools).every((n) => n.startsWith('github__list_')));
		await Promise.all([dflt.client.close(), ops.client.close()]);
	});

	test('a bad alwaysLoad is refused with its key named', async () => {
		const cfg = writeConfig({ github: catalog('github') }, { alwaysLoad: 'execute_code' });
		const r = await runSluice(['check', '--config', cfg]);
		assert.notEqual(r.code, 0);
		assert.match(r.stderr + r.stdout, /sluice\.alwaysLoad/);
	});
});

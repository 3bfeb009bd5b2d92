// Tasks (MCP 2025-11-25) through sluice with server-everything's
// task-required tool simulate-research-query: creation with `task`, status
// notifications, tasks/get polling, tasks/result through the response
// stages (redaction), tasks/cancel, tasks/list, ids bound to the session
// that created them, the per-session bound, and code mode awaiting a task.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
	CreateTaskResultSchema,
	GetTaskResultSchema,
	CancelTaskResultSchema,
	ListTasksResultSchema,
	CallToolResultSchema,
} from '@modelcontextprotocol/sdk/types.js';

import {
	connect,
	startHttp,
	httpClient,
	everything,
	closeAll,
	toolsWhen,
	textOf,
	eventually,
	withTimeout,
	execCode,
	httpRequest,
	modernMeta,
	MODERN,
} from './helpers.mjs';

after(closeAll);

const TOOL = 'everything__simulate-research-query';
const ID_RE = /^task-[0-9a-f]{32}$/;
// The report names the spec proposal ("SEP-1686"); the topic the client
// sends does not, so a redacted one proves the result passed the response
// stages (the request half would redact the arguments, not this).
const SLUICE = {
	redaction: { patterns: [{ name: 'sep', regex: 'SEP-[0-9]+' }] },
	limits: { tasksPerSession: 3 },
	codeMode: { enabled: true, timeoutMs: 20000 },
	exposure: 'hybrid',
};

const create = (client, topic, task = { ttl: 60000 }) =>
	client.request({ method: 'tools/call', params: { name: TOOL, arguments: { topic }, task } }, CreateTaskResultSchema);
const get = (client, taskId) => client.request({ method: 'tasks/get', params: { taskId } }, GetTaskResultSchema);
const result = (client, taskId) =>
	client.request({ method: 'tasks/result', params: { taskId } }, CallToolResultSchema, { timeout: 20000 });
const cancel = (client, taskId) => client.request({ method: 'tasks/cancel', params: { taskId } }, CancelTaskResultSchema);
const list = (client) => client.request({ method: 'tasks/list', params: {} }, ListTasksResultSchema);

async function untilTerminal(client, taskId) {
	let last;
	await eventually(
		async () => {
			last = await get(client, taskId);
			return ['completed', 'failed', 'cancelled'].includes(last.status);
		},
		15000,
		300,
		'the task to finish',
	);
	return last;
}

describe('tasks over stdio', () => {
	let gw;
	before(async () => {
		gw = await connect({ servers: { everything: everything() }, sluice: SLUICE });
		await toolsWhen(gw.client, (ts) => ts.some((t) => t.name === TOOL));
	});

	test('the tasks capability is declared and the tool keeps taskSupport', async () => {
		const caps = gw.client.getServerCapabilities();
		assert.ok(caps.tasks?.requests?.tools?.call, JSON.stringify(caps));
		assert.ok(caps.tasks.cancel && caps.tasks.list);
		const tool = (await gw.client.listTools()).tools.find((t) => t.name === TOOL);
		assert.equal(tool.execution?.taskSupport, 'required');
	});

	test('create, status notifications, tasks/get, tasks/result redacted, then the id is gone', async () => {
		const { task } = await create(gw.client, 'tides');
		assert.match(task.taskId, ID_RE);
		assert.equal(task.status, 'working');
		const done = await untilTerminal(gw.client, task.taskId);
		assert.equal(done.status, 'completed');
		assert.equal(done.taskId, task.taskId);
		// The server's notifications/tasks/status came with our id.
		const status = gw.notifications.filter((n) => n.method === 'notifications/tasks/status');
		assert.ok(status.length > 0, 'status notifications were relayed');
		assert.ok(status.every((n) => n.params.taskId === task.taskId), JSON.stringify(status[0]));
		assert.ok(status.some((n) => n.params.status === 'completed'));
		const r = await result(gw.client, task.taskId);
		const text = textOf(r);
		assert.match(text, /Research Report: tides/);
		assert.match(text, /\[REDACTED:sep\]/);
		assert.doesNotMatch(text, /SEP-1686/);
		// MCP 2025-11-25: the result names its task in _meta: ours, not the server's.
		assert.equal(r._meta?.['io.modelcontextprotocol/related-task']?.taskId, task.taskId);
		// Fetched and terminal: the entry is gone.
		await assert.rejects(get(gw.client, task.taskId), /unknown task/);
	});

	test("the SDK's callToolStream runs a task-required tool through sluice", async () => {
		const seen = [];
		let final;
		const stream = gw.client.experimental.tasks.callToolStream({ name: TOOL, arguments: { topic: 'reefs' } });
		await withTimeout(
			(async () => {
				for await (const msg of stream) {
					seen.push(msg.type);
					if (msg.type === 'result') final = msg.result;
					if (msg.type === 'error') throw msg.error;
				}
			})(),
			20000,
			'callToolStream',
		);
		assert.equal(seen[0], 'taskCreated');
		assert.match(textOf(final), /Research Report: reefs[\s\S]*\[REDACTED:sep\]/);
	});

	test('a plain tools/call of the task-required tool is awaited by sluice and answered with the result', async () => {
		// The SDK's callTool refuses a task-required tool itself; a client
		// unaware of tasks sends it plainly, and the server would refuse it.
		const r = await gw.client.request(
			{ method: 'tools/call', params: { name: TOOL, arguments: { topic: 'plain' } } },
			CallToolResultSchema,
			{ timeout: 20000 },
		);
		assert.notEqual(r.isError, true, textOf(r));
		assert.match(textOf(r), /Research Report: plain[\s\S]*\[REDACTED:sep\]/);
		assert.equal(r._meta?.['io.modelcontextprotocol/related-task'], undefined);
	});

	test('tasks/cancel cancels, and tasks/list shows the session its tasks', async () => {
		const { task } = await create(gw.client, 'storms');
		const listed = await list(gw.client);
		assert.ok(listed.tasks.some((t) => t.taskId === task.taskId), JSON.stringify(listed));
		const c = await cancel(gw.client, task.taskId);
		assert.equal(c.taskId, task.taskId);
		assert.equal(c.status, 'cancelled');
		assert.equal((await get(gw.client, task.taskId)).status, 'cancelled');
	});

	test('a made-up task id is a clear -32602 error', async () => {
		for (const fn of [get, result, cancel]) {
			await assert.rejects(fn(gw.client, 'task-00000000000000000000000000000000'), (e) => {
				assert.equal(e.code, -32602);
				assert.match(e.message, /unknown task 'task-0+'/);
				return true;
			});
		}
		await assert.rejects(gw.client.request({ method: 'tasks/get', params: {} }, GetTaskResultSchema), /taskId is required/);
	});

	test('a task-required tool from execute_code returns its (redacted) result to the program', async () => {
		const r = await execCode(
			gw.client,
			`const r = await tools.everything["simulate-research-query"]({ topic: "volcanoes" });
			 return typeof r === "string" ? r : JSON.stringify(r);`,
			{ timeout: 30000 },
		);
		assert.equal(r.isError, false, r.text);
		assert.match(r.text, /Research Report: volcanoes/);
		assert.match(r.text, /\[REDACTED:sep\]/);
		assert.doesNotMatch(r.text, /SEP-1686/);
		// A program's task is the program's: none is left in the session's list.
		assert.ok(!(await list(gw.client)).tasks.some((t) => t.status === 'working'));
	});

	test('the per-session bound refuses a task with a clear error', async () => {
		// The cancelled task above is finished: it is dropped to make room.
		const held = [];
		for (let i = 0; i < 3; i++) held.push((await create(gw.client, `bound${i}`)).task.taskId);
		await assert.rejects(create(gw.client, 'one too many'), (e) => {
			assert.equal(e.code, -32000);
			assert.match(e.message, /holds 3 tasks, the limit \(sluice\.limits\.tasksPerSession\)/);
			return true;
		});
		for (const id of held) await cancel(gw.client, id);
	});
});

describe("a program's time limit ends the task it awaits", () => {
	test('the program times out with a clear kind, the task is cancelled upstream, and the gateway goes on', async () => {
		// What the server receives, copied to a file.
		const dir = mkdtempSync(path.join(os.tmpdir(), 'sluice-tasks-'));
		const input = path.join(dir, 'upstream-input.jsonl');
		const srv = everything();
		const gw = await connect({
			servers: { everything: { command: '/bin/sh', args: ['-c', 'tee "$0" | "$1" stdio', input, srv.command] } },
			sluice: { ...SLUICE, codeMode: { enabled: true, timeoutMs: 1500 } },
		});
		await toolsWhen(gw.client, (ts) => ts.some((t) => t.name === TOOL));
		const r = await execCode(gw.client, `return await tools.everything["simulate-research-query"]({ topic: "slow" });`);
		assert.equal(r.isError, true);
		assert.equal(r.kind, 'timeout', r.text);
		assert.ok(r.ms < 4000, `timed out after ${r.ms} ms, before the task's 4 s`);
		const again = await execCode(gw.client, 'return 1 + 1');
		assert.equal(again.text, '2');
		await eventually(() => /"method":"tasks\/cancel"/.test(readFileSync(input, 'utf8')), 3000, 100, 'tasks/cancel upstream');
		await gw.close();
		rmSync(dir, { recursive: true, force: true });
	});
});

describe('tasks over HTTP', () => {
	let gw, a, b;
	before(async () => {
		gw = await startHttp({ servers: { everything: everything() }, sluice: SLUICE });
		a = await httpClient(gw.url, { name: 'alice' });
		b = await httpClient(gw.url, { name: 'bob' });
		await toolsWhen(a.client, (ts) => ts.some((t) => t.name === TOOL));
	});
	after(async () => {
		await a?.client.close();
		await b?.client.close();
	});

	test("another session can neither read, list, fetch nor cancel a session's task", async () => {
		const { task } = await create(a.client, 'glaciers');
		assert.match(task.taskId, ID_RE);
		for (const fn of [get, cancel, result])
			await assert.rejects(fn(b.client, task.taskId), (e) => {
				assert.equal(e.code, -32602);
				assert.match(e.message, /unknown task/);
				return true;
			});
		assert.deepEqual((await list(b.client)).tasks, []);
		// The owner still has it, unharmed.
		const done = await untilTerminal(a.client, task.taskId);
		assert.equal(done.status, 'completed');
		const text = textOf(await result(a.client, task.taskId));
		assert.match(text, /Research Report: glaciers/);
		assert.match(text, /\[REDACTED:sep\]/);
	});
});

describe('the 2026-07-28 tasks extension, toward a 2025-11-25 server', () => {
	let gw;
	const EXT = { extensions: { 'io.modelcontextprotocol/tasks': {} } };
	const post = (method, params, { caps = EXT, name } = {}) => {
		const u = new URL(gw.url);
		return httpRequest(
			{
				host: u.hostname,
				port: u.port,
				path: u.pathname,
				method: 'POST',
				headers: { 'mcp-protocol-version': MODERN, 'mcp-method': method, ...(name ? { 'mcp-name': name } : {}) },
			},
			{ jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: modernMeta(caps) } },
			20000,
		);
	};
	before(async () => {
		gw = await startHttp({ servers: { everything: everything() }, sluice: SLUICE });
		await eventually(async () => {
			const r = await post('tools/list', {});
			return r.json?.result?.tools?.some((t) => t.name === TOOL);
		}, 15000, 200, 'the task tool to be listed');
	});

	test('server/discover declares the extension', async () => {
		const r = await post('server/discover', {});
		assert.deepEqual(r.json.result.capabilities.extensions?.['io.modelcontextprotocol/tasks'], {}, r.text);
		assert.equal(r.json.result.capabilities.tasks, undefined);
	});

	test('a task handle, tasks/get polling to an inline redacted result, and tasks/cancel', async () => {
		let r = await post('tools/call', { name: TOOL, arguments: { topic: 'comets' } }, { name: TOOL });
		const created = r.json.result;
		assert.equal(created.resultType, 'task', r.text);
		assert.match(created.taskId, /^t2\.[0-9a-f]+\.[0-9a-f]{32}$/);
		assert.equal(created.status, 'working');
		assert.equal(typeof created.ttlMs, 'number');
		let task;
		await eventually(
			async () => {
				r = await post('tasks/get', { taskId: created.taskId }, { name: created.taskId });
				task = r.json?.result;
				return task?.status === 'completed';
			},
			15000,
			300,
			'the task to complete',
		);
		assert.equal(task.resultType, 'complete');
		assert.equal(task.taskId, created.taskId);
		const text = textOf(task.result);
		assert.match(text, /Research Report: comets/);
		assert.match(text, /\[REDACTED:sep\]/);
		assert.doesNotMatch(text, /SEP-1686/);

		r = await post('tools/call', { name: TOOL, arguments: { topic: 'quasars' } }, { name: TOOL });
		const other = r.json.result.taskId;
		r = await post('tasks/cancel', { taskId: other }, { name: other });
		assert.deepEqual(r.json.result, { resultType: 'complete' }, r.text);
		r = await post('tasks/get', { taskId: other }, { name: other });
		assert.equal(r.json.result.status, 'cancelled', r.text);
	});

	test('a 2026 client without the extension gets the result of the task sluice awaited', async () => {
		const r = await post('tools/call', { name: TOOL, arguments: { topic: 'auroras' } }, { caps: {}, name: TOOL });
		assert.equal(r.json.result?.resultType, 'complete', r.text);
		assert.match(textOf(r.json.result), /Research Report: auroras[\s\S]*\[REDACTED:sep\]/);
	});

	test('a forged or altered id is an unknown task; tasks/result and tasks/list are not of 2026', async () => {
		const r0 = await post('tools/call', { name: TOOL, arguments: { topic: 'nebulae' } }, { name: TOOL });
		const id = r0.json.result.taskId;
		const forged = id.slice(0, -1) + (id.endsWith('0') ? '1' : '0');
		for (const bad of [forged, 'task-00000000000000000000000000000000', 't2.zz.00']) {
			const r = await post('tasks/get', { taskId: bad }, { name: bad });
			assert.equal(r.json.error?.code, -32602, r.text);
			assert.match(r.json.error.message, /unknown task/);
		}
		let r = await post('tasks/result', { taskId: id });
		assert.equal(r.json.error?.code, -32601, r.text);
		r = await post('tasks/list', {});
		assert.equal(r.json.error?.code, -32601, r.text);
		await post('tasks/cancel', { taskId: id }, { name: id });
	});

	test('Mcp-Name must carry the task id', async () => {
		const r = await post('tasks/get', { taskId: 't2.00.00' }, { name: 'other' });
		assert.equal(r.status, 400, r.text);
	});
});

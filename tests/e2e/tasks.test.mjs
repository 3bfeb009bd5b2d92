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

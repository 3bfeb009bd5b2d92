// Code mode's runtime as models write programs for it (issue 34, findings 7,
// 8 and 11): the host APIs a careful model reaches for (timers, URL,
// base64, TextEncoder, structuredClone, crypto, performance, en-US Intl and
// locale methods), each with an exact expected answer; what a program
// returns (Map, Set, Date, BigInt, typed arrays, nothing); hostile timers;
// a replayed program with timers and random values giving the identical
// answer without waiting; and the code-mode tool list's size.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { connect, catalog, closeAll, execCode, tinyServer, toolsWhen, startRaw, modernMeta } from './helpers.mjs';

after(closeAll);

// A server whose `get` fails its first two calls, as a rate-limited API does.
const flaky = () =>
	tinyServer({
		name: 'flaky',
		prelude: 'let n = 0;',
		tools: `[{ name: 'get', description: 'Fails twice, then answers.', inputSchema: { type: 'object' } }]`,
		call: `(params, ok) => { n++; ok(n <= 2 ? { isError: true, content: [{ type: 'text', text: 'rate limited, try again' }] }
			: { content: [{ type: 'text', text: JSON.stringify({ attempt: n }) }] }); }`,
	});

let g;
before(async () => {
	g = await connect({
		servers: { catalog: catalog('github'), flaky: flaky() },
		sluice: { exposure: 'code', codeMode: { timeoutMs: 5000 } },
	});
	await toolsWhen(g.client, (t) => t.some((x) => x.name === 'execute_code'));
});

const run = async (code) => {
	const r = await execCode(g.client, code);
	return r;
};
const value = async (code) => {
	const r = await run(code);
	assert.equal(r.isError, false, r.text);
	return JSON.parse(r.text);
};

describe('built-ins a model reaches for', () => {
	test('retry with back-off via setTimeout, timed by performance.now', async () => {
		const v = await value(`
async function withRetry(fn, tries = 4) {
  for (let i = 0; ; i++) {
    try { return await fn(); }
    catch (e) { if (i + 1 >= tries) throw e; await new Promise((r) => setTimeout(r, 40 * 2 ** i)); }
  }
}
const t0 = performance.now();
const r = await withRetry(() => tools.flaky.get({}));
const waited = performance.now() - t0;
return { r, waitedEnough: waited >= 120, waitedLittle: waited < 2000 };`);
		assert.deepEqual(v, { r: { attempt: 3 }, waitedEnough: true, waitedLittle: true });
	});

	// 30 ms between any two timers' due times: a worker descheduled under the sanitizers
	// (seen: more than 5 ms between two statements) keeps the order.
	test('timers: order by time then by creation, clearTimeout, setInterval, arguments', async () => {
		const v = await value(`
const log = [];
setTimeout(() => log.push('b'), 90);
setTimeout(() => log.push('a'), 10);
setTimeout(() => log.push('a2'), 10);
const gone = setTimeout(() => log.push('never'), 5);
clearTimeout(gone);
let n = 0;
await new Promise((done) => { const id = setInterval((x) => { log.push(x + ++n); if (n === 3) { clearInterval(id); done(); } }, 60, 'i'); });
await new Promise((r) => setTimeout(r, 10));
queueMicrotask(() => log.push('micro'));
await null;
return log;`);
		assert.deepEqual(v, ['a', 'a2', 'i1', 'b', 'i2', 'i3', 'micro']);
	});

	test('URL and URLSearchParams: parsing, resolving, building a query', async () => {
		const v = await value(`
const u = new URL('https://User@Example.com:443/a/./b/../c?x=1&y=two%20words#frag');
const api = new URL('/api/v1/items?limit=10', 'https://api.example.com/base/');
api.searchParams.set('q', 'a b&c');
api.searchParams.append('page', '2');
return [u.href, u.host, u.pathname, u.searchParams.get('y'), u.hash, u.origin,
  api.href, new URL('../up', 'https://h.com/a/b/c').href,
  new URLSearchParams({ q: 'café ☕', n: 2 }).toString(),
  [...new URLSearchParams('a=1&b=2&a=3')].map(([k, x]) => k + x).join(','), URL.canParse('not a url')];`);
		assert.deepEqual(v, [
			'https://User@example.com/a/c?x=1&y=two%20words#frag', 'example.com', '/a/c', 'two words', '#frag', 'https://example.com',
			'https://api.example.com/api/v1/items?limit=10&q=a+b%26c&page=2', 'https://h.com/a/up',
			'q=caf%C3%A9+%E2%98%95&n=2', 'a1,b2,a3', false,
		]);
	});

	test('base64, TextEncoder lengths, TextDecoder with bad bytes', async () => {
		const v = await value(`
return [btoa('hello world'), atob('aGVsbG8gd29ybGQ='), new TextEncoder().encode('héllo €😀').length,
  Array.from(new TextEncoder().encode('é')), new TextDecoder().decode(new Uint8Array([0x68, 0xff, 0x69, 0xe2, 0x82])),
  new TextDecoder().decode(new TextEncoder().encode('😀 ok')),
  (() => { try { new TextDecoder('utf-8', { fatal: true }).decode(new Uint8Array([0xff])); } catch (e) { return e.name; } })()];`);
		assert.deepEqual(v, ['aGVsbG8gd29ybGQ=', 'hello world', 14, [195, 169], 'h\uFFFDi\uFFFD', '😀 ok', 'TypeError']);
	});

	test('structuredClone: cycles, Dates, Maps; a function is a DataCloneError', async () => {
		const v = await value(`
const o = { a: [1, { b: new Date(0) }], m: new Map([[1, 'x']]) };
o.self = o;
const c = structuredClone(o);
let err;
try { structuredClone({ f() {} }); } catch (e) { err = e.name; }
return [c !== o, c.self === c, c.a[1].b instanceof Date, c.a[1].b.getTime(), c.m.get(1), c.a[1] !== o.a[1], err];`);
		assert.deepEqual(v, [true, true, true, 0, 'x', true, 'DataCloneError']);
	});

	test('crypto.randomUUID is a v4 UUID, getRandomValues fills, each program its own', async () => {
		const code = 'return [crypto.randomUUID(), Array.from(crypto.getRandomValues(new Uint8Array(8)))]';
		const [a, b] = [await value(code), await value(code)];
		assert.match(a[0], /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
		assert.equal(a[1].length, 8);
		assert.notEqual(a[0], b[0]);
		assert.notDeepEqual(a[1], b[1]);
	});

	test('en-US numbers: currency, percent, grouping, fraction digits, compact', async () => {
		const v = await value(`
return [(1234567.891).toLocaleString('en-US', { style: 'currency', currency: 'USD' }),
  (-1234.5).toLocaleString('en-US', { style: 'currency', currency: 'USD' }),
  (1234.5).toLocaleString('en-US', { style: 'currency', currency: 'EUR' }),
  (0.256).toLocaleString('en-US', { style: 'percent' }),
  (0.2567).toLocaleString('en-US', { style: 'percent', minimumFractionDigits: 1 }),
  (1234.5678).toLocaleString(), (1.005).toLocaleString('en-US', { maximumFractionDigits: 2 }),
  (12345.6).toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 }),
  new Intl.NumberFormat('en-US', { notation: 'compact' }).format(1500000),
  [1000, 2500].map(new Intl.NumberFormat('en-US').format), (12345678901234567890n).toLocaleString('en-US'),
  Intl.NumberFormat('en-US', { style: 'percent' }).format(0.5),
  [1234.5, 2].toLocaleString('en-US', { style: 'currency', currency: 'USD' })];`);
		assert.deepEqual(v, ['$1,234,567.89', '-$1,234.50', '€1,234.50', '26%', '25.7%', '1,234.568', '1.01', '12,345.60', '1.5M',
			['1,000', '2,500'], '12,345,678,901,234,567,890', '50%', '$1,234.50,$2.00']);
	});

	test('en-US dates: toLocaleDateString honours its options, Intl.DateTimeFormat, dateStyle', async () => {
		const v = await value(`
const d = new Date(Date.UTC(2024, 0, 15, 13, 5, 9));
const utc = { timeZone: 'UTC' };
return [d.toLocaleDateString('en-US', utc), d.toLocaleTimeString('en-US', utc), d.toLocaleString('en-US', utc),
  d.toLocaleDateString('en-US', { year: 'numeric', month: 'long', day: 'numeric', ...utc }),
  d.toLocaleDateString('en-US', { weekday: 'long', year: 'numeric', month: 'long', day: 'numeric', ...utc }),
  d.toLocaleDateString('en-US', { month: 'short', day: 'numeric', ...utc }),
  d.toLocaleDateString('en-US', { year: 'numeric', month: '2-digit', day: '2-digit', ...utc }),
  d.toLocaleTimeString('en-US', { hour: 'numeric', minute: '2-digit', ...utc }),
  new Intl.DateTimeFormat('en-US', { dateStyle: 'medium', timeStyle: 'short', ...utc }).format(d),
  new Intl.DateTimeFormat('en-US', { dateStyle: 'full', ...utc }).format(d)];`);
		assert.deepEqual(v, ['1/15/2024', '1:05:09 PM', '1/15/2024, 1:05:09 PM', 'January 15, 2024', 'Monday, January 15, 2024',
			'Jan 15', '01/15/2024', '1:05 PM', 'Jan 15, 2024, 1:05 PM', 'Monday, January 15, 2024']);
	});

	test('Intl.RelativeTimeFormat and Intl.ListFormat in en-US', async () => {
		const v = await value(`
const rtf = new Intl.RelativeTimeFormat('en-US', { numeric: 'auto' });
const ago = (ms) => rtf.format(-Math.round(ms / 86400000), 'day');
return [ago(3 * 86400000), ago(86400000), new Intl.RelativeTimeFormat('en-US', { style: 'short' }).format(2, 'hours'),
  new Intl.ListFormat('en-US').format(['alice', 'bob', 'carol']), new Intl.ListFormat('en-US', { type: 'disjunction' }).format(['x', 'y'])];`);
		assert.deepEqual(v, ['3 days ago', 'yesterday', 'in 2 hr.', 'alice, bob, and carol', 'x or y']);
	});

	test('localeCompare and Intl.Collator sort as en-US does, not by code point', async () => {
		const v = await value(`
return [['b', 'a', 'B', 'A', 'é', 'e', 'Z', 'z'].sort((x, y) => x.localeCompare(y)),
  ['item10', 'item2', 'Item1'].sort(new Intl.Collator('en-US', { numeric: true }).compare),
  'a'.localeCompare('A', 'en', { sensitivity: 'base' })];`);
		assert.deepEqual(v, [['a', 'A', 'b', 'B', 'e', 'é', 'z', 'Z'], ['Item1', 'item2', 'item10'], 0]);
	});

	test('what is not supported is a clear error, never a silent fallback', async () => {
		const cases = [
			["(1.5).toLocaleString('de-DE')", /RangeError: Intl: the locale 'de-DE' is not supported/],
			["new Date(0).toLocaleString('en-US', { timeZone: 'America/New_York' })", /the time zone 'America\/New_York'/],
			["(5).toLocaleString('en-US', { style: 'unit', unit: 'meter' })", /the option unit is not supported|style: 'unit'/],
			["new TextDecoder('latin1')", /the encoding 'latin1' is not supported/],
			["'istanbul'.toLocaleUpperCase('tr-TR')", /the locale 'tr-TR' is not supported/],
		];
		for (const [code, re] of cases) {
			const r = await run(`return ${code}`);
			assert.equal(r.isError, true, `${code}: ${r.text}`);
			assert.match(r.text, re);
			assert.match(r.text, /\(line 1, column \d+\)/, 'the error says where');
		}
	});
});

describe('what a program returns', () => {
	test('Map as an object (string keys) or entries, Set as an array, Date as ISO, BigInt, typed arrays', async () => {
		const v = await value(`
return { counts: new Map([['open', 3], ['closed', 5]]), byObj: new Map([[{ id: 1 }, 'x']]),
  tags: new Set(['a', 'b']), when: new Date(Date.UTC(2024, 0, 15)), bad: new Date(NaN),
  small: 42n, big: 2n ** 64n, bytes: new Uint8Array([1, 2, 3]), floats: new Float64Array([0.5]),
  err: new RangeError('too far') };`);
		assert.deepEqual(v, {
			counts: { open: 3, closed: 5 }, byObj: [[{ id: 1 }, 'x']], tags: ['a', 'b'], when: '2024-01-15T00:00:00.000Z', bad: null,
			small: 42, big: '18446744073709551616', bytes: [1, 2, 3], floats: [0.5], err: { name: 'RangeError', message: 'too far' },
		});
	});

	test('a Map or a BigInt returned alone', async () => {
		assert.deepEqual(await value('return new Map([[1, "one"], [2, "two"]])'), { 1: 'one', 2: 'two' });
		assert.equal((await run('return 10n ** 20n')).text, '"100000000000000000000"');
		assert.deepEqual(await value('return [new URL("https://h.com/a b"), new URLSearchParams({ q: "x y" })]'), ['https://h.com/a%20b', 'q=x+y']);
	});

	test('nothing returned and nothing printed: the answer says to return a value', async () => {
		const r = await run('const issues = await tools.catalog.list_issues({ owner: "acme", repo: "web" });');
		assert.equal(r.isError, false, r.text);
		assert.equal(r.text, 'undefined (the program returned nothing: end it with `return <value>`)');
		const printed = await run('console.log("hi");');
		assert.equal(printed.text, 'undefined\n\n[console]\nhi\n');
	});

	test('a tool call\'s arguments are made JSON the same way', async () => {
		const v = await value('return await tools.catalog.echo({ ids: new Set([1, 2]), big: 5n, when: new Date(0), m: new Map([["k", 1]]) })');
		assert.deepEqual(v, { arguments: { ids: [1, 2], big: 5, when: '1970-01-01T00:00:00.000Z', m: { k: 1 } } });
		const cyc = await run('const a = {}; a.self = a; return await tools.catalog.echo(a)');
		assert.equal(cyc.isError, true);
		assert.match(cyc.text, /^error: TypeError: the arguments are circular: args\.self holds a value that contains it \(line 1, column \d+\)/);
	});

	test('a cycle, or a Promise left unawaited, is an error naming where', async () => {
		const cyc = await run('const a = { list: [] }; a.list.push(a); return a;');
		assert.equal(cyc.isError, true);
		assert.equal(cyc.text, 'error: TypeError: the return value is circular: value.list[0] holds a value that contains it');
		const prom = await run('return { r: tools.catalog.echo({}) };');
		assert.equal(prom.isError, true);
		assert.match(prom.text, /the return value holds a Promise at value\.r: await it/);
	});
});

describe('hostile timers', () => {
	test('a million timers: a clear error at the bound, and the gateway goes on', async () => {
		const r = await run('for (let i = 0; i < 1e6; i++) setTimeout(() => {}, 1); return "scheduled";');
		assert.equal(r.isError, true);
		assert.match(r.text, /^error: RangeError: setTimeout: too many pending timers \(at most 1000\)/);
		assert.equal((await run('return 1')).text, '1');
	});

	test('a timer past the time limit is refused when set, an interval when it would run past it', async () => {
		const far = await run('await new Promise((r) => setTimeout(r, 60000)); return "woke";');
		assert.equal(far.isError, true);
		assert.match(far.text, /setTimeout: a timer 60000 ms from now would fire after the program's time limit of 5000 ms/);
		const t0 = Date.now();
		const forever = await run('await new Promise(() => setInterval(() => {}, 1000));');
		assert.equal(forever.isError, true);
		assert.match(forever.text, /setInterval: its next run, 1000 ms on, would be after the program's time limit of 5000 ms/);
		assert.ok(Date.now() - t0 < 8000);
		assert.equal((await run('return 2')).text, '2');
	});

	test('a timer that re-arms itself at 0 ms is stopped by the CPU limit, as a loop is; UTF-8 buffers count in the heap', async () => {
		const tight = await connect({ servers: {}, sluice: { exposure: 'code', codeMode: { cpuMs: 300, timeoutMs: 20000, heapBytes: 32 << 20 } } });
		const r = await execCode(tight.client, 'function f() { setTimeout(f, 0); } f(); await new Promise(() => {});');
		assert.equal(r.isError, true);
		assert.equal(r.text, 'cpu: the program used more than its CPU time limit');
		const big = await execCode(tight.client, 'const b = new Uint8Array(12e6).fill(0x61); const s = new TextDecoder().decode(b); return new TextEncoder().encode(s + s).length;');
		assert.equal(big.isError, true);
		assert.equal(big.kind, 'memory', big.text);
		assert.equal((await execCode(tight.client, 'return new TextDecoder().decode(new Uint8Array(1e6).fill(0x61)).length')).text, '1000000');
	});
});

describe('the code-mode tool list', () => {
	test('at most 600 tokens (chars/4) with every default on; 560 before _meta', async () => {
		const { tools } = await g.client.listTools();
		assert.deepEqual(tools.map((t) => t.name).sort(), ['describe_tools', 'execute_code', 'read_result', 'save_skill', 'search_tools']);
		const chars = JSON.stringify(tools).length;
		const bare = JSON.stringify(tools.map(({ _meta, ...t }) => t)).length;
		console.log(`code-mode tool list: ${chars} chars, ${chars / 4} tokens (chars/4); ${bare / 4} without _meta`);
		assert.ok(chars / 4 <= 600, `${chars / 4} tokens`);
		assert.ok(bare / 4 <= 560, `${bare / 4} tokens without _meta`);
		const exec = tools.find((t) => t.name === 'execute_code');
		assert.match(exec.description, /setTimeout, URL, TextEncoder, atob, structuredClone, crypto, en-US Intl/);
	});
});

// A 2026-07-28 client whose program needs a confirmation: the retry replays
// it. Random values and the clock come out the same (a different UUID would
// change the write's arguments, and the replay would diverge); the first
// run's timer waits in real time, the replay's does not.
describe('replay: timers and random values', () => {
	const SERVER = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'servers', 'counter', 'server.cjs');
	const dir = mkdtempSync(path.join(os.tmpdir(), 'sluice-coderuntime-'));
	const LOG = path.join(dir, 'calls.log');
	let raw;
	before(() => {
		writeFileSync(LOG, '');
		raw = startRaw({
			servers: { store: { command: process.execPath, args: [SERVER], env: { COUNTER_LOG: LOG } } },
			sluice: { exposure: 'code', codeMode: { timeoutMs: 8000 }, policy: { rules: [{ annotation: 'destructiveHint', action: 'confirm' }] } },
		});
	});
	after(async () => {
		await raw?.close();
		rmSync(dir, { recursive: true, force: true });
	});

	test('the same UUID, bytes and times on the retry, which does not wait', async () => {
		const code = `
const id = crypto.randomUUID();
const bytes = Array.from(crypto.getRandomValues(new Uint8Array(4)));
const t0 = performance.now(), d0 = Date.now();
await new Promise((r) => setTimeout(r, 3000));
const waited = performance.now() - t0, dated = Date.now() - d0;
const a = await tools.store.read_item({ id: 2 });
const w = await tools.store.write_item({ id: a.id, value: a.value + 1, tag: id, bytes, waited });
return { id, bytes, waited, dated, w };`;
		const exec = (extra = {}) =>
			raw.request('tools/call', { _meta: modernMeta({ elicitation: {} }), name: 'execute_code', arguments: { code }, ...extra }, { ms: 15000 });
		let t = Date.now();
		const first = (await exec()).result;
		assert.equal(first.resultType, 'input_required', JSON.stringify(first));
		assert.ok(Date.now() - t >= 2900, 'the first run waits: its calls are live');
		t = Date.now();
		const done = (await exec({ requestState: first.requestState, inputResponses: { confirm: { action: 'accept', content: { approve: true } } } })).result;
		assert.ok(Date.now() - t < 3000, 'the replay does not wait');
		assert.notEqual(done.isError, true, JSON.stringify(done));
		const v = JSON.parse(done.content[0].text);
		assert.match(v.id, /^[0-9a-f]{8}-[0-9a-f]{4}-4/);
		assert.equal(v.waited, 3000);
		assert.equal(v.dated, 3000);
		assert.equal(v.w.written, 2);
		const writes = readFileSync(LOG, 'utf8').split('\n').filter((l) => l.startsWith('write_item'));
		assert.equal(writes.length, 1);
		assert.ok(writes[0].includes(v.id) && writes[0].includes(JSON.stringify(v.bytes)), writes[0]);
	});
});

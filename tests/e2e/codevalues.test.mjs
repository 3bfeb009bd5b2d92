// Code mode's worker against the program's own code and data: tool calls made
// from inside the serialisation of another call's arguments (getters, toJSON,
// Proxy traps), and strings a program computes on exactly (U+0000 kept, lone
// surrogates turned into U+FFFD, console cut on a character boundary).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { connect, catalog, closeAll, eventually, execCode } from './helpers.mjs';

after(closeAll);

const LIMITS = { timeoutMs: 5000, maxCalls: 32, maxInFlight: 4, maxConsoleBytes: 256 };

let gw;

before(async () => {
	gw = await connect({
		servers: { catalog: catalog('github') },
		sluice: { exposure: 'code', codeMode: LIMITS },
	});
	await eventually(async () => (await execCode(gw.client, 'return (await tools.catalog.echo({})).arguments')).text === '{}', 15000, 100, 'the catalog');
});

// ---- tool calls made while another call's arguments are serialised --------------------

describe('reentrant tool calls', { concurrency: true }, () => {
	test('calls nested in toJSON each get their own slot and the right result', async () => {
		const r = await execCode(
			gw.client,
			`const ps = [];
			 const arg = (n) => ({ toJSON() { if (n > 0) ps.push(tools.catalog.echo(arg(n - 1))); return { n }; } });
			 ps.push(tools.catalog.echo(arg(5)));
			 return (await Promise.all(ps)).map((r) => r.arguments.n);`,
		);
		assert.equal(r.isError, false, r.text);
		assert.deepEqual(JSON.parse(r.text), [0, 1, 2, 3, 4, 5]);
	});

	test('40 calls nested in getters end the program with kind calls, not a crash', async () => {
		const r = await execCode(
			gw.client,
			`const arg = (n) => ({ get x() { if (n > 0) tools.catalog.echo(arg(n - 1)).catch(() => {}); return n; } });
			 await tools.catalog.echo(arg(40));
			 return 'survived';`,
		);
		assert.equal(r.kind, 'calls', r.text);
		assert.match(r.text, /more than 32 tool calls/);
	});

	test('40 calls nested in Proxy traps end the program with kind calls, not a crash', async () => {
		const r = await execCode(
			gw.client,
			`const arg = (n) => new Proxy({ n }, { ownKeys(t) { if (n > 0) tools.catalog.echo(arg(n - 1)).catch(() => {}); return Reflect.ownKeys(t); } });
			 await tools.catalog.echo(arg(40));
			 return 'survived';`,
		);
		assert.equal(r.kind, 'calls', r.text);
	});

	test('the same gateway runs the next program', async () => {
		const r = await execCode(gw.client, 'return (await tools.catalog.echo({ok: 1})).arguments.ok');
		assert.equal(r.text, '1');
	});
});

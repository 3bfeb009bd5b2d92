// Client capabilities per session over HTTP (issue 14, point 3): whoever
// connects first, every upstream is declared what sluice can relay, and a
// server's request (elicitation, sampling, roots) reaches only the session
// whose call it answers and that declared the capability; any other gets
// nothing, and the server a clear error. server-everything (the real npm
// package) over stdio and over Streamable HTTP.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';

import { ElicitRequestSchema, CreateMessageRequestSchema, ListRootsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

import { EVERYTHING, closeAll, eventually, everything, freePort, httpClient, sleep, startHttp, textOf } from './helpers.mjs';

let ev, gw, plain, rich;
const plainSaw = []; // every request the plain client was sent
const asked = { elicit: [], sample: [], roots: 0 };

before(async () => {
	const port = await freePort();
	ev = spawn(EVERYTHING, ['streamableHttp'], { env: { ...process.env, PORT: String(port) }, stdio: ['ignore', 'ignore', 'ignore'] });
	await eventually(async () => (await fetch(`http://127.0.0.1:${port}/mcp`).catch(() => null)) !== null, 15000, 100, 'server-everything to listen');
	gw = await startHttp({ servers: { ev: everything(), evh: { url: `http://127.0.0.1:${port}/mcp` } } });
	// A plain client (a health check, say) connects first and declares nothing.
	plain = await httpClient(gw.url, { name: 'plain' });
	plain.client.fallbackRequestHandler = async (req) => {
		plainSaw.push(req.method);
		throw new Error('the plain client answers nothing');
	};
	await plain.client.listTools();
	rich = await httpClient(gw.url, {
		name: 'rich',
		capabilities: { sampling: {}, elicitation: {}, roots: { listChanged: true } },
		handlers: [
			[ElicitRequestSchema, async (req) => {
				asked.elicit.push(req.params);
				return { action: 'accept', content: { name: 'Ada Lovelace', check: true, email: 'ada@example.com' } };
			}],
			[CreateMessageRequestSchema, async (req) => {
				asked.sample.push(req.params);
				return { role: 'assistant', content: { type: 'text', text: 'the-sampled-words' }, model: 'e2e-model', stopReason: 'endTurn' };
			}],
			[ListRootsRequestSchema, async () => {
				asked.roots++;
				return { roots: [{ uri: 'file:///rich-root', name: 'rich-root' }] };
			}],
		],
	});
	// server-everything asks roots/list 350 ms after its handshake, outside
	// any call. Let that pass before the first call: asked while a call of
	// the rich client is in flight (a slow sanitizer build), it would rightly
	// go to that session, and the test below could not tell.
	await sleep(1500);
});
after(async () => {
	await plain?.client.close().catch(() => {});
	await rich?.client.close().catch(() => {});
	await closeAll();
	ev?.kill('SIGKILL');
	assert.doesNotMatch(gw?.stderr() ?? '', /Sanitizer|runtime error/);
});

for (const srv of ['ev', 'evh']) {
	describe(`server-everything ${srv === 'ev' ? 'over stdio' : 'over Streamable HTTP'}`, () => {
		test('a client that declares sampling, elicitation and roots sees the tools that need them, though a plain client came first', async () => {
			const { tools } = await rich.client.listTools();
			const names = tools.map((t) => t.name);
			for (const t of ['trigger-sampling-request', 'trigger-elicitation-request', 'get-roots-list'])
				assert.ok(names.includes(`${srv}__${t}`), `${srv}__${t} in ${names.join(', ')}`);
		});

		test('its elicitation is answered by its own handler', async () => {
			const n = asked.elicit.length;
			const r = await rich.client.callTool({ name: `${srv}__trigger-elicitation-request`, arguments: {} });
			assert.notEqual(r.isError, true, textOf(r));
			assert.equal(asked.elicit.length, n + 1);
			assert.match(textOf(r), /Ada Lovelace/);
		});

		test('its sampling is answered by its own handler', async () => {
			const n = asked.sample.length;
			const r = await rich.client.callTool({ name: `${srv}__trigger-sampling-request`, arguments: { prompt: 'say hi', maxTokens: 10 } });
			assert.notEqual(r.isError, true, textOf(r));
			assert.equal(asked.sample.length, n + 1);
			assert.match(asked.sample[n].messages[0].content.text, /say hi/);
			assert.match(textOf(r), /the-sampled-words/);
		});

		test('its roots come from its own handler', async () => {
			const r = await rich.client.callTool({ name: `${srv}__get-roots-list`, arguments: {} });
			assert.notEqual(r.isError, true, textOf(r));
			assert.match(textOf(r), /rich-root/);
		});

		test('the plain client calling the same tools gets a clear error and is never asked', async () => {
			const n = { e: asked.elicit.length, s: asked.sample.length };
			for (const [tool, args] of [['trigger-elicitation-request', {}], ['trigger-sampling-request', { prompt: 'x', maxTokens: 5 }]]) {
				let text;
				try {
					const r = await plain.client.callTool({ name: `${srv}__${tool}`, arguments: args });
					assert.equal(r.isError, true, textOf(r));
					text = textOf(r);
				} catch (e) {
					text = e.message; // the server's own JSON-RPC error, passed through
				}
				assert.match(text, /no client that can answer it is waiting on server/);
			}
			assert.deepEqual(plainSaw, []);
			// Nor was the other session asked in its place.
			assert.equal(asked.elicit.length, n.e);
			assert.equal(asked.sample.length, n.s);
		});
	});
}

test('a server that asks outside any call (roots/list after initialize) reaches no session over HTTP', async () => {
	// server-everything asks roots/list 350 ms after its handshake; over HTTP
	// no session is meant, so none was sent it: the rich client's handler ran
	// only for get-roots-list calls (two servers, one call each).
	assert.equal(asked.roots, 2);
	assert.deepEqual(plainSaw, []);
});

test('two sessions calling the same server at once: neither sees the other\'s question', async () => {
	const n = asked.elicit.length;
	// The plain client's call is in flight while the rich client's question
	// comes: a legacy server names no call, so sluice asks nobody rather
	// than risk the wrong session; the plain client is never sent it.
	const [a, b] = await Promise.allSettled([
		plain.client.callTool({ name: 'ev__trigger-elicitation-request', arguments: {} }),
		rich.client.callTool({ name: 'ev__trigger-elicitation-request', arguments: {} }),
	]);
	assert.deepEqual(plainSaw, []);
	const texts = [a, b].map((x) => (x.status === 'fulfilled' ? textOf(x.value) : x.reason.message));
	assert.match(texts[0], /no client that can answer it|cannot tell which one/);
	// The rich client was asked at most once (its own question), never the plain one's.
	assert.ok(asked.elicit.length <= n + 1);
});

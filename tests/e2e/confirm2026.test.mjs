// Policy confirm for 2026-07-28 clients (no server-to-client requests):
// the call answers input_required with an elicitation and a protected
// requestState; the client retries with inputResponses and the state.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startRaw, catalog, closeAll, modernMeta } from './helpers.mjs';

let raw;
const ELICIT = { elicitation: {} };

before(() => {
	raw = startRaw({
		servers: { github: catalog('github') },
		sluice: {
			exposure: 'passthrough',
			policy: { rules: [{ annotation: 'destructiveHint', action: 'confirm' }] },
		},
	});
});
after(async () => {
	await raw?.close();
	await closeAll();
});

const ARGS = { owner: 'acme', repo: 'api', pull_number: 401 };
const call = (extra = {}, caps = ELICIT, args = ARGS) =>
	raw.request('tools/call', { _meta: modernMeta(caps), name: 'github__merge_pull_request', arguments: args, ...extra });

describe('confirm on 2026-07-28 (MRTR)', () => {
	let first;

	test('the first call answers input_required with an elicitation and a requestState', async () => {
		first = (await call()).result;
		assert.equal(first.resultType, 'input_required');
		const q = first.inputRequests.confirm;
		assert.equal(q.method, 'elicitation/create');
		assert.match(q.params.message, /Allow the tool "merge_pull_request" of server "github"/);
		assert.equal(q.params.requestedSchema.properties.approve.type, 'boolean');
		assert.match(first.requestState, /^[0-9a-f]+\.[0-9a-f]{64}$/);
	});

	test('the retry with approval and the same state runs the tool', async () => {
		const r = (await call({ inputResponses: { confirm: { action: 'accept', content: { approve: true } } }, requestState: first.requestState })).result;
		assert.equal(r.resultType, 'complete');
		// The call reached the server (whose answer is about the pull request),
		// not a refusal from the policy.
		assert.doesNotMatch(r.content[0].text, /policy:/);
		assert.match(r.content[0].text, /[Pp]ull request #401/);
	});

	test('declined, or approve false, is refused with the reason', async () => {
		const d = (await call({ inputResponses: { confirm: { action: 'decline' } }, requestState: first.requestState })).result;
		assert.equal(d.isError, true);
		assert.match(d.content[0].text, /it was decline/);
		const f = (await call({ inputResponses: { confirm: { action: 'accept', content: { approve: false } } }, requestState: first.requestState })).result;
		assert.equal(f.isError, true);
		assert.match(f.content[0].text, /not approved/);
	});

	test('a forged state, or one from another call, is refused', async () => {
		const forged = first.requestState.replace(/.$/, (c) => (c === '0' ? '1' : '0'));
		const a = (await call({ inputResponses: { confirm: { action: 'accept', content: { approve: true } } }, requestState: forged })).result;
		assert.equal(a.isError, true);
		assert.match(a.content[0].text, /requestState that is not ours/);
		// The same state with other arguments (another pull request).
		const b = (
			await call(
				{ inputResponses: { confirm: { action: 'accept', content: { approve: true } } }, requestState: first.requestState },
				ELICIT,
				{ ...ARGS, pull_number: 402 },
			)
		).result;
		assert.equal(b.isError, true);
		assert.match(b.content[0].text, /requestState that is not ours/);
	});

	test('a client that did not declare elicitation is refused, never asked', async () => {
		const r = (await call({}, {})).result;
		assert.equal(r.resultType, 'complete');
		assert.equal(r.isError, true);
		assert.match(r.content[0].text, /needs confirmation/);
	});
});

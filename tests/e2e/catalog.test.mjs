// The catalog test upstream's cross-back-end search, through sluice: github's
// search_pull_requests must agree with the pull requests list_pull_requests
// shows (the benchmarks' ticket-to-PR join relies on it, bench/scenarios.mjs).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { connect, catalog, closeAll, toolsWhen } from './helpers.mjs';

let gw;
const REPOS = ['api', 'web', 'infra', 'mobile', 'docs'];
const call = (name, args) => gw.client.callTool({ name, arguments: args });

before(async () => {
	gw = await connect({ servers: { github: catalog('github'), jira: catalog('jira') }, sluice: { governor: { enabled: false } } });
	await toolsWhen(gw.client, (t) => t.some((x) => x.name === 'github__search_pull_requests'));
});
after(async () => {
	await gw?.close();
	await closeAll();
});

// Every pull request of every repository, from the listing tool.
async function allPulls() {
	const out = [];
	for (const repo of REPOS) {
		const r = await call('github__list_pull_requests', { owner: 'acme', repo, state: 'all' });
		for (const pr of JSON.parse(r.content[0].text)) out.push({ repo: `acme/${repo}`, ...pr });
	}
	return out;
}

test('search_pull_requests finds exactly the pull requests naming a ticket, as whole words', async () => {
	const pulls = await allPulls();
	assert.equal(pulls.length, 60, '12 pull requests in each of 5 repositories');
	const tickets = (await call('jira__search_issues', { jql: 'project = OPS ORDER BY key ASC', max_results: 10 })).structuredContent.issues;
	assert.equal(tickets.length, 10);
	let linked = 0;
	for (const { key } of tickets) {
		const word = new RegExp(`(^|[^A-Za-z0-9-])${key}($|[^A-Za-z0-9-])`, 'i');
		const want = pulls.filter((p) => word.test(p.title) || word.test(p.body)).map((p) => `${p.repo}#${p.number}`);
		const r = await call('github__search_pull_requests', { q: key });
		assert.ok(!r.isError, JSON.stringify(r.content));
		const got = r.structuredContent.items.map((p) => `${p.repository.full_name}#${p.number}`);
		assert.deepEqual(got.sort(), want.sort(), key);
		assert.equal(r.structuredContent.total_count, want.length);
		linked += want.length > 0;
	}
	// The data has both kinds, or the join would prove nothing.
	assert.ok(linked > 0 && linked < tickets.length, `${linked} of ${tickets.length} tickets linked`);
});

test('search_pull_requests: repo: narrows, every word must match, per_page caps, no words is an error', async () => {
	const pulls = await allPulls();
	const linked = pulls.find((p) => /^OPS-\d+:/.test(p.title));
	const key = linked.title.split(':')[0];
	const other = REPOS.map((r) => `acme/${r}`).find((r) => r !== linked.repo);
	const hit = await call('github__search_pull_requests', { q: `${key} repo:${linked.repo}` });
	assert.deepEqual(hit.structuredContent.items.map((p) => p.number), [linked.number]);
	const miss = await call('github__search_pull_requests', { q: `${key} repo:${other}` });
	assert.equal(miss.structuredContent.total_count, 0);
	const both = await call('github__search_pull_requests', { q: `${key} no-such-word` });
	assert.equal(both.structuredContent.total_count, 0);
	const word = linked.title.split(' ')[1]; // a verb such as Fix: in many titles
	const many = await call('github__search_pull_requests', { q: word, per_page: 1 });
	assert.ok(many.structuredContent.total_count > 1, `${word} is in more than one pull request`);
	assert.equal(many.structuredContent.items.length, 1);
	const none = await call('github__search_pull_requests', { q: 'repo:acme/api' });
	assert.equal(none.isError, true);
	assert.match(none.content[0].text, /no words/);
});

// make test-image: the MCP SDK client of the gateway in the container, run
// by tests/image/run.mjs inside the container's network namespace.
//
//   node tests/image/drive.mjs URL TOKEN run      tools listed, catalog__echo called,
//                                                 an execute_code program that calls it
//   node tests/image/drive.mjs URL TOKEN refused  execute_code answers at once with
//                                                 the missing boundaries named
// Prints one JSON line of what it saw; exits non-zero on any mismatch.
import assert from 'node:assert/strict';
import { httpClient, textOf, withTimeout } from '../e2e/helpers.mjs';

const [url, token, mode] = process.argv.slice(2);
const { client } = await withTimeout(
	httpClient(url, { name: 'image-test', headers: { Authorization: `Bearer ${token}` } }),
	15000,
	'connecting to the gateway in the container',
);
const names = async () => (await withTimeout(client.listTools(), 10000, 'tools/list')).tools.map((t) => t.name);
// The catalog server starts with the gateway: wait for its tools (bounded).
let tools = await names();
for (let i = 0; i < 100 && !tools.includes('catalog__echo'); i++) {
	await new Promise((r) => setTimeout(r, 100));
	tools = await names();
}
assert.ok(tools.includes('catalog__echo'), `catalog__echo listed: ${tools}`);
assert.ok(tools.includes('execute_code'), `execute_code listed: ${tools}`);
const out = { tools: tools.length };

const code = `const r = await tools.catalog.echo({ from: 'a program in a container' });
return r.arguments.from + ' / ' + (1 + 2);`;
const t0 = Date.now();
if (mode === 'run') {
	const r = await withTimeout(client.callTool({ name: 'catalog__echo', arguments: { hello: 'container' } }), 10000, 'tools/call');
	assert.equal(r.isError ?? false, false, textOf(r));
	assert.deepEqual(r.structuredContent?.arguments, { hello: 'container' });
	out.called = `catalog__echo answered ${JSON.stringify(r.structuredContent.arguments)}`;
	const p = await withTimeout(client.callTool({ name: 'execute_code', arguments: { code } }), 30000, 'execute_code');
	assert.equal(p.isError ?? false, false, textOf(p));
	assert.equal(textOf(p), 'a program in a container / 3');
	out.program = textOf(p);
} else {
	const p = await withTimeout(client.callTool({ name: 'execute_code', arguments: { code } }), 30000, 'execute_code');
	assert.equal(p.isError, true, `execute_code refused: ${textOf(p)}`);
	assert.match(textOf(p), /requires boundaries this machine does not provide: userns pidns netns ipcns mountns/);
	out.program = textOf(p);
}
out.ms = Date.now() - t0;
await client.close();
console.log(JSON.stringify(out));

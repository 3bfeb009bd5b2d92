// make test-deb (scripts/deb.sh): an MCP client of the packaged gateway.
// node tests/deb/call.mjs URL: lists the tools, calls everything's echo
// through sluice, exits 0 only when the echo came back whole.
import assert from 'node:assert/strict';
import { httpClient, withTimeout } from '../e2e/helpers.mjs';

const url = process.argv[2];
const { client } = await withTimeout(httpClient(url, { name: 'deb-test' }), 10000, 'connecting');
const { tools } = await withTimeout(client.listTools(), 10000, 'tools/list');
assert.ok(tools.some((t) => t.name === 'everything__echo'), `no everything__echo in ${tools.map((t) => t.name)}`);
const r = await withTimeout(
	client.callTool({ name: 'everything__echo', arguments: { message: 'from the package' } }),
	10000,
	'tools/call',
);
assert.equal(r.isError ?? false, false);
assert.equal(r.content[0].text, 'Echo: from the package');
console.error(`deb: called everything__echo through ${url}: ${r.content[0].text}`);
await client.close();

// A tiny MCP server for tests/e2e/codeconfirm.test.mjs, JSON lines on
// stdio, that counts what is done to it: every tools/call appends one line
// "NAME ARGS-JSON" to the file COUNTER_LOG, so a test can see which calls
// reached the server and how often. read_item is read-only, write_item
// destructive (a confirm rule catches it), slow answers after args.ms,
// bump has a side effect no rule confirms: it answers how many bumps this
// server has made so far. With COUNTER_LIST_LOG set, every tools/list
// appends a line "tools/list" to that file (tests/e2e/metrics.test.mjs).
const fs = require('fs');
const rl = require('readline').createInterface({ input: process.stdin });
const send = (m) => process.stdout.write(JSON.stringify(m) + '\n');
const obj = (props) => ({ type: 'object', properties: props });
const tools = [
  { name: 'read_item', description: 'Reads an item.', inputSchema: obj({ id: { type: 'number' } }),
    annotations: { readOnlyHint: true } },
  { name: 'write_item', description: 'Writes an item.',
    inputSchema: obj({ id: { type: 'number' }, value: { type: 'number' } }),
    annotations: { destructiveHint: true } },
  { name: 'bump', description: 'Counts one more bump.', inputSchema: obj({ tag: { type: 'string' } }),
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false } },
  { name: 'slow', description: 'Answers later.', inputSchema: obj({ ms: { type: 'number' }, tag: { type: 'string' } }),
    annotations: { readOnlyHint: true } },
];
let bumps = 0;
const result = (id, sc) => send({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: JSON.stringify(sc) }], structuredContent: sc } });
rl.on('line', (line) => {
  let m; try { m = JSON.parse(line); } catch { return; }
  if (m.id === undefined) return;
  if (m.method === 'initialize')
    send({ jsonrpc: '2.0', id: m.id, result: { protocolVersion: m.params.protocolVersion,
      capabilities: { tools: {} }, serverInfo: { name: 'counter', version: '1.0.0' } } });
  else if (m.method === 'tools/list') {
    if (process.env.COUNTER_LIST_LOG) fs.appendFileSync(process.env.COUNTER_LIST_LOG, 'tools/list\n');
    send({ jsonrpc: '2.0', id: m.id, result: { tools } });
  }
  else if (m.method === 'tools/call') {
    const a = m.params.arguments || {};
    fs.appendFileSync(process.env.COUNTER_LOG, m.params.name + ' ' + JSON.stringify(a) + '\n');
    if (m.params.name === 'read_item') result(m.id, { id: a.id, value: a.id * 10 });
    else if (m.params.name === 'write_item') result(m.id, { written: a.id, value: a.value });
    else if (m.params.name === 'bump') result(m.id, { bumps: ++bumps, tag: a.tag });
    else setTimeout(() => result(m.id, { tag: a.tag }), Math.min(a.ms || 0, 2000));
  } else send({ jsonrpc: '2.0', id: m.id, result: {} });
});

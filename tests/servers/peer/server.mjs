#!/usr/bin/env node
// A fixture back end that plants one text (the PLANT environment variable:
// a fake token, an injection) in every path an upstream's text can take to
// a client besides a tool result's values: a resource's contents (and a key
// of its _meta), a prompt's messages, completion values, a log notification
// (data and a key), a progress message, a key of a tool's structuredContent,
// an elicitation request, a sampling request and a JSON-RPC error (message
// and data). What it receives from the client (a prompt's arguments, a
// tool's arguments, the answers to its elicitation and sampling requests)
// is appended, one JSON line each, to the file RECORD names, so a test sees
// exactly what an upstream got.
// Used by tests/e2e/paths.test.mjs.
import { appendFileSync } from 'node:fs';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import {
	CallToolRequestSchema, CompleteRequestSchema, ElicitResultSchema, CreateMessageResultSchema,
	GetPromptRequestSchema, ListPromptsRequestSchema, ListResourcesRequestSchema,
	ListToolsRequestSchema, McpError, ReadResourceRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';

const P = process.env.PLANT ?? '';
const record = (what, value) => {
	if (process.env.RECORD)
		appendFileSync(process.env.RECORD, JSON.stringify({ what, value }) + '\n');
};
const text = (t) => ({ content: [{ type: 'text', text: t }] });
const obj = { type: 'object' };

const server = new Server({ name: 'peer-fixture', version: '1.0.0' }, {
	capabilities: { tools: {}, prompts: {}, resources: {}, logging: {}, completions: {} },
});

const tools = {
	// Logs, reports progress, then answers.
	work: async (args, extra) => {
		await server.sendLoggingMessage({ level: 'info', logger: 'work', data: { note: `log ${P}`, [P]: 1 } });
		const token = extra._meta?.progressToken;
		if (token !== undefined)
			await extra.sendNotification({ method: 'notifications/progress',
				params: { progressToken: token, progress: 1, total: 1, message: `step ${P}` } });
		return text('worked');
	},
	// Asks the person, then the person's model; records both answers.
	ask: async (args, extra) => {
		const answers = [];
		for (const [method, params, schema] of [
			['elicitation/create', { message: `confirm ${P}`, requestedSchema: { type: 'object',
				properties: { answer: { type: 'string', description: `the ${P}` } } } }, ElicitResultSchema],
			['sampling/createMessage', { messages: [{ role: 'user', content: { type: 'text', text: `sum up ${P}` } }],
				systemPrompt: `be brief ${P}`, maxTokens: 50 }, CreateMessageResultSchema],
		]) {
			try {
				const r = await extra.sendRequest({ method, params }, schema);
				record(method, r);
				answers.push(`${method}: ok`);
			} catch (e) {
				record(method, { error: e.message });
				answers.push(`${method}: error`);
			}
		}
		return text(answers.join('; '));
	},
	// Answers with a JSON-RPC error.
	fail: async () => {
		throw new McpError(-32000, `failed: ${P}`, { detail: P });
	},
	// Answers with the text as a key of its structuredContent.
	keyed: async () => ({ content: [{ type: 'text', text: 'keyed' }], structuredContent: { [P]: 'v' } }),
	// Records its arguments.
	record: async (args) => {
		record('tools/call', args);
		return text('recorded');
	},
};

server.setRequestHandler(ListToolsRequestSchema, async () => ({
	tools: Object.keys(tools).map((name) => ({ name, description: `The ${name} tool.`, inputSchema: obj })),
}));
server.setRequestHandler(CallToolRequestSchema, async (req, extra) => tools[req.params.name](req.params.arguments ?? {}, extra));

server.setRequestHandler(ListResourcesRequestSchema, async () => ({
	resources: [{ uri: 'peer://doc', name: 'doc', mimeType: 'text/plain' }],
}));
server.setRequestHandler(ReadResourceRequestSchema, async (req) => ({
	contents: [{ uri: req.params.uri, mimeType: 'text/plain', text: `doc ${P}`, _meta: { [P]: 'key' } }],
}));

server.setRequestHandler(ListPromptsRequestSchema, async () => ({
	prompts: [{ name: 'greet', arguments: [{ name: 'who', required: true }] }],
}));
server.setRequestHandler(GetPromptRequestSchema, async (req) => {
	record('prompts/get', req.params.arguments ?? {});
	return { description: `greets ${P}`,
		messages: [{ role: 'user', content: { type: 'text', text: `hello; ${P}` } }] };
});
server.setRequestHandler(CompleteRequestSchema, async (req) => {
	record('completion/complete', req.params.argument);
	return { completion: { values: [`a ${P}`], total: 1, hasMore: false } };
});

await server.connect(new StdioServerTransport());

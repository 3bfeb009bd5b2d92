#!/usr/bin/env node
// The fixture back end for @modelcontextprotocol/conformance: a stdio MCP
// server (SDK 1.x, low-level Server API) with the tools, resources and
// prompts the suite's server scenarios expect, under their exact names.
// sluice serves it over HTTP with "prefix": false and the suite runs
// against sluice (tests/e2e/conformance.test.mjs). What each one returns
// is what the scenario descriptions ask for (`conformance list`, and the
// description of each scenario in the package's dist/index.js).
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import {
	CallToolRequestSchema, CompleteRequestSchema, ElicitResultSchema, CreateMessageResultSchema,
	GetPromptRequestSchema, ListPromptsRequestSchema, ListResourcesRequestSchema,
	ListResourceTemplatesRequestSchema, ListToolsRequestSchema, McpError, ErrorCode,
	ReadResourceRequestSchema, SubscribeRequestSchema, UnsubscribeRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';

// A 1x1 red PNG and a 44-byte silent WAV header with one sample.
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';
const WAV = Buffer.concat([
	Buffer.from('RIFF'), Buffer.from([38, 0, 0, 0]), Buffer.from('WAVEfmt '),
	Buffer.from([16, 0, 0, 0, 1, 0, 1, 0, 0x40, 0x1f, 0, 0, 0x80, 0x3e, 0, 0, 2, 0, 16, 0]),
	Buffer.from('data'), Buffer.from([2, 0, 0, 0, 0, 0]),
]).toString('base64');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const noArgs = { type: 'object', properties: {} };
const text = (t) => ({ content: [{ type: 'text', text: t }] });

const server = new Server({ name: 'sluice-conformance-fixture', version: '1.0.0' }, {
	capabilities: {
		tools: {}, prompts: {}, logging: {}, completions: {},
		resources: { subscribe: true },
	},
});

const tools = [
	{ name: 'test_simple_text', description: 'Returns simple text', inputSchema: noArgs,
	  run: async () => text('This is a simple text response for testing.') },
	{ name: 'test_image_content', description: 'Returns an image', inputSchema: noArgs,
	  run: async () => ({ content: [{ type: 'image', data: PNG, mimeType: 'image/png' }] }) },
	{ name: 'test_audio_content', description: 'Returns audio', inputSchema: noArgs,
	  run: async () => ({ content: [{ type: 'audio', data: WAV, mimeType: 'audio/wav' }] }) },
	{ name: 'test_embedded_resource', description: 'Returns an embedded resource', inputSchema: noArgs,
	  run: async () => ({ content: [{ type: 'resource', resource: {
		uri: 'test://embedded-resource', mimeType: 'text/plain',
		text: 'This is an embedded resource content.' } }] }) },
	{ name: 'test_multiple_content_types', description: 'Returns text, image and a resource',
	  inputSchema: noArgs,
	  run: async () => ({ content: [
		{ type: 'text', text: 'Multiple content types test:' },
		{ type: 'image', data: PNG, mimeType: 'image/png' },
		{ type: 'resource', resource: { uri: 'test://mixed-content-resource',
			mimeType: 'application/json', text: JSON.stringify({ test: 'data', value: 123 }) } },
	  ] }) },
	{ name: 'test_tool_with_logging', description: 'Logs three messages while it runs',
	  inputSchema: noArgs,
	  run: async () => {
		for (const [i, m] of ['Tool execution started', 'Tool processing data',
			'Tool execution completed'].entries()) {
			if (i)
				await sleep(50);
			await server.sendLoggingMessage({ level: 'info', data: m });
		}
		return text('Tool with logging executed successfully');
	  } },
	{ name: 'test_error_handling', description: 'Always fails', inputSchema: noArgs,
	  run: async () => ({ isError: true,
		content: [{ type: 'text', text: 'This tool intentionally returns an error for testing' }] }) },
	{ name: 'test_tool_with_progress', description: 'Reports progress 0, 50, 100 of 100',
	  inputSchema: noArgs,
	  run: async (args, extra) => {
		const token = extra._meta?.progressToken;
		for (const p of [0, 50, 100]) {
			if (p)
				await sleep(50);
			if (token !== undefined)
				await extra.sendNotification({ method: 'notifications/progress',
					params: { progressToken: token, progress: p, total: 100 } });
		}
		return text('Tool with progress executed successfully');
	  } },
	{ name: 'test_sampling', description: 'Asks the client to sample',
	  inputSchema: { type: 'object', properties: { prompt: { type: 'string' } }, required: ['prompt'] },
	  run: async (args, extra) => {
		const r = await extra.sendRequest({ method: 'sampling/createMessage', params: {
			messages: [{ role: 'user', content: { type: 'text', text: args.prompt } }],
			maxTokens: 100 } }, CreateMessageResultSchema);
		return text(`LLM response: ${r.content?.text ?? JSON.stringify(r.content)}`);
	  } },
	{ name: 'test_elicitation', description: 'Asks the user for input',
	  inputSchema: { type: 'object', properties: { message: { type: 'string' } }, required: ['message'] },
	  run: async (args, extra) => {
		const r = await extra.sendRequest({ method: 'elicitation/create', params: {
			message: args.message,
			requestedSchema: { type: 'object', properties: {
				username: { type: 'string', description: "User's response" },
				email: { type: 'string', description: "User's email address" },
			}, required: ['username', 'email'] } } }, ElicitResultSchema);
		return text(`User response: action=${r.action}, content=${JSON.stringify(r.content ?? {})}`);
	  } },
	{ name: 'test_elicitation_sep1034_defaults', description: 'Elicitation with defaults',
	  inputSchema: noArgs,
	  run: async (args, extra) => {
		const r = await extra.sendRequest({ method: 'elicitation/create', params: {
			message: 'Please review your details',
			requestedSchema: { type: 'object', properties: {
				name: { type: 'string', default: 'John Doe' },
				age: { type: 'integer', default: 30 },
				score: { type: 'number', default: 95.5 },
				status: { type: 'string', enum: ['active', 'inactive', 'pending'], default: 'active' },
				verified: { type: 'boolean', default: true },
			} } } }, ElicitResultSchema);
		return text(`Elicitation completed: action=${r.action}, content=${JSON.stringify(r.content ?? {})}`);
	  } },
	{ name: 'test_elicitation_sep1330_enums', description: 'Elicitation with every enum form',
	  inputSchema: noArgs,
	  run: async (args, extra) => {
		const r = await extra.sendRequest({ method: 'elicitation/create', params: {
			message: 'Pick some options',
			requestedSchema: { type: 'object', properties: {
				untitledSingle: { type: 'string', enum: ['option1', 'option2', 'option3'] },
				titledSingle: { type: 'string', oneOf: [
					{ const: 'value1', title: 'First Option' },
					{ const: 'value2', title: 'Second Option' },
					{ const: 'value3', title: 'Third Option' }] },
				legacyEnum: { type: 'string', enum: ['opt1', 'opt2', 'opt3'],
					enumNames: ['Option One', 'Option Two', 'Option Three'] },
				untitledMulti: { type: 'array',
					items: { type: 'string', enum: ['option1', 'option2', 'option3'] } },
				titledMulti: { type: 'array', items: { anyOf: [
					{ const: 'value1', title: 'First Choice' },
					{ const: 'value2', title: 'Second Choice' },
					{ const: 'value3', title: 'Third Choice' }] } },
			} } } }, ElicitResultSchema);
		return text(`Elicitation completed: action=${r.action}, content=${JSON.stringify(r.content ?? {})}`);
	  } },
	{ name: 'json_schema_2020_12_tool', description: 'Tool with JSON Schema 2020-12 features',
	  inputSchema: {
		$schema: 'https://json-schema.org/draft/2020-12/schema',
		type: 'object',
		$defs: { address: { type: 'object',
			properties: { street: { type: 'string' }, city: { type: 'string' } } } },
		properties: { name: { type: 'string' }, address: { $ref: '#/$defs/address' } },
		additionalProperties: false,
	  },
	  run: async (args) => text(`Received: ${JSON.stringify(args)}`) },
	// SEP-1699 polling: the answer comes after a pause, long enough for a
	// server that closes streams early to do so.
	{ name: 'test_reconnection', description: 'Answers after 200 ms', inputSchema: noArgs,
	  run: async () => { await sleep(200); return text('Reconnection test completed successfully'); } },
];

// --flood: one more tool, for the flood bounds (tests/e2e/floods.test.mjs).
// flood {asks, notes} sends `notes` log messages and as many progress
// notifications (when the call has a token), then asks the client `asks`
// elicitations and `asks` samplings at once, and answers with what came
// back: {"elicit": {ok, errors: {message: count}}, "sample": {...}}.
if (process.argv.includes('--flood'))
	tools.push({ name: 'flood', description: 'Floods the client with requests and notifications',
	  inputSchema: { type: 'object', properties: { asks: { type: 'integer' }, notes: { type: 'integer' } } },
	  run: async ({ asks = 0, notes = 0 }, extra) => {
		const token = extra._meta?.progressToken;
		const sent = [];
		for (let i = 0; i < notes; i++) {
			sent.push(server.sendLoggingMessage({ level: 'info', data: `flood ${i}` }));
			if (token !== undefined)
				sent.push(extra.sendNotification({ method: 'notifications/progress',
					params: { progressToken: token, progress: i + 1 } }));
		}
		await Promise.all(sent);
		const tally = async (method, params, schema) => {
			const out = { ok: 0, errors: {} };
			await Promise.all(Array.from({ length: asks }, () => extra.sendRequest({ method, params }, schema)
				.then(() => out.ok++, (e) => { out.errors[e.message] = (out.errors[e.message] ?? 0) + 1; })));
			return out;
		};
		const [elicit, sample] = await Promise.all([
			tally('elicitation/create', { message: 'flood?', requestedSchema: { type: 'object',
				properties: { ok: { type: 'boolean' } } } }, ElicitResultSchema),
			tally('sampling/createMessage', { messages: [{ role: 'user',
				content: { type: 'text', text: 'flood' } }], maxTokens: 1 }, CreateMessageResultSchema),
		]);
		return text(JSON.stringify({ elicit, sample }));
	  } });

server.setRequestHandler(ListToolsRequestSchema, async () => ({
	tools: tools.map(({ run, ...t }) => t),
}));
server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
	const t = tools.find((x) => x.name === req.params.name);
	if (!t)
		throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${req.params.name}`);
	return t.run(req.params.arguments ?? {}, extra);
});

const resources = [
	{ uri: 'test://static-text', name: 'static-text', description: 'A static text resource',
	  mimeType: 'text/plain', text: 'This is the content of the static text resource.' },
	{ uri: 'test://static-binary', name: 'static-binary', description: 'A static PNG',
	  mimeType: 'image/png', blob: PNG },
	{ uri: 'test://watched-resource', name: 'watched-resource', description: 'A resource to subscribe to',
	  mimeType: 'text/plain', text: 'Watched resource content.' },
];
const subscriptions = new Set();

server.setRequestHandler(ListResourcesRequestSchema, async () => ({
	resources: resources.map(({ text: _t, blob: _b, ...r }) => r),
}));
server.setRequestHandler(ListResourceTemplatesRequestSchema, async () => ({
	resourceTemplates: [{ uriTemplate: 'test://template/{id}/data', name: 'template',
		description: 'A resource template with one parameter', mimeType: 'application/json' }],
}));
server.setRequestHandler(ReadResourceRequestSchema, async (req) => {
	const uri = req.params.uri;
	const m = /^test:\/\/template\/([^/]+)\/data$/.exec(uri);
	if (m)
		return { contents: [{ uri, mimeType: 'application/json',
			text: JSON.stringify({ id: m[1], templateTest: true, data: `Data for ID: ${m[1]}` }) }] };
	const r = resources.find((x) => x.uri === uri);
	if (!r)
		throw new McpError(-32002, `Resource not found: ${uri}`);
	return { contents: [r.blob ? { uri, mimeType: r.mimeType, blob: r.blob } :
		{ uri, mimeType: r.mimeType, text: r.text }] };
});
server.setRequestHandler(SubscribeRequestSchema, async (req) => {
	subscriptions.add(req.params.uri);
	// One update right away, so a gateway's routing of updates can be seen.
	setTimeout(() => {
		if (subscriptions.has(req.params.uri))
			server.sendResourceUpdated({ uri: req.params.uri }).catch(() => {});
	}, 20);
	return {};
});
server.setRequestHandler(UnsubscribeRequestSchema, async (req) => {
	subscriptions.delete(req.params.uri);
	return {};
});

const prompts = [
	{ name: 'test_simple_prompt', description: 'A simple prompt without arguments',
	  get: () => [{ role: 'user', content: { type: 'text', text: 'This is a simple prompt for testing.' } }] },
	{ name: 'test_prompt_with_arguments', description: 'A prompt with two arguments',
	  arguments: [{ name: 'arg1', description: 'First test argument', required: true },
		{ name: 'arg2', description: 'Second test argument', required: true }],
	  get: (a) => [{ role: 'user', content: { type: 'text',
		text: `Prompt with arguments: arg1='${a.arg1}', arg2='${a.arg2}'` } }] },
	{ name: 'test_prompt_with_embedded_resource', description: 'A prompt embedding a resource',
	  arguments: [{ name: 'resourceUri', description: 'URI of the resource to embed', required: true }],
	  get: (a) => [
		{ role: 'user', content: { type: 'resource', resource: { uri: a.resourceUri,
			mimeType: 'text/plain', text: 'Embedded resource content for testing.' } } },
		{ role: 'user', content: { type: 'text', text: 'Please process the embedded resource above.' } }] },
	{ name: 'test_prompt_with_image', description: 'A prompt with an image',
	  get: () => [
		{ role: 'user', content: { type: 'image', data: PNG, mimeType: 'image/png' } },
		{ role: 'user', content: { type: 'text', text: 'Please analyze the image above.' } }] },
];

server.setRequestHandler(ListPromptsRequestSchema, async () => ({
	prompts: prompts.map(({ get, ...p }) => p),
}));
server.setRequestHandler(GetPromptRequestSchema, async (req) => {
	const p = prompts.find((x) => x.name === req.params.name);
	if (!p)
		throw new McpError(ErrorCode.InvalidParams, `Unknown prompt: ${req.params.name}`);
	return { messages: p.get(req.params.arguments ?? {}) };
});
server.setRequestHandler(CompleteRequestSchema, async (req) => {
	const words = ['paris', 'park', 'party', 'test', 'testing'];
	const v = req.params.argument?.value ?? '';
	const values = words.filter((w) => w.startsWith(v));
	return { completion: { values, total: values.length, hasMore: false } };
});

await server.connect(new StdioServerTransport());

// make bench: the code-mode tool list every session carries, with every
// default on and one server: chars/4 of the JSON of tools/list's tools (the
// count issue 34 sets its goal in) and o200k_base tokens. Prints markdown.
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';

import { connect, catalog, closeAll, toolsWhen } from '../tests/e2e/helpers.mjs';

const GOAL = 600;
const g = await connect({ servers: { github: catalog('github') }, sluice: { exposure: 'code' } });
const tools = await toolsWhen(g.client, (t) => t.some((x) => x.name === 'execute_code' && /\bgithub\b/.test(x.description)));
const json = JSON.stringify(tools);
console.log('## Code-mode tool list');
console.log();
console.log(`tools/list in code mode (${tools.map((t) => t.name).join(', ')}), every default on, one server:`);
console.log(`${json.length / 4} tokens by chars/4 (${json.length} chars; goal: at most ${GOAL}), ${countTokens(json)} o200k tokens.`);
console.log();
await closeAll();

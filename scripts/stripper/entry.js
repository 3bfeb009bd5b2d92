// The TypeScript stripper of code mode, bundled with sucrase at build time
// (scripts/stripper/bundle.mjs) and compiled to QuickJS bytecode that the
// sandbox's zygote loads once (docs/internals/SANDBOX.md, "TypeScript").
//
// Only sucrase's "typescript" transform: types, interfaces, `as`,
// `satisfies`, `!` and type-only imports are removed and enums become
// objects; no module or JSX transform, no ES downlevelling. Sucrase keeps
// every line where it was, so a line number in an error is the program's.
import { transform } from "sucrase";

// strip(code) -> JavaScript, or throws {message, line, column} (column
// 1-based, in UTF-16 units of the source) for a program it cannot parse.
globalThis.strip = (code) => {
	try {
		return transform(code, { transforms: ["typescript"], disableESTransforms: true }).code;
	} catch (e) {
		const pos = typeof e?.pos === "number" ? Math.min(e.pos, code.length) : -1;
		if (pos < 0)
			throw { message: String(e?.message ?? e), line: 0, column: 0 };
		const before = code.slice(0, pos);
		const nl = before.lastIndexOf("\n");
		throw {
			message: String(e.message).replace(/ \(\d+:\d+\)$/, ""),
			line: before.split("\n").length,
			column: pos - nl,
		};
	}
};

// Build time: bundles scripts/stripper/entry.js with sucrase into one
// classic script for QuickJS (no modules, no Node APIs), with esbuild.
// Both come from build/stripper/node_modules, pinned by
// scripts/deps/stripper/package-lock.json.
//   node scripts/stripper/bundle.mjs <node_modules dir> <entry.js> <out.js>
import { createRequire } from "node:module";
import { writeFileSync } from "node:fs";
import { join, resolve } from "node:path";

const [nm, entry, out] = process.argv.slice(2);
const require = createRequire(join(resolve(nm), "x.js"));
const esbuild = require("esbuild");
const r = esbuild.buildSync({
	entryPoints: [entry],
	nodePaths: [resolve(nm)],
	bundle: true,
	format: "iife",
	platform: "neutral",
	mainFields: ["module", "main"],
	target: "es2022",
	minify: true,
	legalComments: "none",
	write: false,
	logLevel: "warning",
});
writeFileSync(out, r.outputFiles[0].text);

// Parses an AsyncAPI document with the reference parser (@asyncapi/parser),
// its $refs resolved (the JSON Schemas of docs/schema), and prints the
// channels' addresses, one JSON array on stdout. Diagnostics go to stderr;
// any error exits 1.
//
//	node scripts/parse-asyncapi.mjs ../../docs/asyncapi.yaml
import { Parser, fromFile } from "@asyncapi/parser";

const path = process.argv[2];
if (!path) {
  console.error("usage: parse-asyncapi.mjs FILE");
  process.exit(2);
}
const parser = new Parser();
const { document, diagnostics } = await fromFile(parser, path).parse();
const severity = ["error", "warning", "information", "hint"];
let errors = 0;
for (const d of diagnostics) {
  if (d.severity === 0) errors++;
  console.error(`${severity[d.severity] ?? d.severity}: ${d.message} (${d.code}) at ${d.path.join(".")}`);
}
if (!document || errors > 0) {
  console.error(`${path}: ${errors} errors`);
  process.exit(1);
}
const addresses = document.channels().all().map((c) => c.address());
console.log(JSON.stringify({ version: document.version(), channels: addresses.length, operations: document.operations().all().length, messages: document.allMessages().all().length, addresses }));

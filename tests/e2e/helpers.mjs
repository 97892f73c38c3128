// Shared by the end-to-end tests: where things are, and a `stickler serve --http` process.
import { spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
export const repo = path.resolve(here, "../..");
export const binary = process.env.STICKLER_BINARY ?? path.join(repo, "build/stickler");
export const zoo = process.env.STICKLER_ZOO_DIR ?? path.join(repo, "build/zoo");
export const testProfiles = path.join(repo, "tests/profiles");

// Starts `stickler serve --http 127.0.0.1:0` and resolves with its URL once it listens. The
// first of `roots` is the workspace.
export function serveHttp(extraArgs = [], roots = [zoo, testProfiles]) {
  const rootArgs = roots.flatMap((root) => ["--root", root]);
  const child = spawn(binary, ["serve", "--http", "127.0.0.1:0", ...rootArgs, ...extraArgs], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  return new Promise((resolve, reject) => {
    let output = "";
    const timer = setTimeout(() => reject(new Error(`stickler serve did not start: ${output}`)), 20000);
    child.stderr.on("data", (chunk) => {
      output += chunk;
      const match = output.match(/http:\/\/127\.0\.0\.1:(\d+)\/mcp/);
      if (match) {
        clearTimeout(timer);
        resolve({ url: new URL(match[0]), child, stop: () => child.kill("SIGTERM") });
      }
    });
    child.on("exit", (code) => reject(new Error(`stickler serve exited with ${code}: ${output}`)));
  });
}

// Debian's Chromium, headless, kept from reaching for Google's services on a machine without a
// network (playwright-core's `chromium`).
export function launchChromium(chromium) {
  return chromium.launch({
    executablePath: process.env.STICKLER_CHROMIUM ?? "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
}

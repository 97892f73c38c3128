// The reviewer's page in a real browser: `stickler review serve` with a token, driven in headless
// Chromium (Debian's, through playwright-core). A reviewer lists the queue, opens a proposal,
// sees its highlighted diff and its evidence, approves it and sees the catalog's main advance;
// a proposal whose claimed model fails end to end cannot be approved from the page. Nothing is
// fetched from anywhere but the page's own server.
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";

import { chromium } from "playwright-core";

import { binary, repo, zoo, launchChromium } from "./helpers.mjs";

const token = "review-page-token-0123456789";
const env = { ...process.env, GIT_AUTHOR_NAME: "Rita", GIT_AUTHOR_EMAIL: "rita@example.com" };
let workspace;
let server;
let base;
let browser;

function stickler(...args) {
  return execFileSync(binary, args, { cwd: workspace, env, encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
}
function mainCommit() {
  return execFileSync("git", ["-C", path.join(workspace, "stickler-adapters"), "rev-parse", "main"], { encoding: "utf8" }).trim();
}

// Markdown as agents write it: emphasis, a long line and a long word (the page must not scroll
// sideways), and what must not come through: raw HTML and a javascript: link.
const rationale = "gelu_new cubes with **pow**, which the 2025 stack cannot lower.\n\n" +
  "The rewrite: ".concat("x * x * x instead of pow(x, 3) ".repeat(30)) + "\n\n" +
  "`" + "gelu_new.pow".repeat(40) + "`\n\n" +
  "<script>window.injected = true</script>\n\n[click](javascript:window.injected=true)";

before(async () => {
  workspace = fs.mkdtempSync(path.join(os.tmpdir(), "stickler-review-browser-"));
  const model = path.join(zoo, "gpt2-tiny.pt");
  // Proposal 1: pow-cube-as-mul reworded, claimed for gpt2 on spyre-2025-clean, with evidence.
  const shipped = fs.readFileSync(path.join(repo, "adapters/catalog/pow-cube-as-mul.py"), "utf8");
  stickler("draft", "pow-cube-as-mul", "--source", `${shipped}\n# reworded for the review page\n`, "--reason", "Reword");
  const diagnosis = JSON.parse(stickler("diagnose", model, "--profile", "spyre-2025-clean", "--mode", "compile", "--adapt", "--json"));
  stickler("review", "submit", "--adapter", "pow-cube-as-mul", "--model", model, "--profile", "spyre-2025-clean",
    "--rationale", rationale, "--evidence", diagnosis.report_id);
  // Proposal 2: the same draft claimed on a profile where gpt2's attention aborts.
  fs.writeFileSync(path.join(workspace, "abort-softmax.json"), JSON.stringify({
    version: 1, extends: "spyre-2025-clean", name: "test-abort-softmax",
    description: "Test profile: the device aborts in every softmax.",
    faults: [{ id: "softmax-abort", match: { op: "aten::softmax" }, effect: { kind: "runtime_abort", message: "softmax_kernel: assertion failed" } }],
  }));
  stickler("review", "submit", "--adapter", "pow-cube-as-mul", "--model", model, "--profile", "abort-softmax.json",
    "--rationale", "the same on a broken stack");

  const tokenFile = path.join(workspace, "token");
  fs.writeFileSync(tokenFile, token);
  server = spawn(binary, ["review", "serve", "--http", "127.0.0.1:0", "--token-file", tokenFile],
    { cwd: workspace, env, stdio: ["ignore", "ignore", "pipe"] });
  base = await new Promise((resolve, reject) => {
    let output = "";
    const timer = setTimeout(() => reject(new Error(`review serve did not start: ${output}`)), 20000);
    server.stderr.on("data", (chunk) => {
      output += chunk;
      const match = output.match(/(http:\/\/127\.0\.0\.1:\d+)\/review\?token=/);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    });
    server.on("exit", (code) => reject(new Error(`review serve exited with ${code}: ${output}`)));
  });
  browser = await launchChromium(chromium);
});

after(async () => {
  await browser?.close();
  server?.kill("SIGTERM");
  fs.rmSync(workspace, { recursive: true, force: true });
});

test("without the token the page is refused", async () => {
  const page = await browser.newPage();
  const response = await page.goto(`${base}/review`);
  assert.equal(response.status(), 401);
  const wrong = await page.goto(`${base}/review?token=not-the-token-at-all`);
  assert.equal(wrong.status(), 401);
  await page.close();
});

test("list, open, read the diff and evidence, approve, and main advances", async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  const requested = [];
  page.on("request", (request) => requested.push(request.url()));

  // The printed address carries the token once; the page drops it from the URL.
  await page.goto(`${base}/review?token=${token}`);
  assert.equal(new URL(page.url()).search, "");
  const rows = page.locator("#queue tr[data-id]");
  assert.equal(await rows.count(), 2);
  assert.match(await page.locator('#queue tr[data-id="1"]').textContent(), /pending/);
  // The filters.
  // Each filter is a link: wait for its page before counting rows, or the count reads the old page.
  await Promise.all([page.waitForURL(/state=approved/), page.click('#filters a:text-is("approved")')]);
  assert.equal(await page.locator("#queue tr[data-id]").count(), 0);
  await Promise.all([page.waitForURL(/state=pending/), page.click('#filters a:text-is("pending")')]);
  assert.equal(await page.locator("#queue tr[data-id]").count(), 2);

  await Promise.all([page.waitForURL(/\/review\/1$/), page.click('#queue tr[data-id="1"] a')]);
  assert.match(await page.locator("h1").textContent(), /Proposal 1: pow-cube-as-mul/);
  assert.match(await page.locator("#rationale").textContent(), /cannot lower/);
  // The rationale is Markdown, rendered: emphasis is emphasis, nothing scrolls sideways, raw HTML
  // is left out and the javascript: link leads nowhere.
  assert.equal(await page.locator("#rationale strong").textContent(), "pow");
  assert.equal(await page.locator("#rationale script").count(), 0);
  assert.equal(await page.evaluate(() => window.injected), undefined);
  assert.equal(await page.locator("#rationale a").getAttribute("href"), "");
  assert.ok(await page.locator("#rationale").evaluate((element) => element.scrollWidth <= element.clientWidth),
    "the rationale wraps");
  // The diff: the added line, highlighted (a comment span inside an added line).
  const added = page.locator("#diff .add");
  assert.ok(await added.count() >= 1);
  assert.match(await added.last().textContent(), /reworded for the review page/);
  assert.equal(await page.locator("#diff .add .com").count() >= 1, true);
  assert.ok(await page.locator("#diff .kw").count() >= 1, "keywords are highlighted");
  // The evidence: the saved report, linked, with its verdict.
  const evidence = page.locator("#evidence a");
  assert.equal(await evidence.count(), 1);
  assert.match(await page.locator("#evidence li").textContent(), /diagnos/);
  const reportPage = await context.newPage();
  const report = await reportPage.goto(new URL(await evidence.getAttribute("href"), base).href);
  assert.equal(report.status(), 200);
  assert.match(await reportPage.title(), /.+/);
  await reportPage.close();

  const before = mainCommit();
  await page.fill('form[action="/review/1/approve"] textarea', "the cube, as shipped");
  await Promise.all([page.waitForURL(/notice=approved/, { timeout: 300000 }), page.click("#approve")]);
  assert.match(await page.locator("#notice").textContent(), /Approved/);
  assert.match(await page.locator("#state").textContent(), /approved/);
  assert.equal(await page.locator("#gate-verdict").textContent(), "passed");
  const after = mainCommit();
  assert.notEqual(after, before, "the catalog's main advanced");
  const message = execFileSync("git", ["-C", path.join(workspace, "stickler-adapters"), "log", "-1", "--format=%B", "main"], { encoding: "utf8" });
  assert.match(message, /Approve proposal 1/);
  assert.match(message, /Reviewed-by: Rita <rita@example.com>/);
  assert.match(await page.locator("#events").textContent(), /the cube, as shipped/);

  for (const url of requested) assert.ok(url.startsWith(base), `fetched ${url}`);
  await context.close();
});

test("a proposal whose claimed model fails end to end cannot be approved from the page", async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(`${base}/review?token=${token}`);
  await page.goto(`${base}/review/2`);
  const before = mainCommit();
  await Promise.all([page.waitForURL(/notice=gate-failed/, { timeout: 300000 }), page.click("#approve")]);
  assert.match(await page.locator("#notice").textContent(), /Not approved/);
  assert.equal(await page.locator("#gate-verdict").textContent(), "failed");
  assert.match(await page.locator("#gate-problems").textContent(), /aborted/);
  assert.match(await page.locator("#state").textContent(), /pending/);
  assert.equal(mainCommit(), before);
  await context.close();
});

test("a form posted from another origin is refused", async () => {
  const response = await fetch(`${base}/review/2/reject`, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded", Origin: "http://evil.example", Authorization: `Bearer ${token}` },
    body: "comment=no",
  });
  assert.equal(response.status, 403);
  const status = JSON.parse(stickler("review", "show", "2", "--json"));
  assert.equal(status.state, "pending");
});

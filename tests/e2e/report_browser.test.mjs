// The HTML report in a real browser: `stickler localize --html` on a model with one faulty
// module, opened offline in headless Chromium (Debian's, driven by playwright-core), must show
// the causal culprit and the per-module chart, and fetch nothing from anywhere; over a decode,
// each step's figures as a chart with the step it localized outlined.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { pathToFileURL } from "node:url";

import { chromium } from "playwright-core";

import { binary, zoo, launchChromium } from "./helpers.mjs";

const culprit = "transformer.h.0.mlp.c_proj";
let workspace;
let browser;

before(async () => {
  workspace = fs.mkdtempSync(path.join(os.tmpdir(), "stickler-report-browser-"));
  // spyre-2025-clean with one fault: the outputs of GPT-2's first MLP projection are 3x.
  const profile = path.join(workspace, "wrong-scale.json");
  fs.writeFileSync(profile, JSON.stringify({
    version: 1, extends: "spyre-2025-clean", name: "test-wrong-scale",
    description: "Test profile: one module's outputs come out three times too large.",
    faults: [{ id: "wrong-scale", match: { module: culprit }, effect: { kind: "wrong_scale", factor: 3.0 } }],
  }));
  execFileSync(binary, ["localize", path.join(zoo, "gpt2-tiny.pt"), "--profile", profile, "--adapt",
    "--html", path.join(workspace, "report.html")], { cwd: workspace, stdio: ["ignore", "ignore", "inherit"] });
  // A decoder whose decoded token carries massive activations: its decode fails from step 1.
  execFileSync(binary, ["localize", path.join(zoo, "qwen2-massive-token.pt"), "--profile", "spyre-2026",
    "--decode", "2", "--html", path.join(workspace, "decode.html")], { cwd: workspace, stdio: ["ignore", "ignore", "inherit"] });
  browser = await launchChromium(chromium);
});

after(async () => {
  await browser?.close();
  fs.rmSync(workspace, { recursive: true, force: true });
});

test("the HTML report shows the causal culprit and its row in the chart, offline", async () => {
  const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
  const requested = [];
  page.on("request", (request) => requested.push(request.url()));
  const url = pathToFileURL(path.join(workspace, "report.html")).href;
  await page.goto(url);

  const status = page.locator("#status");
  assert.equal(await status.textContent(), "localized");
  const named = page.locator("#culprit-module");
  assert.ok(await named.isVisible(), "the culprit's module path is visible");
  assert.equal(await named.textContent(), culprit);
  assert.equal(await page.locator("#culprit h2").textContent(), "Causal culprit");

  // The chart: one row per module call, exactly one of them the culprit's, drawn in red and
  // wider than every row before it (its error is far larger).
  const rows = page.locator("#module-chart g.row");
  assert.ok((await rows.count()) > 10);
  const row = page.locator(`#module-chart g.culprit-row[data-module="${culprit}"]`);
  assert.equal(await row.count(), 1);
  await row.scrollIntoViewIfNeeded();
  assert.ok(await row.isVisible());
  const bar = row.locator("rect");
  assert.equal(await bar.evaluate((element) => getComputedStyle(element).fill), "rgb(198, 40, 40)");
  const culpritWidth = Number(await bar.getAttribute("width"));
  const before = await page.locator("#module-chart g.row").evaluateAll((elements, name) => {
    const widths = [];
    for (const element of elements) {
      if (element.dataset.module === name) break;
      widths.push(Number(element.querySelector("rect").getAttribute("width")));
    }
    return widths;
  }, culprit);
  assert.ok(before.length > 0);
  assert.ok(before.every((width) => width < culpritWidth), `${before} vs ${culpritWidth}`);

  // Self-contained: the page itself is the only thing loaded.
  assert.deepEqual(requested, [url]);
  await page.close();
});

test("a report over decode shows each step as a bar, the failing step red and outlined", async () => {
  const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
  const requested = [];
  page.on("request", (request) => requested.push(request.url()));
  const url = pathToFileURL(path.join(workspace, "decode.html")).href;
  await page.goto(url);

  const steps = page.locator("#decode-chart g.decode-step");
  assert.equal(await steps.count(), 3);  // the prefill and 2 steps
  const prefill = page.locator('#decode-chart g.decode-step[data-step="0"]');
  const failing = page.locator('#decode-chart g.decode-step[data-step="1"]');
  await failing.scrollIntoViewIfNeeded();
  assert.ok(await failing.isVisible());
  assert.equal(await failing.getAttribute("data-verdict"), "fail");
  assert.equal(await prefill.getAttribute("data-verdict"), "pass");
  const fill = (group) => group.locator("rect").first().evaluate((element) => getComputedStyle(element).fill);
  assert.equal(await fill(failing), "rgb(198, 40, 40)");
  assert.equal(await fill(prefill), "rgb(122, 156, 198)");
  // The failing step's cache is further from the reference's: its bar is taller.
  const height = (group) => group.locator("rect").first().evaluate((element) => Number(element.getAttribute("height")));
  assert.ok(await height(failing) > await height(prefill));
  assert.equal(await failing.locator("rect.step-marked").count(), 1);
  assert.equal(await page.locator("#decode-chart rect.step-marked").count(), 1);
  assert.match(await page.locator("#decode p").first().textContent(), /Step 1 \(outlined\)/);

  assert.deepEqual(requested, [url]);
  await page.close();
});

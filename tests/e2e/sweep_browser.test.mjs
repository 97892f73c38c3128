// The sweep's HTML report in a real browser: two nightly sweeps of the same list, a model
// broken between them, and the second sweep's report.html opened offline in headless Chromium
// must chart coverage across both sweeps and name the newly broken model and why.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { pathToFileURL } from "node:url";

import { chromium } from "playwright-core";

import { binary, zoo, launchChromium } from "./helpers.mjs";

let workspace;
let browser;

function sweep(out) {
  execFileSync(binary, ["sweep", "--models", "models.txt", "--profile", "spyre-2026", "--out", out],
    { cwd: workspace, stdio: ["ignore", "ignore", "inherit"] });
}

before(async () => {
  workspace = fs.mkdtempSync(path.join(os.tmpdir(), "stickler-sweep-browser-"));
  fs.mkdirSync(path.join(workspace, "models"));
  fs.copyFileSync(path.join(zoo, "gpt2-tiny.pt"), path.join(workspace, "models", "nightly.pt"));
  fs.copyFileSync(path.join(zoo, "qwen2-hd128.pt"), path.join(workspace, "models", "steady.pt"));
  fs.writeFileSync(path.join(workspace, "models.txt"), "models/*.pt\n");
  sweep("night-1");
  // Overnight the model behind nightly.pt changed into one that does not compile.
  fs.copyFileSync(path.join(zoo, "traps", "flipped-features.pt"), path.join(workspace, "models", "nightly.pt"));
  sweep("night-2");
  browser = await launchChromium(chromium);
});

after(async () => {
  await browser?.close();
  fs.rmSync(workspace, { recursive: true, force: true });
});

test("the sweep report charts coverage across sweeps and shows what broke, offline", async () => {
  const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
  const requested = [];
  page.on("request", (request) => requested.push(request.url()));
  await page.goto(pathToFileURL(path.join(workspace, "night-2", "report.html")).href);

  // The chart: a point per sweep on each line, the second sweep's passing point lower (one
  // model fewer passes) than the first's.
  const chart = page.locator("#coverage-chart");
  assert.ok(await chart.isVisible());
  const passing = chart.locator("circle.passing");
  assert.equal(await passing.count(), 2);
  assert.equal(await chart.locator("circle.covered").count(), 2);
  const firstY = Number(await passing.nth(0).getAttribute("cy"));
  const secondY = Number(await passing.nth(1).getAttribute("cy"));
  assert.ok(secondY > firstY, `fewer passing models is drawn lower (${firstY} -> ${secondY})`);
  assert.equal(await page.locator("#history tr").count(), 3);  // header + two sweeps

  // The diff names the model, what it was and what it is now.
  const broken = page.locator("#newly_broken tr.broken");
  assert.equal(await broken.count(), 1);
  await broken.scrollIntoViewIfNeeded();
  assert.ok(await broken.isVisible());
  const cells = await broken.locator("td").allTextContents();
  assert.match(cells[0], /flipped-features/);
  assert.equal(cells[1], "pass");
  assert.match(cells[2], /^layout rule /);
  assert.match(cells[3], /archive changed/);

  assert.match(await page.locator("#totals").textContent(), /2\s+models/);
  assert.equal(await page.locator("#blockers tr").count() > 1, true);
  assert.deepEqual(requested.filter((url) => !url.startsWith("file:")), []);
});

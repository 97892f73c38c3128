// The review queue as an agent meets it through the official SDK client, over stdio and over
// HTTP: submit a draft, hear through a resource subscription that a reviewer requested changes
// (the reviewer acts on the command line, another process), resubmit, and hear of the approval.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

import { binary, repo, serveHttp, zoo } from "./helpers.mjs";

const reviewer = { ...process.env, GIT_AUTHOR_NAME: "Rita", GIT_AUTHOR_EMAIL: "rita@example.com" };
const shipped = fs.readFileSync(path.join(repo, "adapters/catalog/pow-cube-as-mul.py"), "utf8");

const transports = {
  stdio: async (workspace) => ({
    transport: new StdioClientTransport({
      command: binary, args: ["serve", "--root", workspace, "--root", zoo], stderr: "ignore",
    }),
    stop: () => {},
  }),
  http: async (workspace) => {
    const served = await serveHttp([], [workspace, zoo]);
    return { transport: new StreamableHTTPClientTransport(served.url), stop: served.stop };
  },
};

for (const [name, open] of Object.entries(transports)) {
  describe(`the review queue over ${name}`, () => {
    let workspace;
    let client;
    let stop;
    const updates = [];

    before(async () => {
      workspace = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "stickler-review-agent-")));
      const opened = await open(workspace);
      stop = opened.stop;
      client = new Client({ name: "stickler-review-agent", version: "1.0.0" });
      client.setNotificationHandler(ResourceUpdatedNotificationSchema, (notification) => {
        updates.push(notification.params.uri);
      });
      await client.connect(opened.transport);
    });
    after(async () => {
      await client?.close();
      stop?.();
      fs.rmSync(workspace, { recursive: true, force: true });
    });

    async function updated(uri) {
      const deadline = Date.now() + 30000;
      while (!updates.includes(uri)) {
        if (Date.now() > deadline) throw new Error(`no notifications/resources/updated for ${uri}: ${updates}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
    async function readProposal(uri) {
      const { contents } = await client.readResource({ uri });
      return JSON.parse(contents[0].text);
    }
    async function submit(round, supersedes) {
      const drafted = await client.callTool({ name: "draft_adapter", arguments: {
        name: "pow-cube-as-mul", source: `${shipped}\n# round ${round}\n`, reason: `Round ${round}` } });
      assert.equal(drafted.isError, false, JSON.stringify(drafted.content));
      const args = { adapters: ["pow-cube-as-mul"], models: [path.join(zoo, "gpt2-tiny.pt")],
        profile: "spyre-2025-clean", rationale: "gelu_new cubes with pow, which spyre-2025 cannot lower" };
      if (supersedes) args.supersedes = supersedes;
      const submitted = await client.callTool({ name: "submit_for_review", arguments: args });
      assert.equal(submitted.isError, false, JSON.stringify(submitted.content));
      return submitted.structuredContent.id;
    }
    function review(...args) {
      return execFileSync(binary, ["review", ...args], { cwd: workspace, env: reviewer, encoding: "utf8" });
    }

    test("submit, hear of changes requested, resubmit, hear of the approval", async () => {
      const first = await submit(1);
      const firstUri = `stickler://reviews/${first}`;
      await client.subscribeResource({ uri: firstUri });
      review("request-changes", String(first), "--comment", "say why the cube is exact");
      await updated(firstUri);
      const changed = await readProposal(firstUri);
      assert.equal(changed.state, "changes_requested");
      assert.equal(changed.events.at(-1).comment, "say why the cube is exact");

      const second = await submit(2, first);
      const secondUri = `stickler://reviews/${second}`;
      await client.subscribeResource({ uri: secondUri });
      review("approve", String(second), "--comment", "clear now");
      await updated(secondUri);
      const approved = await readProposal(secondUri);
      assert.equal(approved.state, "approved");
      assert.equal(approved.gate.passed, true);
      assert.equal(approved.supersedes, first);
      const status = await client.callTool({ name: "review_status", arguments: { id: first } });
      assert.equal(status.structuredContent.state, "superseded");
    });
  });
}

// The official TypeScript SDK client against `stickler serve`, over stdio and over HTTP.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

import { binary, serveHttp, testProfiles, zoo } from "./helpers.mjs";

const transports = {
  stdio: async () => ({
    transport: new StdioClientTransport({
      command: binary,
      args: ["serve", "--root", zoo, "--root", testProfiles],
      stderr: "ignore",
    }),
    stop: () => {},
  }),
  http: async () => {
    const served = await serveHttp();
    return { transport: new StreamableHTTPClientTransport(served.url), stop: served.stop };
  },
};

for (const [name, open] of Object.entries(transports)) {
  describe(`stickler serve over ${name}`, () => {
    let client;
    let stop;

    before(async () => {
      const opened = await open();
      stop = opened.stop;
      client = new Client({ name: "stickler-e2e", version: "1.0.0" });
      await client.connect(opened.transport);
    });
    after(async () => {
      await client.close();
      stop();
    });

    test("introduces itself and lists the operation table's tools", async () => {
      assert.equal(client.getServerVersion().name, "stickler");
      assert.match(client.getInstructions(), /check_support/);
      const { tools } = await client.listTools();
      const names = tools.map((tool) => tool.name);
      for (const tool of ["inspect_model", "check_support", "run_model"]) assert.ok(names.includes(tool), tool);
      for (const tool of tools) {
        assert.equal(tool.annotations.openWorldHint, false);
        assert.ok(tool.outputSchema, `${tool.name} has an output schema`);
      }
    });

    test("inspect_model returns structured content the SDK validates", async () => {
      const result = await client.callTool({ name: "inspect_model", arguments: { model: "gpt2-tiny.pt", include_nodes: false } });
      assert.equal(result.isError, false);
      assert.equal(result.structuredContent.schema, "stickler.inspect");
      assert.equal(result.structuredContent.model.class, "GPT2LMHeadModel");
      assert.deepEqual(JSON.parse(result.content[0].text), result.structuredContent);
    });

    test("check_support lists blockers, with progress", async () => {
      const progress = [];
      const result = await client.callTool(
        { name: "check_support", arguments: { model: "bamba-tiny.pt", profile: "spyre-2025" } },
        undefined,
        { onprogress: (update) => progress.push(update.progress) },
      );
      const counts = result.structuredContent.lowering.blocker_counts.unsupported_ops;
      for (const op of ["aten::softplus", "aten::pad", "aten::copy_", "aten::exp", "aten::roll", "aten::slice_scatter", "aten::select_scatter"]) {
        assert.ok(counts[op] > 0, op);
      }
      assert.ok(progress.length >= 1, "progress notifications arrived");
    });

    test("run_model passes on the clean device and reports an abort as a result", async () => {
      const pass = await client.callTool({ name: "run_model", arguments: { model: "qwen2-hd128.pt", backend: "spyre-sim:spyre-2026-clean" } });
      assert.equal(pass.structuredContent.verdict, "pass");
      const abort = await client.callTool({
        name: "run_model",
        arguments: { model: "qwen2-hd128.pt", backend: "spyre-sim:abort-in-attention.json" },
      });
      assert.equal(abort.isError, false);
      assert.equal(abort.structuredContent.verdict, "aborted");
      assert.equal(abort.structuredContent.run.module, "model.layers.0.self_attn");
      assert.deepEqual(await client.ping(), {});
    });

    test("adapters applied in the session change what run_model runs, until reverted", async () => {
      const model = "qwen2-hd128.pt";
      const backend = "spyre-sim:spyre-2025-clean";
      const call = async (name, args) => {
        const result = await client.callTool({ name, arguments: args });
        assert.equal(result.isError, false, JSON.stringify(result.content));
        return result.structuredContent;
      };
      assert.equal((await call("run_model", { model, backend })).verdict, "blocked");
      const applied = await call("apply_adapter", { model, adapter: "pow-square-as-mul", profile: "spyre-2025-clean" });
      assert.equal(applied.status, "applied");
      assert.equal(applied.application.equivalence.verdict, "equivalent");
      assert.equal(applied.application.equivalence.scope, "region");
      assert.equal(applied.blockers_left.total, 0);
      assert.equal((await call("run_model", { model, backend })).verdict, "pass");
      const shown = await call("show_applied", { model });
      assert.deepEqual(shown.applied.map((entry) => entry.adapter), ["pow-square-as-mul"]);
      assert.deepEqual((await call("revert_adapter", { model, profile: "spyre-2025-clean" })).applied, []);
      assert.equal((await call("run_model", { model, backend })).verdict, "blocked");
    });

    test("the session's adapter stack: listed in every result, never applied twice, one call back to the original", async () => {
      const model = "qwen2-hd128.pt";
      const profile = "spyre-2025-clean";
      const call = async (name, args) => {
        const result = await client.callTool({ name, arguments: args });
        assert.equal(result.isError, false, JSON.stringify(result.content));
        return result.structuredContent;
      };
      const applied = await call("apply_adapter", { model, adapter: "pow-square-as-mul", profile });
      assert.deepEqual(applied.session.adapters, ["pow-square-as-mul"]);
      // adapt: true works on a stack of its own, on top of the session's, without repeating it.
      const diagnosed = await call("diagnose_model", { model, profile, adapt: true });
      assert.ok(!diagnosed.adapters_applied.includes("pow-square-as-mul"), JSON.stringify(diagnosed.adapters_applied));
      assert.deepEqual(diagnosed.model.adapters, ["pow-square-as-mul", ...diagnosed.adapters_applied]);
      assert.deepEqual((await call("check_support", { model, profile })).model.adapters, ["pow-square-as-mul"]);
      const adapted = await call("adapt_model", { model, profile });
      assert.deepEqual(adapted.adapters.already_applied, ["pow-square-as-mul"]);
      const names = adapted.adapters.applied.map((entry) => entry.adapter);
      assert.ok(!names.includes("pow-square-as-mul"), JSON.stringify(names));
      assert.deepEqual(adapted.adapters.stack, ["pow-square-as-mul", ...names]);
      assert.deepEqual(adapted.session.adapters, adapted.adapters.stack);
      assert.deepEqual(adapted.model.adapters, adapted.adapters.stack);
      const reverted = await call("revert_adapter", { model, all: true });
      assert.deepEqual(reverted.reverted, adapted.adapters.stack);
      assert.equal(reverted.original, true);
      assert.deepEqual(reverted.session.adapters, []);
      assert.deepEqual((await call("check_support", { model, profile })).model.adapters, []);
    });

    test("bad arguments and paths outside the workspace are tool errors", async () => {
      const typed = await client.callTool({ name: "check_support", arguments: { model: "gpt2-tiny.pt", profile: 7 } });
      assert.equal(typed.isError, true);
      assert.match(typed.content[0].text, /field 'profile' must be a string/);
      const outside = await client.callTool({ name: "inspect_model", arguments: { model: "/etc/passwd" } });
      assert.equal(outside.isError, true);
      assert.match(outside.content[0].text, /outside the workspace/);
      await assert.rejects(client.callTool({ name: "no_such_tool", arguments: {} }), /unknown tool/);
    });

    test("resources, templates and prompts", async () => {
      const { resources } = await client.listResources();
      assert.ok(resources.some((resource) => resource.uri === "stickler://profiles/spyre-2026"));
      const profile = await client.readResource({ uri: "stickler://profiles/spyre-2026-clean" });
      assert.equal(JSON.parse(profile.contents[0].text).name, "spyre-2026-clean");
      const doc = await client.readResource({ uri: "stickler://docs/number-formats" });
      assert.match(doc.contents[0].text, /DLFloat16/);
      const { resourceTemplates } = await client.listResourceTemplates();
      assert.ok(resourceTemplates.some((entry) => entry.uriTemplate === "stickler://profiles/{name}"));
      const { prompts } = await client.listPrompts();
      assert.ok(prompts.some((prompt) => prompt.name === "bring_up_model"));
      const prompt = await client.getPrompt({ name: "bring_up_model", arguments: { model: "gpt2-tiny.pt" } });
      assert.match(prompt.messages[0].content.text, /inspect_model/);
      const completion = await client.complete({ ref: { type: "ref/prompt", name: "bring_up_model" }, argument: { name: "profile", value: "spyre-2026" } });
      assert.deepEqual(completion.completion.values, ["spyre-2026", "spyre-2026-clean"]);
      await client.setLoggingLevel("warning");
    });

    test("skills are prompts and resources; the knowledge base is searchable", async () => {
      const skills = ["draft-adapter-by-analogy", "localize-divergence", "prepare-review-submission", "triage-compile-blockers"];
      const { prompts } = await client.listPrompts();
      for (const name of skills) {
        const prompt = prompts.find((entry) => entry.name === name);
        assert.ok(prompt, `prompt ${name}`);
        assert.ok(prompt.description.length > 20, `${name} has a description`);
      }
      const prompt = await client.getPrompt({ name: "localize-divergence", arguments: { task: "llama-tiny.pt on spyre-2026" } });
      assert.match(prompt.messages[0].content.text, /localize_divergence/);
      assert.match(prompt.messages[0].content.text, /llama-tiny\.pt on spyre-2026/);
      const uris = [];
      let cursor;
      do {
        const page = await client.listResources(cursor ? { cursor } : {});
        uris.push(...page.resources.map((resource) => resource.uri));
        cursor = page.nextCursor;
      } while (cursor);
      for (const name of skills) assert.ok(uris.includes(`stickler://skills/${name}`), `resource for ${name}`);
      const skill = await client.readResource({ uri: "stickler://skills/triage-compile-blockers" });
      assert.match(skill.contents[0].text, /^---\nname: triage-compile-blockers\n/);
      const found = await client.callTool({ name: "kb_search", arguments: { query: "why does torch.pow fail on the device", limit: 3 } });
      assert.equal(found.structuredContent.results[0].id, "gotcha-torch-pow");
      const page = await client.readResource({ uri: found.structuredContent.results[0].uri });
      assert.match(page.contents[0].text, /pow/);
    });
  });
}

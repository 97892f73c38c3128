// The operators adapter code may use (issue 15, item 3): refused at compile time with the
// position in the adapter file, before anything runs or is inserted into a model.
#include <gtest/gtest.h>

#include <sys/resource.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "adapters/engine/adapter_application.h"
#include "adapters/engine/adapter_catalog.h"
#include "adapters/engine/adapter_file.h"
#include "adapters/engine/operator_policy.h"
#include "adapters/engine/rewrite_compiler.h"
#include "simulator/device/device_profile.h"
#include "simulator/graph/loaded_model.h"
#include "simulator/support/errors.h"
#include "simulator/support/execution_limit.h"
#include "simulator/workers/worker_pool.h"
#include "tests/build_paths.h"
#include "tests/unit/zoo.h"

namespace stickler {
namespace {

// A rewrite of `x * x` whose replacement body is `body` (one or more lines, indented 4) and
// whose condition, when given, is `condition_body`. The replacement's body starts on line 15.
std::string rewrite(const std::string& body, const std::string& condition_body = "") {
  std::string text =
      "name = \"hostile\"\ngap = \"g\"\nwhy = \"w\"\nmodels = [\"*\"]\n"
      "profiles = [\"spyre-2025\"]\nremove_when = \"r\"\n\n\n"
      "def pattern(x):\n    return x * x\n\n\n"
      "def replacement(x):\n" +
      body + "\n";
  if (!condition_body.empty()) {
    text += "\n\ndef condition(x: torch.Tensor) -> bool:\n" + condition_body + "\n";
  }
  return "import torch\n" + text;
}

std::string compileError(const std::string& text) {
  try {
    compileRewrite(parseAdapterFile(text, "hostile.py"));
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

TEST(OperatorPolicy, FileAndStateOperatorsAreRefusedWithTheirPosition) {
  // The attack of the issue: map a file outside the workspace, then write into it. (Code whose
  // result nothing reads is compiled away, and is harmless: this result is read.)
  const std::string from_file =
      compileError(rewrite("    y = torch.from_file(\"/tmp/victim\", True, 16)\n    y.fill_(0.0)\n"
                           "    return x * x + y.sum() * 0.0"));
  EXPECT_EQ(from_file.rfind("hostile.py:15:9: aten::from_file is not allowed in adapter code: "
                            "it maps a file into a tensor",
                            0),
            0)
      << from_file;
  EXPECT_NE(compileError(rewrite("    torch.manual_seed(3)\n    return x * x"))
                .find("aten::manual_seed is not allowed"),
            std::string::npos);
  EXPECT_NE(compileError(rewrite("    print(x)\n    return x * x")).find("prim::Print"),
            std::string::npos);
}

TEST(OperatorPolicy, InPlaceWritesAndRandomnessAreRefusedInCodeThatRuns) {
  const std::string fill = compileError(rewrite("    x.fill_(1.0)\n    return x * x"));
  EXPECT_NE(fill.find("hostile.py:15:"), std::string::npos) << fill;
  EXPECT_NE(fill.find("writes its argument `self` in place"), std::string::npos) << fill;
  EXPECT_NE(compileError(rewrite("    return x * torch.rand(1)")).find("draws random numbers"),
            std::string::npos);
  // A condition runs too; a loop inside it is checked block by block.
  const std::string in_loop = compileError(
      rewrite("    return x * x", "    for i in range(3):\n        x.add_(1.0)\n    return True"));
  EXPECT_NE(in_loop.find("aten::add_ is not allowed"), std::string::npos) << in_loop;
}

TEST(OperatorPolicy, ComputingIsAllowedAndPatternsMayNameWhatModelsContain) {
  // Lists the code builds itself may be written; tensors computed, compared, reshaped.
  EXPECT_EQ(compileError(rewrite("    return x * x",
                                 "    sizes: List[int] = []\n    sizes.append(x.size(0))\n"
                                 "    return len(sizes) == 1 and bool((x > 0).all())")),
            "");
  // A model's traced graph holds in-place operators; a pattern only matches them.
  std::string in_place_pattern = rewrite("    return x * 2.0");
  in_place_pattern.replace(in_place_pattern.find("return x * x"), 12, "return x.mul_(2.0)");
  EXPECT_EQ(compileError(in_place_pattern), "");
  // But a pattern still may not name what no model should contain.
  std::string file_pattern = rewrite("    return x * x");
  file_pattern.replace(file_pattern.find("return x * x"), 12,
                       "return x * torch.from_file(\"/tmp/v\", True, 1)");
  EXPECT_NE(compileError(file_pattern).find("aten::from_file"), std::string::npos);
}

// TorchScript never compiles a branch it decides while compiling, so the graph held no trace
// of these and the files were accepted and committed (issue 34 item 8): refused wherever
// written, at the call's position.
TEST(OperatorPolicy, ARefusedOperatorIsRefusedInCodeThatCanNeverRun) {
  const std::string save =
      compileError(rewrite("    if False:\n        torch.save(x, \"/tmp/f\")\n    return x * x"));
  EXPECT_EQ(save.rfind("hostile.py:16:9: aten::save is not allowed in adapter code: it writes a "
                       "file",
                       0),
            0)
      << save;
  const std::string printed = compileError(
      rewrite("    if not torch.jit.is_scripting():\n        print(x)\n    return x * x"));
  EXPECT_EQ(printed.rfind("hostile.py:16:9: prim::Print is not allowed", 0), 0) << printed;
  // In a helper no one calls, through torch.jit, the outer call first.
  std::string helper = rewrite("    return x * x");
  helper +=
      "\n\ndef unused(x: torch.Tensor) -> torch.Tensor:\n"
      "    if False:\n        return torch.jit.wait(torch.jit.fork(torch.neg, x))\n"
      "    return x\n";
  EXPECT_EQ(compileError(helper).rfind("hostile.py:20:16: aten::wait is not allowed", 0), 0)
      << compileError(helper);
  std::string forked = helper;
  forked.replace(forked.find("torch.jit.wait("), 15, "(");
  EXPECT_EQ(compileError(forked).rfind("hostile.py:20:17: prim::fork is not allowed", 0), 0)
      << compileError(forked);
  EXPECT_NE(compileError(rewrite("    if False:\n        x.fill_(0.0)\n    return x * x"))
                .find("hostile.py:16:9: aten::fill_ is not allowed in adapter code: it writes its "
                      "argument `self` in place"),
            std::string::npos);
  EXPECT_NE(compileError(rewrite("    if False:\n        torch.add(x, x, out=x)\n    return x * x"))
                .find("writes its argument `out`"),
            std::string::npos);
  EXPECT_NE(compileError(rewrite("    if False:\n        torch.ops.quantized.add(x, x, 1.0, 0)\n"
                                 "    return x * x"))
                .find("hostile.py:16:9: adapter code may use torch.ops.aten only, not "
                      "torch.ops.quantized"),
            std::string::npos);
  // The file's own functions are its own, whatever they are called; and a pattern may still
  // name in-place operators in any branch.
  std::string own = rewrite("    return save(x)");
  own += "\n\ndef save(x: torch.Tensor) -> torch.Tensor:\n    return x * x\n";
  EXPECT_EQ(compileError(own), "");
  std::string pattern = rewrite("    return x * 2.0");
  pattern.replace(pattern.find("return x * x"), 12,
                  "if False:\n        x.add_(1.0)\n    return x.mul_(2.0)");
  EXPECT_EQ(compileError(pattern), "");
}

TEST(OperatorPolicy, EveryShippedAdapterPasses) {
  for (const auto& entry : std::filesystem::directory_iterator(shippedCatalogDir())) {
    const AdapterFile file = readAdapterFile(entry.path().string());
    if (!file.pattern) continue;
    EXPECT_NO_THROW(compileRewrite(file)) << entry.path();
  }
}

TEST(OperatorPolicy, SecurityPageListsEveryOperatorRefusedByName) {
  std::ifstream in(std::string(testing::kSourceDir) + "/docs/security.md");
  std::stringstream page;
  page << in.rdbuf();
  for (const std::string& name : operatorsRefusedByName()) {
    EXPECT_NE(page.str().find("`" + name + "`"), std::string::npos) << name;
  }
}

// A cube rewrite (gelu_new's pow(x, 3)) whose condition runs `condition_body` and whose
// replacement returns `replacement`.
AdapterFile cubeWithCondition(const std::string& condition_body,
                              const std::string& replacement = "x * x * x") {
  return parseAdapterFile(
      "name = \"cube\"\ngap = \"g\"\nwhy = \"w\"\nmodels = [\"*\"]\n"
      "profiles = [\"spyre-2025-clean\"]\nremove_when = \"r\"\n\n\n"
      "def pattern(x: Tensor):\n    return torch.pow(x, 3.0)\n\n\n"
      "def condition(x: Tensor) -> bool:\n" +
          condition_body +
          "\n\n\n"
          "def replacement(x: Tensor):\n    return " +
          replacement + "\n",
      "cube.py");
}

long peakResidentKb() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TEST(AdapterCodeSandbox, AConditionThatNeverEndsIsStoppedAndTheCallerGoesOn) {
  const std::shared_ptr<const LoadedModel> model = loadModel(testing::zooPath("gpt2-tiny.pt"));
  const ExecutionLimitScope limit({1.0, nullptr});
  const auto start = std::chrono::steady_clock::now();
  try {
    applyAdapter(cubeWithCondition("    i = 0\n    while i >= 0:\n        i += 1\n    return True"),
                 model, loadProfile("spyre-2025-clean"));
    FAIL() << "a condition that never ends finished";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("cube.py: condition did not finish within 1 s"),
              std::string::npos)
        << e.what();
  }
  EXPECT_LT(secondsSince(start), 20.0);
  // The same rewrite with a condition that ends is applied: the worker's verdicts arrive.
  const auto applied = applyAdapter(cubeWithCondition("    return x.dim() >= 1"), model,
                                    loadProfile("spyre-2025-clean"));
  EXPECT_GT(applied.change.rewrites, 0);
  EXPECT_EQ(applied.refused_by_condition, 0);
}

TEST(AdapterCodeSandbox, AConditionCannotTakeTheServersMemory) {
  // 8 GiB of ones, past the worker's address-space limit: an allocation error on the match,
  // not gigabytes taken (or the kernel's OOM killer) in the caller.
  const std::shared_ptr<const LoadedModel> model = loadModel(testing::zooPath("gpt2-tiny.pt"));
  try {
    applyAdapter(cubeWithCondition("    return bool(torch.ones([1 << 31]).sum() > 0)"), model,
                 loadProfile("spyre-2025-clean"));
    FAIL() << "8 GiB were allocated";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("cube.py: condition failed on a match"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("allocate"), std::string::npos) << e.what();
  }
}

TEST(AdapterCodeSandbox, AnUnreviewedReplacementFirstRunsInAWorker) {
  // A draft's replacement that takes 8 GiB: refused from its sandboxed first run, which failed
  // to allocate; this process never held the memory.
  const std::shared_ptr<const LoadedModel> model = loadModel(testing::zooPath("gpt2-tiny.pt"));
  const long peak_before = peakResidentKb();
  const AdapterFile draft =
      cubeWithCondition("    return True", "x * x * x + torch.ones([1 << 31]).sum() * 0.0");
  ASSERT_FALSE(draft.reviewed);
  try {
    applyAdapter(draft, model, loadProfile("spyre-2025-clean"));
    FAIL() << "8 GiB were allocated";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("cube.py: the rewrite could not finish"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("fails in an operator it added"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("allocate"), std::string::npos) << e.what();
  }
  EXPECT_LT(peakResidentKb() - peak_before, 1L << 20);  // less than 1 GiB more, in KiB
  // Shipped adapters are reviewed: they are applied without the worker.
  for (const auto& entry : readCatalogDir(shippedCatalogDir(), "shipped")) {
    ASSERT_TRUE((entry.file != nullptr)) << entry.error;
    EXPECT_TRUE(entry.file->reviewed) << entry.name;
  }
}

}  // namespace
}  // namespace stickler

namespace stickler {
namespace {

// A reviewed adapter's condition runs in a sandbox worker each time it is applied, on a worker kept
// for the next: applying it again starts no process.
TEST(AdapterCodeSandbox, AConditionsWorkerServesTheNextCondition) {
  const std::shared_ptr<const LoadedModel> model = loadModel(testing::zooPath("gpt2-tiny.pt"));
  AdapterFile reviewed = cubeWithCondition("    return x.dim() >= 1");
  reviewed.reviewed = true;
  const DeviceProfile profile = loadProfile("spyre-2025-clean");
  EXPECT_GT(applyAdapter(reviewed, model, profile).change.rewrites, 0);
  const WorkerPool::Stats before = WorkerPool::jobWorkers().stats();
  for (int i = 0; i < 3; ++i) EXPECT_GT(applyAdapter(reviewed, model, profile).change.rewrites, 0);
  const WorkerPool::Stats after = WorkerPool::jobWorkers().stats();
  EXPECT_EQ(after.started, before.started);
  EXPECT_EQ(after.reused, before.reused + 3);
}

}  // namespace
}  // namespace stickler

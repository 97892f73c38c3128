// The shipped knowledge base and skills: every page well formed, the numbers pages state agree
// with the default device profile, and realistic agent questions find the right page.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include <nlohmann/json.hpp>

#include "knowledge/kb_index.h"
#include "knowledge/kb_page.h"
#include "simulator/device/device_profile.h"
#include "simulator/support/errors.h"
#include "tests/build_paths.h"

namespace stickler {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

KnowledgeIndex& shipped() {
  static KnowledgeIndex index({shippedKnowledgeDir(), shippedSkillsDir(), ""});
  return index;
}

std::string errorOf(const std::string& text) {
  try {
    parseKbPage(text, "p.md", "page");
  } catch (const UserError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(KbPage, FrontMatterAndSections) {
  const KbPage page = parseKbPage(
      "---\nid: sticks\ntitle: Sticks\ntags: [layout, stick]\nsources: [RFC 0047]\n"
      "profile_facts: {device.stick_bytes: 128, fusion: none}\n---\n\n# Sticks\n\nIntro.\n\n"
      "## Why 128 bytes\n\nA stick.\n\n```\n## not a heading\n```\n\n## Padding\n\nMore.\n",
      "sticks.md", "page");
  EXPECT_EQ(page.id, "sticks");
  EXPECT_EQ(page.tags, (std::vector<std::string>{"layout", "stick"}));
  EXPECT_EQ(page.profile_facts.at("device.stick_bytes"), "128");
  EXPECT_EQ(page.profile_facts.at("fusion"), "none");
  ASSERT_EQ(page.sections.size(), 3u);
  EXPECT_EQ(page.sections[0].heading, "");
  EXPECT_EQ(page.sections[1].heading, "Why 128 bytes");
  EXPECT_NE(page.sections[1].text.find("## not a heading"), std::string::npos);
  EXPECT_EQ(page.sections[2].heading, "Padding");
}

TEST(KnowledgeIndex, PlainWordsFindOperatorPagesThroughAliases) {
  // "cumulative sum" is nowhere in the page that lists cumsum as a CPU fallback; its tag is.
  const auto sums = shipped().search("cumulative sum", 3);
  ASSERT_FALSE(sums.empty());
  bool found = false;
  for (const KbHit& hit : sums) found = found || hit.id == "cpu-fallbacks";
  EXPECT_TRUE(found) << sums.front().id;
  const auto twice = shipped().search("adapter applied twice to its own output", 3);
  ASSERT_FALSE(twice.empty());
  EXPECT_EQ(twice.front().id, "adapter-idempotence");
  const auto pattern = shipped().search("why does my pattern not match", 3);
  ASSERT_FALSE(pattern.empty());
  EXPECT_EQ(pattern.front().id, "adapter-patterns");
  EXPECT_TRUE(shipped().problems().empty());
}

TEST(KnowledgeIndex, AnAliasesFileThatCannotBeReadIsAProblemNotAFailure) {
  const fs::path dir = fs::path(::testing::TempDir()) / "kb-bad-aliases";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "p.md")
      << "---\nid: p\ntitle: Prefix sums\ntags: [cumsum]\n---\n\n# P\n\nText.\n";
  std::ofstream(dir / "aliases.json") << "{\"aliases\": {\"cumsum\": 7}}";
  KnowledgeIndex index({dir.string(), "", ""});
  EXPECT_EQ(index.search("cumsum", 3).size(), 1u);
  ASSERT_EQ(index.problems().size(), 1u);
  EXPECT_NE(index.problems()[0].find("aliases.json"), std::string::npos) << index.problems()[0];
  fs::remove_all(dir);
}

TEST(KbPage, MalformedPagesAreRefusedWithWhereAndWhy) {
  EXPECT_NE(errorOf("# no front matter\n").find("p.md:1: a page starts with front matter"),
            std::string::npos);
  EXPECT_NE(errorOf("---\nid: x\n").find("no closing '---'"), std::string::npos);
  EXPECT_NE(errorOf("---\ntitle: t\n---\n").find("has no id"), std::string::npos);
  EXPECT_NE(errorOf("---\nid: x\nnonsense line\n---\n").find("p.md:3: expected 'key: value'"),
            std::string::npos);
  EXPECT_NE(errorOf("---\nid: x\nprofile_facts: [a]\n---\n").find("expected {key: value"),
            std::string::npos);
}

TEST(KnowledgeBase, EveryShippedPageAndSkillIsWellFormed) {
  EXPECT_TRUE(shipped().problems().empty()) << shipped().problems().front();
  std::set<std::string> ids;
  const auto pages = shipped().pages("page");
  EXPECT_GE(pages.size(), 30u);
  for (const KbPage& page : pages) {
    EXPECT_TRUE(ids.insert(page.id).second) << "duplicate id " << page.id;
    EXPECT_EQ(fs::path(page.path).stem(), page.id);
    EXPECT_FALSE(page.tags.empty()) << page.id;
    EXPECT_FALSE(page.sources.empty()) << page.id;
  }
  // One page per catalog adapter.
  for (const auto& entry :
       fs::directory_iterator(std::string(testing::kSourceDir) + "/adapters/catalog")) {
    if (entry.path().extension() != ".py") continue;
    EXPECT_TRUE(ids.count("adapter-" + entry.path().stem().string())) << entry.path();
  }
  const auto skills = shipped().pages("skill");
  EXPECT_EQ(skills.size(), 4u);
  for (const KbPage& skill : skills) {
    EXPECT_EQ(fs::path(skill.path).parent_path().filename(), skill.id);
    EXPECT_FALSE(skill.description.empty()) << skill.id;
    EXPECT_LE(skill.description.size(), 1024u) << skill.id;
  }
}

TEST(KnowledgeBase, NumbersInPagesAgreeWithTheDefaultProfile) {
  std::ifstream file(profileDirectory() + "/spyre-2026.json");
  const json profile = json::parse(file);
  size_t checked = 0;
  for (const KbPage& page : shipped().pages("page")) {
    for (const auto& [path, value] : page.profile_facts) {
      const json::json_pointer pointer("/" + std::regex_replace(path, std::regex("\\."), "/"));
      ASSERT_TRUE(profile.contains(pointer)) << page.id << ": the profile has no " << path;
      const json& stated = profile[pointer];
      const std::string text = stated.is_string() ? stated.get<std::string>() : stated.dump();
      EXPECT_EQ(value, text) << page.id << " says " << path << " is " << value;
      EXPECT_NE(page.body.find(value), std::string::npos)
          << page.id << " lists " << path << ": " << value << " but its text never says it";
      ++checked;
    }
  }
  EXPECT_GE(checked, 8u);  // cores, corelets, scratchpad, span, stick, memory, format, ...
}

struct Question {
  const char* question;
  const char* page;
};

class AgentQuestion : public ::testing::TestWithParam<Question> {};

TEST_P(AgentQuestion, RanksTheRightPageInTheTopThree) {
  const auto hits = shipped().search(GetParam().question, 3);
  std::string found;
  for (const KbHit& hit : hits) {
    if (hit.id == GetParam().page) return;
    found += hit.id + " ";
  }
  FAIL() << "'" << GetParam().question << "' gave: " << found;
}

INSTANTIATE_TEST_SUITE_P(
    Suite, AgentQuestion,
    ::testing::Values(
        Question{"why does torch.pow fail on the device", "gotcha-torch-pow"},
        Question{"vocab padding rule", "gotcha-vocab-padding"},
        Question{"head_dim too small for rope", "gotcha-rope-head-dim"},
        Question{"zero length tensor crash", "gotcha-zero-length-tensors"},
        Question{"what is a stick and how big is it", "sticks-and-tiled-layout"},
        Question{"how many bits of exponent does dl16 have", "dl16-number-format"},
        Question{"lm_head weight too large for one core", "per-core-span"},
        Question{"is sin supported or does it fall back to cpu", "cpu-fallbacks"},
        Question{"causal mask tril unsupported", "gotcha-sin-cos-tril-on-host"},
        Question{"int64 indices on the device", "int64-on-device"},
        Question{"does the compiler fuse operators", "fusion"},
        Question{"hidden size not a multiple of 64", "gotcha-hidden-size-multiple-of-64"},
        Question{"rmsnorm variance drift in fp16", "gotcha-rmsnorm-pow-and-fp16-variance"},
        Question{"no mechanism to resolve stick incompatibility", "layout-rules"},
        Question{"which operators did the 2025 stack miss for bamba", "stack-history-2025"},
        Question{"precompute rotary tables adapter", "adapter-precompute-rotary-tables"},
        Question{"how to localize a divergence", "localize-divergence"},
        Question{"draft a new adapter from an existing one", "draft-adapter-by-analogy"}),
    [](const ::testing::TestParamInfo<Question>& info) {
      std::string name = info.param.page;
      for (char& c : name) {
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      }
      return name + "_" + std::to_string(info.index);
    });

TEST(KnowledgeBase, AQueryWithoutWordsIsAClearError) {
  EXPECT_THROW(shipped().search("?? !! ...", 3), UserError);
  EXPECT_THROW(shipped().search("the of and", 3), UserError);
  // Words FTS5 would read as operators are searched as words.
  EXPECT_NO_THROW(shipped().search("NOT AND OR NEAR \"quoted\" col:umn*", 3));
}

}  // namespace
}  // namespace stickler

// An archive loaded with its weights mapped from the file holds the same tensors as an ordinary
// load, every large tensor record mapped; a weight written in place never reaches the file; an
// archive whose records cannot be mapped (deflated) is read the ordinary way.
#include "simulator/graph/mapped_archive.h"

#include <gtest/gtest.h>

#include <malloc.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "simulator/graph/model_archive.h"
#include "simulator/graph/zip_directory.h"
#include "simulator/support/available_memory.h"
#include "simulator/support/errors.h"
#include "simulator/support/freed_memory.h"
#include "simulator/support/large_blocks.h"
#include "simulator/support/sha256.h"
#include "tests/unit/zoo.h"

namespace stickler {
namespace {

using testing::uniqueTempPath;
using testing::zooPath;

std::map<std::string, at::Tensor> tensorsOf(const torch::jit::Module& module) {
  std::map<std::string, at::Tensor> tensors;
  for (const auto& named : module.named_parameters(/*recurse=*/true)) {
    tensors.emplace(named.name, named.value);
  }
  for (const auto& named : module.named_buffers(/*recurse=*/true)) {
    tensors.emplace(named.name, named.value);
  }
  return tensors;
}

void expectSameTensors(const torch::jit::Module& mapped, const torch::jit::Module& read) {
  const auto expected = tensorsOf(read);
  const auto actual = tensorsOf(mapped);
  ASSERT_EQ(actual.size(), expected.size());
  for (const auto& [name, tensor] : expected) {
    const auto found = actual.find(name);
    ASSERT_NE(found, actual.end()) << name;
    ASSERT_EQ(found->second.scalar_type(), tensor.scalar_type()) << name;
    // The same bytes, not a computation: equal on every machine.
    EXPECT_TRUE(found->second.equal(tensor)) << name;
  }
}

// The records the loader maps: stored tensor data of at least 64 KiB.
size_t largeTensorRecords(const std::string& path) {
  size_t count = 0;
  for (const ZipEntry& entry : readZipDirectory(path)) {
    const bool tensor_data = entry.name.find("/data/") != std::string::npos ||
                             entry.name.find("/constants/") != std::string::npos;
    if (tensor_data && entry.method == 0 && entry.uncompressed >= 64 * 1024) ++count;
  }
  return count;
}

class MappedZoo : public ::testing::TestWithParam<std::string> {};

TEST_P(MappedZoo, HoldsTheTensorsOfAnOrdinaryLoadWithEveryLargeRecordMapped) {
  const std::string path = zooPath(GetParam() + ".pt");
  const MappedLoad load = loadArchiveMapped(path);
  const size_t large = largeTensorRecords(path);
  EXPECT_EQ(load.mapped, large > 0);
  EXPECT_EQ(load.mapped_records, large);
  expectSameTensors(load.module, torch::jit::load(path, torch::kCPU));
}

INSTANTIATE_TEST_SUITE_P(Zoo, MappedZoo, ::testing::ValuesIn(testing::zooModelNames()),
                         [](const auto& info) { return testing::testName(info.param); });

TEST(MappedArchive, AWeightWrittenInPlaceIsCopiedNotWrittenToTheFile) {
  const std::string path = zooPath("gpt2-tiny.pt");
  const std::string before = sha256File(path);
  {
    MappedLoad load = loadArchiveMapped(path);
    ASSERT_TRUE(load.mapped);
    at::Tensor largest;
    for (const auto& named : load.module.named_parameters(/*recurse=*/true)) {
      if (!largest.defined() || named.value.numel() > largest.numel()) largest = named.value;
    }
    torch::NoGradGuard no_grad;
    largest.fill_(7.0);
    EXPECT_EQ(largest.max().item<double>(), 7.0);
    EXPECT_EQ(largest.min().item<double>(), 7.0);
    // A second load of the same file, while the first is alive, sees the file's values.
    expectSameTensors(loadArchiveMapped(path).module, torch::jit::load(path, torch::kCPU));
  }
  EXPECT_EQ(sha256File(path), before);
}

TEST(MappedArchive, ACopyOnWriteStartsEqualAndWritesOnlyItself) {
  const MappedLoad load = loadArchiveMapped(zooPath("gpt2-tiny.pt"));
  ASSERT_TRUE(load.mapped);
  const at::Tensor weight =
      load.module.attr("transformer").toModule().attr("wte").toModule().attr("weight").toTensor();
  const at::Tensor before = weight.clone();
  // A row from the middle: its bytes start inside a page of the file.
  const at::Tensor row = weight[3];
  at::Tensor copy = copyOnWrite(row);
  EXPECT_TRUE(copy.equal(row));
  EXPECT_NE(copy.data_ptr(), row.data_ptr());
  torch::NoGradGuard no_grad;
  copy.fill_(-3.0);
  EXPECT_EQ(copy.max().item<double>(), -3.0);
  EXPECT_TRUE(weight.equal(before));
  // Anything not mapped is cloned.
  const at::Tensor plain = at::arange(10, at::kFloat);
  at::Tensor cloned = copyOnWrite(plain);
  cloned.fill_(1.0);
  EXPECT_TRUE(plain.equal(at::arange(10, at::kFloat)));
}

// An archive whose forward reads large tensors from its code's constants, as a saved adapted
// model's padded weights are: `forward(x) = x @ c0 + x @ c1 + ...`.
std::string saveArchiveWithConstants(const std::vector<at::Tensor>& constants) {
  torch::jit::Module module("ConstantsOnly");
  auto graph = std::make_shared<torch::jit::Graph>();
  graph->addInput("self")->setType(module.type());
  torch::jit::Value* x = graph->addInput("x");
  x->setType(c10::TensorType::get());
  torch::jit::Value* sum = nullptr;
  for (const at::Tensor& constant : constants) {
    torch::jit::Value* product =
        graph->insert(c10::aten::matmul, {x, graph->insertConstant(constant)});
    sum = sum == nullptr ? product : graph->insert(c10::aten::add, {sum, product});
  }
  graph->registerOutput(sum);
  const c10::QualifiedName name(*module.type()->name(), "forward");
  module.type()->addMethod(module._ivalue()->compilation_unit()->create_function(name, graph));
  const std::string path = uniqueTempPath("constants.pt");
  module.save(path);
  return path;
}

// Compiling the forward pools constants that compare equal; a record left unread must never
// look equal to another, or its storage is pooled away and the archive loaded the ordinary way.
TEST(MappedArchive, LargeCodeConstantsOfEqualShapeAreEachMapped) {
  // Every buffer of 64 KiB or more a fresh mapping, all zero, as an 8B model's are: reused heap
  // memory would hold old values that happen to differ, hiding the pooling.
  ASSERT_EQ(::mallopt(M_MMAP_THRESHOLD, 64 * 1024), 1);
  at::manual_seed(3);
  const at::Tensor first = at::randn({256, 256});
  const at::Tensor second = at::randn({256, 256});
  const at::Tensor mask = at::rand({256, 256}) > 0.5;
  const std::string path = saveArchiveWithConstants({first, second, first, mask.to(at::kFloat)});
  MappedLoad load = loadArchiveMapped(path);
  EXPECT_TRUE(load.mapped);
  EXPECT_EQ(load.mapped_records, largeTensorRecords(path));
  // Saving keeps one record for equal constants: three here.
  EXPECT_EQ(load.mapped_records, 3u);
  const at::Tensor x = at::randn({2, 256});
  const at::Tensor expected = torch::jit::load(path, torch::kCPU).forward({x}).toTensor();
  const at::Tensor actual = load.module.forward({x}).toTensor();
  // Each product from the same bytes on the same kernels; only the sum's order may differ.
  EXPECT_TRUE(actual.allclose(expected, 1e-5, 1e-4));
  const at::Tensor truth =
      x.to(at::kDouble).matmul((first + second + first + mask.to(at::kFloat)).to(at::kDouble));
  EXPECT_TRUE(actual.to(at::kDouble).allclose(truth, 1e-4, 1e-3));
  std::remove(path.c_str());
  ASSERT_EQ(::mallopt(M_MMAP_THRESHOLD, 128 * 1024), 1);  // glibc's default
}

int64_t residentAnonymousBytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("RssAnon:", 0) == 0) return std::stoll(line.substr(8)) * 1024;
  }
  return 0;
}

// LibTorch allocates a buffer for every record and the loader writes one page of it (a marker)
// before pointing the tensor at the file. A buffer of 1 MiB or more is on huge pages
// (tensor_memory.h), where that page would be 2 MiB resident for as long as the model lives: the
// loader unmaps those buffers once the tensors point at the file.
TEST(MappedArchive, TheBuffersLargeRecordsReplaceHoldNoMemory) {
  at::manual_seed(5);
  std::vector<at::Tensor> constants;
  for (int i = 0; i < 8; ++i) constants.push_back(at::randn({1024, 2048}));  // 8 MiB each
  const std::string path = saveArchiveWithConstants(constants);
  loadArchiveMapped(path);  // what a first load sets up once, and kept blocks to give back
  releaseFreedMemory();
  const int64_t before = residentAnonymousBytes();
  const size_t live_before = largeBlocksLive();
  const MappedLoad load = loadArchiveMapped(path);
  const int64_t grown = residentAnonymousBytes() - before;
  EXPECT_EQ(load.mapped_records, constants.size());
  EXPECT_LT(grown, int64_t{4} << 20) << "8 records of 8 MiB";
  EXPECT_LT(largeBlocksLive(), live_before + (size_t{8} << 20)) << "the buffers are not held";
  std::remove(path.c_str());
}

// Before anything of an archive is read, what it would take is compared with the memory left:
// its load's own copies always, the weights a run reads unless only shapes are wanted.
TEST(MappedArchive, AnArchiveThatCannotFitInTheMemoryLeftIsRefusedBeforeItIsRead) {
  const std::string path = zooPath("gpt2-tiny.pt");
  const ArchiveSummary archive = inspectArchive(path);
  size_t weight_bytes = 0;
  std::set<const void*> storages;  // tied weights (the LM head's) are one record
  for (const auto& [name, tensor] : tensorsOf(torch::jit::load(path, torch::kCPU))) {
    if (storages.insert(tensor.storage().data()).second) weight_bytes += tensor.nbytes();
  }
  EXPECT_GE(archive.record_bytes, weight_bytes);
  EXPECT_GT(archive.copied_bytes, 0u);  // its code, and records too small to map
  EXPECT_LT(archive.copied_bytes, archive.record_bytes) << "its large weights are mapped";

  EXPECT_NO_THROW(checkArchiveFitsInMemory(archive, false, archive.record_bytes, path));
  EXPECT_NO_THROW(checkArchiveFitsInMemory(archive, false, std::nullopt, path));
  try {
    checkArchiveFitsInMemory(archive, false, archive.record_bytes - 1, path);
    ADD_FAILURE() << "an archive larger than the memory left was let through";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(path + ": it holds ", 0), 0) << e.what();
    EXPECT_NE(std::string(e.what()).find("of memory available"), std::string::npos);
  }
  // Inspecting reads no weight: only what the load copies must fit.
  EXPECT_NO_THROW(checkArchiveFitsInMemory(archive, true, archive.copied_bytes, path));
  EXPECT_THROW(checkArchiveFitsInMemory(archive, true, archive.copied_bytes - 1, path), UserError);
  const auto available = availableMemoryBytes();
  ASSERT_TRUE(available.has_value());
  EXPECT_GT(*available, archive.record_bytes);
}

TEST(MappedArchive, ADeflatedArchiveIsReadTheOrdinaryWay) {
  const std::string deflated = uniqueTempPath("deflated.pt");
  const std::string command =
      "/usr/bin/python3 -c \"import sys, zipfile\n"
      "source = zipfile.ZipFile(sys.argv[1])\n"
      "with zipfile.ZipFile(sys.argv[2], 'w', zipfile.ZIP_DEFLATED) as out:\n"
      "    [out.writestr(i.filename, source.read(i.filename)) for i in source.infolist()]\" " +
      zooPath("gpt2-tiny.pt") + " " + deflated;
  ASSERT_EQ(std::system(command.c_str()), 0);
  // Every record inflated is the load's own.
  const ArchiveSummary archive = inspectArchive(deflated);
  EXPECT_EQ(archive.copied_bytes, archive.record_bytes);
  const MappedLoad load = loadArchiveMapped(deflated);
  EXPECT_FALSE(load.mapped);
  EXPECT_EQ(load.mapped_records, 0u);
  expectSameTensors(load.module, torch::jit::load(zooPath("gpt2-tiny.pt"), torch::kCPU));
  std::remove(deflated.c_str());
}

}  // namespace
}  // namespace stickler

// The weights an adapter makes are held once by a caller and its model host
// (shared_weight_files.h): each is a sealed memory file, offered to the host with the model's
// recipe, which takes a file only where its bytes are the ones the host made, and only sealed.
#include "simulator/graph/shared_weight_files.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <utility>

#include "adapters/engine/adapter_catalog.h"
#include "adapters/engine/adapter_stack.h"
#include "adapters/engine/adapter_stacking.h"
#include "adapters/engine/shared_constants.h"
#include "simulator/backends/model_host_client.h"
#include "simulator/device/device_profile.h"
#include "simulator/graph/loaded_model.h"
#include "tests/unit/zoo.h"
#include "tools/adapters/adapter_support.h"

namespace stickler {
namespace {

// A weight of 256 KiB, of values no other test makes.
at::Tensor someWeight(double offset) {
  return at::arange(65536, at::kFloat).mul(0.001).add(offset).reshape({256, 256});
}

// The sealed memory files a graph holding `tensor` as its one constant names.
std::vector<int> filesOf(const at::Tensor& tensor) {
  torch::jit::Graph graph;
  graph.registerOutput(graph.insertConstant(tensor));
  return sealedMemoryFilesOf(graph, 10);
}

ino_t inodeOf(int fd) {
  struct stat status {};
  return ::fstat(fd, &status) == 0 ? status.st_ino : 0;
}

// The resident and the anonymous (private) kB of the mapping of this process that holds `data`.
std::pair<long, long> residentAndAnonymousKb(const void* data) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  long resident = -1, anonymous = -1;
  const auto address = reinterpret_cast<uintptr_t>(data);
  while (std::getline(smaps, line)) {
    uintptr_t start = 0, end = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &start, &end) == 2 && line.find(':') > 8) {
      inside = start <= address && address < end;
    } else if (inside && line.rfind("Rss:", 0) == 0) {
      resident = std::atol(line.c_str() + 4);
    } else if (inside && line.rfind("Anonymous:", 0) == 0) {
      anonymous = std::atol(line.c_str() + 10);
    }
  }
  return {resident, anonymous};
}

TEST(SharedWeightFiles, AWeightInASealedFileKeepsItsValuesAndTheFileCannotBeWritten) {
  const at::Tensor weight = someWeight(1.0);
  const at::Tensor filed = inSealedMemoryFile(weight);
  EXPECT_TRUE(at::equal(filed, weight));
  EXPECT_NE(filed.data_ptr(), weight.data_ptr());
  EXPECT_EQ(filed.sizes(), weight.sizes());
  // Its pages are the file's, mapped from the start, and none a private copy.
  const auto [resident, anonymous] = residentAndAnonymousKb(filed.data_ptr());
  EXPECT_EQ(resident, static_cast<long>(weight.nbytes() / 1024));
  EXPECT_EQ(anonymous, 0);
  EXPECT_TRUE(filesOf(weight).empty());  // an ordinary tensor is in no file
  const std::vector<int> files = filesOf(filed);
  ASSERT_EQ(files.size(), 1u);
  const int fd = files[0];
  EXPECT_EQ(::fcntl(fd, F_GET_SEALS) & (F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK),
            F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK);
  const float one = 1;
  EXPECT_LT(::pwrite(fd, &one, sizeof one, 0), 0);
  EXPECT_LT(::ftruncate(fd, 4096), 0);
  // Written in place, the weight is its writer's copy: the file, and any other process mapping
  // it, keeps the bytes it was made with.
  at::Tensor written = filed;
  written.add_(1);
  EXPECT_EQ(residentAndAnonymousKb(filed.data_ptr()).second,
            static_cast<long>(weight.nbytes() / 1024));
  float first = 0;
  ASSERT_EQ(::pread(fd, &first, sizeof first, 0), static_cast<ssize_t>(sizeof first));
  EXPECT_EQ(first, weight[0][0].item<float>());
  ::close(fd);
}

TEST(SharedWeightFiles, AnOfferedFileIsTakenForEqualBytesOnlyAndWhileOffered) {
  const at::Tensor weight = someWeight(2.0);
  const at::Tensor filed = inSealedMemoryFile(weight);
  const std::vector<int> files = filesOf(filed);
  ASSERT_EQ(files.size(), 1u);
  {
    const OfferedWeightFiles offered(files);
    ASSERT_EQ(offered.size(), 1u);
    // The same values made again here, as a host makes them from the recipe.
    const at::Tensor made = someWeight(2.0);
    const at::Tensor taken = offeredWeightLike(made);
    ASSERT_TRUE(taken.defined());
    EXPECT_TRUE(at::equal(taken, made));
    EXPECT_NE(taken.data_ptr(), made.data_ptr());
    const std::vector<int> taken_files = filesOf(taken);
    ASSERT_EQ(taken_files.size(), 1u);
    EXPECT_EQ(inodeOf(taken_files[0]), inodeOf(files[0]));  // the same file, not a copy
    ::close(taken_files[0]);
    // One element off, or another shape of as many bytes that is no such tensor: not taken.
    at::Tensor other = someWeight(2.0);
    other[255][255] = 0;
    EXPECT_FALSE(offeredWeightLike(other).defined());
    EXPECT_FALSE(offeredWeightLike(someWeight(2.0).reshape({128, 512}).t()).defined());
    EXPECT_TRUE(offeredWeightLike(someWeight(2.0).reshape({128, 512})).defined());
  }
  EXPECT_FALSE(offeredWeightLike(someWeight(2.0)).defined());  // no longer offered
  ::close(files[0]);
}

TEST(SharedWeightFiles, AFileThatIsNotSealedIsNotTaken) {
  const at::Tensor weight = someWeight(3.0);
  const int fd = ::memfd_create("stickler-test", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, weight.data_ptr(), weight.nbytes()), static_cast<ssize_t>(weight.nbytes()));
  // Sealed against growing only: its writer could still change the bytes after the check.
  ASSERT_EQ(::fcntl(fd, F_ADD_SEALS, F_SEAL_GROW | F_SEAL_SHRINK), 0);
  const std::string path = testing::uniqueTempPath("weight-file");
  std::ofstream(path, std::ios::binary)
      .write(static_cast<const char*>(weight.data_ptr()),
             static_cast<std::streamsize>(weight.nbytes()));
  const int plain = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(plain, 0);
  const OfferedWeightFiles offered({fd, plain, -1});
  EXPECT_EQ(offered.size(), 0u);
  EXPECT_FALSE(offeredWeightLike(weight).defined());
  ::close(fd);
  ::close(plain);
  std::filesystem::remove(path);
}

TEST(SharedWeightFiles, TheWeightsAnAdapterMakesAreSealedFiles) {
  torch::jit::Graph graph;
  graph.registerOutput(insertSharedConstant(graph, someWeight(4.0)));
  graph.registerOutput(insertSharedConstant(graph, someWeight(4.0)));  // held once
  graph.registerOutput(insertSharedConstant(graph, at::ones({4})));    // too small to share
  const std::vector<int> files = sealedMemoryFilesOf(graph, 10);
  EXPECT_EQ(files.size(), 1u);
  for (const int fd : files) ::close(fd);
}

// The inodes of the sealed memory files other processes than this one map.
std::set<ino_t> inodesMappedElsewhere() {
  std::set<ino_t> inodes;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string pid = entry.path().filename().string();
    if (pid.find_first_not_of("0123456789") != std::string::npos ||
        pid == std::to_string(::getpid())) {
      continue;
    }
    std::ifstream maps(entry.path() / "maps");
    std::string line;
    while (std::getline(maps, line)) {
      if (line.find("/memfd:stickler-weight") == std::string::npos) continue;
      std::istringstream fields(line);
      std::string range, permissions, offset, device;
      ino_t inode = 0;
      fields >> range >> permissions >> offset >> device >> inode;
      inodes.insert(inode);
    }
  }
  return inodes;
}

// The padded q/k/v/o weights of an adapted model are the caller's files in its model host too.
TEST(SharedWeightFiles, AModelHostMapsTheWeightsItsCallersAdaptersMade) {
  const std::vector<CatalogEntry> catalog = readCatalogDir(shippedCatalogDir(), "shipped");
  // A copy of its own: no host of another test's holds this recipe already.
  const std::string path = testing::uniqueTempPath("padded-host") + ".pt";
  std::filesystem::copy_file(testing::zooPath("llama-hd64.pt"), path);
  AdapterStack stack(loadModel(path));
  const DeviceProfile profile = loadProfile("spyre-2026");
  stackAdapters(stack, adaptersMeantFor(catalog, *stack.original(), &profile), profile,
                StackingChecks::kUnchecked);
  const std::vector<std::string> applied = stack.names();
  ASSERT_NE(std::find(applied.begin(), applied.end(), "pad-attention-heads"), applied.end());
  const auto adapted = stack.current();
  const std::vector<int> files = sealedMemoryFilesOf(*adapted->graph, 1000);
  ASSERT_GE(files.size(), 4u);  // q, k, v and o of a layer at least
  const BackendRun ran =
      runOnModelHost(*adapted, {"spyre-sim:spyre-2026", {}, -1}, adapted->example_inputs, {});
  ASSERT_EQ(ran.status, BackendRun::Status::kCompleted) << ran.message;
  const std::set<ino_t> elsewhere = inodesMappedElsewhere();
  for (const int fd : files) {
    EXPECT_EQ(elsewhere.count(inodeOf(fd)), 1u) << "a padded weight's file no host maps";
    ::close(fd);
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace stickler

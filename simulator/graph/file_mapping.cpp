#include "simulator/graph/file_mapping.h"

#include <sys/mman.h>
#include <unistd.h>

#include "simulator/support/large_blocks.h"

namespace stickler {
namespace {

void releaseMapping(void* context) {
  delete static_cast<std::shared_ptr<FileMapping>*>(context);
}

}  // namespace

FileMapping::FileMapping(int fd, size_t size, bool populate) : fd_(fd), size_(size) {
  if (size == 0) return;
  if (!populate) {
    void* base = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    if (base != MAP_FAILED) base_ = static_cast<char*>(base);
    return;
  }
  // Populated read-only, then made writable: MAP_POPULATE of a private writable mapping faults
  // every page in for writing, a private copy of each (the file's pages held twice).
  void* base = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
  if (base == MAP_FAILED) return;
  if (::mprotect(base, size, PROT_READ | PROT_WRITE) != 0) {
    ::munmap(base, size);
    return;
  }
  base_ = static_cast<char*>(base);
}

FileMapping::~FileMapping() {
  if (base_ != nullptr) ::munmap(base_, size_);
  if (fd_ >= 0) ::close(fd_);
}

void FileMapping::keep(c10::DataPtr untouched) {
  if (discardLargeBlock(untouched.get())) {
    // Unmapped: its deleter (tensor_memory.h's, the only allocator of large blocks) must not run.
    static_cast<void>(untouched.release_context());
    return;
  }
  untouched_.push_back(std::move(untouched));
}

c10::DataPtr dataPointerInto(const std::shared_ptr<FileMapping>& mapping, uint64_t offset) {
  return {mapping->at(offset), new std::shared_ptr<FileMapping>(mapping), releaseMapping,
          c10::Device(c10::kCPU)};
}

const FileMapping* mappingOf(const c10::DataPtr& data) {
  if (data.get_deleter() != &releaseMapping) return nullptr;
  return static_cast<std::shared_ptr<FileMapping>*>(data.get_context())->get();
}

}  // namespace stickler

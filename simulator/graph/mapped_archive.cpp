#include "simulator/graph/mapped_archive.h"

#include <caffe2/serialize/read_adapter_interface.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_set>
#include <vector>

#include "simulator/graph/file_mapping.h"
#include "simulator/graph/zip_directory.h"
#include "simulator/support/errors.h"

namespace stickler {
namespace {

// torch.jit.save aligns each record's data to 64 bytes so that it can be used where it lies.
constexpr uint64_t kRecordAlignment = 64;

// Where each stored tensor record's data start in the file, by that offset, with its size.
std::map<uint64_t, uint64_t> tensorRecords(const std::string& path, int fd, uint64_t file_size) {
  std::map<uint64_t, uint64_t> records;
  for (const ZipEntry& entry : readZipDirectory(path)) {
    if (!isMappableRecord(entry)) continue;
    unsigned char header[30];
    if (::pread(fd, header, sizeof header, static_cast<off_t>(entry.header_offset)) !=
            static_cast<ssize_t>(sizeof header) ||
        std::memcmp(header, "PK\x03\x04", 4) != 0) {
      continue;  // LibTorch reports a damaged entry itself
    }
    const uint64_t name_length = header[26] | (header[27] << 8);
    const uint64_t extra_length = header[28] | (header[29] << 8);
    const uint64_t data = entry.header_offset + sizeof header + name_length + extra_length;
    if (data % kRecordAlignment != 0 || data > file_size || entry.uncompressed > file_size - data) {
      continue;
    }
    records.emplace(data, entry.uncompressed);
  }
  return records;
}

// Compiling a method pools its tensor constants that compare equal (torch::jit::ConstantPooling
// through at::equal): unread records, all alike, were pooled into one and the others' storages
// dropped, so a saved adapted model, whose padded weights are constants of equal shapes, could
// not be mapped. Each unread buffer starts with its record's offset instead, written so that no
// two differ only where their dtype would call them equal: 64 bytes of 0x10 or 0x20, one per
// bit (normal numbers in every floating dtype, never zero or subnormal), then 64 of 0 or 1 (so
// that booleans differ too). One page is written; equal constants are then simply not pooled.
constexpr size_t kMarkerBytes = 128;
void markAsRecord(void* buf, uint64_t offset) {
  auto* bytes = static_cast<unsigned char*>(buf);
  constexpr size_t kBits = kMarkerBytes / 2;
  static_assert(kBits == 64 && kMarkerBytes <= kSmallestMappedRecord);
  for (size_t bit = 0; bit < kBits; ++bit) {
    const bool set = ((offset >> bit) & 1U) != 0;
    bytes[bit] = set ? 0x20 : 0x10;
    bytes[kBits + bit] = set ? 1 : 0;
  }
}

// Reads the archive for LibTorch, except tensor records: their buffers are left unwritten but for
// a marker (markAsRecord) and noted, to be pointed at the mapping once the load is done.
class SkippingReader : public caffe2::serialize::ReadAdapterInterface {
 public:
  SkippingReader(int fd, uint64_t size, std::map<uint64_t, uint64_t> records)
      : fd_(fd), size_(size), records_(std::move(records)) {}

  size_t size() const override { return size_; }

  size_t read(uint64_t pos, void* buf, size_t n, const char* /*what*/) const override {
    const auto record = records_.find(pos);
    if (record != records_.end() && record->second == n) {
      markAsRecord(buf, pos);
      std::lock_guard<std::mutex> lock(mutex_);
      skipped_[buf] = pos;
      return n;
    }
    size_t done = 0;
    while (done < n) {
      const ssize_t got =
          ::pread(fd_, static_cast<char*>(buf) + done, n - done, static_cast<off_t>(pos + done));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) break;
      done += static_cast<size_t>(got);
    }
    return done;
  }

  // Buffer -> file offset of the record it should have held.
  std::map<const void*, uint64_t> skipped() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return skipped_;
  }
  uint64_t recordSize(uint64_t offset) const { return records_.at(offset); }

 private:
  int fd_;
  uint64_t size_;
  std::map<uint64_t, uint64_t> records_;
  mutable std::mutex mutex_;
  mutable std::map<const void*, uint64_t> skipped_;
};

// Every tensor the loaded module holds: its attributes at any depth (parameters, buffers,
// tensors in lists, tuples, dicts and objects) and the constants of its code.
template <typename Visit>
void forEachTensor(const torch::jit::Module& module, Visit visit) {
  std::vector<c10::IValue> stack = {c10::IValue(module._ivalue())};
  std::vector<torch::jit::Block*> blocks;
  for (torch::jit::Function* function : module._ivalue()->compilation_unit()->get_functions()) {
    if (!function->isGraphFunction()) continue;
    // A method is compiled from its source when first needed: its constants exist only then.
    function->ensure_defined();
    const auto graph = torch::jit::toGraphFunction(*function).graph();
    if (graph != nullptr) blocks.push_back(graph->block());
  }
  while (!blocks.empty()) {
    torch::jit::Block* block = blocks.back();
    blocks.pop_back();
    for (torch::jit::Node* node : block->nodes()) {
      for (torch::jit::Block* inner : node->blocks()) blocks.push_back(inner);
      if (node->kind() != c10::prim::Constant || !node->hasAttribute(c10::attr::value)) continue;
      switch (node->kindOf(c10::attr::value)) {
        case torch::jit::AttributeKind::t:
          stack.emplace_back(node->t(c10::attr::value));
          break;
        case torch::jit::AttributeKind::ts:
          for (const at::Tensor& tensor : node->ts(c10::attr::value)) stack.emplace_back(tensor);
          break;
        case torch::jit::AttributeKind::ival:
          stack.push_back(node->ival(c10::attr::value));
          break;
        default:
          break;
      }
    }
  }
  std::unordered_set<const void*> objects;
  while (!stack.empty()) {
    const c10::IValue value = std::move(stack.back());
    stack.pop_back();
    if (value.isTensor()) {
      visit(value.toTensor());
    } else if (value.isObject()) {
      const auto object = value.toObject();
      if (!objects.insert(object.get()).second) continue;
      for (const auto& slot : object->slots()) stack.push_back(slot);
    } else if (value.isList()) {
      for (const auto& element : value.toListRef()) stack.push_back(element);
    } else if (value.isTuple()) {
      for (const auto& element : value.toTupleRef().elements()) stack.push_back(element);
    } else if (value.isGenericDict()) {
      for (const auto& entry : value.toGenericDict()) {
        stack.push_back(entry.key());
        stack.push_back(entry.value());
      }
    }
  }
}

}  // namespace

MappedLoad loadArchiveMapped(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw UserError(path + ": cannot be opened: " + std::strerror(errno));
  struct stat status {};
  if (::fstat(fd, &status) != 0 || !S_ISREG(status.st_mode)) {
    ::close(fd);
    throw UserError(path + ": not a regular file");
  }
  const auto size = static_cast<uint64_t>(status.st_size);
  auto mapping = std::make_shared<FileMapping>(fd, size);
  auto reader = std::make_shared<SkippingReader>(
      fd, size, mapping->ok() ? tensorRecords(path, fd, size) : std::map<uint64_t, uint64_t>{});
  MappedLoad load;
  load.module = torch::jit::load(reader, torch::kCPU);
  const std::map<const void*, uint64_t> skipped = reader->skipped();
  std::unordered_set<const void*> repointed;
  forEachTensor(load.module, [&](const at::Tensor& tensor) {
    if (!tensor.defined() || !tensor.has_storage()) return;
    c10::StorageImpl* storage = tensor.storage().unsafeGetStorageImpl();
    const void* data = storage->data_ptr().get();
    const auto found = skipped.find(data);
    if (found == skipped.end() || repointed.count(data) != 0) return;
    if (storage->nbytes() != reader->recordSize(found->second)) return;
    mapping->keep(storage->set_data_ptr(dataPointerInto(mapping, found->second)));
    repointed.insert(data);
  });
  if (repointed.size() == skipped.size()) {
    load.mapped = !skipped.empty();
    load.mapped_records = repointed.size();
    return load;
  }
  // Some record's storage was not found (the load dropped it, or it lies where this walk does not
  // look): its buffer may be live and holds nothing, so the module is not to be trusted. Load it
  // whole.
  load.module = torch::jit::load(path, torch::kCPU);
  load.mapped = false;
  load.mapped_records = 0;
  return load;
}

at::Tensor copyOnWrite(const at::Tensor& tensor) {
  if (!tensor.defined() || !tensor.has_storage() || !tensor.is_contiguous() ||
      tensor.numel() == 0) {
    return tensor.clone();
  }
  const FileMapping* mapping = mappingOf(tensor.storage().data_ptr());
  if (mapping == nullptr || !mapping->holds(tensor.data_ptr(), tensor.nbytes())) {
    return tensor.clone();
  }
  static const auto kPage = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t offset = mapping->offsetOf(tensor.data_ptr());
  const uint64_t start = offset / kPage * kPage;
  const size_t length = offset - start + tensor.nbytes();
  void* pages = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE, mapping->fd(), start);
  if (pages == MAP_FAILED) return tensor.clone();
  return at::from_blob(
      static_cast<char*>(pages) + (offset - start), tensor.sizes(),
      [pages, length](void*) { ::munmap(pages, length); }, tensor.options());
}

}  // namespace stickler

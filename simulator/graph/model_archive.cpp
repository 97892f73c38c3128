#include "simulator/graph/model_archive.h"
#include "simulator/support/text_format.h"

#include <caffe2/serialize/inline_container.h>
#include <torch/version.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <regex>

#include "simulator/graph/model_card.h"
#include "simulator/graph/zip_directory.h"
#include "simulator/support/available_memory.h"
#include "simulator/support/errors.h"
#include "simulator/support/phase_times.h"
#include "simulator/support/sha256.h"

namespace stickler {
namespace {

namespace fs = std::filesystem;

bool startsLikeZip(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::array<char, 4> magic{};
  in.read(magic.data(), magic.size());
  return in.gcount() == 4 && magic[0] == 'P' && magic[1] == 'K' && magic[2] == 3 && magic[3] == 4;
}

// The zip entry of the archive's extra file `name`, if it has one (whatever folder the
// archive's records are under).
const ZipEntry* extraEntry(const std::vector<ZipEntry>& entries, const std::string& name) {
  const std::string suffix = "/extra/" + name;
  for (const ZipEntry& entry : entries) {
    if (entry.name.size() > suffix.size() &&
        entry.name.compare(entry.name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      return &entry;
    }
  }
  return nullptr;
}

const ZipEntry* cardEntry(const std::vector<ZipEntry>& entries) {
  return extraEntry(entries, ModelCard::kArchivePath);
}

}  // namespace

ArchiveSummary inspectArchive(const std::string& path) {
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (!fs::exists(status)) throw UserError(path + ": no such file");
  if (fs::is_directory(status)) throw UserError(path + ": is a directory, not a model archive");
  if (fs::file_size(path, ec) == 0) throw UserError(path + ": empty file, not a model archive");

  ArchiveSummary summary;
  const double start = phaseClock();
  summary.sha256 = sha256FileRemembered(path);
  notePhase("the archive's SHA-256 (remembered or computed): " + path, phaseClock() - start);
  if (!startsLikeZip(path)) {
    throw UserError(path +
                    ": not a TorchScript archive (not a zip file; legacy torch.save pickles are "
                    "not supported: save the model with torch.jit.save)");
  }

  // What each entry says it holds, before LibTorch inflates any of it into memory.
  const std::vector<ZipEntry> entries = readZipDirectory(path);
  checkZipSizes(entries, path);
  for (const ZipEntry& entry : entries) {
    summary.record_bytes += entry.uncompressed;
    if (!isMappableRecord(entry)) summary.copied_bytes += entry.uncompressed;
  }
  if (const ZipEntry* card = cardEntry(entries);
      card && card->uncompressed > ModelCard::kMaxBytes) {
    throw UserError(path + ": the model card is " + std::to_string(card->uncompressed) +
                    " bytes; a card is at most " + std::to_string(ModelCard::kMaxBytes));
  }

  std::unique_ptr<caffe2::serialize::PyTorchStreamReader> reader;
  try {
    reader = std::make_unique<caffe2::serialize::PyTorchStreamReader>(path);
  } catch (const c10::Error& e) {
    const std::string message = e.what_without_backtrace();
    static const std::regex kTooNew(
        "file with version ([0-9]+), but the maximum supported version for reading is ([0-9]+)");
    std::smatch version;
    if (std::regex_search(message, version, kTooNew)) {
      throw UserError(path + ": archive format version " + version[1].str() +
                      " is newer than this LibTorch (" + TORCH_VERSION + ") reads (at most " +
                      version[2].str() + ")");
    }
    throw UserError(path + ": truncated or corrupt zip archive (" + firstLine(message) + ")");
  }

  try {
    bool has_code = false;
    for (const auto& record : reader->getAllRecords()) {
      if (record.rfind("code/", 0) == 0) has_code = true;
    }
    if (!has_code || !reader->hasRecord("constants.pkl")) {
      throw UserError(path +
                      ": a torch.save checkpoint (weights only), not a TorchScript archive: "
                      "export the model with torch.jit.trace or torch.jit.script and "
                      "torch.jit.save");
    }
    const std::string card_record = std::string("extra/") + ModelCard::kArchivePath;
    if (reader->hasRecord(card_record)) {
      auto [data, size] = reader->getRecord(card_record);
      summary.model_card.emplace(static_cast<const char*>(data.get()), size);
    }
    const std::string paths_record = std::string("extra/") + ModelCard::kModulePathsPath;
    if (reader->hasRecord(paths_record)) {
      auto [data, size] = reader->getRecord(paths_record);
      summary.module_paths.emplace(static_cast<const char*>(data.get()), size);
    }
    const std::string inputs_record = std::string("extra/") + ModelCard::kCapturedInputsPath;
    if (reader->hasRecord(inputs_record)) {
      auto [data, size] = reader->getRecord(inputs_record);
      summary.captured_inputs.emplace(static_cast<const char*>(data.get()), size);
    }
  } catch (const c10::Error& e) {
    throw UserError(path + ": corrupt archive (" + firstLine(e.what_without_backtrace()) + ")");
  }
  return summary;
}

void checkArchiveFitsInMemory(const ArchiveSummary& archive, bool shapes_only,
                              std::optional<uint64_t> available, const std::string& path) {
  const uint64_t needed = shapes_only ? archive.copied_bytes : archive.record_bytes;
  if (!available || needed <= *available) return;
  const std::string what =
      shapes_only ? " of records its load copies into memory"
                  : " of records (its weights, which a run reads, and what its load copies)";
  throw UserError(path + ": it holds " + gigabytesText(needed) + what + ", more than the " +
                  gigabytesText(*available) +
                  " of memory available (MemAvailable, or the cgroup's limit); free memory or "
                  "use a machine with more");
}

std::optional<std::string> readArchiveExtraText(const std::string& path, const std::string& name,
                                                uint64_t max_bytes) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec) || !startsLikeZip(path)) return std::nullopt;
  try {
    const std::vector<ZipEntry> entries = readZipDirectory(path);
    const ZipEntry* entry = extraEntry(entries, name);
    if (entry == nullptr || entry->uncompressed > max_bytes) return std::nullopt;
    caffe2::serialize::PyTorchStreamReader reader(path);
    const std::string record = "extra/" + name;
    if (!reader.hasRecord(record)) return std::nullopt;
    auto [data, size] = reader.getRecord(record);
    return std::string(static_cast<const char*>(data.get()), size);
  } catch (const std::exception&) {
    return std::nullopt;  // c10::Error and UserError alike: not an archive to read it from
  }
}

std::optional<std::string> readModelCardText(const std::string& path) {
  return readArchiveExtraText(path, ModelCard::kArchivePath, ModelCard::kMaxBytes);
}

}  // namespace stickler

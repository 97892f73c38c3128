#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace stickler {

// What Stickler learns from a model archive before LibTorch builds the module from it.
struct ArchiveSummary {
  std::string sha256;                     // of the file's bytes: caches key on content
  std::optional<std::string> model_card;  // the extra file stickler/model.json, if present
  // The extra file stickler/inputs.pkl: a pickled tuple of the inputs of kind "captured".
  std::optional<std::string> captured_inputs;
  std::optional<std::string> module_paths;  // stickler/module_paths.json, if present
  // What its records hold inflated, as the zip's directory says: all of them, and those a load
  // copies into memory of its own (the rest, stored weights, are mapped from the file).
  uint64_t record_bytes = 0;
  uint64_t copied_bytes = 0;
};

// Checks that `path` is a readable TorchScript archive and reads its hash and model card.
// Every failure is a UserError naming the file and the problem: missing, not a zip, truncated,
// a plain torch.save checkpoint, a format version newer than this LibTorch reads.
ArchiveSummary inspectArchive(const std::string& path);

// Refuses, before anything of it is read, an archive that cannot fit in `available` bytes of
// memory: what its load copies, and unless only its shapes are wanted, the weights a run reads
// too (mapped, they are the page cache's, which must hold them to run at disk speed at best).
// Nothing is refused when `available` is unknown.
void checkArchiveFitsInMemory(const ArchiveSummary& archive, bool shapes_only,
                              std::optional<uint64_t> available, const std::string& path);

// The model card of the archive at `path`, read from the zip's directory and that one entry
// (nothing hashed, no weight read: cheap at any size); nullopt when the file is not a readable
// archive or has no card.
std::optional<std::string> readModelCardText(const std::string& path);

// What an archive saved by `adapt --save` or `apply --save` says of its making: the adapters
// applied, the archive they were applied to (its SHA-256) and what each decode graph took.
inline constexpr const char* kAdaptersRecordPath = "stickler/adapters.json";
inline constexpr uint64_t kAdaptersRecordMaxBytes = uint64_t{1} << 20;

// The extra file `name` (e.g. kAdaptersRecordPath) of the archive at `path`, read as the model
// card is; nullopt when the archive has none, cannot be read, or it is over `max_bytes`.
std::optional<std::string> readArchiveExtraText(const std::string& path, const std::string& name,
                                                uint64_t max_bytes);

}  // namespace stickler

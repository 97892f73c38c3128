#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "simulator/faults/fault_rule.h"
#include "simulator/numerics/number_format.h"

namespace stickler {

// How the device stack handles an operator (docs/device-profiles.md).
enum class OpSupport {
  kNative,       // one device kernel
  kDecomposed,   // several device kernels (e.g. linear = matmul + add)
  kCpuFallback,  // runs on the host: the result is copied back, with a warning
  kUnsupported,  // a compile-time blocker
};

std::string opSupportName(OpSupport support);

struct OpEntry {
  OpSupport support = OpSupport::kCpuFallback;
  // Per-op layout constraints the lowering checks: "stick_aligned_offsets" (slices and splits
  // of the stick dimension start at whole sticks), "not_on_stick_dim" (e.g. flip),
  // "unit_step_only" (slice_scatter), "materializing_consumer" (expand).
  std::set<std::string> layout;
  std::string note;
};

enum class FusionPolicy {
  kNone,       // every operator is its own kernel (today's Inductor heuristics)
  kPointwise,  // chains of pointwise operators, ending at most in one reduction, fuse
};

// The hardware facts the simulator needs (FACTS.md).
struct DeviceFacts {
  int cores = 32;
  int corelets_per_core = 2;
  int64_t scratchpad_bytes = 2 * 1024 * 1024;
  int64_t core_span_bytes = 268431360;  // 255.996 MiB
  int stick_bytes = 128;
  int64_t card_memory_bytes = 128LL * 1024 * 1024 * 1024;
  double host_link_bytes_per_second = 32e9;  // assumption: PCIe Gen5 x16, see docs
  double transfer_latency_seconds = 10e-6;   // assumption, see docs
};

// A device profile: a snapshot of a device stack (simulator/profiles/*.json).
struct DeviceProfile {
  std::string name;
  // This profile's name, then the names of the profiles it extends, nearest first: an adapter
  // listed for spyre-2025-clean is meant for a test profile that extends it.
  std::vector<std::string> lineage;
  std::string description;
  std::string path;
  std::vector<std::string> sources;
  DeviceFacts device;
  NumberFormat format = NumberFormat::kDL16;
  bool narrow_integers = true;  // int64 is narrowed to int32 on the device
  FusionPolicy fusion = FusionPolicy::kNone;
  OpSupport default_support = OpSupport::kCpuFallback;
  std::map<std::string, OpEntry> operators;
  std::vector<FaultRule> faults;
  // SHA-256 of the resolved document (its "extends" chain merged), faults included: which stack
  // snapshot a result was computed on, without telling where the snapshot's bugs strike.
  std::string content_sha256;
  // SHA-256 of what lowers and adapts a model: the resolved document without its name,
  // description, sources, parent (extends) and fault rules. Profiles that differ only in where the
  // device computes wrongly (a lab build's fault) adapt a model alike.
  std::string rules_sha256;

  const OpEntry& entryFor(const std::string& op) const;
  // The device's formats are 16-bit (DL16, fp16, bf16).
  static constexpr int64_t kBytesPerValue = 2;
  // Values of the device's 16-bit format in one stick (64 for 128-byte sticks).
  int64_t stickElements() const { return device.stick_bytes / kBytesPerValue; }
};

// The directory of shipped profiles: $STICKLER_PROFILE_DIR, else simulator/profiles.
// The profile a request names none gets: the newest shipped one (the tools' schemas default to it).
inline constexpr const char* kDefaultProfile = "spyre-2026";

std::string profileDirectory();
// Shipped profile names (file names without .json), sorted.
std::vector<std::string> listProfiles();
// A profile by name (a file in profileDirectory()) or by path (anything with a '/' or ending in
// .json). "extends" chains are resolved. Throws UserError naming the file and the problem.
DeviceProfile loadProfile(const std::string& name_or_path);
// The same, shared with every caller while its files are unchanged: for callers that keep it
// (a backend) or read it on every call, without a copy.
std::shared_ptr<const DeviceProfile> sharedProfile(const std::string& name_or_path);
DeviceProfile parseProfile(const nlohmann::json& document, const std::string& origin);

// The stack's facts for results: name, lineage, content hash, number format, fusion, hardware
// figures, and how many fault rules it has; never the rules (where a simulated bug strikes is
// for an agent to find, as on the real device; known bugs are in the knowledge base, in words).
nlohmann::json profileSummary(const DeviceProfile& profile);

// A profile's document as MCP resources serve it: the resolved profile without its fault rules
// (their number instead), with its lineage and content hash.
nlohmann::json profileForAgents(const DeviceProfile& profile, const nlohmann::json& document);

}  // namespace stickler

// What `stickler run --decode N` found, step by step (run_decode.h; docs/run-json.md
// "Decoding"), as plain data (LibTorch-free).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "simulator/compare/output_report.h"

namespace stickler {

struct DecodeStepReport {
  int64_t step = 0;  // 0: the prefill's last position; then one per decoded token
  int64_t slot = 0;  // the cache slot of the token this step read
  int64_t reference_token = 0;
  int64_t device_token = 0;  // the device's greedy choice (reported; the reference's is fed)
  OutputReport logits;       // this step's logits, judged as a run's logits are
  // Per layer, over the cache slots the mask keeps so far: keys and values against the
  // reference's (cosine similarity; null when not finite).
  std::vector<std::optional<double>> key_cosine;
  std::vector<std::optional<double>> value_cosine;
  double seconds = 0;  // the device run of this step (step 0: the prefill's)
  bool passed = false;
};

struct DecodeReport {
  int64_t steps = 0;           // asked for
  int64_t prompt_length = 0;   // the prefill's positions, padding included
  int64_t prompt_tokens = 0;   // those the mask keeps
  int64_t max_length = 0;      // the cache's slots
  std::string prefill_method;  // the archive's methods
  std::string step_method;
  std::string blocked_graph;  // "prefill" or "decode_step" when that graph did not compile
  std::vector<DecodeStepReport> per_step;  // step 0 (the prefill) first
  std::optional<int64_t> first_failing_step;
  std::optional<double> min_kv_cosine;  // the lowest of every step's key and value cosines
  bool passed = false;                  // every step passed
};

}  // namespace stickler

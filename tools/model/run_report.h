// The stickler.run report (docs/run-json.md) of a run's result, with the exit status its
// verdict gives. adapt and diagnose's run mode give the same document.
#pragma once

#include <nlohmann/json.hpp>

#include "simulator/run/run_model.h"

namespace stickler {

nlohmann::json runReport(const RunResult& result);
// Its `decode` section (docs/run-json.md "Decoding"); localize reports it too.
nlohmann::json decodeReportToJson(const DecodeReport& decode);

}  // namespace stickler

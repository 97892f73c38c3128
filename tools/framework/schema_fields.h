#pragma once

#include <nlohmann/json.hpp>

namespace stickler {

// Input-schema properties several operations share, described once.
nlohmann::json modelField();   // "model": the archive path
nlohmann::json inputsField();  // "inputs": --input specs replacing the card's
nlohmann::json modulesField(const char* description);  // "modules": a device placement
nlohmann::json profileField();       // "profile": a shipped profile name or a profile file
nlohmann::json timeoutField();       // "timeout_seconds": how long one device run may take
nlohmann::json modelTimeoutField();  // "model_timeout_seconds": one model's worker (gate, sweep)
nlohmann::json judgeDecodeField();   // "decode": steps that judge decoders (gate, sweep)
nlohmann::json adaptField();         // "adapt": apply the catalog's adapters first (diagnostics)
nlohmann::json htmlReportField();    // "html": where a report's HTML page goes
nlohmann::json junitReportField();   // "junit": where a report's JUnit XML goes

}  // namespace stickler

#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace stickler::testing {

// The generated model zoo (tests/zoo/generate.py), read from its index.json.
const nlohmann::json& zooIndex();
std::string zooPath(const std::string& file);  // a file under the zoo directory
std::vector<std::string> zooModelNames();
const nlohmann::json& zooModel(const std::string& name);

// A path for `name` in the test temporary directory, unique to this process: the README's test
// command runs some tests twice at once (on OpenBLAS and on the reference BLAS).
std::string uniqueTempPath(const std::string& name);

// Turns "llama-tiny" into a test-name-safe "llama_tiny".
std::string testName(std::string name);

}  // namespace stickler::testing

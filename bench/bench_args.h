#pragma once

// What the zoo benchmarks take on their command line ([ZOO_DIR] [--seconds S] [--profile P])
// and the zoo's index they read.

#include <cstdio>
#include <exception>
#include <fstream>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace stickler::bench {

struct BenchArgs {
  std::string zoo;
  std::string profile;
  double seconds = 0.5;
};

inline BenchArgs parseBenchArgs(int argc, char** argv, std::string zoo, std::string profile) {
  BenchArgs args{std::move(zoo), std::move(profile)};
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--seconds" && i + 1 < argc) {
      args.seconds = std::stod(argv[++i]);
    } else if (arg == "--profile" && i + 1 < argc) {
      args.profile = argv[++i];
    } else {
      args.zoo = arg;
    }
  }
  return args;
}

// The zoo's index.json, or nullopt (with a message naming `bench`) when there is no zoo.
inline std::optional<nlohmann::json> zooIndex(const std::string& zoo, const char* bench) {
  std::ifstream index_file(zoo + "/index.json");
  if (!index_file) {
    std::fprintf(stderr, "%s: no zoo at %s (build the 'zoo' target)\n", bench, zoo.c_str());
    return std::nullopt;
  }
  return nlohmann::json::parse(index_file);
}

// main() of a benchmark: runs it, and turns an exception into a message and exit status 1.
template <typename Run>
int benchMain(const char* name, Run run, int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", name, e.what());
    return 1;
  }
}

}  // namespace stickler::bench

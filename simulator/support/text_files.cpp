#include "simulator/support/text_files.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "simulator/support/errors.h"

namespace stickler {

std::optional<std::string> readTextFileIfPresent(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string readTextFile(const std::string& path) {
  return readTextFileIfPresent(path).value_or("");
}

void writeFileAtomically(const std::string& path, const std::string& text) {
  // The process id and a counter keep two processes, or two threads of one, writing the same
  // file from sharing a temporary (the last rename wins, whole).
  static std::atomic<unsigned long> writes{0};
  const std::string temporary =
      path + "." + std::to_string(::getpid()) + "." + std::to_string(writes.fetch_add(1)) + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary);
    out << text;
    if (!out.flush()) {
      std::remove(temporary.c_str());
      throw UserError("cannot write " + path);
    }
  }
  std::error_code ec;
  std::filesystem::rename(temporary, path, ec);
  if (ec) {
    std::remove(temporary.c_str());
    throw UserError("cannot write " + path + ": " + ec.message());
  }
}

}  // namespace stickler

#include "simulator/support/text_format.h"

namespace stickler {

std::string isoTimeUtc(std::time_t seconds) {
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[sizeof "2025-06-01T12:00:00Z"];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

std::string isoTimeUtcNow() {
  return isoTimeUtc(std::time(nullptr));
}

std::string firstLine(const std::string& text) {
  return text.substr(0, text.find('\n'));
}

}  // namespace stickler

// Small text helpers every layer uses: one spelling of a time, one way to shorten a message.
#pragma once

#include <ctime>
#include <string>

namespace stickler {

// ISO-8601 in UTC to the second, "2025-06-01T12:00:00Z": the time format of catalog commits,
// gotchas and review events.
std::string isoTimeUtc(std::time_t seconds);
std::string isoTimeUtcNow();

// The text up to its first newline: library errors carry tracebacks after it.
std::string firstLine(const std::string& text);

// ASCII letters in lower case (header names, hosts, schemes compare this way); other bytes kept.
std::string asciiLower(std::string text);

// The text without the spaces, tabs, carriage returns and newlines around it.
std::string trimmed(const std::string& text);

}  // namespace stickler

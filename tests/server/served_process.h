// `stickler serve` run as a client runs it: a child process with the zoo and the test profiles
// as its workspace, over stdio (its stdin and stdout are ours) or HTTP (on the port it picks).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace stickler::testing {

// An initialize request for the newest protocol, as a minimal client sends it.
nlohmann::json initializeRequest();

class ServedProcess {
 public:
  enum class Transport { kStdio, kHttp };
  // Starts the server with `extra` options and waits until it says it serves.
  explicit ServedProcess(Transport transport, std::vector<std::string> extra = {});
  ~ServedProcess();
  ServedProcess(const ServedProcess&) = delete;
  ServedProcess& operator=(const ServedProcess&) = delete;

  int port() const { return port_; }  // HTTP

  // stdio: one message per line.
  bool writeLine(const std::string& line);
  bool writeBytes(const char* data, size_t size);
  std::optional<std::string> readLine(int timeout_ms = 30000);
  void closeStdin();
  void closeStdout();

  bool alive() const;
  // Waits for the server to exit: its exit status, or minus the signal that killed it.
  int wait(int timeout_ms = 30000);
  long peakMemoryKb() const;  // VmHWM
  double cpuSeconds() const;  // user and system time so far, from /proc/<pid>/stat

 private:
  pid_t pid_ = -1;
  int port_ = 0;
  int stdin_ = -1;
  int stdout_ = -1;
  int stderr_ = -1;
  std::string pending_;  // stdout read past the last line returned
  mutable std::optional<int> status_;
};

}  // namespace stickler::testing

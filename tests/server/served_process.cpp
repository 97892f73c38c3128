#include "tests/server/served_process.h"

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "tests/build_paths.h"
#include "tests/unit/zoo.h"

namespace stickler::testing {

nlohmann::json initializeRequest() {
  return {{"jsonrpc", "2.0"},
          {"id", 1},
          {"method", "initialize"},
          {"params",
           {{"protocolVersion", "2025-11-25"},
            {"capabilities", nlohmann::json::object()},
            {"clientInfo", {{"name", "test"}, {"version", "1"}}}}}};
}

ServedProcess::ServedProcess(Transport transport, std::vector<std::string> extra) {
  int in[2], out[2], err[2];
  if (::pipe(in) != 0 || ::pipe(out) != 0 || ::pipe(err) != 0) throw std::runtime_error("pipe");
  std::vector<std::string> args = {kSticklerBinary, "serve",  "--root",
                                   zooPath(""),     "--root", kTestProfiles};
  if (transport == Transport::kHttp) args.insert(args.end(), {"--http", "127.0.0.1:0"});
  args.insert(args.end(), extra.begin(), extra.end());
  pid_ = ::fork();
  if (pid_ == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);  // no server outlives a crashed test
    ::signal(SIGPIPE, SIG_DFL);          // as a shell starts it, whatever this test ignores
    ::dup2(in[0], STDIN_FILENO);
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(err[1], STDERR_FILENO);
    for (int fd : {in[0], in[1], out[0], out[1], err[0], err[1]}) ::close(fd);
    std::vector<char*> argv;
    argv.reserve(args.size() + 1);
    for (auto& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  ::close(err[1]);
  stdin_ = in[1];
  stdout_ = out[0];
  stderr_ = err[0];
  std::string log;
  char buffer[256];
  const std::regex ready(transport == Transport::kHttp ? "http://127\\.0\\.0\\.1:([0-9]+)/mcp"
                                                       : "MCP over stdio");
  std::smatch match;
  while (!std::regex_search(log, match, ready)) {
    const ssize_t got = ::read(stderr_, buffer, sizeof buffer);
    if (got <= 0) throw std::runtime_error("stickler serve did not start: " + log);
    log.append(buffer, static_cast<size_t>(got));
  }
  if (transport == Transport::kHttp) port_ = std::stoi(match[1]);
}

ServedProcess::~ServedProcess() {
  if (!status_) {
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
  }
  for (int fd : {stdin_, stdout_, stderr_}) {
    if (fd >= 0) ::close(fd);
  }
}

bool ServedProcess::writeBytes(const char* data, size_t size) {
  while (size > 0) {
    const ssize_t wrote = ::write(stdin_, data, size);
    if (wrote <= 0) return false;
    data += wrote;
    size -= static_cast<size_t>(wrote);
  }
  return true;
}

bool ServedProcess::writeLine(const std::string& line) {
  const std::string text = line + "\n";
  return writeBytes(text.data(), text.size());
}

std::optional<std::string> ServedProcess::readLine(int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    const auto newline = pending_.find('\n');
    if (newline != std::string::npos) {
      std::string line = pending_.substr(0, newline);
      pending_.erase(0, newline + 1);
      return line;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    pollfd ready{stdout_, POLLIN, 0};
    if (::poll(&ready, 1, static_cast<int>(left.count())) <= 0) return std::nullopt;
    char buffer[4096];
    const ssize_t got = ::read(stdout_, buffer, sizeof buffer);
    if (got <= 0) return std::nullopt;
    pending_.append(buffer, static_cast<size_t>(got));
  }
}

void ServedProcess::closeStdin() {
  ::close(stdin_);
  stdin_ = -1;
}

void ServedProcess::closeStdout() {
  ::close(stdout_);
  stdout_ = -1;
}

bool ServedProcess::alive() const {
  if (status_) return false;
  int status = 0;
  if (::waitpid(pid_, &status, WNOHANG) == 0) return true;
  status_ = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
  return false;
}

int ServedProcess::wait(int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (alive()) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
      status_ = -SIGKILL;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return *status_;
}

long ServedProcess::peakMemoryKb() const {
  std::ifstream status("/proc/" + std::to_string(pid_) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

double ServedProcess::cpuSeconds() const {
  std::ifstream stat("/proc/" + std::to_string(pid_) + "/stat");
  std::string text;
  std::getline(stat, text);
  // Fields after the command (which may hold spaces) start after its closing parenthesis;
  // utime and stime are the 14th and 15th fields, the 12th and 13th after it.
  std::istringstream fields(text.substr(text.rfind(')') + 2));
  std::string field;
  long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 14) utime = std::stoll(field);
    if (i == 15) stime = std::stoll(field);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

}  // namespace stickler::testing

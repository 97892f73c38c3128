#include "simulator/support/sha256.h"

#include <openssl/evp.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>

#include "simulator/support/errors.h"
#include "simulator/support/resource_dirs.h"

namespace stickler {
namespace fs = std::filesystem;
namespace {

using DigestContext = std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)>;

DigestContext newSha256() {
  DigestContext ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) {
    throw std::runtime_error("OpenSSL could not initialise SHA-256");
  }
  return ctx;
}

std::string finishHex(EVP_MD_CTX* ctx) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  EVP_DigestFinal_ex(ctx, digest.data(), &length);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(static_cast<size_t>(length) * 2);
  for (unsigned int i = 0; i < length; ++i) {
    hex.push_back(kHex[digest[i] >> 4]);
    hex.push_back(kHex[digest[i] & 0xf]);
  }
  return hex;
}

}  // namespace

std::string sha256Bytes(std::string_view bytes) {
  auto ctx = newSha256();
  EVP_DigestUpdate(ctx.get(), bytes.data(), bytes.size());
  return finishHex(ctx.get());
}

std::string sha256File(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(path + ": cannot read file (" + std::strerror(errno) + ")");
  auto ctx = newSha256();
  std::array<char, 1 << 16> buffer{};
  while (in) {
    in.read(buffer.data(), buffer.size());
    EVP_DigestUpdate(ctx.get(), buffer.data(), static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) throw UserError(path + ": read error while hashing");
  return finishHex(ctx.get());
}

namespace {

constexpr off_t kRememberedBytes = off_t{64} << 20;
// Written at least this long before it is hashed (git's "racy" entries, the other way round).
constexpr int64_t kSettledNanoseconds = int64_t{2} * 1000 * 1000 * 1000;

int64_t nanoseconds(const struct timespec& time) {
  return static_cast<int64_t>(time.tv_sec) * 1000 * 1000 * 1000 + time.tv_nsec;
}

std::string statKey(const std::string& real_path, const struct stat& info) {
  return real_path + "\n" + std::to_string(info.st_dev) + ":" + std::to_string(info.st_ino) + ":" +
         std::to_string(info.st_size) + ":" + std::to_string(nanoseconds(info.st_mtim)) + ":" +
         std::to_string(nanoseconds(info.st_ctim));
}

bool isHexDigest(const std::string& text) {
  return text.size() == 64 && std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

}  // namespace

namespace {

// Where the hash of the file `path` (real) with `info` is remembered.
fs::path entryFor(const std::string& real_path, const struct stat& info) {
  return fs::path(cacheDir("sha256")) / sha256Bytes(statKey(real_path, info));
}

void writeEntry(const fs::path& entry, const std::string& digest) {
  std::error_code error;
  fs::create_directories(entry.parent_path(), error);
  const fs::path partial = entry.string() + ".partial-" + std::to_string(::getpid());
  {
    std::ofstream out(partial);
    out << digest << "\n";
    if (!out) {
      fs::remove(partial, error);
      return;
    }
  }
  fs::rename(partial, entry, error);
  if (error) fs::remove(partial, error);
}

}  // namespace

std::string sha256FileRemembered(const std::string& path) {
  struct stat before {};
  if (::stat(path.c_str(), &before) != 0 || !S_ISREG(before.st_mode) ||
      before.st_size < kRememberedBytes) {
    return sha256File(path);
  }
  std::error_code error;
  const fs::path real = fs::canonical(path, error);
  if (error) return sha256File(path);
  const std::string key = statKey(real.string(), before);
  const fs::path entry = entryFor(real.string(), before);
  {
    std::ifstream in(entry);
    std::string digest;
    if (in >> digest && isHexDigest(digest)) return digest;
  }
  struct timespec started {};
  ::clock_gettime(CLOCK_REALTIME, &started);
  std::string digest = sha256File(path);
  struct stat after {};
  if (::stat(path.c_str(), &after) != 0 || statKey(real.string(), after) != key ||
      nanoseconds(before.st_mtim) > nanoseconds(started) - kSettledNanoseconds) {
    return digest;
  }
  writeEntry(entry, digest);
  return digest;
}

void rememberWrittenSha256(const std::string& path, const std::string& digest) {
  struct stat info {};
  if (!isHexDigest(digest) || ::stat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode) ||
      info.st_size < kRememberedBytes) {
    return;
  }
  std::error_code error;
  const fs::path real = fs::canonical(path, error);
  if (!error) writeEntry(entryFor(real.string(), info), digest);
}

}  // namespace stickler

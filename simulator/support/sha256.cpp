#include "simulator/support/sha256.h"

#include <openssl/evp.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>

#include "simulator/support/errors.h"
#include "simulator/support/file_stamp.h"
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

constexpr int64_t kRememberedBytes = int64_t{64} << 20;

std::string statKey(const std::string& real_path, const FileStamp& stamp) {
  return real_path + "\n" + stamp.text();
}

bool isHexDigest(const std::string& text) {
  return text.size() == 64 && std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

}  // namespace

namespace {

// Where the hash of the file `path` (real) with `info` is remembered.
fs::path entryFor(const std::string& real_path, const FileStamp& stamp) {
  return fs::path(cacheDir("sha256")) / sha256Bytes(statKey(real_path, stamp));
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
  const std::optional<FileStamp> before = stampOf(path);
  if (!before || before->size < kRememberedBytes) return sha256File(path);
  std::error_code error;
  const fs::path real = fs::canonical(path, error);
  if (error) return sha256File(path);
  const fs::path entry = entryFor(real.string(), *before);
  {
    std::ifstream in(entry);
    std::string digest;
    if (in >> digest && isHexDigest(digest)) return digest;
  }
  std::string digest = sha256File(path);
  // Remembered only when written seconds before and unchanged while it was read.
  if (settled(*before) && stampOf(path) == before) writeEntry(entry, digest);
  return digest;
}

void rememberWrittenSha256(const std::string& path, const std::string& digest) {
  const std::optional<FileStamp> stamp = stampOf(path);
  if (!isHexDigest(digest) || !stamp || stamp->size < kRememberedBytes) return;
  std::error_code error;
  const fs::path real = fs::canonical(path, error);
  if (!error) writeEntry(entryFor(real.string(), *stamp), digest);
}

}  // namespace stickler

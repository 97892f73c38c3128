#pragma once

#include <string>
#include <string_view>

namespace stickler {

// Lowercase hex SHA-256 of a file's bytes; throws UserError when it cannot be read.
std::string sha256File(const std::string& path);

// The same, remembered for a large file (64 MiB or more) under cacheDir("sha256"), keyed by
// what changes whenever its bytes do: its real path, device, inode, size, and modification and
// change times to the nanosecond (the change time cannot be set back by a user). An 8B model's
// archive is 16 GB, a quarter of a minute to hash from the page cache and more from disk, and
// every command that loads it needs its hash. A hash is remembered only when the file did not
// change while it was read and was last written seconds before, so that a later write within
// the same clock tick cannot leave the same times; a cache that cannot be written is skipped.
std::string sha256FileRemembered(const std::string& path);

// Remembers `digest` as the hash of `path` as it is now, for a file this process has just
// written whole and hashed before it was put in place (an adapted archive `adapt --save`
// wrote): the next command on it would otherwise read all of it again, and could not remember
// it for two seconds. Nothing is remembered for a small file or one that cannot be read.
void rememberWrittenSha256(const std::string& path, const std::string& digest);

// Lowercase hex SHA-256 of a byte string.
std::string sha256Bytes(std::string_view bytes);

}  // namespace stickler

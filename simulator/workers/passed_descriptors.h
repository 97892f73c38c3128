// The descriptors a message on a unix socket carries beside its bytes (SCM_RIGHTS): the fork
// server's requests (a worker's three descriptors) and a worker's jobs (files passed).
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <vector>

namespace stickler {

// One message's bytes and the descriptors passed beside them, set up as sendmsg(2) takes them
// or recvmsg(2) fills them. The header points into the object, so it is not copied; recvmsg
// changes it, so a message receives once.
class DescriptorMessage {
 public:
  // To send `size` bytes from `data`, passing `fds`.
  DescriptorMessage(const char* data, size_t size, const std::vector<int>& fds);
  // To receive up to `size` bytes into `data` and up to `max_fds` descriptors.
  DescriptorMessage(char* data, size_t size, size_t max_fds);
  DescriptorMessage(const DescriptorMessage&) = delete;
  DescriptorMessage& operator=(const DescriptorMessage&) = delete;

  msghdr* header() { return &header_; }

 private:
  iovec part_{};
  std::vector<char> control_;
  msghdr header_{};
};

// Every descriptor in `message`'s SCM_RIGHTS control messages, in order: this process's now,
// to close.
std::vector<int> passedDescriptors(msghdr& message);

}  // namespace stickler

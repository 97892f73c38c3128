#include "simulator/workers/passed_descriptors.h"

#include <cstring>

namespace stickler {

DescriptorMessage::DescriptorMessage(const char* data, size_t size, const std::vector<int>& fds)
    : part_{const_cast<char*>(data), size},
      control_(fds.empty() ? 0 : CMSG_SPACE(sizeof(int) * fds.size()), 0) {
  header_.msg_iov = &part_;
  header_.msg_iovlen = 1;
  if (fds.empty()) return;
  header_.msg_control = control_.data();
  header_.msg_controllen = control_.size();
  cmsghdr* rights = CMSG_FIRSTHDR(&header_);
  rights->cmsg_level = SOL_SOCKET;
  rights->cmsg_type = SCM_RIGHTS;
  rights->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
  std::memcpy(CMSG_DATA(rights), fds.data(), sizeof(int) * fds.size());
}

DescriptorMessage::DescriptorMessage(char* data, size_t size, size_t max_fds)
    : part_{data, size}, control_(CMSG_SPACE(sizeof(int) * max_fds), 0) {
  header_.msg_iov = &part_;
  header_.msg_iovlen = 1;
  header_.msg_control = control_.data();
  header_.msg_controllen = control_.size();
}

std::vector<int> passedDescriptors(msghdr& message) {
  std::vector<int> fds;
  for (cmsghdr* c = CMSG_FIRSTHDR(&message); c != nullptr; c = CMSG_NXTHDR(&message, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int fd = -1;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      fds.push_back(fd);
    }
  }
  return fds;
}

}  // namespace stickler

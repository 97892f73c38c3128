// The descriptors a message received on a unix socket carries beside its bytes (SCM_RIGHTS):
// the fork server's requests (a worker's three descriptors) and a worker's jobs (files passed).
#pragma once

#include <sys/socket.h>

#include <vector>

namespace stickler {

// Every descriptor in `message`'s SCM_RIGHTS control messages, in order: this process's now,
// to close.
std::vector<int> passedDescriptors(msghdr& message);

}  // namespace stickler

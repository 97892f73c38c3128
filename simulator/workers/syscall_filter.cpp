#include "simulator/workers/syscall_filter.h"

#include <fcntl.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

namespace stickler {
namespace {

bool installed = false;

struct FilterDeleter {
  void operator()(scmp_filter_ctx context) const { seccomp_release(context); }
};

void check(int result, const char* what) {
  if (result < 0) {
    throw std::runtime_error(std::string("the sandbox's system-call filter: ") + what + ": " +
                             std::strerror(-result));
  }
}

}  // namespace

bool systemCallsDeniedForAdapterCode() {
  return installed;
}

void denySystemCallsForAdapterCode() {
  if (installed) return;
  std::unique_ptr<void, FilterDeleter> filter(seccomp_init(SCMP_ACT_ALLOW));
  if (!filter) throw std::runtime_error("the sandbox's system-call filter: seccomp_init failed");
  scmp_filter_ctx context = filter.get();
  const uint32_t deny = SCMP_ACT_ERRNO(EPERM);

  // Files: opened for anything but reading, or created, changed in name or removed.
  for (const unsigned flag : {unsigned(O_WRONLY), unsigned(O_RDWR), unsigned(O_CREAT),
                              unsigned(O_TRUNC), unsigned(O_APPEND)}) {
    check(
        seccomp_rule_add(context, deny, SCMP_SYS(open), 1, SCMP_A1(SCMP_CMP_MASKED_EQ, flag, flag)),
        "open");
    check(seccomp_rule_add(context, deny, SCMP_SYS(openat), 1,
                           SCMP_A2(SCMP_CMP_MASKED_EQ, flag, flag)),
          "openat");
  }
  // openat2 keeps its flags in memory a filter cannot read: refused whole (glibc uses openat).
  for (const int call :
       {SCMP_SYS(openat2),  SCMP_SYS(creat),   SCMP_SYS(truncate),  SCMP_SYS(unlink),
        SCMP_SYS(unlinkat), SCMP_SYS(rename),  SCMP_SYS(renameat),  SCMP_SYS(renameat2),
        SCMP_SYS(mkdir),    SCMP_SYS(mkdirat), SCMP_SYS(rmdir),     SCMP_SYS(link),
        SCMP_SYS(linkat),   SCMP_SYS(symlink), SCMP_SYS(symlinkat), SCMP_SYS(chmod),
        SCMP_SYS(fchmodat), SCMP_SYS(chown),   SCMP_SYS(fchownat),  SCMP_SYS(lchown),
        SCMP_SYS(mknod),    SCMP_SYS(mknodat)}) {
    check(seccomp_rule_add(context, deny, call, 0), "files");
  }

  // Processes: no fork or exec; clone only for threads. clone3 keeps its flags in memory a
  // filter cannot read: refused with ENOSYS, so that glibc starts threads with clone instead.
  for (const int call : {SCMP_SYS(fork), SCMP_SYS(vfork), SCMP_SYS(execve), SCMP_SYS(execveat)}) {
    check(seccomp_rule_add(context, deny, call, 0), "processes");
  }
  check(seccomp_rule_add(context, deny, SCMP_SYS(clone), 1,
                         SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0)),
        "clone");
  check(seccomp_rule_add(context, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0), "clone3");

  // Sockets: none new, of any family (the worker's channel is already open).
  for (const int call : {SCMP_SYS(socket), SCMP_SYS(socketpair), SCMP_SYS(connect), SCMP_SYS(bind),
                         SCMP_SYS(listen), SCMP_SYS(accept), SCMP_SYS(accept4)}) {
    check(seccomp_rule_add(context, deny, call, 0), "sockets");
  }

  // Signals to another process (its caller, say); raise() and abort() still reach this one.
  const auto self = static_cast<scmp_datum_t>(::getpid());
  check(seccomp_rule_add(context, deny, SCMP_SYS(kill), 1, SCMP_A0(SCMP_CMP_NE, self)), "kill");
  check(seccomp_rule_add(context, deny, SCMP_SYS(tgkill), 1, SCMP_A0(SCMP_CMP_NE, self)), "tgkill");
  for (const int call : {SCMP_SYS(ptrace), SCMP_SYS(process_vm_writev), SCMP_SYS(tkill)}) {
    check(seccomp_rule_add(context, deny, call, 0), "processes");
  }

  check(seccomp_load(context), "loading it");
  installed = true;
}

}  // namespace stickler

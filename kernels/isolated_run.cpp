#include "kernels/isolated_run.h"

#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>
#include <system_error>

#include "core/errors.h"
#include "core/interrupt.h"

namespace moefuzz {
namespace {

// Written by the child at the start of the shared region. The magic is stored last, so a child
// that dies half-way leaves a header the parent rejects.
constexpr uint64_t kResultMagic = 0x6D6F65667A697331ull;  // "moefzis1"
enum class ChildStatus : uint32_t {
  kOk = 1,
  kReportedError = 2,
  kInputError = 3,
  kInternalError = 4,
  kFault = 5
};
constexpr size_t kMessageBytes = 1024;

struct ResultHeader {
  uint64_t magic;
  uint32_t status;
  uint32_t fault_kind;  // FaultKind, when status == kFault
  uint64_t used;
  char message[kMessageBytes];
};

class SharedRegion {
 public:
  explicit SharedRegion(size_t bytes) : bytes_(bytes) {
    void* p =
        mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
      throw std::system_error(errno, std::generic_category(), "mmap of the isolation result region");
    base_ = static_cast<uint8_t*>(p);
  }
  ~SharedRegion() { munmap(base_, bytes_); }
  SharedRegion(const SharedRegion&) = delete;
  SharedRegion& operator=(const SharedRegion&) = delete;
  ResultHeader* header() const { return reinterpret_cast<ResultHeader*>(base_); }
  uint8_t* payload() const { return base_ + sizeof(ResultHeader); }

 private:
  size_t bytes_;
  uint8_t* base_ = nullptr;
};

void copy_message(ResultHeader* h, const std::string& m) {
  size_t n = std::min(m.size(), kMessageBytes - 1);
  std::memcpy(h->message, m.data(), n);
  h->message[n] = '\0';
}

[[noreturn]] void run_child(const SharedRegion& region, size_t capacity, const IsolatedBody& body,
                            pid_t parent) {
  // The child dies with its parent, however the parent ends (SIGKILL included): the kernel signals
  // the death of the forking thread. The getppid check closes the race of a parent that died
  // between fork and prctl. Its own process group, so the parent can kill whatever the kernel
  // forked (kill(-pid)) and a terminal's Ctrl-C reaches only moefuzz, which then ends the child.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(0);
  setpgid(0, 0);
  // Crash signals must kill the child (that is how the parent sees them), not run a handler the
  // parent installed (gtest, ASan) that would turn a crash into an ordinary exit. SIGINT/SIGTERM:
  // the parent's "stop soon" handler means nothing here; they end the child.
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS, SIGINT, SIGTERM})
    signal(sig, SIG_DFL);
  ResultHeader* h = region.header();
  ChildStatus status = ChildStatus::kOk;
  ResultWriter writer(region.payload(), capacity);
  try {
    std::string err = body(writer);
    if (!err.empty()) {
      status = ChildStatus::kReportedError;
      copy_message(h, err);
    }
  } catch (const KernelFault& f) {
    status = ChildStatus::kFault;
    h->fault_kind = static_cast<uint32_t>(f.kind());
    copy_message(h, f.what());
  } catch (const InputError& e) {
    status = ChildStatus::kInputError;
    copy_message(h, e.what());
  } catch (const std::bad_alloc& e) {
    // In the child only the kernel's call and the copy of its result allocate: its process is out of
    // memory (an address-space limit, or an absurd request by the kernel).
    status = ChildStatus::kFault;
    h->fault_kind = static_cast<uint32_t>(FaultKind::kOutOfMemory);
    copy_message(h, std::string("oom: allocation failed in the kernel's process (") + e.what() + ")");
  } catch (const std::exception& e) {
    status = ChildStatus::kInternalError;
    copy_message(h, e.what());
  } catch (...) {
    status = ChildStatus::kInternalError;
    copy_message(h, "unknown exception");
  }
  h->used = writer.size();
  h->status = static_cast<uint32_t>(status);
  __atomic_store_n(&h->magic, kResultMagic, __ATOMIC_RELEASE);
  _exit(0);  // no atexit handlers, no stdio flush: the parent owns those
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// waitpid with a deadline. Preferred: a pidfd (Linux >= 5.3), which poll() reports readable the
// moment the child exits. Fallback: poll waitpid with a short, growing sleep. Not a pipe: its write
// end would leak into processes other threads fork concurrently and stay open past our child's end.
enum class WaitEnd { kExited, kTimedOut, kInterrupted };

WaitEnd wait_with_timeout(pid_t pid, std::chrono::milliseconds timeout, int& wstatus) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto deadline = t0 + timeout;
#ifdef SYS_pidfd_open
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (pidfd >= 0) {
    for (;;) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      pollfd p{pidfd, POLLIN, 0};
      // In slices of at most 100 ms: under `-j N` a SIGINT/SIGTERM interrupts one thread's wait, not
      // necessarily this one, so the request is polled rather than waited for as EINTR.
      const int r = poll(&p, 1, static_cast<int>(std::clamp<int64_t>(left.count(), 0, 99)) + 1);
      if (r > 0) break;                    // exited
      if (r < 0 && errno != EINTR) break;  // fall through to the waitpid loop below
      if (interrupt_requested()) {
        close(pidfd);
        return WaitEnd::kInterrupted;
      }
      if (r == 0 && std::chrono::steady_clock::now() >= deadline) {
        close(pidfd);
        return WaitEnd::kTimedOut;
      }
    }
    close(pidfd);
  }
#endif
  long sleep_ns = 20'000;  // 20 us, doubling up to 2 ms: fast kernels return fast, hangs cost ~0 CPU
  for (;;) {
    pid_t r = waitpid(pid, &wstatus, WNOHANG);
    if (r == pid) return WaitEnd::kExited;
    if (r < 0 && errno != EINTR) throw std::system_error(errno, std::generic_category(), "waitpid");
    if (interrupt_requested()) return WaitEnd::kInterrupted;
    if (std::chrono::steady_clock::now() >= deadline) return WaitEnd::kTimedOut;
    timespec ts{0, sleep_ns};
    nanosleep(&ts, nullptr);
    sleep_ns = std::min(sleep_ns * 2, 2'000'000L);
  }
}

}  // namespace

std::string_view fault_kind_name(FaultKind kind) {
  switch (kind) {
    case FaultKind::kCrash:
      return "crash";
    case FaultKind::kTimeout:
      return "timeout";
    case FaultKind::kBadResult:
      return "bad-result";
    case FaultKind::kPluginError:
      return "plugin-error";
    case FaultKind::kOutOfMemory:
      return "oom";
    case FaultKind::kDeviceError:
      return "device-error";
  }
  return "unknown";
}

std::string_view fault_report_class(FaultKind kind) {
  switch (kind) {
    case FaultKind::kCrash:
      return "CRASH";
    case FaultKind::kTimeout:
      return "HANG";
    case FaultKind::kBadResult:
      return "BAD-RESULT";
    case FaultKind::kPluginError:
      return "ERROR";
    case FaultKind::kOutOfMemory:
      return "OOM";
    case FaultKind::kDeviceError:
      return "DEVICE-ERROR";
  }
  return "UNKNOWN";
}

void ResultWriter::append(const void* bytes, size_t n) {
  if (n > capacity_ - used_)
    throw std::length_error("isolated result exceeds its region (" + std::to_string(capacity_) + " bytes)");
  std::memcpy(data_ + used_, bytes, n);
  used_ += n;
}

std::vector<uint8_t> run_isolated(const std::string& what, size_t max_result_bytes,
                                  const IsolationLimits& limits, const IsolatedBody& body) {
  SharedRegion region(sizeof(ResultHeader) + max_result_bytes);
  std::fflush(nullptr);  // nothing buffered is duplicated into the child
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) throw std::system_error(errno, std::generic_category(), "fork for " + what);
  if (pid == 0) run_child(region, max_result_bytes, body, parent);
  setpgid(pid, pid);  // also from the parent: the group exists before any kill(-pid) below

  int wstatus = 0;
  const WaitEnd end = wait_with_timeout(pid, limits.timeout, wstatus);
  if (end != WaitEnd::kExited) {
    kill(-pid, SIGKILL);  // the child's group: whatever the kernel forked goes too
    kill(pid, SIGKILL);
    while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
    }
    if (end == WaitEnd::kInterrupted) throw Interrupted(interrupt_signal());  // not the kernel's fault
    const double s = seconds_since(t0);
    throw KernelFault(
        FaultKind::kTimeout,
        what + ": timeout: still running after " + std::to_string(limits.timeout.count()) + " ms, killed", 0,
        s);
  }
  const double s = seconds_since(t0);
  if (WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGKILL) {
    // We did not send it (our kills are above): on Linux the out-of-memory killer's signal.
    throw KernelFault(FaultKind::kOutOfMemory,
                      what +
                          ": oom: killed by SIGKILL, which moefuzz did not send (the out-of-memory "
                          "killer, or a kill from outside)",
                      SIGKILL, s);
  }
  if (WIFSIGNALED(wstatus)) {
    const int sig = WTERMSIG(wstatus);
    const char* name = strsignal(sig);
    throw KernelFault(
        FaultKind::kCrash,
        what + ": crash: killed by signal " + std::to_string(sig) + " (" + (name ? name : "?") + ")", sig, s);
  }
  const ResultHeader* h = region.header();
  const int code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1;
  if (code != 0 || __atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) != kResultMagic) {
    throw KernelFault(FaultKind::kBadResult,
                      what + ": bad-result: the process exited (status " + std::to_string(code) +
                          ") before writing its result",
                      0, s);
  }
  if (h->used > max_result_bytes) {
    throw KernelFault(FaultKind::kBadResult, what + ": bad-result: corrupt result header", 0, s);
  }
  std::string message(h->message, strnlen(h->message, kMessageBytes));
  switch (static_cast<ChildStatus>(h->status)) {
    case ChildStatus::kOk:
      break;
    case ChildStatus::kReportedError:
      throw KernelFault(FaultKind::kPluginError, what + ": plugin-error: " + message, 0, s);
    case ChildStatus::kFault:
      if (h->fault_kind <= static_cast<uint32_t>(FaultKind::kDeviceError))
        throw KernelFault(static_cast<FaultKind>(h->fault_kind), what + ": " + message, 0, s);
      throw KernelFault(FaultKind::kBadResult, what + ": bad-result: corrupt result header", 0, s);
    case ChildStatus::kInputError:
      throw InputError(message);
    case ChildStatus::kInternalError:
      throw std::runtime_error(what + ": internal error in the isolated run: " + message);
    default:
      throw KernelFault(FaultKind::kBadResult, what + ": bad-result: corrupt result header", 0, s);
  }
  return std::vector<uint8_t>(region.payload(), region.payload() + h->used);
}

}  // namespace moefuzz

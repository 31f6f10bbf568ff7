#pragma once
// Fault isolation for code we do not trust (plugin kernels): run a function in a forked child
// process with a timeout; the child writes its result into a shared anonymous mapping and leaves
// with _exit. A crash (signal), a hang (timeout), an early exit or a malformed result becomes a
// KernelFault in the parent, which the check engine turns into a finding; moefuzz itself survives.
//
// Why fork is enough (docs/plugins.md, "Isolation model"): the child gets a copy-on-write image of
// the already-built Case, so inputs cost nothing to pass and cannot be corrupted for the parent; the
// only channel back is the mapping, whose size the parent fixes before the fork and whose header it
// validates. What fork does not contain: GPU state (a CUDA context cannot cross fork), resources
// outside the process (files, sockets), and deadlocks on locks another parent thread held at fork.
//
// The rule that follows for callers: the child of a multi-threaded moefuzz (`check -j`) holds only
// the forking thread, and a mutex or a function-local static that another thread held at the fork
// (being built: its guard) stays held there forever, so the kernel would be blamed for moefuzz's
// hang. The body therefore only calls the code under test and copies its result out: whatever it
// reads is built before run_isolated (the plugin's case view), and the process-wide tables on its
// paths (profiles, the CPU stages' decode tables) are built at load time, before any thread exists.
//
// Example:
//   moefuzz::IsolationLimits lim{.timeout = std::chrono::milliseconds(500)};
//   std::vector<uint8_t> bytes = moefuzz::run_isolated("plugin 'x'", 4096, lim,
//       [](moefuzz::ResultWriter& w) { int v = 42; w.append(&v, sizeof v); return std::string(); });
//   // bytes.size() == 4; a SIGSEGV in the lambda throws KernelFault{kind = kCrash, signal = 11}.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace moefuzz {

enum class FaultKind : uint8_t {
  kCrash,        // the child died from a signal (SIGSEGV, SIGABRT, ...)
  kTimeout,      // the child ran past the timeout and was killed
  kBadResult,    // the child exited without a complete, well-formed result
  kPluginError,  // the kernel itself reported an error for a case it claims to support
  kOutOfMemory,  // the kernel's process ran out of memory (its allocation failed or it was killed for it)
  kDeviceError,  // the accelerator reported an error (CUDA error, lost device) during the kernel's call
};
// "crash", "timeout", "bad-result", "plugin-error", "oom", "device-error".
std::string_view fault_kind_name(FaultKind kind);
// The finding class a report prints for a fault: "CRASH", "HANG", "BAD-RESULT", "ERROR", "OOM",
// "DEVICE-ERROR".
std::string_view fault_report_class(FaultKind kind);

// A kernel misbehaved in a way that has no output to compare: report it as a finding (exit 1),
// never as bad input (InputError, exit 2). what() is one line naming the kernel and the fault.
class KernelFault : public std::runtime_error {
 public:
  KernelFault(FaultKind kind, const std::string& what_message, int signal_number = 0, double seconds = 0.0)
      : std::runtime_error(what_message), kind_(kind), signal_(signal_number), seconds_(seconds) {}
  FaultKind kind() const { return kind_; }
  int signal_number() const { return signal_; }  // kCrash: the terminating signal, else 0
  double seconds() const { return seconds_; }    // wall time when the fault was detected

 private:
  FaultKind kind_;
  int signal_;
  double seconds_;
};

struct IsolationLimits {
  std::chrono::milliseconds timeout{30000};  // per isolated call; a kernel call is seconds at most
};

// The child's view of the shared result region. append() throws std::length_error past capacity
// (the capacity is fixed by the parent before the fork and never grows).
class ResultWriter {
 public:
  ResultWriter(uint8_t* data, size_t capacity) : data_(data), capacity_(capacity) {}
  void append(const void* bytes, size_t n);
  size_t size() const { return used_; }

 private:
  uint8_t* data_;
  size_t capacity_;
  size_t used_ = 0;
};

// The child's body: writes its result through the writer and returns "" on success, or the error
// the kernel reported (-> KernelFault kPluginError). A KernelFault or InputError thrown in the child
// is rethrown as such in the parent; any other exception as std::runtime_error (a moefuzz bug).
using IsolatedBody = std::function<std::string(ResultWriter&)>;

// Forks, runs `body` in the child, waits at most limits.timeout and returns the bytes the child
// wrote. `what` names the code under test in fault messages ("plugin 'x' (./libx.so)").
// Throws KernelFault on crash / timeout / malformed result, std::system_error if fork fails.
std::vector<uint8_t> run_isolated(const std::string& what, size_t max_result_bytes,
                                  const IsolationLimits& limits, const IsolatedBody& body);

}  // namespace moefuzz

#pragma once
// PythonWorker: the process that hosts a Python kernel (`--kernel py:MODULE:ATTR`), and the framed
// messages moefuzz exchanges with it. The worker is `python3 -m moefuzz.worker` (python/moefuzz/
// worker.py); it imports the kernel once and keeps it, its CUDA context and the tensors it was sent,
// across calls. Everything that can go wrong on the other side (a Python exception, a CUDA error, a
// crash, a hang, an out-of-memory, a malformed reply) arrives here as a KernelFault of its class; the
// worker is then killed with its whole process group and the next request starts a fresh one.
//
// Wire format, both directions, over a socketpair (the kernel's own stdout/stderr go to a log file
// whose tail is quoted in fault messages):
//   u32 magic 'MFZ1' | u32 header bytes | u64 payload bytes | header (JSON) | payload
// The header's "tensors" list names each tensor's dtype, shape and byte range in the payload.
//
// Example:
//   moefuzz::PythonWorker w({.spec = "examples.python.torch_moe:layer"});
//   const nlohmann::json& hello = w.hello();             // starts the process
//   moefuzz::WorkerMessage req{.header = {{"op", "supports"}, {"config", cfg}}};
//   moefuzz::WorkerMessage rep = w.request(req, std::chrono::seconds(30));
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

namespace moefuzz {

// A tensor in a message: dtype is one of "f32", "bf16", "u8", "e4m3", "i32", "i64", "u16".
struct WireTensor {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  size_t offset = 0;  // into WorkerMessage::payload
  size_t bytes = 0;
};

struct WorkerMessage {
  nlohmann::json header = nlohmann::json::object();
  std::vector<uint8_t> payload;

  // Appends a tensor (copies its bytes) and lists it in header["tensors"].
  void add_tensor(const std::string& name, const std::string& dtype, std::vector<int64_t> shape,
                  const void* data, size_t bytes);
  template <class T>
  void add_tensor(const std::string& name, const std::string& dtype, std::vector<int64_t> shape,
                  const std::vector<T>& v) {
    add_tensor(name, dtype, std::move(shape), v.data(), v.size() * sizeof(T));
  }
  // The tensors listed in the header, validated against the payload (throws std::runtime_error).
  // Parsed anew on every call: keep the vector, never pair iterators of two calls.
  std::vector<WireTensor> tensors() const;
};

struct PythonWorkerOptions {
  std::string spec;                                 // "MODULE:ATTR"
  std::string python;                               // interpreter; "" = $MOEFUZZ_PYTHON or python3
  std::chrono::milliseconds start_timeout{120000};  // import torch + triton + the kernel
  size_t max_reply_bytes = size_t{1} << 34;         // per reply; the caller passes its exact bound per call
};

class PythonWorker {
 public:
  explicit PythonWorker(PythonWorkerOptions options);
  ~PythonWorker();
  PythonWorker(const PythonWorker&) = delete;
  PythonWorker& operator=(const PythonWorker&) = delete;

  // The worker's greeting: the kernel's description ({"kernel": {...}, "versions": {...}}), or
  // {"error": "..."} when the module could not be imported. Starts the process if needed. Throws
  // InputError when the interpreter cannot be started at all.
  const nlohmann::json& hello();
  // One request and its reply within `timeout` (writing and reading). Throws KernelFault: kTimeout
  // (the worker is killed), kCrash (it died from a signal), kBadResult (it exited, or sent a
  // malformed or oversized reply). After any throw the worker is gone; the next call restarts it.
  WorkerMessage request(const WorkerMessage& message, std::chrono::milliseconds timeout,
                        size_t max_reply_bytes = 0);
  // Kills the worker (process group) and forgets everything it held.
  void stop();
  bool running() const { return pid_ > 0; }
  // How many worker processes this object has started (restarts after faults included).
  int starts() const { return starts_; }
  // The last lines the worker printed (stdout and stderr), for fault messages.
  std::string log_tail(size_t max_bytes = 2000) const;

 private:
  void start();
  [[noreturn]] void fail_dead(const std::string& during);
  PythonWorkerOptions options_;
  pid_t pid_ = -1;
  int fd_ = -1;
  std::string log_path_;
  nlohmann::json hello_;
  int starts_ = 0;
};

// Where the moefuzz Python package lives (the directory holding moefuzz/): $MOEFUZZ_PYTHONPATH, else
// <prefix>/lib/moefuzz/python beside an installed binary (<prefix>/bin), else the source tree's
// python/ this binary was built from, else "" (the package is installed with pip).
std::string moefuzz_python_dir();

}  // namespace moefuzz

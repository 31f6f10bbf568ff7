#include "kernels/python_worker.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "core/errors.h"
#include "kernels/isolated_run.h"

namespace moefuzz {
namespace {

constexpr uint32_t kMagic = 0x315A464Du;  // "MFZ1" little-endian
// A header is a small JSON object (configuration, tensor list, an error message with a traceback):
// 16 MiB is far above any legitimate one and bounds what a broken worker can make us allocate.
constexpr uint32_t kMaxHeaderBytes = 16u << 20;

struct FrameHead {
  uint32_t magic;
  uint32_t header_bytes;
  uint64_t payload_bytes;
};

using Clock = std::chrono::steady_clock;

int ms_left(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<int64_t>(left, 1 << 30));
}

// Outcome of moving bytes through the socket before a deadline.
enum class Io { kOk, kTimeout, kClosed };

Io write_all(int fd, const void* data, size_t n, Clock::time_point deadline) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (n > 0) {
    pollfd pfd{fd, POLLOUT, 0};
    const int r = poll(&pfd, 1, ms_left(deadline));
    if (r == 0) return Io::kTimeout;
    if (r < 0) {
      if (errno == EINTR) continue;
      return Io::kClosed;
    }
    const ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return Io::kClosed;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return Io::kOk;
}

Io read_all(int fd, void* data, size_t n, Clock::time_point deadline) {
  auto* p = static_cast<uint8_t*>(data);
  while (n > 0) {
    pollfd pfd{fd, POLLIN, 0};
    const int r = poll(&pfd, 1, ms_left(deadline));
    if (r == 0) return Io::kTimeout;
    if (r < 0) {
      if (errno == EINTR) continue;
      return Io::kClosed;
    }
    const ssize_t got = recv(fd, p, n, 0);
    if (got == 0) return Io::kClosed;
    if (got < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return Io::kClosed;
    }
    p += got;
    n -= static_cast<size_t>(got);
  }
  return Io::kOk;
}

std::string seconds_text(std::chrono::milliseconds t) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", static_cast<double>(t.count()) / 1000.0);
  return buf;
}

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::string(v) : fallback;
}

}  // namespace

void WorkerMessage::add_tensor(const std::string& name, const std::string& dtype, std::vector<int64_t> shape,
                               const void* data, size_t bytes) {
  const size_t offset = payload.size();
  payload.resize(offset + bytes);
  if (bytes > 0) std::memcpy(payload.data() + offset, data, bytes);
  header["tensors"].push_back(
      {{"name", name}, {"dtype", dtype}, {"shape", shape}, {"offset", offset}, {"bytes", bytes}});
}

std::vector<WireTensor> WorkerMessage::tensors() const {
  std::vector<WireTensor> out;
  if (!header.contains("tensors")) return out;
  const nlohmann::json& list = header["tensors"];
  if (!list.is_array()) throw std::runtime_error("'tensors' is not a list");
  for (const nlohmann::json& t : list) {
    WireTensor w;
    w.name = t.at("name").get<std::string>();
    w.dtype = t.at("dtype").get<std::string>();
    w.shape = t.at("shape").get<std::vector<int64_t>>();
    w.offset = t.at("offset").get<size_t>();
    w.bytes = t.at("bytes").get<size_t>();
    if (w.offset > payload.size() || w.bytes > payload.size() - w.offset)
      throw std::runtime_error("tensor '" + w.name + "' lies outside the payload");
    out.push_back(std::move(w));
  }
  return out;
}

std::string moefuzz_python_dir() {
  if (const char* env = std::getenv("MOEFUZZ_PYTHONPATH"); env != nullptr && *env != '\0') return env;
  // An installed moefuzz (`cmake --install`, docs/decisions.md) carries its package beside it:
  // <prefix>/bin/moefuzz and <prefix>/lib/moefuzz/python/moefuzz/, so it never reads the source tree.
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const std::filesystem::path installed = exe.parent_path().parent_path() / "lib/moefuzz/python";
    if (std::filesystem::is_regular_file(installed / "moefuzz/worker.py", ec)) return installed.string();
  }
#ifdef MOEFUZZ_PYTHON_SOURCE_DIR
  return MOEFUZZ_PYTHON_SOURCE_DIR;
#else
  return "";
#endif
}

PythonWorker::PythonWorker(PythonWorkerOptions options) : options_(std::move(options)) {
  if (options_.python.empty()) options_.python = env_or("MOEFUZZ_PYTHON", "python3");
}

PythonWorker::~PythonWorker() {
  // Closing the channel lets the worker leave on its own (flushing what it writes at exit); a worker
  // busy in a kernel gets a moment, then SIGKILL.
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  for (int i = 0; i < 100 && pid_ > 0; ++i) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      kill(-pid_, SIGKILL);  // anything it started
      pid_ = -1;
      break;
    }
    usleep(5000);
  }
  stop();
  if (!log_path_.empty()) unlink(log_path_.c_str());
}

void PythonWorker::start() {
  if (log_path_.empty()) {
    std::string tmpl = env_or("TMPDIR", "/tmp") + "/moefuzz-pyworker-XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    const int lfd = mkstemp(buf.data());
    if (lfd < 0)
      throw InputError("cannot create a log file for the Python worker in " + env_or("TMPDIR", "/tmp"));
    close(lfd);
    log_path_ = buf.data();
  }
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    throw std::system_error(errno, std::generic_category(), "socketpair");
  // Everything the child needs is prepared before fork: it only calls async-signal-safe functions.
  const std::string fd_arg = std::to_string(3);
  std::vector<std::string> args = {options_.python, "-u",          "-m",   "moefuzz.worker",
                                   "--kernel",      options_.spec, "--fd", fd_arg};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  // PYTHONPATH: the moefuzz package (unless pip-installed), then the working directory, so that
  // `py:examples.python.torch_moe:layer` resolves from the repository root like `python -m` would.
  std::string pythonpath = moefuzz_python_dir();
  char cwd[4096];
  if (getcwd(cwd, sizeof cwd) != nullptr) pythonpath += (pythonpath.empty() ? "" : ":") + std::string(cwd);
  if (const char* old = std::getenv("PYTHONPATH"); old != nullptr && *old != '\0')
    pythonpath += ":" + std::string(old);
  std::vector<std::string> env_storage;
  for (char** e = environ; *e != nullptr; ++e)
    if (std::strncmp(*e, "PYTHONPATH=", 11) != 0) env_storage.emplace_back(*e);
  env_storage.push_back("PYTHONPATH=" + pythonpath);
  std::vector<char*> envp;
  for (std::string& e : env_storage) envp.push_back(e.data());
  envp.push_back(nullptr);
  const int log_fd = open(log_path_.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (log_fd < 0) {
    close(sv[0]), close(sv[1]);
    throw std::system_error(errno, std::generic_category(), "open worker log");
  }

  const pid_t pid = fork();
  if (pid < 0) {
    close(sv[0]), close(sv[1]), close(log_fd);
    throw std::system_error(errno, std::generic_category(), "fork");
  }
  if (pid == 0) {
    setpgid(0, 0);   // its own group: a fault kills the worker and everything it started (compilers)
    dup2(sv[1], 3);  // dup2 clears FD_CLOEXEC on the new descriptor
    dup2(log_fd, 1);
    dup2(log_fd, 2);
    const int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, 0);
    execvpe(argv[0], argv.data(), envp.data());
    const char msg[] = "moefuzz: cannot execute the Python interpreter\n";
    (void)!write(2, msg, sizeof msg - 1);
    _exit(127);
  }
  setpgid(pid, pid);  // also here: no kill(-pid) may race ahead of the child's own setpgid
  close(sv[1]);
  close(log_fd);
  pid_ = pid;
  fd_ = sv[0];
  ++starts_;

  // The greeting, within the start timeout (importing torch and compiling nothing yet).
  const auto deadline = Clock::now() + options_.start_timeout;
  FrameHead head{};
  const Io io = read_all(fd_, &head, sizeof head, deadline);
  if (io == Io::kTimeout) {
    stop();
    throw InputError("Python kernel 'py:" + options_.spec + "': the worker did not start within " +
                     std::to_string(options_.start_timeout.count() / 1000) + " s; its output:\n" +
                     log_tail());
  }
  std::string header;
  if (io == Io::kOk && head.magic == kMagic && head.header_bytes <= kMaxHeaderBytes &&
      head.payload_bytes == 0) {
    header.resize(head.header_bytes);
    if (read_all(fd_, header.data(), header.size(), deadline) != Io::kOk) header.clear();
  }
  if (header.empty()) {
    const std::string tail = log_tail();
    stop();
    throw InputError("Python kernel 'py:" + options_.spec + "': the worker (" + options_.python +
                     " -m moefuzz.worker) did not start" +
                     (tail.empty() ? std::string(".") : "; its output:\n" + tail) +
                     "\n(MOEFUZZ_PYTHON selects the interpreter; the moefuzz package must be importable: pip "
                     "install ./python, or run from a source build)");
  }
  try {
    hello_ = nlohmann::json::parse(header);
  } catch (const std::exception& e) {
    stop();
    throw InputError("Python kernel 'py:" + options_.spec +
                     "': malformed greeting from the worker: " + e.what());
  }
}

const nlohmann::json& PythonWorker::hello() {
  if (pid_ <= 0) start();
  return hello_;
}

void PythonWorker::stop() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  if (pid_ > 0) {
    kill(-pid_, SIGKILL);
    kill(pid_, SIGKILL);
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
  pid_ = -1;
}

std::string PythonWorker::log_tail(size_t max_bytes) const {
  std::ifstream f(log_path_, std::ios::binary | std::ios::ate);
  if (!f) return "";
  const std::streamoff size = f.tellg();
  const std::streamoff from = size > static_cast<std::streamoff>(max_bytes) ? size - max_bytes : 0;
  f.seekg(from);
  std::string s(static_cast<size_t>(size - from), '\0');
  f.read(s.data(), static_cast<std::streamsize>(s.size()));
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

void PythonWorker::fail_dead(const std::string& during) {
  // The worker closed its end: collect how it ended (it may take a moment to be reaped).
  int status = 0;
  pid_t r = 0;
  for (int i = 0; i < 200 && (r = waitpid(pid_, &status, WNOHANG)) == 0; ++i) usleep(5000);
  const std::string tail = log_tail();
  const std::string what = "Python kernel 'py:" + options_.spec + "'";
  pid_t dead = pid_;
  if (r == 0) {
    stop();  // still alive but the channel is broken: kill it
  } else {
    close(fd_);
    fd_ = -1;
    kill(-dead, SIGKILL);
    pid_ = -1;
  }
  const std::string log = tail.empty() ? "" : "; worker output: " + tail;
  if (r == dead && WIFSIGNALED(status)) {
    throw KernelFault(FaultKind::kCrash,
                      what + ": crash: the worker died from signal " + std::to_string(WTERMSIG(status)) +
                          " (" + strsignal(WTERMSIG(status)) + ") during " + during + log,
                      WTERMSIG(status));
  }
  const std::string how = r == dead && WIFEXITED(status)
                              ? "exited with status " + std::to_string(WEXITSTATUS(status))
                              : "closed its channel";
  throw KernelFault(FaultKind::kBadResult,
                    what + ": bad-result: the worker " + how + " during " + during + log);
}

WorkerMessage PythonWorker::request(const WorkerMessage& message, std::chrono::milliseconds timeout,
                                    size_t max_reply_bytes) {
  if (pid_ <= 0) start();
  if (hello_.contains("error")) throw InputError(hello_["error"].get<std::string>());
  if (max_reply_bytes == 0) max_reply_bytes = options_.max_reply_bytes;
  const std::string op =
      message.header.value("op", std::string("?")) +
      (message.header.contains("stage") ? " " + message.header["stage"].get<std::string>() : "");
  const auto deadline = Clock::now() + timeout;
  const auto timed_out = [&]() {
    stop();
    throw KernelFault(FaultKind::kTimeout,
                      "Python kernel 'py:" + options_.spec + "': timeout: no reply to '" + op + "' within " +
                          seconds_text(timeout) + " s (MOEFUZZ_PLUGIN_TIMEOUT_S); the worker was killed",
                      0, static_cast<double>(timeout.count()) / 1000.0);
  };

  const std::string header = message.header.dump();
  const FrameHead out{kMagic, static_cast<uint32_t>(header.size()), message.payload.size()};
  // Head and header in one write (one wake-up of the worker per message); the payload follows.
  // A small payload joins them (the copy costs less than the second wake-up); a large one is sent in place.
  std::string head(reinterpret_cast<const char*>(&out), sizeof out);
  head += header;
  const bool join = message.payload.size() <= (size_t{64} << 10);
  if (join) head.append(reinterpret_cast<const char*>(message.payload.data()), message.payload.size());
  Io io = write_all(fd_, head.data(), head.size(), deadline);
  if (io == Io::kOk && !join) io = write_all(fd_, message.payload.data(), message.payload.size(), deadline);
  if (io == Io::kTimeout) timed_out();
  if (io == Io::kClosed) fail_dead("'" + op + "'");

  FrameHead in{};
  io = read_all(fd_, &in, sizeof in, deadline);
  if (io == Io::kTimeout) timed_out();
  if (io == Io::kClosed) fail_dead("'" + op + "'");
  const std::string what = "Python kernel 'py:" + options_.spec + "'";
  if (in.magic != kMagic || in.header_bytes > kMaxHeaderBytes || in.payload_bytes > max_reply_bytes) {
    stop();
    throw KernelFault(FaultKind::kBadResult, what + ": bad-result: malformed or oversized reply to '" + op +
                                                 "' (" + std::to_string(in.payload_bytes) +
                                                 " payload bytes, at most " +
                                                 std::to_string(max_reply_bytes) + " expected)");
  }
  WorkerMessage reply;
  std::string text(in.header_bytes, '\0');
  io = read_all(fd_, text.data(), text.size(), deadline);
  if (io == Io::kOk) {
    reply.payload.resize(in.payload_bytes);
    io = read_all(fd_, reply.payload.data(), reply.payload.size(), deadline);
  }
  if (io == Io::kTimeout) timed_out();
  if (io == Io::kClosed) fail_dead("'" + op + "'");
  try {
    reply.header = nlohmann::json::parse(text);
    (void)reply.tensors();  // validates every byte range
  } catch (const std::exception& e) {
    stop();
    throw KernelFault(FaultKind::kBadResult,
                      what + ": bad-result: malformed reply to '" + op + "': " + e.what());
  }
  return reply;
}

}  // namespace moefuzz

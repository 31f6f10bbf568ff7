#pragma once
// Test helper: runs the built moefuzz binary (test_build_dir()/bin/moefuzz) in a child process
// under RLIMIT_CPU (and, optionally, RLIMIT_AS), so a regression that loops or allocates without
// bound fails the test instead of the machine. stdout and stderr come back interleaved.
//
// Example:
//   RunResult r = run_moefuzz({"show", "corpora/examples/mixtral.moefuzz"});
//   EXPECT_EQ(r.exit_code, 0) << r.output;
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

struct RunResult {
  int exit_code = -1;
  std::string output;       // stdout and stderr interleaved
  int64_t max_rss_kib = 0;  // peak resident memory of the child
  double seconds = 0;
};

// Runs `command` with /bin/sh in `dir`; returns the exit code, output (stdout and stderr) into *output.
inline int run_shell_in(const std::string& dir, const std::string& command, std::string* output) {
  const std::string line = "cd '" + dir + "' && " + command + " 2>&1";
  FILE* pipe = ::popen(line.c_str(), "r");
  if (pipe == nullptr) return -1;
  std::array<char, 4096> buf{};
  size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0) output->append(buf.data(), n);
  const int status = ::pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

// The text after "REPRO: " on the first line that has it ("" when none).
inline std::string repro_line(const std::string& text) {
  const size_t at = text.find("REPRO: ");
  if (at == std::string::npos) return "";
  const size_t start = at + 7;
  return text.substr(start, text.find('\n', start) - start);
}

// The build directory whose bin/moefuzz and lib/ plugins a test uses: the folder above the test
// binary's own bin/ when it holds bin/moefuzz (so a build copied to a GPU host by `scripts/gpu-host.sh
// pack` runs its own CLI), else the build directory compiled in (MOEFUZZ_BINARY_DIR).
inline std::string test_build_dir() {
  char self[4096];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    std::string dir(self, static_cast<size_t>(n));
    for (int up = 0; up < 2 && dir.rfind('/') != std::string::npos; ++up) dir.resize(dir.rfind('/'));
    if (::access((dir + "/bin/moefuzz").c_str(), X_OK) == 0) return dir;
  }
  return MOEFUZZ_BINARY_DIR;
}

// `address_space` 0 = no limit (ASan reserves terabytes of shadow: under ASan only RSS is meaningful).
inline RunResult run_moefuzz(const std::vector<std::string>& args, rlim_t cpu_seconds = 60,
                             rlim_t address_space = 0) {
  const std::string binary = test_build_dir() + "/bin/moefuzz";
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(binary.c_str()));
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) return {};
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(pipe_fds[1], STDOUT_FILENO);
    ::dup2(pipe_fds[1], STDERR_FILENO);
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
#if !defined(__SANITIZE_ADDRESS__)
    if (address_space > 0) {
      const rlimit as{address_space, address_space};
      ::setrlimit(RLIMIT_AS, &as);
    }
#endif
    const rlimit cpu{cpu_seconds, cpu_seconds};
    ::setrlimit(RLIMIT_CPU, &cpu);
    ::execv(binary.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(pipe_fds[1]);
  RunResult result;
  char buf[4096];
  ssize_t n = 0;
  while ((n = ::read(pipe_fds[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
    if (n > 0) result.output.append(buf, static_cast<size_t>(n));
  ::close(pipe_fds[0]);
  int status = 0;
  rusage usage{};
  ::wait4(pid, &status, 0, &usage);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.max_rss_kib = usage.ru_maxrss;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

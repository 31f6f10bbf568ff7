#include "drivers/campaign_janitor.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>
#include <thread>

#include "core/errors.h"

namespace moefuzz {
namespace {

namespace fs = std::filesystem;

constexpr char kDone = 'd';   // the campaign ended on its own
constexpr char kGroup = 'g';  // followed by a pid_t: a group to kill on death

bool write_all(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// Reads one byte, or a pid after kGroup; false at end of file (the campaign is gone).
bool read_exact(int fd, void* data, size_t n) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    const ssize_t r = ::read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

[[noreturn]] void janitor_main(int read_fd, const std::string& dir) {
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) ::signal(sig, SIG_IGN);
  // Hold no other descriptor: a pipe or terminal the campaign's caller waits on must close with it.
  for (int fd = 0; fd < 1024; ++fd)
    if (fd != read_fd) ::close(fd);
  std::vector<pid_t> groups;
  for (;;) {
    char tag = 0;
    if (!read_exact(read_fd, &tag, 1)) break;  // the campaign died
    if (tag == kDone) ::_exit(0);
    pid_t g = 0;
    if (tag != kGroup || !read_exact(read_fd, &g, sizeof g)) break;
    groups.push_back(g);
  }
  CampaignJanitor::clean_after_death(dir, groups);
  ::_exit(0);
}

// A member of group g that still runs (zombies write nothing; whoever inherits them reaps them).
bool group_has_live_member(pid_t g) {
  if (::kill(-g, 0) != 0 && errno == ESRCH) return false;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.empty() || name[0] < '0' || name[0] > '9') continue;
    std::ifstream stat(e.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    const size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));  // state ppid pgrp ...
    char state = 0;
    long ppid = 0, pgrp = 0;
    if ((rest >> state >> ppid >> pgrp) && pgrp == g && state != 'Z') return true;
  }
  return false;
}

}  // namespace

CampaignJanitor::CampaignJanitor(std::string dir) {
  int fds[2];
  if (::pipe(fds) != 0)
    throw InputError(std::string("campaign: cannot start its janitor: ") + std::strerror(errno));
  pid_ = ::fork();
  if (pid_ < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw InputError(std::string("campaign: cannot start its janitor: ") + std::strerror(errno));
  }
  if (pid_ == 0) janitor_main(fds[0], dir);
  ::close(fds[0]);
  write_fd_ = fds[1];
}

CampaignJanitor::~CampaignJanitor() {
  write_all(write_fd_, &kDone, 1);
  ::close(write_fd_);
  while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
  }
}

void CampaignJanitor::watch_group(pid_t pgid) {
  char msg[1 + sizeof(pid_t)];
  msg[0] = kGroup;
  std::memcpy(msg + 1, &pgid, sizeof pgid);
  write_all(write_fd_, msg, sizeof msg);
}

void CampaignJanitor::clean_after_death(const std::string& dir, const std::vector<pid_t>& groups) {
  for (pid_t g : groups) ::kill(-g, SIGKILL);
  // Killed processes stop writing once they are gone; the wait is bounded in case one is stuck in
  // the kernel (uninterruptible I/O).
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  for (pid_t g : groups)
    while (group_has_live_member(g) && std::chrono::steady_clock::now() < end)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  std::error_code ec;
  fs::remove_all(fs::path(dir) / "tmp", ec);
  const fs::path corpus = fs::path(dir) / "corpus", old_corpus = fs::path(dir) / "corpus.old";
  fs::remove_all(fs::path(dir) / "corpus.new", ec);
  if (!fs::exists(corpus, ec) && fs::exists(old_corpus, ec)) fs::rename(old_corpus, corpus, ec);
  fs::remove_all(old_corpus, ec);
  std::vector<fs::path> partial;
  for (auto it = fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
    if (it->is_regular_file(ec) && it->path().filename().string().find(".tmp.") != std::string::npos)
      partial.push_back(it->path());
  for (const auto& p : partial) fs::remove(p, ec);
}

}  // namespace moefuzz

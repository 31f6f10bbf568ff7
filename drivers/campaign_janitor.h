#pragma once
// The campaign's janitor: a small process that outlives a `moefuzz campaign` killed by SIGKILL just
// long enough to end its fuzzers and remove what the run left half-done. A killed process cleans
// nothing itself; the janitor learns of the death from its pipe (end of file without the "done"
// word), kills every process group it was told about, and then, under the campaign's DIR:
//   - removes DIR/tmp (libFuzzer's -fork work directories) and every `*.tmp.*` file (an atomic write
//     cut short: core/atomic_file.h names them PATH.tmp.PID);
//   - settles the corpus swap of the final merge as the next run would: corpus.new goes, and
//     corpus.old becomes corpus again when corpus itself is missing.
// Findings are written atomically, so what remains is complete and replayable. A campaign that ends
// any other way (success, an error, SIGINT/SIGTERM) cleans up itself and dismisses the janitor.
// The janitor ignores SIGINT, SIGTERM and SIGHUP: a Ctrl-C reaches the whole terminal group, and the
// campaign, not the janitor, decides what that means.
//
// Example:
//   CampaignJanitor janitor(out_dir);   // before the first fuzzer starts (the process is single-threaded)
//   const pid_t group = spawn(...);
//   janitor.watch_group(group);
//   ...                                 // leaving scope: the janitor exits and touches nothing
#include <sys/types.h>

#include <string>
#include <vector>

namespace moefuzz {

class CampaignJanitor {
 public:
  // Forks the janitor for `dir`. Call while the process has one thread (fork copies only the caller).
  // Throws InputError if it cannot be started.
  explicit CampaignJanitor(std::string dir);
  ~CampaignJanitor();  // dismisses the janitor: the campaign ended on its own
  CampaignJanitor(const CampaignJanitor&) = delete;
  CampaignJanitor& operator=(const CampaignJanitor&) = delete;

  // A process group (a spawned fuzzer and everything it starts) to kill if the campaign dies.
  void watch_group(pid_t pgid);

  // What the janitor does after the campaign's death, also callable directly (tests): kills the
  // groups, waits for them a bounded time, and cleans `dir` as described above.
  static void clean_after_death(const std::string& dir, const std::vector<pid_t>& groups);

 private:
  int write_fd_ = -1;
  pid_t pid_ = -1;
};

}  // namespace moefuzz

#pragma once
// Work on the indices 0, 1, 2, ... spread over `jobs` threads, with the results handed back on the
// calling thread in index order: what a driver commits (tallies, finding numbers, progress) is the
// same for any number of threads, because each index's work depends on the index alone and the
// commits happen one after another, in order. `moefuzz check -j N` runs its cases through this.
//
// produce(worker, index) runs on worker thread `worker` (0 .. jobs-1), after start(worker) ran once
// on that thread (a per-thread kernel, a GPU bound to the thread). commit(index, result) runs on the
// calling thread for index 0, 1, 2, ... and returns false to stop: no later index is committed, the
// workers stop claiming new indices and finish the ones they hold, whose results are dropped.
// Workers run at most `4 * jobs` indices ahead of the next commit (memory stays bounded), and at
// most max_ahead() when given (read under the lock after each commit: a driver with N results left
// to commit says so, and no work is done past them).
// An exception from produce is rethrown on the calling thread when its index comes up for commit
// (so one thrown for an index past the stop point is dropped with it); one from start is rethrown at
// once. Every worker has ended when run_in_index_order returns or throws. jobs <= 1 runs everything
// on the calling thread, interleaved: produce(0, i), commit(i), produce(0, i + 1), ...
//
// Example:
//   std::vector<int64_t> squares;
//   moefuzz::run_in_index_order<int64_t>(
//       3, [](int) {}, [](int, uint64_t i) { return static_cast<int64_t>(i * i); },
//       [&](uint64_t, int64_t& v) { squares.push_back(v); return squares.size() < 10; });
//   // squares == {0, 1, 4, ..., 81} for any jobs
#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

namespace moefuzz {

template <class Result>
void run_in_index_order(int jobs, const std::function<void(int worker)>& start,
                        const std::function<Result(int worker, uint64_t index)>& produce,
                        const std::function<bool(uint64_t index, Result& result)>& commit,
                        const std::function<uint64_t()>& max_ahead = {}) {
  if (jobs <= 1) {
    start(0);
    for (uint64_t i = 0;; ++i) {
      Result r = produce(0, i);
      if (!commit(i, r)) return;
    }
  }
  struct Done {
    std::optional<Result> result;
    std::exception_ptr error;
  };
  std::mutex m;
  std::condition_variable cv;
  std::map<uint64_t, Done> done;  // produced, not yet committed
  uint64_t next_index = 0, next_commit = 0;
  bool stop = false;
  std::exception_ptr start_error;
  const uint64_t window = 4 * static_cast<uint64_t>(jobs);

  auto worker = [&](int w) {
    try {
      start(w);
    } catch (...) {
      std::lock_guard<std::mutex> l(m);
      if (!start_error) start_error = std::current_exception();
      stop = true;
      cv.notify_all();
      return;
    }
    for (;;) {
      uint64_t i = 0;
      {
        std::unique_lock<std::mutex> l(m);
        cv.wait(l, [&] {
          return stop || next_index < next_commit + std::min(window, max_ahead ? max_ahead() : window);
        });
        if (stop) return;
        i = next_index++;
      }
      Done d;
      try {
        d.result.emplace(produce(w, i));
      } catch (...) {
        d.error = std::current_exception();
      }
      const bool failed = d.error != nullptr;
      {
        std::lock_guard<std::mutex> l(m);
        done.emplace(i, std::move(d));
      }
      cv.notify_all();
      if (failed) return;  // the commit of index i rethrows and stops everything
    }
  };
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(jobs));
  auto finish = [&] {
    {
      std::lock_guard<std::mutex> l(m);
      stop = true;
    }
    cv.notify_all();
    for (auto& t : threads)
      if (t.joinable()) t.join();
  };
  try {
    for (int w = 0; w < jobs; ++w) threads.emplace_back(worker, w);
    for (;;) {
      Done d;
      {
        std::unique_lock<std::mutex> l(m);
        cv.wait(l, [&] { return start_error != nullptr || done.count(next_commit) > 0; });
        if (start_error) std::rethrow_exception(start_error);
        auto it = done.find(next_commit);
        d = std::move(it->second);
        done.erase(it);
      }
      if (d.error) std::rethrow_exception(d.error);
      if (!commit(next_commit, *d.result)) break;
      {
        std::lock_guard<std::mutex> l(m);
        ++next_commit;
      }
      cv.notify_all();
    }
  } catch (...) {
    finish();
    throw;
  }
  finish();
}

}  // namespace moefuzz

#pragma once
// Memory shared by the cases a parallel check holds at once: a worker takes a case's estimated
// check peak (core/memory_budget.h estimate_check_bytes) before it materializes the case and gives it
// back after, waiting while the others hold too much. `check -j N` then never holds more than the
// budget, whatever N: which cases run does not change (each case alone fits, or it was refused),
// only when. A case larger than the whole budget (possible only when the budget was set below the
// refusal limit) runs alone.
//
// Example:
//   moefuzz::MemoryGate gate(moefuzz::available_memory_bytes());
//   { moefuzz::MemoryGate::Hold h(gate, estimate_check_bytes(recipe)); check_case(...); }
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace moefuzz {

class MemoryGate {
 public:
  explicit MemoryGate(int64_t budget_bytes) : free_(budget_bytes) {}

  class Hold {
   public:
    Hold(MemoryGate& gate, int64_t bytes) : gate_(gate), bytes_(bytes) { gate_.take(bytes_); }
    ~Hold() { gate_.give(bytes_); }
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;

   private:
    MemoryGate& gate_;
    int64_t bytes_;
  };

 private:
  void take(int64_t bytes) {
    std::unique_lock<std::mutex> l(m_);
    cv_.wait(l, [&] { return holders_ == 0 || bytes <= free_; });
    free_ -= bytes;
    ++holders_;
  }
  void give(int64_t bytes) {
    {
      std::lock_guard<std::mutex> l(m_);
      free_ += bytes;
      --holders_;
    }
    cv_.notify_all();
  }

  std::mutex m_;
  std::condition_variable cv_;
  int64_t free_;
  int holders_ = 0;
};

}  // namespace moefuzz

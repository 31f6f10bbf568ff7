#pragma once
// Where a check's time goes by kind of work: the kernel's runs, the oracle's evaluations and case
// generation, measured on the thread that does them. The places that do the work open a PhaseTimer;
// a driver reads the thread's totals before and after a case (the difference is that case's share).
// Nested timers count once: only the outermost open timer of a thread adds time (an oracle evaluation
// that runs inside a kernel-run timer stays a kernel run).
//
// Example:
//   const moefuzz::PhaseSeconds before = moefuzz::thread_phase_seconds();
//   { moefuzz::PhaseTimer t(moefuzz::Phase::kOracle); /* evaluate */ }
//   const moefuzz::PhaseSeconds spent = moefuzz::thread_phase_seconds() - before;   // spent.oracle > 0
#include <chrono>

namespace moefuzz {

enum class Phase { kKernel, kOracle, kGeneration };

struct PhaseSeconds {
  double kernel = 0;      // the kernel's guarded runs (preparation, the run, output checks)
  double oracle = 0;      // the oracle's evaluations
  double generation = 0;  // materializing drawn cases
  PhaseSeconds& operator+=(const PhaseSeconds& o) {
    kernel += o.kernel;
    oracle += o.oracle;
    generation += o.generation;
    return *this;
  }
  PhaseSeconds operator-(const PhaseSeconds& o) const {
    return {kernel - o.kernel, oracle - o.oracle, generation - o.generation};
  }
  double total() const { return kernel + oracle + generation; }
};

// This thread's totals since it started.
PhaseSeconds thread_phase_seconds();

class PhaseTimer {
 public:
  explicit PhaseTimer(Phase phase);
  ~PhaseTimer();
  PhaseTimer(const PhaseTimer&) = delete;
  PhaseTimer& operator=(const PhaseTimer&) = delete;

 private:
  Phase phase_;
  bool outermost_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace moefuzz

#include "core/phase_clock.h"

namespace moefuzz {
namespace {

thread_local PhaseSeconds totals;
thread_local bool timing = false;

}  // namespace

PhaseSeconds thread_phase_seconds() { return totals; }

PhaseTimer::PhaseTimer(Phase phase)
    : phase_(phase), outermost_(!timing), start_(std::chrono::steady_clock::now()) {
  timing = true;
}

PhaseTimer::~PhaseTimer() {
  if (!outermost_) return;
  timing = false;
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  switch (phase_) {
    case Phase::kKernel:
      totals.kernel += s;
      break;
    case Phase::kOracle:
      totals.oracle += s;
      break;
    case Phase::kGeneration:
      totals.generation += s;
      break;
  }
}

}  // namespace moefuzz

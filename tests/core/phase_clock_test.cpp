// PhaseTimer (core/phase_clock.h): time lands in the phase of the outermost open timer of the thread,
// once, and other threads' totals are their own.
#include "core/phase_clock.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace moefuzz {
namespace {

void busy_for(std::chrono::milliseconds d) {
  const auto end = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < end) {
  }
}

TEST(PhaseClock, TimeLandsInTheOpenPhase) {
  const PhaseSeconds before = thread_phase_seconds();
  {
    const PhaseTimer t(Phase::kOracle);
    busy_for(std::chrono::milliseconds(20));
  }
  const PhaseSeconds spent = thread_phase_seconds() - before;
  EXPECT_GE(spent.oracle, 0.019);
  EXPECT_EQ(spent.kernel, 0.0);
  EXPECT_EQ(spent.generation, 0.0);
}

TEST(PhaseClock, NestedTimersCountOnceInTheOutermostPhase) {
  const PhaseSeconds before = thread_phase_seconds();
  const auto start = std::chrono::steady_clock::now();
  {
    const PhaseTimer outer(Phase::kKernel);
    busy_for(std::chrono::milliseconds(10));
    {
      const PhaseTimer inner(Phase::kOracle);
      busy_for(std::chrono::milliseconds(10));
    }
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const PhaseSeconds spent = thread_phase_seconds() - before;
  EXPECT_EQ(spent.oracle, 0.0);
  EXPECT_GE(spent.kernel, 0.019);
  EXPECT_LE(spent.kernel, wall);  // counted once, not once per timer
  // Closed again: the next timer counts.
  {
    const PhaseTimer t(Phase::kGeneration);
    busy_for(std::chrono::milliseconds(5));
  }
  EXPECT_GE((thread_phase_seconds() - before).generation, 0.004);
}

TEST(PhaseClock, EachThreadKeepsItsOwnTotals) {
  const PhaseSeconds before = thread_phase_seconds();
  std::thread other([] {
    const PhaseTimer t(Phase::kKernel);
    busy_for(std::chrono::milliseconds(10));
  });
  other.join();
  EXPECT_EQ((thread_phase_seconds() - before).kernel, 0.0);
}

}  // namespace
}  // namespace moefuzz

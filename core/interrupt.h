#pragma once
// A process-wide "stop soon" request, set from a signal handler (SIGINT, SIGTERM) and polled by the
// long loops (campaigns, the check engine between invariants, the wait for an isolated child), so
// that an interrupted run stops at the next boundary, kills its children, prints the summary so far
// and writes its JSON instead of dying mid-write.
//
// Example:
//   moefuzz::install_interrupt_handlers();          // once, in main
//   while (!moefuzz::interrupt_requested()) step();
//   // a blocking wait that must give up:
//   if (moefuzz::interrupt_requested()) throw moefuzz::Interrupted(moefuzz::interrupt_signal());
#include <stdexcept>
#include <string>

namespace moefuzz {

// SIGINT and SIGTERM set the request (a second one of either ends the process at once with the
// signal's default action). Without SA_RESTART, so a blocking poll returns EINTR and looks.
void install_interrupt_handlers();
bool interrupt_requested();
int interrupt_signal();  // the signal that asked, 0 when none
// For tests and for code that asks itself to stop (a --time deadline is not this).
void request_interrupt(int signal_number);

// Thrown where a wait gives up because of the request: never a finding of the kernel.
class Interrupted : public std::runtime_error {
 public:
  explicit Interrupted(int signal_number)
      : std::runtime_error("interrupted by signal " + std::to_string(signal_number)),
        signal_(signal_number) {}
  int signal_number() const { return signal_; }

 private:
  int signal_;
};

}  // namespace moefuzz

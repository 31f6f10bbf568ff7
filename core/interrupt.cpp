#include "core/interrupt.h"

#include <signal.h>

#include <csignal>

namespace moefuzz {
namespace {

volatile sig_atomic_t g_signal = 0;

void on_signal(int sig) {
  if (g_signal != 0) {  // asked twice: stop now, as if no handler were installed
    signal(sig, SIG_DFL);
    raise(sig);
    return;
  }
  g_signal = sig;
}

}  // namespace

void install_interrupt_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: blocking waits return EINTR and poll the request
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

bool interrupt_requested() { return g_signal != 0; }
int interrupt_signal() { return g_signal; }
void request_interrupt(int signal_number) { g_signal = signal_number; }

}  // namespace moefuzz

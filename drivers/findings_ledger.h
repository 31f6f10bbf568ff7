#pragma once
// The findings ledger: the known findings of a project, each a saved case with the signature it fails
// with and a status, so that replaying them tells new findings and fixed bugs apart from known ones.
//
//   open           known, not yet triaged: must still fail with its signature
//   expected-fail  known and accepted (e.g. a mutant, an upstream bug): must still fail with its signature
//   fixed          must pass: a fixed bug that graduated into a regression test
//
// A failure that is not in the ledger (a new finding), a failure with another signature, a fixed entry
// that fails again, and an open or expected-fail entry that now passes (unexpected pass: mark it
// fixed) are violations. The file is JSON (docs/ledger.md); entry paths are relative to its folder.
//
// Example:
//   const FindingsLedger ledger = load_findings_ledger("corpora/ledger.json");
//   const LedgerJudgement j = ledger.judge("corpora/regressions/z1-rsf-twice.moefuzz", {"SCALE1/output"});
//   if (!j.ok) std::cout << j.message << "\n";
#include <string>
#include <vector>

namespace moefuzz {

enum class LedgerStatus { kOpen, kExpectedFail, kFixed };

struct LedgerEntry {
  std::string file;       // as written in the ledger (relative to the ledger's folder)
  std::string path;       // resolved: absolute, normalized
  std::string signature;  // INVARIANT/stage the case fails with ("" for fixed entries is allowed)
  LedgerStatus status = LedgerStatus::kOpen;
  std::string note;
};

struct LedgerJudgement {
  bool ok = true;
  std::string message;  // one line: "known (expected-fail SCALE1/output)", "NEW finding ...", ...
};

struct FindingsLedger {
  std::string path;
  std::vector<LedgerEntry> entries;
  // `failures`: the signatures of every failed verdict of the replay (empty when it passed). A known
  // entry holds when its signature is among them (a case may fail several invariants; which one is
  // checked first is registry order, not part of the finding).
  LedgerJudgement judge(const std::string& replayed_file, const std::vector<std::string>& failures) const;
  std::vector<std::string> files() const;  // every entry's resolved path, in ledger order
};

// Throws InputError (exit 2) on an unreadable or malformed ledger: unknown status, missing field,
// an entry listed twice.
FindingsLedger load_findings_ledger(const std::string& path);

}  // namespace moefuzz

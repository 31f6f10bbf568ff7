#include "drivers/findings_ledger.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "core/errors.h"

namespace moefuzz {
namespace {

namespace fs = std::filesystem;

std::string resolved(const fs::path& p) {
  std::error_code ec;
  const fs::path abs = fs::absolute(p, ec);
  return (ec ? p : abs).lexically_normal().string();
}

const char* status_name(LedgerStatus s) {
  switch (s) {
    case LedgerStatus::kOpen:
      return "open";
    case LedgerStatus::kExpectedFail:
      return "expected-fail";
    case LedgerStatus::kFixed:
      return "fixed";
  }
  return "?";
}

}  // namespace

FindingsLedger load_findings_ledger(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(fmt::format("--ledger {}: cannot open", path));
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("findings") || !j.at("findings").is_array())
    throw InputError(fmt::format("--ledger {}: not JSON of the form {{\"findings\": [...]}}", path));
  FindingsLedger ledger{.path = path};
  const fs::path folder = fs::path(path).parent_path();
  std::set<std::string> seen;
  for (const auto& e : j.at("findings")) {
    const auto text = [&](const char* key) -> std::string {
      if (!e.is_object() || !e.contains(key)) return "";
      return e.at(key).is_string() ? e.at(key).get<std::string>() : "";
    };
    LedgerEntry entry{.file = text("file"), .signature = text("signature"), .note = text("note")};
    const std::string status = text("status");
    if (entry.file.empty()) throw InputError(fmt::format("--ledger {}: an entry without \"file\"", path));
    if (status == "open") {
      entry.status = LedgerStatus::kOpen;
    } else if (status == "expected-fail") {
      entry.status = LedgerStatus::kExpectedFail;
    } else if (status == "fixed") {
      entry.status = LedgerStatus::kFixed;
    } else {
      throw InputError(fmt::format("--ledger {}: {}: status '{}' is not open, expected-fail or fixed", path,
                                   entry.file, status));
    }
    if (entry.status != LedgerStatus::kFixed && entry.signature.empty())
      throw InputError(
          fmt::format("--ledger {}: {}: a failing entry needs its \"signature\"", path, entry.file));
    entry.path = resolved(folder / entry.file);
    if (!seen.insert(entry.path).second)
      throw InputError(fmt::format("--ledger {}: {} is listed twice", path, entry.file));
    ledger.entries.push_back(entry);
  }
  return ledger;
}

std::vector<std::string> FindingsLedger::files() const {
  std::vector<std::string> out;
  for (const auto& e : entries) out.push_back(e.path);
  return out;
}

LedgerJudgement FindingsLedger::judge(const std::string& replayed_file,
                                      const std::vector<std::string>& failures) const {
  const std::string p = resolved(replayed_file);
  const LedgerEntry* entry = nullptr;
  for (const auto& e : entries)
    if (e.path == p) entry = &e;
  const bool failed = !failures.empty();
  const std::string failure_signature = failed ? failures.front() : "";
  if (entry == nullptr) {
    if (!failed) return {true, "not in the ledger; passes"};
    return {false, fmt::format("NEW finding {} (not in the ledger {}): add it with status open",
                               failure_signature, path)};
  }
  const std::string known = fmt::format("{} {}", status_name(entry->status), entry->signature);
  if (entry->status == LedgerStatus::kFixed) {
    if (!failed) return {true, "fixed: passes"};
    return {false, fmt::format("REGRESSION: the ledger says fixed, it fails with {}", failure_signature)};
  }
  if (!failed)
    return {false,
            fmt::format("UNEXPECTED PASS: the ledger says {}; if the bug is fixed, mark it fixed", known)};
  if (std::find(failures.begin(), failures.end(), entry->signature) == failures.end())
    return {false, fmt::format("CHANGED signature: the ledger says {}, it fails with {}", known,
                               fmt::join(failures, ", "))};
  return {true, "known (" + known + ")"};
}

}  // namespace moefuzz

// The upstream golden data that lives in tests/golden/ (tests/golden/README.md cites each source).
// Every clone has it, so a missing or unreadable file is a test FAILURE, never a skip: a test that
// cannot find its reference must not let ctest print "100% tests passed".
//
// Example:
//   const nlohmann::json golden = load_golden("routing_golden.json");  // throws if absent
//   for (const auto& c : golden.at("cases")) { ... }
//   expect_at_least_cases(golden, kMinRoutingGoldenCases, "routing_golden.json");
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

namespace moefuzz {

// The case counts of the files committed today are floors, not exact counts: a regenerated file
// with more cases (e.g. the held-out quarter added back) must still pass.
inline constexpr size_t kMinQuantGoldenCases = 31;
inline constexpr size_t kMinRoutingGoldenCases = 32;
inline constexpr size_t kMinRoutingCompiledCases = 20;
inline constexpr size_t kMinLayerGoldenCases = 9;

inline std::filesystem::path golden_path(const std::string& name) {
  return std::filesystem::path(MOEFUZZ_SOURCE_DIR) / "tests" / "golden" / name;
}

// Parses tests/golden/<name>; throws (GoogleTest reports the test as failed) when it is absent.
inline nlohmann::json load_golden(const std::string& name) {
  const std::filesystem::path path = golden_path(name);
  std::ifstream in(path);
  if (!in)
    throw std::runtime_error("golden file missing: " + path.string() + " (it is part of the repository)");
  return nlohmann::json::parse(in);
}

inline void expect_at_least_cases(const nlohmann::json& golden, size_t minimum, const std::string& name) {
  EXPECT_GE(golden.at("cases").size(), minimum)
      << name << " lost cases: the committed file has at least " << minimum;
}

}  // namespace moefuzz

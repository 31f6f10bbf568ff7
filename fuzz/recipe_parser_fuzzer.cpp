// recipe_parser_fuzzer: any bytes through the recipe text parser (core/recipe_text.h). Contract:
// parse_recipe never crashes and throws nothing but InputError; a text it accepts round-trips
// (to_text(parse(to_text(r))) == to_text(r)) and passes validate(). Sanitizers (fuzz preset) catch
// memory errors and UB; a contract violation is a finding (fuzz/finding.h).
#include <cstddef>
#include <cstdint>
#include <exception>
#include <random>
#include <string>
#include <string_view>

#include "core/errors.h"
#include "core/recipe_text.h"
#include "fuzz/finding.h"
#include "fuzz/recipe_mutator.h"
#include "fuzz/semantic_features.h"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size) __attribute__((weak));

namespace {

using namespace moefuzz;

void fail(const CaseRecipe& r, const std::string& stage, const std::string& message) {
  fuzz::report_finding(r, Verdict::fail("PARSER", stage, message), "recipe_parser_fuzzer");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  CaseRecipe r;
  try {
    r = parse_recipe(text, "<fuzz input>");
  } catch (const InputError&) {
    return 0;  // the only exception the contract allows
  } catch (const std::exception& e) {
    fail(CaseRecipe{}, "parse", std::string("parse_recipe threw a non-InputError exception: ") + e.what());
    return 0;
  } catch (...) {
    fail(CaseRecipe{}, "parse", "parse_recipe threw a non-std exception");
    return 0;
  }
  fuzz::note_recipe(r);
  if (const std::string why = validate(r); !why.empty()) {
    fail(r, "validate", "parse_recipe accepted a recipe validate() rejects: " + why);
    return 0;
  }
  const std::string once = to_text(r);
  try {
    const CaseRecipe back = parse_recipe(once, "<to_text>");
    if (to_text(back) != once) fail(r, "roundtrip", "to_text(parse(to_text(r))) != to_text(r)");
  } catch (const std::exception& e) {
    fail(r, "roundtrip", std::string("to_text output does not parse back: ") + e.what());
  }
  return 0;
}

// Half the mutations are structure-aware (valid recipes reach the validator and the round trip);
// the other half are libFuzzer's byte mutations, which the parser's error paths need.
extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned seed) {
  if (LLVMFuzzerMutate != nullptr && (seed & 1)) return LLVMFuzzerMutate(data, size, max_size);
  return fuzz::mutate_bytes(data, size, max_size, seed, fuzz::layer_limits());
}

extern "C" size_t LLVMFuzzerCustomCrossOver(const uint8_t* a, size_t a_size, const uint8_t* b, size_t b_size,
                                            uint8_t* out, size_t max_out, unsigned seed) {
  return fuzz::cross_bytes(a, a_size, b, b_size, out, max_out, seed, fuzz::layer_limits());
}

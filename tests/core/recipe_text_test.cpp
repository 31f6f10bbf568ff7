// The recipe text parser is strict and never crashes: each class of malformed input is an
// InputError naming origin:line and the field; arbitrary bytes give a recipe or an InputError.
#include "core/recipe_text.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "core/errors.h"

namespace moefuzz {
namespace {

// The InputError message of parsing `text`, or "" if it parsed.
std::string parse_error(std::string_view text, int64_t max_bytes = kDefaultMaxCaseBytes) {
  try {
    parse_recipe(text, "case.moefuzz", max_bytes);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

struct Malformed {
  const char* what;
  std::string text;
  std::string where;   // expected "origin:line: field 'key'" prefix
  std::string reason;  // expected substring of the reason
};

std::vector<Malformed> malformed_inputs() {
  const std::string v1 = "MOEFUZZ v1\n";
  return {
      {"empty text", "", "case.moefuzz:1:", "missing version line"},
      {"no version line", "tokens = 4\n", "case.moefuzz:1:", "missing version line"},
      {"unknown version", "MOEFUZZ v2\ntokens = 4\n", "case.moefuzz:1:", "unknown version 'MOEFUZZ v2'"},
      {"version with trailing text", "MOEFUZZ v1 extra\n", "case.moefuzz:1:", "unknown version"},
      {"unknown key", v1 + "tokens = 4\ncolour = red\n", "case.moefuzz:3:", "unknown key 'colour'"},
      {"duplicate key", v1 + "tokens = 4\ntokens = 5\n", "case.moefuzz:3: field 'tokens'",
       "duplicate key (first given on line 2)"},
      {"bad integer", v1 + "tokens = four\n", "case.moefuzz:2: field 'tokens'", "'four' is not an integer"},
      {"trailing garbage", v1 + "tokens = 4 5\n", "case.moefuzz:2: field 'tokens'", "trailing garbage '5'"},
      {"glued garbage", v1 + "hidden = 64abc\n", "case.moefuzz:2: field 'hidden'", "is not an integer"},
      {"integer overflow", v1 + "tokens = 99999999999999999999\n", "case.moefuzz:2: field 'tokens'",
       "out of range"},
      {"hex overflow", v1 + "seed = 0x1FFFFFFFFFFFFFFFF\n", "case.moefuzz:2: field 'seed'",
       "overflows 64 bits"},
      {"negative seed", v1 + "seed = -1\n", "case.moefuzz:2: field 'seed'", "not an unsigned integer"},
      {"negative size", v1 + "hidden = -16\n", "case.moefuzz:2: field 'hidden'",
       "-16 is outside [16, 1048576]"},
      {"negative shared experts", v1 + "shared_experts = -1\n", "case.moefuzz:2: field 'shared_experts'",
       "outside"},
      {"cut-off line", v1 + "tokens = ", "case.moefuzz:2: field 'tokens'", "missing value"},
      {"cut-off edit", v1 + "edit = logits 1", "case.moefuzz:2: field 'edit'", "takes 2 indices, got 0"},
      {"missing equals", v1 + "tokens 4\n", "case.moefuzz:2:", "expected `key = value`"},
      {"NUL byte", v1 + "tokens = 4\nhid" + std::string(1, '\0') + "den = 64\n",
       "case.moefuzz:3:", "NUL byte"},
      {"control byte", v1 + "tokens = \x01\n", "case.moefuzz:2:", "control byte 0x01"},
      {"non-ASCII value", v1 + "profile = caf\xC3\xA9\n", "case.moefuzz:2: field 'profile'", "non-ASCII"},
      {"line too long", v1 + "# " + std::string(5000, 'x') + "\n",
       "case.moefuzz:2:", "longer than the limit"},
      {"bad boolean", v1 + "renormalize = yes\n", "case.moefuzz:2: field 'renormalize'", "not a boolean"},
      {"bad enum", v1 + "routing = topk\n", "case.moefuzz:2: field 'routing'",
       "one of: softmax, sigmoid_grouped, hash"},
      {"real out of range", v1 + "routed_scaling_factor = 1e999\n",
       "case.moefuzz:2: field 'routed_scaling_factor'", "out of double range"},
      {"nan scaling factor", v1 + "routed_scaling_factor = nan\n",
       "case.moefuzz:2: field 'routed_scaling_factor'", "finite and > 0"},
      {"k above experts", v1 + "experts = 4\ntop_k = 5\n", "case.moefuzz:3: field 'top_k'",
       "5 exceeds experts (4)"},
      {"violation of a default", v1 + "experts = 1\n", "case.moefuzz: field 'top_k' (default 2)",
       "exceeds experts"},
      {"unknown edit tensor", v1 + "edit = weights 0 0 1\n", "case.moefuzz:2: field 'edit'",
       "unknown tensor"},
      {"edit index out of shape", v1 + "tokens = 4\nedit = logits 4 0 1.5\n", "case.moefuzz:3: field 'edit'",
       "index 0 of 'logits' is 4, outside its shape [4, 8]"},
      {"edit bad index", v1 + "edit = logits x 0 1.5\n", "case.moefuzz:2: field 'edit'", "index 0: 'x'"},
      {"edit code out of range", v1 + "edit = gate.code 0 0 0 16\n", "case.moefuzz:2: field 'edit'",
       "not an integer in 0..15"},
      {"too large", v1 + "tokens = 16777216\nhidden = 1048576\n", "case.moefuzz:", "--max-case-bytes"},
  };
}

TEST(RecipeText, EachMalformedInputClassNamesLineAndField) {
  for (const auto& m : malformed_inputs()) {
    SCOPED_TRACE(m.what);
    const std::string error = parse_error(m.text);
    ASSERT_FALSE(error.empty()) << "parsed without error";
    EXPECT_EQ(error.rfind(m.where, 0), 0u) << error;
    EXPECT_NE(error.find(m.reason), std::string::npos) << error;
  }
}

TEST(RecipeText, RejectsTooManyEdits) {
  std::string text = "MOEFUZZ v1\n";
  for (size_t i = 0; i <= kMaxEdits; ++i) text += "edit = logits 0 0 1\n";
  const std::string error = parse_error(text);
  EXPECT_EQ(error.rfind(fmt::format("case.moefuzz:{}: field 'edit'", kMaxEdits + 2), 0), 0u) << error;
  EXPECT_NE(error.find("more than"), std::string::npos) << error;
}

TEST(RecipeText, RejectsTextOverTheSizeLimit) {
  std::string text = "MOEFUZZ v1\n";
  while (text.size() <= kMaxRecipeTextBytes) text += "# padding padding padding padding padding padding\n";
  EXPECT_NE(parse_error(text).find("larger than the limit"), std::string::npos);
}

TEST(RecipeText, TooLargeCaseMessageGivesBothNumbersAndTheFlag) {
  const std::string error = parse_error("MOEFUZZ v1\ntokens = 1024\nhidden = 4096\n", /*max_bytes=*/1 << 20);
  CaseRecipe r;
  r.shape.tokens = 1024;
  r.shape.hidden = 4096;
  EXPECT_NE(error.find(std::to_string(estimate_case_bytes(r)) + " bytes"), std::string::npos) << error;
  EXPECT_NE(error.find(std::to_string(1 << 20) + " bytes"), std::string::npos) << error;
  EXPECT_NE(error.find("--max-case-bytes"), std::string::npos) << error;
}

TEST(RecipeText, AcceptsDefaultsCommentsCrlfHexAndNoFinalNewline) {
  const CaseRecipe r = parse_recipe(
      "MOEFUZZ v1\r\n# a comment\r\n\r\n  tokens = 3   # trailing comment\r\nseed = 0x10\r\n"
      "edit = gate.scale 0 1 2 0x7E\r\nedit = logits 2 7 -inf",
      "mem");
  CaseRecipe expected;
  expected.shape.tokens = 3;
  expected.seed = 16;
  expected.edits = {{"gate.scale", {0, 1, 2}, 126.0},
                    {"logits", {2, 7}, -std::numeric_limits<double>::infinity()}};
  EXPECT_EQ(r, expected);
}

TEST(RecipeText, EnumNamesRoundTrip) {
  for (uint8_t i = 0; i < 3; ++i) {
    const auto mode = static_cast<RoutingMode>(i);
    EXPECT_EQ(parse_name<RoutingMode>(name_of(mode)), mode);
  }
  EXPECT_EQ(name_of(static_cast<RoutingMode>(200)), "invalid");
  EXPECT_EQ(parse_name<LoadProfile>("nope"), std::nullopt);
  EXPECT_EQ(names_of<ScalePlacement>(), "topk, combine");
}

class RecipeFile : public ::testing::Test {
 protected:
  std::filesystem::path dir_ =
      std::filesystem::path(::testing::TempDir()) / ("recipe_text_test_" + std::to_string(::getpid()));
  void SetUp() override { std::filesystem::create_directories(dir_); }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string file_error(const std::string& path) {
    try {
      parse_recipe_file(path);
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  }
};

TEST_F(RecipeFile, MissingDirectoryAndDeviceAreInputErrors) {
  EXPECT_NE(file_error((dir_ / "absent.moefuzz").string()).find("cannot open"), std::string::npos);
  EXPECT_NE(file_error(dir_.string()).find("not a regular file"), std::string::npos);
  EXPECT_NE(file_error("/dev/zero").find("not a regular file"), std::string::npos);
}

TEST_F(RecipeFile, OversizedFileIsRejectedFromItsSize) {
  const auto path = dir_ / "big.moefuzz";
  {
    std::ofstream f(path);
    f << "MOEFUZZ v1\n";
  }
  std::filesystem::resize_file(path, kMaxRecipeTextBytes + 1);  // sparse: the size alone must reject it
  EXPECT_NE(file_error(path.string()).find("larger than the recipe limit"), std::string::npos);
}

TEST_F(RecipeFile, ReadsAndNamesTheFile) {
  const auto path = dir_ / "ok.moefuzz";
  {
    std::ofstream f(path);
    f << "MOEFUZZ v1\ntokens = 7\ntop_k = 9\n";
  }
  EXPECT_EQ(file_error(path.string()).rfind(path.string() + ":3: field 'top_k'", 0), 0u);
}

// Any bytes: a recipe or an InputError, nothing else (no crash, no other exception).
RC_GTEST_PROP(RecipeTextFuzz, ArbitraryBytesGiveARecipeOrAnInputError, (const std::string& tail)) {
  const std::string text = "MOEFUZZ v1\n" + tail;
  try {
    parse_recipe(text, "fuzz");
  } catch (const InputError&) {
  }
  try {
    parse_recipe(tail, "fuzz");
  } catch (const InputError&) {
  }
}

// Mutations of a valid text (byte flips, cuts, duplicated lines) parse or fail cleanly, and
// whatever parses is valid.
RC_GTEST_PROP(RecipeTextFuzz, MutatedValidTextGivesAValidRecipeOrAnInputError, ()) {
  CaseRecipe base;
  base.routing.mode = RoutingMode::kSigmoidGrouped;
  base.shape.n_group = 4;
  base.shape.topk_group = 2;
  base.edits = {{"logits", {1, 2}, -1e30}, {"bias", {3}, 4.5}};
  std::string text = to_text(base);
  const auto mutations = *rc::gen::inRange(1, 8);
  for (int m = 0; m < mutations; ++m) {
    const auto at = *rc::gen::inRange<size_t>(0, text.size());
    switch (*rc::gen::inRange(0, 4)) {
      case 0:
        text[at] = *rc::gen::arbitrary<char>();
        break;
      case 1:
        text.resize(at);
        break;
      case 2:
        text.insert(at, *rc::gen::element<std::string>("0", "-", "x", " ", "\n", "=", "#", "1e308", "nan"));
        break;
      default:
        text += text.substr(at, 40);
    }
    if (text.empty()) break;
  }
  try {
    const CaseRecipe r = parse_recipe(text, "fuzz");
    RC_ASSERT(validate(r).empty());
  } catch (const InputError&) {
  }
}

}  // namespace
}  // namespace moefuzz

// Edits land where they say, are checked (index per dimension, value per format) and fail with an
// InputError naming the edit, leaving the case unchanged.
#include <gtest/gtest.h>

#include <cmath>

#include "core/bf16.h"
#include "core/case.h"
#include "core/case_edits.h"
#include "core/errors.h"

namespace moefuzz {
namespace {

CaseRecipe sigmoid_recipe() {
  CaseRecipe r;
  r.shape = {.tokens = 3, .hidden = 32, .inter = 16, .experts = 4, .top_k = 2, .shared_experts = 1};
  r.routing.mode = RoutingMode::kSigmoidGrouped;
  r.quant.act_scales = ActScaleMode::kPerExpert;
  return r;
}

TEST(CaseEdits, EveryTargetLands) {
  Case c = materialize(sigmoid_recipe());
  apply_edits(c, std::vector<Edit>{
                     {"hidden", {2, 31}, 1.00390625},  // a bf16 tie: rounds to even (1.0)
                     {"logits", {1, 3}, -1e3},
                     {"bias", {2}, 7.5},
                     {"gate.code", {4, 15, 31}, 0x9},
                     {"up.code", {0, 0, 0}, 0x7},
                     {"down.code", {1, 31, 15}, 0x8},
                     {"gate.scale", {4, 15, 1}, 0x7E},
                     {"up.scale", {0, 0, 0}, 0x01},
                     {"down.scale", {1, 31, 0}, 0xFF},
                     {"gate.global", {2}, 0.125},
                     {"up.global", {2}, 0.25},
                     {"down.global", {4}, INFINITY},
                     {"a1_scale", {4}, 0.0},
                     {"a2_scale", {0}, NAN},
                 });
  EXPECT_EQ(bf16_to_float(c.hidden[2 * 32 + 31]), 1.0f);
  EXPECT_EQ(c.logits[1 * 4 + 3], -1000.0f);
  EXPECT_EQ(c.bias[2], 7.5f);
  EXPECT_EQ(c.experts[4].gate.code(15, 31), 0x9);
  EXPECT_EQ(c.experts[0].up.code(0, 0), 0x7);
  EXPECT_EQ(c.experts[1].down.code(31, 15), 0x8);
  EXPECT_EQ(c.experts[4].gate.scale(15, 1), 0x7E);
  EXPECT_EQ(c.experts[0].up.scale(0, 0), 0x01);
  EXPECT_EQ(c.experts[1].down.scale(31, 0), 0xFF);
  EXPECT_EQ(c.experts[2].gate.global_dequant, 0.125f);
  EXPECT_EQ(c.experts[2].up.global_dequant, 0.25f);
  EXPECT_TRUE(std::isinf(c.experts[4].down.global_dequant));
  EXPECT_EQ(c.a1_scale[4], 0.0f);
  EXPECT_TRUE(std::isnan(c.a2_scale[0]));
}

TEST(CaseEdits, HashTargetsAndOrder) {
  CaseRecipe r;
  r.routing.mode = RoutingMode::kHash;
  Case c = materialize(r);
  const int64_t vocab = r.hash_vocab();
  apply_edits(c, std::vector<Edit>{{"token_ids", {3}, static_cast<double>(vocab - 1)},
                                   {"hash_table", {vocab - 1, 1}, 5},
                                   {"hash_table", {vocab - 1, 1}, 6}});  // later edits win
  EXPECT_EQ(c.token_ids[3], vocab - 1);
  EXPECT_EQ(c.hash_table[static_cast<size_t>((vocab - 1) * r.shape.top_k + 1)], 6);
}

TEST(CaseEdits, MaterializeAppliesRecipeEditsLast) {
  CaseRecipe r = sigmoid_recipe();
  r.edits = {{"a1_scale", {1}, 3.0}, {"hidden", {0, 0}, 1e30}};
  const Case c = materialize(r);
  EXPECT_EQ(c.a1_scale[1], 3.0f);
  EXPECT_EQ(bf16_to_float(c.hidden[0]), round_to_bf16(1e30f));
  // The calibrated scales are drawn before the edit: they equal the unedited case's.
  CaseRecipe plain = r;
  plain.edits.clear();
  EXPECT_EQ(c.a2_scale, materialize(plain).a2_scale);
}

void expect_rejected(const Case& original, const Edit& bad, const std::string& needle) {
  Case c = original;
  try {
    apply_edits(c, std::vector<Edit>{{"logits", {0, 0}, 1.0}, bad});
    ADD_FAILURE() << "accepted: " << bad.tensor;
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("edit #2"), std::string::npos) << what;
    EXPECT_NE(what.find(needle), std::string::npos) << what;
  }
  // The bad edit changed nothing (the good one before it did).
  Case expected = original;
  apply_edit(expected, {"logits", {0, 0}, 1.0}, 0);
  EXPECT_TRUE(c == expected) << bad.tensor;
}

TEST(CaseEdits, BadEditsAreRejectedNamingTheEdit) {
  const Case c = materialize(sigmoid_recipe());
  expect_rejected(c, {"hidden", {3, 0}, 1.0}, "outside [0, 3)");
  expect_rejected(c, {"hidden", {0, -1}, 1.0}, "index 1");
  expect_rejected(c, {"hidden", {0}, 1.0}, "takes 2 indices");
  expect_rejected(c, {"gate.code", {5, 0, 0}, 1}, "outside [0, 5)");
  expect_rejected(c, {"gate.code", {0, 0, 0}, 16}, "E2M1 code");
  expect_rejected(c, {"gate.code", {0, 0, 0}, 1.5}, "E2M1 code");
  expect_rejected(c, {"down.scale", {0, 0, 1}, 1}, "outside [0, 1)");
  expect_rejected(c, {"up.scale", {0, 0, 0}, 256}, "E4M3 byte");
  expect_rejected(c, {"up.scale", {0, 0, 0}, NAN}, "E4M3 byte");
  expect_rejected(c, {"a1_scale", {5}, 1.0}, "outside [0, 5)");
  expect_rejected(c, {"token_ids", {0}, 1}, "outside [0, 0)");  // not a hash case
  expect_rejected(c, {"weights", {0}, 1}, "unknown tensor");
  expect_rejected(c, {"gate.bogus", {0}, 1}, "unknown tensor");

  CaseRecipe h;
  h.routing.mode = RoutingMode::kHash;
  const Case hc = materialize(h);
  expect_rejected(hc, {"hash_table", {0, 0}, static_cast<double>(h.shape.experts)}, "expert id");
  expect_rejected(hc, {"token_ids", {0}, static_cast<double>(h.hash_vocab())}, "token id");
  expect_rejected(hc, {"bias", {0}, 1.0}, "outside [0, 0)");
}

}  // namespace
}  // namespace moefuzz

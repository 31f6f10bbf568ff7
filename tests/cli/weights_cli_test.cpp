// Real weights through the CLI (docs/weights.md): `check --weights --inputs` on a checkpoint the test
// writes, the finding it writes (absolute paths, SHA-256 pins) replayed and shrunk by slicing, a
// changed file refused, and bad files or flags as one message with exit 2.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/run_moefuzz.h"
#include "core/case.h"
#include "core/file_text.h"
#include "core/recipe_text.h"
#include "core/sha256.h"
#include "support/modelopt_checkpoint.h"

namespace {

namespace fs = std::filesystem;
using namespace moefuzz;

constexpr const char* kMutant = "mutant/z1-rsf-twice";

class WeightsCli : public ::testing::Test {
 protected:
  fs::path dir_ = fs::path(::testing::TempDir()) / ("weights_cli_test_" + std::to_string(::getpid()));
  fs::path weights_ = dir_ / "layer.safetensors", inputs_ = dir_ / "captured.safetensors";
  Case source_;
  void SetUp() override {
    ASSERT_TRUE(fs::exists(MOEFUZZ_BINARY_DIR "/bin/moefuzz")) << "build the moefuzz target first";
    fs::create_directories(dir_);
    CaseRecipe r;
    r.seed = 5;
    r.shape = {.tokens = 8,
               .hidden = 64,
               .inter = 32,
               .experts = 8,
               .top_k = 2,
               .n_group = 4,
               .topk_group = 2,
               .shared_experts = 1};
    r.routing.mode = RoutingMode::kSigmoidGrouped;
    source_ = materialize(r);
    write_safetensors(weights_, modelopt_layer_tensors(source_, {.layer = 3, .router = true}));
    write_safetensors(inputs_, captured_input_tensors(source_));
  }
  void TearDown() override { fs::remove_all(dir_); }
  static RunResult run(const std::vector<std::string>& args) { return run_moefuzz(args, 120); }
  static void expect_usage_error(const RunResult& r, const std::string& needle) {
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find(needle), std::string::npos) << r.output;
  }
};

TEST_F(WeightsCli, CheckReplayAndShrinkARealLayer) {
  const RunResult ok =
      run({"check", "--kernel", "cpu", "--weights", weights_.string(), "--inputs", inputs_.string(),
           "--cases", "12", "--seed", "1", "--out", (dir_ / "ok").string()});
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_NE(ok.output.find("layer 3 (8 experts + 1 shared, hidden 64, inter 32)"), std::string::npos)
      << ok.output;
  EXPECT_NE(ok.output.find("(8 tokens, router logits)"), std::string::npos) << ok.output;

  const fs::path out = dir_ / "findings";
  const RunResult bad = run({"check", "--kernel", kMutant, "--weights", weights_.string(), "--inputs",
                             inputs_.string(), "--cases", "40", "--seed", "1", "--out", out.string()});
  ASSERT_EQ(bad.exit_code, 1) << bad.output;
  fs::path finding;
  for (const auto& e : fs::directory_iterator(out))
    if (e.path().extension() == ".moefuzz") finding = e.path();
  ASSERT_FALSE(finding.empty());
  const std::string text = moefuzz::file_text(finding);
  const std::string abs_weights = fs::absolute(weights_).lexically_normal().string();
  EXPECT_NE(text.find("weights = " + abs_weights + "\nweights_sha256 = " + sha256_file(weights_.string()) +
                      "\nweights_layer = 3\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("inputs = " + fs::absolute(inputs_).lexically_normal().string() +
                      "\ninputs_sha256 = " + sha256_file(inputs_.string())),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("experts = 8\n"), std::string::npos) << text;

  // The finding replays from another directory (absolute paths), and fails again.
  const RunResult again = run({"replay", finding.string()});
  EXPECT_EQ(again.exit_code, 1) << again.output;
  EXPECT_NE(again.output.find("CHECK FAILED"), std::string::npos) << again.output;

  // Shrinking slices the real tensors: the minimized recipe still names the pinned files.
  const fs::path min = dir_ / "min.moefuzz";
  const RunResult shrunk = run({"shrink", finding.string(), "-o", min.string(), "--time", "60", "-q"});
  ASSERT_EQ(shrunk.exit_code, 0) << shrunk.output;
  const CaseRecipe m = parse_recipe_file(min.string());
  EXPECT_EQ(m.files.weights, abs_weights);
  EXPECT_EQ(m.files.weights_sha256, sha256_file(weights_.string()));
  EXPECT_LT(m.shape.experts * m.shape.hidden * m.shape.inter * m.shape.tokens, 8 * 64 * 32 * 8)
      << moefuzz::file_text(min);
  const Case small = materialize(m);
  for (size_t e = 0; e < static_cast<size_t>(m.shape.experts); ++e)
    for (int64_t i = 0; i < m.shape.inter; ++i)
      for (int64_t h = 0; h < m.shape.hidden; ++h)
        ASSERT_EQ(small.experts[e].gate.code(i, h), source_.experts[e].gate.code(i, h));
  EXPECT_EQ(run({"replay", min.string()}).exit_code, 1);

  // The weights change: the finding is refused (exit 2) naming both hashes ...
  write_safetensors(weights_, modelopt_layer_tensors(source_, {.layer = 3, .input_scales = false}));
  expect_usage_error(run({"replay", finding.string()}), "but the recipe pins");
  expect_usage_error(run({"shrink", finding.string(), "-o", (dir_ / "x.moefuzz").string()}),
                     "but the recipe pins");
  // ... unless the user names the file to check against.
  const RunResult chosen = run({"replay", finding.string(), "--weights", weights_.string()});
  ASSERT_EQ(chosen.exit_code, 1) << "the mutant fails on the other weights too\n" << chosen.output;
  // Its REPRO names the same file, so it replays as printed (without it, the pins would refuse).
  const std::string repro = repro_line(chosen.output);
  EXPECT_NE(repro.find("--weights " + abs_weights), std::string::npos) << repro;
  std::string output;
  EXPECT_EQ(run_shell_in(fs::temp_directory_path().string(), repro, &output), 1) << repro << "\n" << output;
}

TEST_F(WeightsCli, BadFilesAndFlagsAreExit2) {
  { std::ofstream(dir_ / "junk.safetensors") << "this is not a safetensors file at all"; }
  expect_usage_error(run({"check", "--weights", (dir_ / "junk.safetensors").string(), "--cases", "1"}),
                     "exceeds the limit");
  {
    std::ofstream trunc(dir_ / "trunc.safetensors", std::ios::binary);
    const std::string whole = moefuzz::file_text(weights_);
    trunc << whole.substr(0, whole.size() / 2);
  }
  expect_usage_error(run({"check", "--weights", (dir_ / "trunc.safetensors").string(), "--cases", "1"}),
                     "outside the");
  expect_usage_error(run({"check", "--weights", weights_.string(), "--layer", "9", "--cases", "1"}),
                     "MoE layers in the file: 3");
  expect_usage_error(run({"check", "--layer", "3", "--cases", "1"}), "--layer needs --weights");
  expect_usage_error(run({"check", "--weights", (dir_ / "absent.safetensors").string(), "--cases", "1"}),
                     "cannot open");
  // Inputs whose hidden size differs from the layer's.
  CaseRecipe wide;
  wide.shape.hidden = 128;
  write_safetensors(dir_ / "wide.safetensors", captured_input_tensors(materialize(wide), false));
  expect_usage_error(run({"check", "--weights", weights_.string(), "--inputs",
                          (dir_ / "wide.safetensors").string(), "--cases", "1"}),
                     "has hidden size 128");
  // Weights given as inputs: the missing tensor is named.
  expect_usage_error(run({"check", "--inputs", weights_.string(), "--cases", "1"}),
                     "no tensor 'hidden_states'");
}

}  // namespace

#pragma once
// OracleRowMemo: the stage intervals of expanded rows the oracle has already evaluated, keyed by
// everything one row's pipeline (quantize -> gemm1 -> activation -> quantize2 -> gemm2, oracles/
// stages/) reads, so a later evaluation that meets the same row takes it instead of recomputing it
// (issue #13: evaluations cached by case content plus the kernel's decisions).
//
// A row (token t routed to expert e) reads: t's hidden row, e's weights and activation scales (by
// content, not index), the layer's formats, dimensions and SwiGLU, the profile, and - for kernel rows -
// the kernel's exposed quantized FC1/FC2 codes of that row (FP8: its exposed FP8 rows) and, with bf16
// activations, its exposed activation row. Nothing else: not the routing weight (the combine applies
// it), not routed_scaling_factor, not the other tokens, not the expert's index. So the metamorphic
// invariants' transformed cases meet the base case's rows again: every row of PERM (experts relabeled),
// BATCH (tokens reordered or dropped), SCALE1 and WEIGHT1 (other weights), and the rows of every
// expert GSCALE did not rescale. A stage's value for a row does not depend on the other rows it is
// evaluated with (the flip magnitudes' summation order is fixed per row: oracles/exact_dot.h), so a
// memoized row is the fresh row, bit for bit; tests/properties/oracle_reuse_test.cpp shows it on a
// sweep.
//
// A row whose key misses may still find its GEMM1 intervals (find_gemm1): the activation and GEMM2
// then run on them. Keys are 128-bit content hashes (core/content_hasher.h). A memo belongs to one profile
// (evaluations under another ignore it) and holds at most `max_bytes` of rows (later rows are not
// kept); CheckContext keeps one per base case.
//
// Example:
//   moefuzz::OracleRowMemo memo(profile);
//   moefuzz::OracleEvaluation a = moefuzz::evaluate(c, profile, run, &memo);
//   moefuzz::OracleEvaluation b = moefuzz::evaluate(permuted, profile, permuted_run, &memo);  // rows reused
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "core/case.h"
#include "core/content_hasher.h"
#include "core/layer_io.h"
#include "core/profile.h"

namespace moefuzz {

class OracleRowMemo {
 public:
  static constexpr int64_t kDefaultMaxBytes = int64_t{256} << 20;
  explicit OracleRowMemo(const Profile& p, int64_t max_bytes = kDefaultMaxBytes)
      : profile_(&p), max_bytes_(max_bytes) {}

  struct Key {
    uint64_t a = 0, b = 0;
    bool operator==(const Key&) const = default;
  };
  // One row's intervals: GEMM2 output [H] lo and hi, then (when `intermediates`) the expectation and
  // bound of its gemm1 [2I], activation [I] and gemm2 [H] stage rows.
  struct Row {
    bool intermediates = false;
    std::vector<double> values;
  };

  const Profile& profile() const { return *profile_; }
  // The row stored under k (nullptr: none, or one without the intermediates asked for).
  const Row* find(const Key& k, bool need_intermediates);
  void insert(const Key& k, Row row);
  int64_t hits() const { return hits_; }
  int64_t misses() const { return misses_; }
  int64_t bytes() const { return bytes_; }

  // GEMM1 rows alone, for evaluations whose rows differ only after GEMM1 (PARAM's SwiGLU limit; the key
  // holds the whole expert's content, so not GSCALE's rescaled down projection): the gate and up
  // intervals [gate lo, hi][up lo, hi] (I each),
  // then (when `intermediates`) the gemm1 stage row's expectation and bound (2I each). Keyed by what
  // the quantize and gemm1 stages read (OracleRowKeys::gemm1_key); the same byte budget.
  const Row* find_gemm1(const Key& k, bool need_intermediates);
  void insert_gemm1(const Key& k, Row row);
  int64_t gemm1_hits() const { return gemm1_hits_; }

 private:
  struct KeyHash {
    size_t operator()(const Key& k) const { return static_cast<size_t>(k.a); }
  };
  const Profile* profile_;
  int64_t max_bytes_;
  int64_t bytes_ = 0, hits_ = 0, misses_ = 0, gemm1_hits_ = 0;
  std::unordered_map<Key, Row, KeyHash> rows_, gemm1_rows_;
  void store(std::unordered_map<Key, Row, KeyHash>& map, const Key& k, Row row);
};

// The keys of one evaluation's rows: what reference_layer's stages read for row `er` of expert e.
class OracleRowKeys {
 public:
  // kernel: the run the evaluation is conditioned on (nullptr: none).
  OracleRowKeys(const Case& c, const Profile& p, const LayerResult* kernel);
  OracleRowMemo::Key key(int64_t token, int64_t slot, int32_t expert);
  // What the quantize (FC1) and gemm1 stages read for the row: key() without the SwiGLU parameters,
  // the FC2 exposures and the activation row.
  OracleRowMemo::Key gemm1_key(int64_t token, int64_t slot, int32_t expert);

 private:
  OracleRowMemo::Key row_key(int64_t token, int64_t slot, int32_t expert, bool gemm1_only);
  const Case& c_;
  const LayerResult* kernel_;
  Hash128 context_, gemm1_context_;
  std::vector<std::optional<Hash128>> expert_hash_;  // [E + shared], hashed when first needed
  bool activation_row_read_ = false;
};

}  // namespace moefuzz

#pragma once
// The FP8 block-scaled W8A8 branch of the quantization and GEMM stages (SPEC-formats.md §1; derivation:
// oracles/fp8_act_envelope.h, oracles/fp8_block_gemm.h; docs/oracle.md, "FP8 block-scaled layer").
// Internal to oracles/stages: quantize.cpp / quantize2.cpp fill Fp8Operands, gemm1.cpp / gemm2.cpp read
// them.
//
// An expert's quantized input rows are E4M3 codes with one fp32 scale per row and 128 columns: the
// kernel's own where it exposes them and they are admitted (conditioned: exact), else the profile
// variant's quantization of the input (FC1: of the exact bf16 row; FC2: of the activation interval's
// fp32 centres), each element then carrying `deviation`, a bound on how far a correct kernel's q s may
// lie from these operands' (kTriton FC1: fp8_point_deviation; FC2: the interval's radius plus the
// envelope error of the kernel's quantization and of the centres').
//
// Example:
//   moefuzz::stages::Fp8Operands ops(n, H);
//   if (!moefuzz::stages::fp8_quantize_point_row("fc1_quant", er, j, x, model, exposed, ops, fail))
//     return fail;
//   const moefuzz::stages::Fp8GemmOperands g(ops);   // once per expert and GEMM stage
//   moefuzz::stages::fp8_gemm_rows(g, j0, na, weights, o, contract, out);
#include <cstdint>
#include <span>
#include <vector>

#include "core/fp8_block_quant.h"
#include "core/verdict.h"
#include "oracles/fp8_act_envelope.h"
#include "oracles/fp8_block_gemm.h"
#include "oracles/stages/stage_types.h"

namespace moefuzz::stages {

struct Fp8Operands {
  int64_t rows = 0, cols = 0;
  std::vector<uint8_t> codes;          // rows * cols
  std::vector<float> scales;           // rows * cols / 128
  std::vector<double> deviation;       // rows * cols; all zero where conditioned or exact
  std::vector<uint8_t> has_deviation;  // rows: some deviation of the row is nonzero
  std::vector<double> scale_max;       // rows * cols / 128 where has_deviation: the kernel's largest scale
  std::vector<uint8_t> indeterminate;  // rows: nothing can be said (non-finite input)
  Fp8Operands(int64_t n, int64_t k)
      : rows(n),
        cols(k),
        codes(static_cast<size_t>(n * k)),
        scales(static_cast<size_t>(n * (k / kFp8ActivationGroup))),
        deviation(static_cast<size_t>(n * k)),
        has_deviation(static_cast<size_t>(n)),
        scale_max(static_cast<size_t>(n * (k / kFp8ActivationGroup))),
        indeterminate(static_cast<size_t>(n)) {}
  std::span<const float> row_scales(int64_t j) const {
    const int64_t g = cols / kFp8ActivationGroup;
    return {scales.data() + j * g, static_cast<size_t>(g)};
  }
};

// A kernel's exposed FP8 row: cols codes and cols / 128 scales (null codes: nothing exposed).
struct Fp8ExposedRow {
  const uint8_t* codes = nullptr;
  const float* scales = nullptr;
};

// FC1: row j from the exact input x (one row, cols values). Returns false (and sets `fail`, stage
// `stage`) when the exposed row is inadmissible.
bool fp8_quantize_point_row(const char* stage, const ExpandedRow& er, int64_t j, std::span<const float> x,
                            const Fp8ActQuantModel& m, Fp8ExposedRow exposed, Fp8Operands& out,
                            Verdict& fail);

// FC2: row j from the activation interval [lo, hi] with centres `center` (one row each). A row with a
// non-finite end is indeterminate.
bool fp8_quantize_interval_row(const char* stage, const ExpandedRow& er, int64_t j,
                               std::span<const double> lo, std::span<const double> hi,
                               std::span<const double> center, const Fp8ActQuantModel& m,
                               Fp8ExposedRow exposed, Fp8Operands& out, Verdict& fail);

// Activation rows fp8_gemm_rows takes per call: each weight row is decoded once per call for all of
// them (fp8_block_dot_rows shares one decode among up to 8 rows).
inline constexpr int kFp8GemmRows = 8;

// What fp8_gemm_rows reads of an expert's operands, prepared once per GEMM stage: the decoded codes
// and the deviations again with the rows of each aligned group of kFp8GemmRows interleaved (element
// i of rows 8g .. 8g+7 side by side), so one call sums |w_i| dev_i for all its rows at once.
struct Fp8GemmOperands {
  explicit Fp8GemmOperands(const Fp8Operands& operands);
  const Fp8Operands& a;
  DecodedFp8 decoded;
  std::vector<double> deviation_lanes;  // [ceil(rows / 8)][cols][8]; empty when no row has a deviation
};

// Rows j0 .. j0+na-1 (1 <= na, all in one aligned group: j0 % kFp8GemmRows + na <= kFp8GemmRows)
// against output row o of weights w ([N, K]): out[r] = the interval of a correct kernel's fp32
// accumulator (NaN: nothing said).
void fp8_gemm_rows(const Fp8GemmOperands& in, int64_t j0, int na, const Fp8BlockQuantized& w, int64_t o,
                   const Fp8BlockGemmContract& contract, Interval* out);

// The contract of the profile's FP8 fields.
Fp8BlockGemmContract fp8_contract(int mma_accum_bits, int dots_per_block);

}  // namespace moefuzz::stages

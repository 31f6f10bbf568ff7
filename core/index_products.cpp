#include "core/index_products.h"

#include "core/swizzle.h"

namespace moefuzz {

std::string_view index_product_name(IndexProduct p) {
  switch (p) {
    case IndexProduct::kExpertW13:
      return "expert-w13";
    case IndexProduct::kExpertW2:
      return "expert-w2";
    case IndexProduct::kExpertScales:
      return "expert-scales";
    case IndexProduct::kPermutation:
      return "permutation";
    case IndexProduct::kExpandedInput:
      return "expanded-input";
    case IndexProduct::kGemm1Out:
      return "gemm1-out";
    case IndexProduct::kFc2Input:
      return "fc2-input";
    case IndexProduct::kGemm2Out:
      return "gemm2-out";
    case IndexProduct::kCombineOut:
      return "combine-out";
  }
  return "?";
}

std::string_view index_product_stage(IndexProduct p) {
  switch (p) {
    case IndexProduct::kExpertW13:
    case IndexProduct::kExpertScales:
    case IndexProduct::kPermutation:
    case IndexProduct::kExpandedInput:
    case IndexProduct::kGemm1Out:
      return "gemm1";
    case IndexProduct::kExpertW2:
    case IndexProduct::kFc2Input:
    case IndexProduct::kGemm2Out:
      return "gemm2";
    case IndexProduct::kCombineOut:
      return "combine";
  }
  return "?";
}

bool is_expert_product(IndexProduct p) {
  return p == IndexProduct::kExpertW13 || p == IndexProduct::kExpertW2 || p == IndexProduct::kExpertScales;
}

int64_t index_stride(IndexProduct p, const CaseRecipe& r) {
  const int64_t H = r.shape.hidden, I = r.shape.inter;
  const bool fp8 = r.quant.weights == WeightFormat::kFp8Block;
  switch (p) {
    // Packed NVFP4 bytes (two codes a byte), bf16 elements or FP8 bytes (one code a byte) per expert.
    case IndexProduct::kExpertW13:
      return r.quant.weights == WeightFormat::kBf16 || fp8 ? 2 * I * H : 2 * I * H / 2;
    case IndexProduct::kExpertW2:
      return r.quant.weights == WeightFormat::kBf16 || fp8 ? H * I : H * I / 2;
    case IndexProduct::kExpertScales:  // FP8: the fp32 128x128 block scales of w13
      return fp8 ? (2 * I / 128) * (H / 128) : padded_rows_128x4(2 * I) * padded_scale_cols_128x4(H / 16);
    case IndexProduct::kPermutation:
      return 1;
    case IndexProduct::kExpandedInput:  // packed NVFP4 bytes, or one FP8 code a byte
      return fp8 ? H : H / 2;
    case IndexProduct::kGemm1Out:
      return 2 * I;
    case IndexProduct::kFc2Input:
      return fp8 ? I : I / 2;
    case IndexProduct::kGemm2Out:
      return H;
    case IndexProduct::kCombineOut:
      return H;
  }
  return 1;
}

int64_t window_first_index(IndexProduct p, const IndexWindow& w, int64_t slots) {
  if (is_expert_product(p)) return w.expert_base;
  if (p == IndexProduct::kCombineOut) return w.token_base;
  return w.token_base * slots;
}

int64_t formed_offset(int64_t index, int64_t stride, int64_t col, IndexWidth width) {
  if (width == IndexWidth::k64) return index * stride + col;
  // The 32-bit register's value, computed without signed-overflow UB.
  const uint32_t wrapped =
      static_cast<uint32_t>(index) * static_cast<uint32_t>(stride) + static_cast<uint32_t>(col);
  return width == IndexWidth::kUint32 ? static_cast<int64_t>(wrapped)
                                      : static_cast<int64_t>(static_cast<int32_t>(wrapped));
}

int64_t window_offset(int64_t first, int64_t local, int64_t stride, int64_t col, int64_t extent,
                      IndexWidth width) {
  if (width == IndexWidth::k64) return local * stride + col;
  const int64_t size = extent * stride;
  const int64_t at = formed_offset(first + local, stride, col, width) - first * stride;
  return at >= 0 && at < size ? at : -1;
}

}  // namespace moefuzz

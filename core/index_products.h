#pragma once
// The index products an MoE pipeline forms (BUGZOO Z7: one of them computed in int32 wraps past 2^31),
// their strides for a shape (every weight format), and the index window that lets OVF probe them
// without materializing a 2^31-element tensor.
//
// An index window places a small case inside a large logical index space: its tokens are tokens
// [token_base, token_base + T) of a longer batch (a chunk at a token offset, exactly Z7's
// `stride * token_offset`), its experts are experts [expert_base, expert_base + E + S) of a larger
// arena (an expert-parallel shard's local experts). A kernel that honours the window forms every
// product on the LOGICAL index and subtracts the window's start (formed once, in int64, by whoever
// owns the allocation) to reach the rows it holds. A correct kernel therefore computes exactly what it
// computes without a window; a kernel that forms one product in 32 bits reads or writes another
// row of the allocation once the logical product crosses 2^31 (or 2^32).
//
// Example:
//   moefuzz::IndexWindow w{.token_base = 1 << 20};
//   int64_t stride = moefuzz::index_stride(moefuzz::IndexProduct::kGemm1Out, recipe);  // 2I
//   int64_t first = moefuzz::window_first_index(moefuzz::IndexProduct::kGemm1Out, w, recipe.slots());
//   int64_t at = moefuzz::formed_offset(first + r, stride, col, moefuzz::IndexWidth::kInt32);
#include <array>
#include <cstdint>
#include <string_view>

#include "core/recipe.h"

namespace moefuzz {

enum class IndexProduct : uint8_t {
  // Strides are per NVFP4 layout; the other weight formats' element strides follow in parentheses.
  kExpertW13,  // expert x packed w13 bytes (2I x H/2; bf16 and FP8 block weights: 2I x H elements):
               // gemm1 arena
  kExpertW2,   // expert x packed w2 bytes (H x I/2; bf16 and FP8 block weights: H x I elements): gemm2 arena
  kExpertScales,   // expert x w13 block-scale bytes, swizzled 128x4 and padded (pad128(2I) x pad4(H/16));
                   // FP8 block weights: one fp32 scale per 128x128 block ((2I/128) x (H/128))
  kPermutation,    // expanded row = token x slots + slot: the permutation / top-k arrays (T x k)
  kExpandedInput,  // expanded row x packed FC1 input bytes (H/2; FP8 W8A8: H E4M3 codes): the permuted,
                   // quantized rows
  kGemm1Out,       // expanded row x 2I: gemm1's output
  kFc2Input,       // expanded row x packed FC2 input bytes (I/2; FP8 W8A8: I E4M3 codes): the quantized
                   // activation
  kGemm2Out,       // expanded row x H: gemm2's output
  kCombineOut,     // token x H: the combine / sum-reduce output
};
inline constexpr int kIndexProducts = 9;

// How an offset is formed: in 64 bits (correct), or in a 32-bit register that wraps (signed at 2^31,
// unsigned at 2^32).
enum class IndexWidth : uint8_t { k64, kInt32, kUint32 };

struct IndexWindow {
  int64_t token_base = 0;   // the case's token 0 is logical token token_base
  int64_t expert_base = 0;  // the case's expert 0 is logical expert expert_base
  bool operator==(const IndexWindow&) const = default;
  bool empty() const { return token_base == 0 && expert_base == 0; }
};

// Per-product widths: all k64 for a correct kernel; a mutant narrows one.
using IndexWidths = std::array<IndexWidth, kIndexProducts>;

std::string_view index_product_name(IndexProduct p);   // "expert-w13", "gemm1-out", ...
std::string_view index_product_stage(IndexProduct p);  // the stage that forms it: "gemm1", "combine", ...
bool is_expert_product(IndexProduct p);                // indexed by expert (else by token or row)

// Units (bytes or elements) one step of the product's index advances, for the recipe's shape.
int64_t index_stride(IndexProduct p, const CaseRecipe& r);

// The logical index of the window's first unit for product p: expert_base, token_base, or
// token_base x slots for expanded-row products.
int64_t window_first_index(IndexProduct p, const IndexWindow& w, int64_t slots);

// index x stride + col as the kernel forms it: exact in k64; wrapped two's-complement for kInt32;
// modulo 2^32 for kUint32.
int64_t formed_offset(int64_t index, int64_t stride, int64_t col, IndexWidth width);

// Where unit `local` (0-based in the window), column `col`, lands in the window's buffer of `extent`
// units x stride: formed_offset(first + local) - first x stride. Exactly local x stride + col for k64.
// -1 when a wrapped offset falls outside the window: the access reaches memory of another allocation
// (the caller models that as a lost store, or a read of another unit's data).
int64_t window_offset(int64_t first, int64_t local, int64_t stride, int64_t col, int64_t extent,
                      IndexWidth width);

}  // namespace moefuzz

#pragma once
// The C view (include/moefuzz/plugin.h) of a case for a plugin: moefuzz_case_desc and tensor
// descriptors over host memory. Shared by the host path (plugin_kernel.cpp) and the device path
// (device_plugin.cpp, which swaps each tensor's data for a device copy).
//
// Example (in the isolated child):
//   moefuzz::CaseView view(c.recipe, plugin.profile);   // configuration fields only
//   view.attach(c, opts);                               // + tensors over c's host storage
//   plugin.api->layer(&view.desc, &out);
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "core/case.h"
#include "core/layer_io.h"
#include "kernels/composed_pipeline.h"
#include "kernels/kernel.h"
#include "moefuzz/plugin.h"

namespace moefuzz {

// A dense row-major tensor descriptor over `data` (strides in elements).
moefuzz_tensor make_tensor(const void* data, moefuzz_dtype dtype, std::initializer_list<int64_t> shape);
moefuzz_nvfp4 make_nvfp4(const Nvfp4Matrix& m);
// Bytes of a dense tensor described by `t` (FP4X2, E4M3: 1 byte per element; BF16: 2; F32, I32: 4).
size_t tensor_bytes(const moefuzz_tensor& t);

// The C view of a recipe (and, once materialized, of a Case). Holds the storage the pointers in
// `desc` refer to, so it is neither copied nor moved.
class CaseView {
 public:
  CaseView(const CaseRecipe& r, const std::string& claimed_profile);
  CaseView(const CaseView&) = delete;
  CaseView& operator=(const CaseView&) = delete;
  void attach(const Case& c, const RunOptions& opts);

  moefuzz_case_desc desc{};
  std::vector<moefuzz_expert> experts;  // desc.expert_weights points here

 private:
  std::string profile_;
  std::string recipe_profile_;
};

// A stage's returned message; "" for NULL (success). Bounded: the pointer comes from the plugin.
std::string stage_message(const char* stage, const char* msg);

// The CANARY poison as a float.
float poison_value(const RunOptions& opts);

// A GEMM's activation operand as ABI tensors: NVFP4 rows, or bf16 rows (a_scales NONE).
struct GemmOperand {
  moefuzz_tensor codes{};
  moefuzz_tensor scales{};
};
GemmOperand gemm_operand(const GemmInput& a);

}  // namespace moefuzz

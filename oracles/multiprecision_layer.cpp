#include "oracles/multiprecision_layer.h"

#include <algorithm>

#include <boost/multiprecision/cpp_bin_float.hpp>

#include "core/bf16.h"
#include "core/e2m1.h"
#include "core/e4m3.h"
#include "core/errors.h"
#include "core/fp4_packing.h"

namespace moefuzz {
namespace {

using Mp = boost::multiprecision::cpp_bin_float_50;

Mp operand(const QuantizedRows& q, int64_t row, int64_t i) {
  return Mp(e2m1_to_float(fp4_code_at(q.packed.data() + row * q.cols / 2, i))) *
         Mp(e4m3_to_float(q.scales[static_cast<size_t>(row * q.cols / 16 + i / 16)]));
}
Mp weight(const Nvfp4Matrix& m, int64_t r, int64_t i) {
  return Mp(e2m1_to_float(m.code(r, i))) * Mp(e4m3_to_float(m.scale(r, i / 16)));
}
Mp swiglu_mp(const Mp& gate, const Mp& up, const Swiglu& s) {
  const Mp lim(s.limit);
  const Mp g = s.limit < 1e300 ? std::min(gate, lim) : gate;
  Mp v = s.limit < 1e300 ? std::max(-lim, std::min(up, lim)) : up;
  v += Mp(s.beta);
  return g / (1 + exp(-Mp(s.alpha) * g)) * v;
}

}  // namespace

MultiprecisionLayer multiprecision_layer(const Case& c, const RoutingDecision& routing,
                                         const QuantizedRows& fc1, const QuantizedRows& fc2,
                                         bool rsf_in_combine) {
  const int64_t T = c.recipe.shape.tokens, H = c.recipe.shape.hidden, I = c.recipe.shape.inter,
                S = routing.slots;
  if (fc1.rows != T * S || fc1.cols != H || fc2.rows != T * S || fc2.cols != I)
    throw InputError("multiprecision_layer: quantized rows do not match the case");
  MultiprecisionLayer out;
  out.gemm1.resize(static_cast<size_t>(T * S * 2 * I));
  out.activation.resize(static_cast<size_t>(T * S * I));
  out.gemm2.resize(static_cast<size_t>(T * S * H));
  out.output.assign(static_cast<size_t>(T * H), 0.0);
  std::vector<Mp> acc(static_cast<size_t>(T * H));
  for (int64_t r = 0; r < T * S; ++r) {
    const int32_t e = routing.ids[static_cast<size_t>(r)];
    const ExpertWeights& w = c.experts[static_cast<size_t>(e)];
    const Mp sda1 = 1 / Mp(c.a1_scale_for(e)), sda2 = 1 / Mp(c.a2_scale_for(e));
    std::vector<Mp> a(static_cast<size_t>(H));
    for (int64_t i = 0; i < H; ++i) a[static_cast<size_t>(i)] = operand(fc1, r, i);
    for (int64_t o = 0; o < I; ++o) {
      Mp g = 0, u = 0;
      for (int64_t i = 0; i < H; ++i) {
        g += a[static_cast<size_t>(i)] * weight(w.gate, o, i);
        u += a[static_cast<size_t>(i)] * weight(w.up, o, i);
      }
      g *= sda1 * Mp(w.gate.global_dequant);
      u *= sda1 * Mp(w.up.global_dequant);
      out.gemm1[static_cast<size_t>(r * 2 * I + o)] = g.convert_to<double>();
      out.gemm1[static_cast<size_t>(r * 2 * I + I + o)] = u.convert_to<double>();
      out.activation[static_cast<size_t>(r * I + o)] = swiglu_mp(g, u, c.recipe.swiglu).convert_to<double>();
    }
    const Mp wr = Mp(routing.weights[static_cast<size_t>(r)]) *
                  (rsf_in_combine ? Mp(static_cast<float>(c.recipe.routing.routed_scaling_factor)) : Mp(1));
    for (int64_t o = 0; o < H; ++o) {
      Mp y = 0;
      for (int64_t i = 0; i < I; ++i) y += operand(fc2, r, i) * weight(w.down, o, i);
      y *= sda2 * Mp(w.down.global_dequant);
      out.gemm2[static_cast<size_t>(r * H + o)] = y.convert_to<double>();
      acc[static_cast<size_t>((r / S) * H + o)] += wr * y;
    }
  }
  for (size_t i = 0; i < acc.size(); ++i) out.output[i] = acc[i].convert_to<double>();
  return out;
}

}  // namespace moefuzz

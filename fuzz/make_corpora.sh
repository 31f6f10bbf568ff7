#!/usr/bin/env bash
# Writes the hand-made seed inputs of each fuzz target into corpora/<target>/, each file named by the
# SHA-1 of its content (libFuzzer's own naming, so merged corpora never duplicate a seed). Idempotent.
# The layer and routing seeds are corpora/examples/*.moefuzz shrunk to small shapes (the targets clamp
# to their limits anyway; a small seed keeps its meaning after the clamp).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
seed() {  # seed TARGET  (content on stdin)
  local tmp; tmp="$(mktemp)"; cat > "$tmp"
  local sha; sha="$(sha1sum "$tmp" | cut -d' ' -f1)"
  mkdir -p "$root/corpora/$1"; mv "$tmp" "$root/corpora/$1/$sha"; chmod 644 "$root/corpora/$1/$sha"
}
# Small versions of the model examples (DeepSeek-V3 grouped sigmoid, V4 hash, Mixtral, Qwen3, hostile).
dsv3='MOEFUZZ v1
seed = 1
tokens = 4
hidden = 64
inter = 32
experts = 16
top_k = 4
n_group = 8
topk_group = 4
shared_experts = 1
routing = sigmoid_grouped
routed_scaling_factor = 2.5
act_scales = per_expert'
hash='MOEFUZZ v1
seed = 4
tokens = 4
hidden = 64
inter = 32
experts = 16
top_k = 3
shared_experts = 1
routing = hash
hash_score = sqrt_softplus
routed_scaling_factor = 1.5
vocab = 16
swiglu_limit = 10
values.table = duplicates
edit = token_ids 0 7
edit = hash_table 7 0 12
edit = hash_table 7 1 12'
mixtral='MOEFUZZ v1
seed = 5
tokens = 8
hidden = 128
inter = 64
experts = 8
top_k = 2
routing = softmax'
qwen3='MOEFUZZ v1
seed = 3
tokens = 8
hidden = 80
inter = 48
experts = 16
top_k = 4
routing = softmax
renormalize = false'
hostile='MOEFUZZ v1
seed = 666
tokens = 8
hidden = 64
inter = 32
experts = 16
top_k = 4
n_group = 4
topk_group = 2
shared_experts = 1
routing = sigmoid_grouped
routed_scaling_factor = 2.5
shared_fusion = fused
values.logits = very_negative
values.bias = dominant
values.weights = tiny_scales
values.act_scale = far
edit = logits 0 3 -inf
edit = logits 1 5 nan
edit = gate.scale 2 0 1 0x00
edit = down.scale 0 5 0 0x01'
combine='MOEFUZZ v1
seed = 9
tokens = 5
hidden = 48
inter = 16
experts = 4
top_k = 2
routing = softmax
routed_scaling_factor = 2.5
scale_placement = combine
activations = bf16
values.hidden = thresholds
values.load = zero_token_experts'
for s in "$dsv3" "$hash" "$mixtral" "$qwen3" "$hostile" "$combine"; do
  printf '%s\n' "$s" | seed moe_layer_fuzzer
  printf '%s\n' "$s" | seed recipe_parser_fuzzer
done
for f in "$root"/corpora/examples/*.moefuzz; do seed recipe_parser_fuzzer < "$f"; done
printf 'MOEFUZZ v1\ntokens = 4\nedit = hidden 0 0 inf # trailing\r\n' | seed recipe_parser_fuzzer
printf 'MOEFUZZ v1\ntokens = 0x10\nrouted_scaling_factor = 1e-30\nswiglu_limit = inf\n' | seed recipe_parser_fuzzer
# Routing: every mode with the hostile logit profiles.
for mode in softmax sigmoid_grouped hash; do
  for logits in ties near_ties very_negative large; do
    printf 'MOEFUZZ v1\nseed = 7\ntokens = 16\nhidden = 16\ninter = 16\nexperts = 32\ntop_k = 4\nn_group = 4\ntopk_group = 2\nrouting = %s\nrouted_scaling_factor = 2.5\nvalues.logits = %s\n' \
      "$mode" "$logits" | seed routing_fuzzer
  done
done
printf '%s\n' "$dsv3" | seed routing_fuzzer
printf '%s\n' "$hash" | seed routing_fuzzer
# NVFP4: rows at E2M1 thresholds, zero blocks, outliers, far activation scales; raw blocks of bytes.
for hidden in thresholds zero_blocks outliers token_spread; do
  for act in calibrated far; do
    printf 'MOEFUZZ v1\nseed = 11\ntokens = 1\nhidden = 64\ninter = 16\nexperts = 1\ntop_k = 1\nvalues.hidden = %s\nvalues.act_scale = %s\nedit = hidden 0 3 5\nedit = hidden 0 17 nan\n' \
      "$hidden" "$act" | seed nvfp4_fuzzer
  done
done
# raw: n = 16, S_q = 1.0f (0x3F800000), values 0.25, 0.75, ... as bf16 (0x3E80, 0x3F40, ...)
printf '\x00\x00\x00\x80\x3f\x80\x3e\x40\x3f\xa0\x3f\xe0\x3f\x20\x40\x60\x40\xa0\x40\xc0\x40\x80\xbe\x40\xbf\xa0\xbf\xe0\xbf\x20\xc0\x60\xc0\xa0\xc0\xc0\xc0' | seed nvfp4_fuzzer
# raw: n = 32, S_q = 2688 (0x45280000), huge and tiny bf16 values, inf, nan
printf '\x01\x00\x00\x28\x45\x7f\x7f\x80\x7f\xc0\x7f\x01\x00\x80\x00\xff\xff\x00\x80\x80\xff' | seed nvfp4_fuzzer

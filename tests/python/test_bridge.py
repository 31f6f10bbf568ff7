"""The Python bridge end to end through the CLI: a correct numpy kernel passes, the seed scenario is caught
(SCALE1, applied 2x), shrunk and replayed, and tensors cross the process boundary once per content."""
from __future__ import annotations

from pathlib import Path


def test_reference_stages_pass(moefuzz, tmp_path):
    r = moefuzz("check", "--kernel", "py:examples.python.numpy_stages:stages", "--cases", 60, "--seed", 3,
                "--out", tmp_path / "out")
    assert r.rc == 0, r.out
    inv = r.summary["invariants"]
    assert r.summary["cases"] == 60
    # Not vacuous: the oracle and the scale invariant compared real outputs on most cases.
    assert inv["ORACLE"]["pass"] >= 50 and inv["SCALE1"]["pass"] >= 50, inv


def test_seed_scenario_caught_shrunk_replayed(moefuzz, tmp_path):
    out = tmp_path / "out"
    r = moefuzz("check", "--kernel", "py:examples.python.seed_scenario:layer", "--cases", 30, "--seed", 1,
                "--out", out)
    assert r.rc == 1, r.out
    assert "applied 2x" in r.out, r.out
    scale1 = [f for f in r.summary["findings"] if f["signature"].startswith("SCALE1")]
    assert scale1, r.summary["findings"]
    finding = scale1[0]["recipe"]
    assert "REPRO:" in r.out and "py:examples.python.seed_scenario:layer" in r.out

    shrunk = tmp_path / "shrunk.moefuzz"
    s = moefuzz("shrink", finding, "--kernel", "py:examples.python.seed_scenario:layer", "-o", shrunk)
    assert s.rc == 0, s.out
    text = shrunk.read_text()
    assert "tokens = 1\n" in text, text
    rep = moefuzz("replay", shrunk, "--kernel", "py:examples.python.seed_scenario:layer")
    assert rep.rc == 1, rep.out
    assert "SCALE1" in rep.out and "applied 2x" in rep.out, rep.out


def test_weights_cross_once_per_content(moefuzz, tmp_path):
    # The seed scenario's stages need no weights; the gemm kernel needs them on every call: one case checked by
    # invariants that all run the same case must send its weights exactly once.
    trace = tmp_path / "trace.txt"
    r = moefuzz("check", "--kernel", "py:examples.python.numpy_gemm:gemm", "--cases", 4, "--seed", 2,
                "--invariants", "ORACLE,REPEAT,CANARY,FINITE", "--out", tmp_path / "out",
                env={"MOEFUZZ_WORKER_TRACE": str(trace)})
    assert r.rc in (0, 1), r.out
    lines = [l.split() for l in trace.read_text().splitlines()]
    puts = [l for l in lines if l[1] == "put" and l[2] == "weights"]
    gemm_calls = [l for l in lines if l[1] == "call" and l[2] == "gemm1"]
    assert len(gemm_calls) >= 3 * r.summary["cases"], lines
    assert len(puts) == r.summary["cases"], puts
    assert len({p[3] for p in puts}) == len(puts)  # never the same content twice


def test_bf16_weights_reach_a_kernel_that_lists_them(moefuzz, tmp_path):
    # numpy_gemm lists weight_formats ("nvfp4", "bf16"): on bf16-weight cases it receives w_gate / w_up / w_down
    # as [E+S, N, K] arrays and must pass the oracle; numpy_stages reads no weights and runs on every case.
    r = moefuzz("check", "--kernel", "py:examples.python.numpy_gemm:gemm", "--cases", 80, "--seed", 5,
                "--invariants", "ORACLE", "--out", tmp_path / "out")
    assert r.rc == 0, r.out
    oracle = r.summary["invariants"]["ORACLE"]
    assert oracle["pass"] >= 60, oracle
    bf16 = [f for f in (tmp_path / "out").rglob("*.moefuzz")]
    assert not bf16, bf16  # no findings written


def test_kernel_without_bf16_declines_bf16_weights(moefuzz, tmp_path):
    recipe = tmp_path / "bf16.moefuzz"
    recipe.write_text("MOEFUZZ v1\nseed = 3\ntokens = 4\nhidden = 64\ninter = 32\nexperts = 4\ntop_k = 2\n"
                      "activations = bf16\nweight_format = bf16\n")
    ok = moefuzz("replay", recipe, "--kernel", "py:examples.python.numpy_gemm:gemm")
    assert ok.rc == 0, ok.out
    # The same GEMM kernel listing only NVFP4 weights: declined with the reason, never a finding.
    (tmp_path / "nvfp4_only_gemm.py").write_text(
        "from examples.python.numpy_gemm import NumpyGemm\n\n"
        "class Nvfp4Only(NumpyGemm):\n    weight_formats = ('nvfp4',)\n\n\ngemm = Nvfp4Only()\n")
    declined = moefuzz("replay", recipe, "--kernel", "py:nvfp4_only_gemm:gemm",
                       env={"PYTHONPATH": f"{tmp_path}:{Path(__file__).resolve().parents[2]}"})
    assert declined.rc != 1, declined.out
    assert "weight_formats" in declined.out, declined.out


def test_mxfp4_weights_reach_a_kernel_that_lists_them(moefuzz, tmp_path):
    # numpy_gemm lists "mxfp4": on MXFP4-weight cases it receives Mxfp4Weights (packed codes, E8M0 scales) and
    # must pass the oracle.
    r = moefuzz("check", "--kernel", "py:examples.python.numpy_gemm:gemm", "--weight-format", "mxfp4", "--cases", 20,
                "--seed", 5, "--invariants", "ORACLE", "--out", tmp_path / "out")
    assert r.rc == 0, r.out
    oracle = r.summary["invariants"]["ORACLE"]
    assert oracle["pass"] >= 10, oracle


def test_fp8_layer_that_exposes_nothing_is_checked_not_crashed(moefuzz, tmp_path):
    # A whole layer may omit the optional 4th value (its FP8 activations) on FP8 cases. This one returns zeros:
    # every case is an ORACLE finding (exit 1), never a crash of moefuzz, with several jobs sharing the kernel.
    (tmp_path / "zero_fp8_layer.py").write_text(
        "import numpy as np\n\n"
        "class ZeroLayer:\n"
        "    name = 'zero-fp8-layer'\n    profile = 'vllm'\n    description = 'zeros'\n    tensors = 'numpy'\n"
        "    weight_formats = ('fp8_block',)\n\n"
        "    def layer(self, case):\n"
        "        ids = np.tile(np.arange(case.slots, dtype=np.int32) % case.experts, (case.tokens, 1))\n"
        "        w = np.zeros((case.tokens, case.slots), np.float32)\n"
        "        return np.zeros((case.tokens, case.hidden), np.float32), ids, w\n\n\n"
        "layer = ZeroLayer()\n")
    r = moefuzz("check", "--kernel", "py:zero_fp8_layer:layer", "--weight-format", "fp8_block", "--cases", 6,
                "--seed", 3, "-j", 3, "--invariants", "ORACLE,STRUCT", "--out", tmp_path / "out",
                env={"PYTHONPATH": f"{tmp_path}:{Path(__file__).resolve().parents[2]}"})
    assert r.rc == 1, r.out
    assert r.summary["cases"] == 6, r.summary
    assert "ORACLE" in r.out, r.out


def test_expert_biases_reach_a_kernel_that_adds_them(moefuzz, tmp_path):
    # A gpt-oss-like MXFP4 layer with expert biases (b1, b2): numpy_gemm sets expert_bias and adds them (ORACLE
    # passes), a subclass without expert_bias declines the case, one that drops b1 (SPEC-formats M5) is a finding.
    recipe = tmp_path / "biased.moefuzz"
    recipe.write_text("MOEFUZZ v1\nseed = 4\ntokens = 6\nhidden = 64\ninter = 64\nexperts = 4\ntop_k = 2\n"
                      "activations = bf16\nweight_format = mxfp4\nswiglu_limit = 7\nswiglu_alpha = 1.702\n"
                      "swiglu_beta = 1\nexpert_bias = true\n")
    env = {"PYTHONPATH": f"{tmp_path}:{Path(__file__).resolve().parents[2]}"}
    ok = moefuzz("replay", recipe, "--kernel", "py:examples.python.numpy_gemm:gemm", "--invariants", "ORACLE")
    assert ok.rc == 0, ok.out
    assert "ORACLE" in ok.out and "pass" in ok.out, ok.out
    (tmp_path / "bias_variants.py").write_text(
        "from examples.python.numpy_gemm import NumpyGemm\n\n"
        "class NoBias(NumpyGemm):\n    expert_bias = False\n\n\n"
        "class DropsB1(NumpyGemm):\n"
        "    def gemm1(self, case, topk_ids, a_codes, a_scales):\n"
        "        return self._matmul(case, topk_ids, a_codes, a_scales, [(case.w_gate, 0, None), (case.w_up, case.inter, None)],\n"
        "                            case.a1_scale, case.contract['bf16_after_gemm1'])\n\n\n"
        "no_bias = NoBias()\ndrops_b1 = DropsB1()\n")
    declined = moefuzz("replay", recipe, "--kernel", "py:bias_variants:no_bias", env=env)
    assert declined.rc != 1, declined.out
    assert "expert_bias" in declined.out, declined.out
    dropped = moefuzz("replay", recipe, "--kernel", "py:bias_variants:drops_b1", "--invariants", "ORACLE", env=env)
    assert dropped.rc == 1, dropped.out
    assert "ORACLE" in dropped.out, dropped.out

"""The worker process that hosts a Python kernel for moefuzz (`--kernel py:MODULE:ATTR`).

moefuzz starts `python3 -m moefuzz.worker --kernel MODULE:ATTR --fd N` (kernels/python_worker.cpp) and talks to
it over the socket on descriptor N (moefuzz/wire.py). The worker imports the kernel once, greets with its
description, then answers requests:

  supports  {config}                       -> {ok, reason}
  put       {kind: inputs|weights, key}    -> {ok}              tensors cached under their content key
  call      {stage, config, inputs, weights, tensors...} -> {ok, tensors} | {ok: false, class, message}

Error classes: "error" (a Python exception), "oom", "device-error" (CUDA: the worker exits after replying, so
that the next case gets a fresh CUDA context), "bad-result" (wrong type, shape or dtype; inputs modified in
place), "missing" (a content key it does not hold: moefuzz sends it and asks again), "usage" (the kernel is
unusable as declared: moefuzz exits 2). Nothing here is specific to one kernel.
"""
from __future__ import annotations

import argparse
import collections
import importlib
import os
import socket
import sys
import threading
import time
import traceback

import numpy as np

from . import formats, wire
from .case import Case, TensorConverter
from .kernel import KernelSpecError, describe_kernel

_STAGE_ARGS = {
    "layer": (),
    "route": (),
    "quantize": ("x", "global_scale"),
    "gemm1": ("topk_ids", "a_codes", "a_scales"),
    "activation": ("gemm1_out",),
    "gemm2": ("topk_ids", "a_codes", "a_scales"),
    "combine": ("gemm2_out", "topk_ids", "topk_weights"),
}
# Outputs per stage: (name, kind) with kind float -> f32, ids -> i32, u8 -> bytes (codes or E4M3 scales).
_STAGE_OUTPUTS = {
    "layer": (("output", "float"), ("topk_ids", "ids"), ("topk_weights", "float")),
    "route": (("topk_ids", "ids"), ("topk_weights", "float")),
    "quantize": (("codes", "u8"), ("scales", "u8")),
    "gemm1": (("out", "float"),),
    "activation": (("out", "float"),),
    "gemm2": (("out", "float"),),
    "combine": (("output", "float"),),
}
# How many distinct inputs / weights the worker keeps (content-addressed, least recently used out).
_MAX_INPUTS = 8
_MAX_WEIGHTS = 2


class BadResult(Exception):
    pass


def _expected_shapes(stage: str, cfg: dict, args: dict) -> dict:
    T, H, I, slots = cfg["tokens"], cfg["hidden"], cfg["inter"], cfg["slots"]
    R = T * slots
    if stage == "quantize":
        rows, k = args["x"][1].shape
        return {"codes": (rows, k // 2), "scales": (rows, k // 16)}
    return {
        "layer": {"output": (T, H), "topk_ids": (T, slots), "topk_weights": (T, slots)},
        "route": {"topk_ids": (T, slots), "topk_weights": (T, slots)},
        "gemm1": {"out": (R, 2 * I)},
        "activation": {"out": (R, I)},
        "gemm2": {"out": (R, H)},
        "combine": {"output": (T, H)},
    }[stage]


def _to_numpy(x, name: str, stage: str) -> np.ndarray:
    if isinstance(x, np.ndarray):
        return x
    mod = type(x).__module__
    if mod.startswith("torch"):
        import torch

        t = x.detach()
        if t.dtype == torch.bfloat16:
            return t.float().cpu().numpy()  # exact: every bf16 value is an fp32 value
        if t.dtype in (torch.float8_e4m3fn,):
            return t.view(torch.uint8).cpu().numpy()
        if t.dtype == torch.float16:
            return t.float().cpu().numpy()
        return t.cpu().numpy()
    if isinstance(x, (list, tuple)) or np.isscalar(x):
        raise BadResult(f"{stage} returned {name} as {type(x).__name__}, expected a tensor or array")
    try:
        return np.asarray(x)
    except Exception as exc:  # noqa: BLE001
        raise BadResult(f"{stage} returned {name} as {type(x).__name__}: {exc}") from exc


def _exposed_fp8(cfg: dict, exposed) -> list:
    """A whole layer's optional 4th value: {"fc1_fp8": (codes, scales), "fc2_fp8": (codes, scales)}, the FP8
    GEMM inputs as the kernel quantized them (act_format fp8_group), one row per (token, slot) in t*slots+s
    order: codes [T*slots, K] E4M3 bytes, scales [T*slots, K/128] float (K = H for FC1, I for FC2). The oracle
    admits them against its own quantization and then checks the GEMMs on them (docs/python.md)."""
    if not isinstance(exposed, dict) or not set(exposed) <= {"fc1_fp8", "fc2_fp8"}:
        raise BadResult("layer's 4th value must be a dict with keys among fc1_fp8, fc2_fp8")
    if cfg.get("act_format") != "fp8_group":
        raise BadResult("layer exposed FP8 activations on a case whose act_format is not fp8_group")
    rows = cfg["tokens"] * cfg["slots"]
    out = []
    for key, k in (("fc1_fp8", cfg["hidden"]), ("fc2_fp8", cfg["inter"])):
        if key not in exposed:
            continue
        pair = exposed[key]
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise BadResult(f"layer exposed {key} as {type(pair).__name__}, expected (codes, scales)")
        codes, scales = _to_numpy(pair[0], key + " codes", "layer"), _to_numpy(pair[1], key + " scales", "layer")
        if tuple(codes.shape) != (rows, k) or codes.dtype.itemsize != 1:
            raise BadResult(f"layer exposed {key} codes as {codes.dtype} {list(codes.shape)}, expected E4M3 bytes "
                            f"{[rows, k]}")
        if tuple(scales.shape) != (rows, k // 128) or scales.dtype.kind != "f":
            raise BadResult(f"layer exposed {key} scales as {scales.dtype} {list(scales.shape)}, expected float "
                            f"{[rows, k // 128]}")
        out.append((key + ".codes", "u8", np.ascontiguousarray(codes.view(np.uint8))))
        out.append((key + ".scales", "f32", np.ascontiguousarray(scales.astype(np.float32, copy=False))))
    return out


def _normalize(stage: str, cfg: dict, args: dict, result):
    """The stage's return value as wire tensors, checked against the stage's contract."""
    outputs = _STAGE_OUTPUTS[stage]
    extra = []
    if stage == "layer" and isinstance(result, (tuple, list)) and len(result) == len(outputs) + 1:
        extra = _exposed_fp8(cfg, result[-1])
        result = result[:-1]
    if len(outputs) == 1:
        result = (result,)
    if not isinstance(result, (tuple, list)) or len(result) != len(outputs):
        raise BadResult(f"{stage} must return {len(outputs)} value(s) ({', '.join(n for n, _ in outputs)}), "
                        f"got {type(result).__name__}")
    shapes = _expected_shapes(stage, cfg, args)
    out = []
    for (name, kind), value in zip(outputs, result):
        arr = _to_numpy(value, name, stage)
        if tuple(arr.shape) != tuple(shapes[name]):
            raise BadResult(f"{stage} returned {name} of shape {list(arr.shape)}, expected {list(shapes[name])}")
        if kind == "float":
            if arr.dtype.kind != "f":
                raise BadResult(f"{stage} returned {name} as {arr.dtype}, expected a floating-point tensor")
            out.append((name, "f32", arr.astype(np.float32, copy=False)))
        elif kind == "ids":
            if arr.dtype.kind not in "iu":
                raise BadResult(f"{stage} returned {name} as {arr.dtype}, expected integer ids")
            if arr.size and (arr.min() < np.iinfo(np.int32).min or arr.max() > np.iinfo(np.int32).max):
                raise BadResult(f"{stage} returned {name} with values outside int32")
            out.append((name, "i32", arr.astype(np.int32, copy=False)))
        else:
            if arr.dtype.itemsize != 1:
                raise BadResult(f"{stage} returned {name} as {arr.dtype}, expected bytes (uint8 / float8_e4m3fn)")
            out.append((name, "u8", arr.view(np.uint8)))
    return out + extra


def _classify(exc: BaseException) -> str:
    """'oom', 'device-error' or 'error' for an exception raised by the kernel."""
    if isinstance(exc, MemoryError):
        return "oom"
    name = type(exc).__name__
    text = str(exc)
    if name in ("OutOfMemoryError",) or "out of memory" in text.lower():
        return "oom"
    if name in ("AcceleratorError", "CudaError", "CUDARuntimeError") or any(
            s in text for s in ("CUDA error", "device-side assert", "illegal memory access", "an illegal instruction",
                                "unspecified launch failure", "cudaError")):
        return "device-error"
    return "error"


class Worker:
    def __init__(self, spec: str, sock: socket.socket):
        self.spec = spec
        self.sock = sock
        self.kernel = None
        self.desc = None
        self.convert = None
        self.inputs = collections.OrderedDict()   # key -> (raw {name: (dtype, arr)}, converted {name: tensor})
        self.weights = collections.OrderedDict()

    # ---- start ------------------------------------------------------------------------------------------
    def greet(self) -> bool:
        try:
            module_name, _, attr = self.spec.partition(":")
            module = importlib.import_module(module_name)
            obj = module
            for part in attr.split("."):
                obj = getattr(obj, part)
            self.kernel, self.desc = describe_kernel(obj, default_name=attr)
            self.convert = TensorConverter(self.desc["tensors"], self.desc["device"])
        except KernelSpecError as exc:
            wire.send(self.sock, {"error": f"Python kernel 'py:{self.spec}': {exc}"})
            return False
        except BaseException as exc:  # noqa: BLE001 - an import that fails in any way is bad input
            tb = traceback.format_exc(limit=8)
            wire.send(self.sock, {"error": f"Python kernel 'py:{self.spec}': cannot load {self.spec}: "
                                           f"{type(exc).__name__}: {exc}\n{tb}"})
            return False
        versions = {"python": sys.version.split()[0], "numpy": np.__version__}
        if "torch" in sys.modules:
            versions["torch"] = sys.modules["torch"].__version__
        wire.send(self.sock, {"kernel": self.desc, "versions": versions})
        return True

    # ---- requests ---------------------------------------------------------------------------------------
    def serve(self) -> None:
        trace = os.environ.get("MOEFUZZ_WORKER_TRACE")  # one line per request, for tests and debugging
        while True:
            header, tensors = wire.recv(self.sock)
            op = header.get("op")
            if trace:
                with open(trace, "a") as f:
                    f.write(f"{os.getpid()} {op} {header.get('kind') or header.get('stage') or ''} "
                            f"{header.get('key') or header.get('weights') or ''}\n")
            if op == "supports":
                self.reply_supports(header)
            elif op == "put":
                self.reply_put(header, tensors)
            elif op == "call":
                self.reply_call(header, tensors)
            else:
                wire.send(self.sock, {"ok": False, "class": "usage", "message": f"unknown request {op!r}"})

    def reply_supports(self, header) -> None:
        cfg = header["config"]
        try:
            reason = self.kernel.supports(Case(cfg, {}, {}, self.convert))
        except Exception as exc:  # noqa: BLE001
            self.fail(_classify(exc), f"supports() raised {type(exc).__name__}: {exc}", traceback.format_exc(limit=8))
            return
        if reason is not None and not isinstance(reason, str):
            reason = str(reason)
        wire.send(self.sock, {"ok": True, "reason": reason or None})

    def reply_put(self, header, tensors) -> None:
        cache, limit = (self.inputs, _MAX_INPUTS) if header["kind"] == "inputs" else (self.weights, _MAX_WEIGHTS)
        cache.pop(header["key"], None)
        while len(cache) >= limit:
            cache.popitem(last=False)
        try:
            converted = {name: self.convert(dtype, arr) for name, (dtype, arr) in tensors.items()}
        except Exception as exc:  # noqa: BLE001 - moving the case to the kernel's device failed
            self.fail(_classify(exc), f"moving the case to {self.desc['device']} failed: {exc}",
                      traceback.format_exc(limit=4))
            return
        cache[header["key"]] = (tensors, converted)
        wire.send(self.sock, {"ok": True})

    def lookup(self, cache, key, kind):
        if key is None:
            return ({}, {})
        entry = cache.get(key)
        if entry is None:
            wire.send(self.sock, {"ok": False, "class": "missing", "kind": kind})
            return None
        cache.move_to_end(key)
        return entry

    def reply_call(self, header, tensors) -> None:
        stage = header["stage"]
        cfg = header["config"]
        inputs = self.lookup(self.inputs, header.get("inputs"), "inputs")
        if inputs is None:
            return
        weights = self.lookup(self.weights, header.get("weights"), "weights")
        if weights is None:
            return
        hidden_bits = inputs[0]["hidden_states"][1] if "hidden_states" in inputs[0] else None
        case = Case(cfg, inputs[1], weights[1], self.convert, hidden_bits)
        args = [self.convert(*tensors[n]) if n in tensors else None for n in _STAGE_ARGS[stage]]
        fn = getattr(self.kernel, stage)
        start = time.perf_counter()
        try:
            result = fn(case, *args)
            self.synchronize()
            self.kernel_seconds = time.perf_counter() - start
            out = _normalize(stage, cfg, tensors, result)
        except BadResult as exc:
            self.fail("bad-result", str(exc))
            return
        except Exception as exc:  # noqa: BLE001 - every kernel exception is a finding of its class
            self.fail(_classify(exc), f"{type(exc).__name__}: {exc}", traceback.format_exc(limit=12))
            return
        modified = self.modified_inputs(inputs, weights)
        if modified:
            self.inputs.pop(header.get("inputs"), None)
            self.weights.pop(header.get("weights"), None)
            self.fail("bad-result", f"{stage} modified its input tensor(s) in place: {', '.join(modified)}")
            return
        wire.send(self.sock, {"ok": True, "kernel_seconds": self.kernel_seconds}, out)

    def synchronize(self) -> None:
        # Asynchronous CUDA errors surface here, attributed to the call that caused them.
        if self.desc["tensors"] == "torch" and self.desc["device"].startswith("cuda"):
            import torch

            torch.cuda.synchronize()

    def modified_inputs(self, *entries) -> list:
        """Names of cached tensors whose content no longer matches the bytes moefuzz sent (the kernel wrote
        its inputs). The converted tensors are copies, so the received bytes stay the reference."""
        bad = []
        for raw, converted in entries:
            for name, (dtype, arr) in raw.items():
                sent = formats.bf16_bits_to_float(arr) if (dtype == "bf16" and self.convert.kind == "numpy") else arr
                if _bits_of(converted[name]) != sent.tobytes():
                    bad.append(name)
        return bad

    def fail(self, cls: str, message: str, tb: str = "") -> None:
        wire.send(self.sock, {"ok": False, "class": cls, "message": message, "traceback": tb})
        if cls == "device-error":
            # The CUDA context is unusable after a sticky error: leave, moefuzz starts a fresh worker.
            os._exit(3)


def _bits_of(t) -> bytes:
    """The bytes of a numpy array or a torch tensor (any device), to compare bit for bit (NaN == NaN)."""
    if isinstance(t, np.ndarray):
        return t.tobytes()
    import torch

    as_int = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()]
    return t.detach().view(as_int).cpu().numpy().tobytes()


def _watch_parent(parent: int) -> None:
    # moefuzz died (even by SIGKILL): leave. The socket's EOF covers most cases; this covers a kernel stuck
    # in a long computation that never reads it.
    while True:
        time.sleep(1.0)
        if os.getppid() != parent:
            os._exit(0)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m moefuzz.worker")
    parser.add_argument("--kernel", required=True, help="MODULE:ATTR")
    parser.add_argument("--fd", type=int, required=True, help="socket descriptor moefuzz passed")
    args = parser.parse_args(argv)
    threading.Thread(target=_watch_parent, args=(os.getppid(),), daemon=True).start()
    sock = socket.socket(fileno=args.fd)
    worker = Worker(args.kernel, sock)
    if not worker.greet():
        return 0
    profile_path = os.environ.get("MOEFUZZ_WORKER_PROFILE")  # cProfile statistics of the worker, for tuning
    profiler = None
    if profile_path:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    try:
        worker.serve()
    except wire.ChannelClosed:
        pass
    if profiler is not None:
        profiler.disable()
        profiler.dump_stats(profile_path)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""moefuzz adapters for real upstream MoE kernels (our code; upstream packages are installed at
run time and never vendored). Importing this package imports no upstream code.

| module | upstream function | stage | profile |
|---|---|---|---|
| sglang_biased_grouped_topk (`kernel`, `cutlass_fp4`) | sglang topk.biased_grouped_topk_impl (torch.compile) | route | sglang-triton / sglang-cutlass-fp4 |
| sglang_fused_topk_deepseek (`kernel`, `cutlass_fp4`) | sglang topk.biased_grouped_topk_gpu -> flashinfer fused_topk_deepseek (CUDA, JIT) | route | sglang-triton / sglang-cutlass-fp4 |
| flashinfer_fused_topk_deepseek (`kernel`) | flashinfer.fused_moe.fused_topk_deepseek (CUDA, JIT) | route | flashinfer-cutlass |
| sglang_fused_topk_native (`kernel`) | sglang topk.fused_topk_torch_native (softmax) | route | sglang-triton |
| sglang_moe_sum_reduce (`kernel`) | sglang fused_moe_triton_kernels.moe_sum_reduce_triton (Triton) | combine | sglang-triton |
| flashinfer_fp4_quantize (`kernel`) | flashinfer.fp4_quantize (CUDA, JIT; declined below sm_100) | quantize | flashinfer-cutlass |

Wheels (Python 3.12, x86-64), installed with `pip install --no-deps`: sglang==0.5.10.post1,
flashinfer-python==0.6.7.post3, apache-tvm-ffi==0.1.15.post2, orjson==3.13.0, pybase64==1.5.1,
starlette==1.10.0; torch, triton, numpy, pillow, torchvision, requests, psutil, filelock,
packaging and nvcc come from the host. Example:
`moefuzz check --kernel py:examples.python.upstream.sglang_moe_sum_reduce:kernel`.
"""

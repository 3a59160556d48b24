#!/usr/bin/env python3
"""The GPU's two ceilings for bench/cuda/decode.sh, measured the way
METHOD.md asks: device-to-device copy bandwidth (bytes read plus bytes
written over the time of a large copy) and the fp16 matrix-product rate
(8192^3 through PyTorch's cuBLAS, random data), medians of 10 after a
warm-up, timed with CUDA events; and PyTorch's causal prefill attention
(scaled_dot_product_attention: its flash kernel) at S 4096, 32 query / 8
key-value heads, head_dim 128, half, the peer of bench/cuda/attention.cu.
Prints one JSON object."""
import json
import statistics

import torch


def timed(fn, reps=10):
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b) / 1e3)
    return statistics.median(times)


def main():
    n = 1 << 30  # 2 GiB of fp16 each way: far past the L2
    src = torch.randn(n, dtype=torch.float16, device="cuda")
    dst = torch.empty_like(src)
    copy_s = timed(lambda: dst.copy_(src))
    m = 8192
    x = torch.randn(m, m, dtype=torch.float16, device="cuda")
    y = torch.randn(m, m, dtype=torch.float16, device="cuda")
    mm_s = timed(lambda: x @ y)
    del x, y, src, dst
    s, d = 4096, 128
    q = torch.randn(1, 32, s, d, dtype=torch.float16, device="cuda")
    k = torch.randn(1, 8, s, d, dtype=torch.float16, device="cuda")
    v = torch.randn_like(k)
    sdpa = torch.nn.functional.scaled_dot_product_attention
    attn_s = timed(lambda: sdpa(q, k, v, is_causal=True, enable_gqa=True))
    attn_flop = 4 * d * 32 * s * (s + 1) / 2
    print(json.dumps(dict(device=torch.cuda.get_device_name(), copy_gbs=2 * n * 2 / copy_s / 1e9,
                          fp16_matmul_tflops=2 * m ** 3 / mm_s / 1e12,
                          sdpa_causal_s4096_d128_tflops=attn_flop / attn_s / 1e12,
                          torch=torch.__version__)))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Times torch._grouped_mm, forward and backward, over routed-expert shapes on one GPU, beside
one dense GEMM of the same FLOPs, and writes what it measured as JSON. The time model's grouped
GEMM factor (kGroupRowsHalf in planner/compute_cost.cc) is fitted to its output, kept in
bench/data/gemm/.

    python3 grouped_mm_probe.py OUT.json

Each shape is (experts, rows each, K, N): A of (experts x rows) x K, B of experts x K x N, the
rows split evenly. A time is the median of 20 runs after 3 warm-up runs, between CUDA events;
the backward is autograd's gradient for A and B.
"""
import datetime
import json
import sys

SHAPES = [
    # Qwen3-30B-A3B's experts (hidden 2048, 768 wide, gate and up fused) at 64-1,024 rows an expert
    (128, 256, 2048, 1536), (128, 256, 768, 2048), (128, 512, 2048, 1536), (128, 512, 768, 2048),
    (128, 64, 2048, 1536), (128, 64, 768, 2048), (128, 1024, 2048, 1536), (128, 1024, 768, 2048),
    # Mixtral-8x7B-like (8 experts, 4096 x 14336), DeepSeek-V3-like and Qwen2-57B-like shapes
    (8, 4096, 4096, 28672), (8, 4096, 14336, 4096), (32, 512, 7168, 4096), (32, 512, 2048, 7168),
    (64, 1024, 2048, 2816), (64, 1024, 1408, 2048),
]


def median_seconds(torch, fn, runs=20):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(runs):
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return sorted(times)[len(times) // 2]


def main():
    if len(sys.argv) != 2:
        raise SystemExit("usage: grouped_mm_probe.py OUT.json")
    import torch
    dev, bf16 = "cuda", torch.bfloat16
    shapes = []
    for experts, rows, k, n in SHAPES:
        a = torch.randn(experts * rows, k, device=dev, dtype=bf16)
        b = torch.randn(experts, k, n, device=dev, dtype=bf16)
        offsets = torch.arange(rows, experts * rows + 1, rows, device=dev, dtype=torch.int32)
        grouped = median_seconds(torch, lambda: torch._grouped_mm(a, b, offs=offsets))
        dense_b = torch.randn(k, n, device=dev, dtype=bf16)
        dense = median_seconds(torch, lambda: a @ dense_b)
        a_grad, b_grad = a.clone().requires_grad_(), b.clone().requires_grad_()
        y = torch._grouped_mm(a_grad, b_grad, offs=offsets)
        dy = torch.randn_like(y)
        backward = median_seconds(torch, lambda: torch.autograd.grad(y, (a_grad, b_grad), dy, retain_graph=True))
        shapes.append({"experts": experts, "rows": rows, "k": k, "n": n, "grouped_s": grouped,
                       "grouped_backward_s": backward, "dense_s": dense})
        print(shapes[-1], flush=True)
    with open(sys.argv[1], "w") as f:
        json.dump({"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "dtype": "bf16",
                   "measured": datetime.date.today().isoformat(), "shapes": shapes}, f, indent=1)


if __name__ == "__main__":
    main()

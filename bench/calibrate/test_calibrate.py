#!/usr/bin/env python3
"""CPU check of the calibration harness (ctest calibrate_harness_cpu).

    test_calibrate.py --shardplan BIN

1. runs/ is what make_runs.py writes, and every run's inputs are read by both calibrate.py
   (--check) and `shardplan estimate`;
2. tiny models run on the CPU under the fake process group, and each rank holds exactly its
   share of the parameters: one step of a 2-D FSDP x TP layout, a LoRA run, an MoE model and
   a tied-embedding model under FSDP, and a batch generated with transformers' generate;
3. what the harness does not run (pipeline parallelism, tied embeddings under TP) exits 2
   naming the file;
4. a record written with --out is a run folder `shardplan estimate` reads;
5. score.py scores a record's allocated and reserved peaks, and targets.json passes or fails
   them as the numbers say.
Needs the virtualenv from scripts/python-env (torch, transformers).
"""
import argparse
import filecmp
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

TINY_LLAMA = {"model_type": "llama", "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 2,
              "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 1024, "tie_word_embeddings": False}
TINY_MOE = {"model_type": "qwen3_moe", "hidden_size": 256, "intermediate_size": 512, "moe_intermediate_size": 128,
            "num_experts": 8, "num_experts_per_tok": 2, "num_hidden_layers": 2, "num_attention_heads": 4,
            "num_key_value_heads": 2, "head_dim": 64, "vocab_size": 1024, "tie_word_embeddings": False}

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def make_run(root, name, config, workload, layout):
    d = os.path.join(root, name)
    os.makedirs(d)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(config, f)
    with open(os.path.join(d, "cluster.yaml"), "w") as f:
        f.write(f"name: {name}\nnodes: 1\ngpus_per_node: 8\ngpu: H100-SXM 80GB\n")
    with open(os.path.join(d, "workload.yaml"), "w") as f:
        f.write(workload)
    with open(os.path.join(d, "layout.txt"), "w") as f:
        f.write(layout + "\n")
    return d


def estimate(shardplan, d):
    layout = open(os.path.join(d, "layout.txt")).read().strip()
    return subprocess.run([shardplan, "estimate", "--model", os.path.join(d, "config.json"),
                           "--cluster", os.path.join(d, "cluster.yaml"), "--workload", os.path.join(d, "workload.yaml"),
                           "--layout", layout, "--json"], capture_output=True, text=True)


def moe_layers_agree():
    """One tiny qwen3_moe sparse block in bf16, forward and backward through transformers' code
    and through the harness's torchtitan MoE layer: the same output and gradients, up to the
    rounding of a bf16 sum taken in another order (relative error under 2%)."""
    import types
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM
    sys.path.insert(0, HERE)
    import calibrate
    cfg = {k: v for k, v in TINY_MOE.items() if k != "model_type"}
    config = AutoConfig.for_model("qwen3_moe", **{**cfg, "num_hidden_layers": 1, "norm_topk_prob": True})
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    for p in model.parameters():
        torch.nn.init.normal_(p, std=0.05)
    block = model.model.layers[0].mlp
    x = torch.randn(2, 64, config.hidden_size, dtype=torch.bfloat16, requires_grad=True)

    def run():
        block.zero_grad(set_to_none=True)
        x.grad = None
        y = block(x)
        y.float().pow(2).sum().backward()
        ex = block.experts
        # The fused gate_up_proj's grad, or w1's and w3's put back together as its halves.
        gate_up = ex.gate_up_proj.grad if hasattr(ex, "gate_up_proj") else torch.cat([ex.w1.grad, ex.w3.grad], dim=1)
        return [y.detach().float(), x.grad.float(), gate_up.float(), ex.down_proj.grad.float(),
                block.gate.weight.grad.float()]
    ref = run()
    calibrate.split_gate_up(block.experts, torch)
    block.forward = types.MethodType(calibrate.torchtitan_moe_forward(torch, config.num_experts_per_tok, True), block)
    got = run()
    errors = [((a - b).norm() / b.norm()).item() for a, b in zip(got, ref)]
    print(f"     relative errors, output, input grad, gate_up, down and router grads: {[round(e, 4) for e in errors]}")
    return len(errors) == 5 and max(errors) < 0.02 and len(list(block.parameters())) == 4


def qlora_prepared(src):
    """QLoRA as the harness builds it on the CPU (bitsandbytes' NF4 Linear4bit under every
    adapter): with peft's kbit preparation the norms are fp32, the embeddings and head bf16
    (TRL casts them back) and a layer's output under bf16 autocast is fp32, the residual
    stream the estimate prices at 4 B; without it, bf16 throughout. The adapters are fp32 and
    the parameter count is the model's, not the packed bytes'."""
    import torch
    sys.path.insert(0, HERE)
    import calibrate
    qlora = "task: qlora\nprecision: bf16\nseq_len: 64\nglobal_batch: 2\nlora:\n  rank: 8\n"
    results = []
    for name, extra in (("tiny-qlora", "  targets: [all-linear]\n"),
                        ("tiny-qlora-noprep", "  targets: [q_proj, v_proj]\nkbit_prepare: false\n")):
        run = calibrate.Run(make_run(src, name, TINY_LLAMA, qlora + extra, "framework=hf,dp=1,mbs=2,ac=full"))
        model, config = calibrate.build_model(run, torch, torch.device("cpu"))
        taken = calibrate.quantized_bases(run, model, torch)
        calibrate.materialize(model, torch.device("cpu"), torch)
        calibrate.quantize_bases(taken, torch.device("cpu"), torch)
        if run.kbit:
            calibrate.prepare_kbit(run, model, torch.device("cpu"), torch)
        layer = model.model.layers[0]
        # Every Linear of the layers but the adapters' own is 4-bit, adapted or not.
        adapters_own = {id(m) for q in model.modules() if type(q).__name__ == "QLoraLinear" for m in (q.lora_a, q.lora_b)}
        bases = {type(m).__name__ for m in model.model.layers.modules()
                 if isinstance(m, torch.nn.Linear) and id(m) not in adapters_own}
        adapters = {p.dtype for n, p in model.named_parameters() if "lora_" in n}
        seen = []
        layer.register_forward_hook(lambda mod, args, out: seen.append((out[0] if isinstance(out, tuple) else out).dtype))
        ids = torch.randint(0, config.vocab_size, (1, 16))
        with torch.autocast("cpu", dtype=torch.bfloat16):
            model.model(input_ids=ids)
        count = sum(calibrate.parameter_count(p) for p in model.parameters())
        results.append((bases, adapters, layer.input_layernorm.weight.dtype, model.model.embed_tokens.weight.dtype,
                        model.lm_head.weight.dtype, seen[0], count))
    f32, bf16 = torch.float32, torch.bfloat16
    print(f"     prepared: {results[0][2:6]}; not: {results[1][2:6]}")
    # 1,705,216 parameters, and r8 adapters on all seven linears of both layers (2 x 32,768),
    # or on q (256 -> 256) and v (256 -> 128) (2 x 7,168).
    return (results[0] == ({"Linear4bit"}, {f32}, f32, bf16, bf16, f32, 1705216 + 65536)
            and results[1] == ({"Linear4bit"}, {f32}, bf16, bf16, bf16, bf16, 1705216 + 14336))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shardplan", required=True)
    args = ap.parse_args()
    py = sys.executable
    calibrate = os.path.join(HERE, "calibrate.py")
    with tempfile.TemporaryDirectory() as tmp:
        # 1. runs/ as make_runs.py writes it, readable by the harness and the CLI.
        fresh = os.path.join(tmp, "runs")
        subprocess.run([py, os.path.join(HERE, "make_runs.py"), "--out", fresh], check=True, capture_output=True)
        committed = os.path.join(HERE, "runs")
        cmp = filecmp.dircmp(committed, fresh)
        stale = cmp.left_only + cmp.right_only + [f"{d}/{f}" for d, sub in cmp.subdirs.items()
                                                  for f in sub.diff_files + sub.left_only + sub.right_only]
        check(not stale, f"runs/ matches make_runs.py ({len(os.listdir(fresh))} runs; differing: {stale[:5]})")
        runs = sorted(os.path.join(committed, r) for r in os.listdir(committed))
        p = subprocess.run([py, calibrate, "--check"] + runs, capture_output=True, text=True)
        check(p.returncode == 0, f"calibrate.py --check reads every run ({p.stderr.strip()[:300]})")
        bad = [os.path.basename(r) for r in runs if estimate(args.shardplan, r).returncode not in (0, 1)]
        check(not bad, f"shardplan estimate reads every run (rejected: {bad[:5]})")

        # 2. One CPU step each; every rank holds exactly its share.
        src = os.path.join(tmp, "src")
        pretrain = "task: pretrain\nprecision: bf16\nmaster_weights: fp32\nseq_len: 64\nglobal_batch: 8\nloss: standard\n"
        two_d = make_run(src, "tiny-fsdp4-tp2-sel", TINY_LLAMA, pretrain,
                         "framework=torchtitan,dp=4,tp=2,zero=3,mbs=2,ac=selective")
        lora = make_run(src, "tiny-hf-lora", TINY_LLAMA,
                        "task: lora\nprecision: bf16\nmaster_weights: none\nseq_len: 64\nglobal_batch: 2\n"
                        "lora:\n  rank: 8\n  targets: [q_proj, v_proj]\n", "framework=hf,dp=1,mbs=2,ac=full")
        moe = make_run(src, "tiny-moe-fsdp4-full", TINY_MOE, pretrain, "framework=torchtitan,dp=4,zero=3,mbs=1,ac=full")
        serve = make_run(src, "tiny-generate", TINY_LLAMA,
                         "task: inference\nprecision: bf16\ninference:\n  batch: 2\n  prompt_len: 16\n  gen_len: 4\n"
                         "  engine: transformers\n",
                         "framework=hf,dp=1,tp=1,batch=2")
        tied_fsdp = make_run(src, "tiny-tied-fsdp8", {**TINY_LLAMA, "tie_word_embeddings": True}, pretrain,
                             "framework=torchtitan,dp=8,zero=3,mbs=1,ac=full")
        later = make_run(src, "tiny-fsdp8-r2508", TINY_LLAMA, pretrain + "release: 2025-08\n",
                         "framework=torchtitan,dp=8,zero=3,mbs=1,ac=none")
        out = os.path.join(tmp, "out")
        p = subprocess.run([py, calibrate, two_d, lora, moe, serve, tied_fsdp, later, "--device", "cpu", "--steps", "1",
                            "--json", "--out", out], capture_output=True, text=True)
        check(p.returncode == 0, f"six CPU runs exit 0 ({p.stderr.strip()[-400:]})")
        got = {}
        for line in p.stdout.splitlines():
            if line.startswith("{"):
                r = json.loads(line)
                got[r["id"]] = r
        # Tiny llama: embedding and head 1024 x 256 each, per layer q 256x256, k and v 256x128,
        # o 256x256, gate/up/down 256x512, two norms of 256; a final norm of 256: 1,705,216.
        # Under dp 4 x tp 2 the norms are replicated across TP and sharded across FSDP
        # (1,280 / 4) and everything else is split eight ways (1,703,936 / 8): 213,312.
        check(got.get("tiny-fsdp4-tp2-sel", {}).get("local_params") == 213312,
              f"2-D rank holds 213,312 parameters (got {got.get('tiny-fsdp4-tp2-sel', {}).get('local_params')})")
        # LoRA r=8 on q (256 -> 256) and v (256 -> 128): 2 x (8 x 256 + 256 x 8 + 8 x 256 + 128 x 8).
        check(got.get("tiny-hf-lora", {}).get("local_params") == 1705216 + 14336,
              f"LoRA adds 14,336 adapter parameters to 1,705,216 (got {got.get('tiny-hf-lora', {}).get('local_params')})")
        # Tiny Qwen3-MoE: per layer attention 196,608 + q/k norms 128 + router 2,048 + 8 experts
        # of 98,304 + norms 512 = 985,728; x 2 layers + embedding, head and final norm:
        # 2,496,000, a quarter on each of 4 FSDP ranks.
        check(got.get("tiny-moe-fsdp4-full", {}).get("local_params") == 2496000 // 4,
              f"MoE rank holds 624,000 parameters (got {got.get('tiny-moe-fsdp4-full', {}).get('local_params')})")
        check(got.get("tiny-generate", {}).get("local_params") == 1705216,
              f"generate serves the whole model, 1,705,216 parameters (got {got.get('tiny-generate', {}).get('local_params')})")
        # Tied: the head is the embedding, counted once: 1,705,216 - 262,144 = 1,443,072 over 8.
        check(got.get("tiny-tied-fsdp8", {}).get("local_params") == 1443072 // 8,
              f"a tied model holds its embedding once, 180,384 per rank (got {got.get('tiny-tied-fsdp8', {}).get('local_params')})")
        # torchtitan's wrapping from 2025-07-28 (embeddings, blocks, [norm, output], root):
        # the same eighth of every parameter, 1,705,216 / 8.
        check(got.get("tiny-fsdp8-r2508", {}).get("local_params") == 1705216 // 8,
              f"the later torchtitan wrapping shards all 1,705,216 parameters eight ways "
              f"(got {got.get('tiny-fsdp8-r2508', {}).get('local_params')})")
        # torchtitan's own block stands in for transformers' on a llama, 2-D runs included (its
        # norms take SequenceParallel's sharded DTensors as torchtitan's nn.RMSNorm does).
        check(got.get("tiny-fsdp8-r2508", {}).get("model_code") == "torchtitan"
              and got.get("tiny-fsdp4-tp2-sel", {}).get("model_code") == "torchtitan"
              and got.get("tiny-hf-lora", {}).get("model_code") == "transformers",
              "torchtitan's code runs where the harness can put it, and the record says which ran")
        check(got.get("tiny-moe-fsdp4-full", {}).get("model_code") == "transformers"
              and got.get("tiny-moe-fsdp4-full", {}).get("experts_implementation") == "grouped_mm",
              "an MoE run says which of transformers' expert codes ran (grouped_mm by default)")
        check(all(r.get("fits") for r in got.values()) and len(got) == 6, "all six ran")
        # --fork runs each from one process that imported torch and transformers once: the
        # same runs, the same shares, each step timed.
        tied_hf = make_run(src, "tiny-tied-hf", {**TINY_LLAMA, "tie_word_embeddings": True}, pretrain,
                           "framework=hf,dp=1,mbs=1,ac=none")
        tune = "task: finetune\nprecision: bf16\nmaster_weights: none\nseq_len: 64\nglobal_batch: 8\nloss: chunked\n"
        tune_units = make_run(src, "tiny-tune-units", TINY_LLAMA, tune + "custom_sharded_layers: [tok_embeddings, output]\n",
                              "framework=torchtune,dp=8,zero=3,mbs=1,ac=full")
        tune_root = make_run(src, "tiny-tune-root", TINY_LLAMA, tune, "framework=torchtune,dp=8,zero=3,mbs=1,ac=full")
        p = subprocess.run([py, calibrate, two_d, moe, serve, tied_hf, tune_units, tune_root, "--device", "cpu",
                            "--steps", "2", "--json", "--fork"], capture_output=True, text=True)
        forked = {r["id"]: r for r in (json.loads(l) for l in p.stdout.splitlines() if l.startswith("{"))}
        units = {k: forked.get(k, {}).get("fsdp_units") for k in ("tiny-tune-units", "tiny-tune-root")}
        # Two layers and the root; with custom_sharded_layers the embeddings and the head as well.
        check(units == {"tiny-tune-units": 5, "tiny-tune-root": 3}
              and forked.get("tiny-tune-units", {}).get("local_params") == 1705216 // 8,
              f"torchtune's custom_sharded_layers makes the embeddings and the head units of their own ({units})")
        forked = {k: r for k, r in forked.items() if not k.startswith("tiny-tune-")}
        check(p.returncode == 0 and {k: r.get("local_params") for k, r in forked.items() if k != "tiny-tied-hf"}
              == {k: got[k].get("local_params") for k in ("tiny-fsdp4-tp2-sel", "tiny-moe-fsdp4-full", "tiny-generate")},
              f"--fork gives the same three runs the same shares ({p.stderr.strip()[-400:]})")
        # Without FSDP, to_empty alone would give the head its own copy of the embedding.
        check(forked.get("tiny-tied-hf", {}).get("local_params") == 1443072,
              f"one GPU keeps a tied head tied, 1,443,072 (got {forked.get('tiny-tied-hf', {}).get('local_params')})")
        check(len(forked.get("tiny-fsdp4-tp2-sel", {}).get("step_seconds", [])) == 2,
              "each training step's time is recorded")

        # torchtitan's MoE layer computes what transformers' sparse block computes, on its weights.
        p = subprocess.run([py, calibrate, moe, "--device", "cpu", "--steps", "1", "--json"], capture_output=True,
                           text=True, env={**os.environ, "CALIBRATE_MOE": "torchtitan"})
        tt_moe = next((json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")), {})
        check(p.returncode == 0 and tt_moe.get("model_code") == "transformers, torchtitan's MoE layer"
              and tt_moe.get("local_params") == got.get("tiny-moe-fsdp4-full", {}).get("local_params")
              and "experts_implementation" not in tt_moe,
              f"CALIBRATE_MOE=torchtitan runs torchtitan's MoE layer on the same shard, and says so "
              f"({p.stderr.strip()[-300:]})")
        check(qlora_prepared(src), "QLoRA's NF4 base through peft's kbit preparation keeps an fp32 residual "
              "stream, and without it a bf16 one")
        check(moe_layers_agree(), "torchtitan's MoE layer matches transformers' sparse block, output and "
              "gradients within bf16 rounding")

        # 3. What the harness does not run is refused by name.
        pp = make_run(src, "tiny-pp2", TINY_LLAMA, pretrain, "framework=torchtitan,dp=2,pp=2,mbs=1")
        p = subprocess.run([py, calibrate, pp, "--device", "cpu"], capture_output=True, text=True)
        check(p.returncode == 2 and "tiny-pp2/layout.txt: pp=2" in p.stderr,
              f"pipeline parallelism refused with exit 2 naming layout.txt ({p.returncode}: {p.stderr.strip()[:200]})")
        tied = make_run(src, "tiny-tied-tp2", {**TINY_LLAMA, "tie_word_embeddings": True}, pretrain,
                        "framework=torchtitan,dp=2,tp=2,mbs=1")
        p = subprocess.run([py, calibrate, tied, "--device", "cpu"], capture_output=True, text=True)
        check(p.returncode == 2 and "tiny-tied-tp2/config.json: tied embeddings under tp > 1" in p.stderr,
              f"tied embeddings under TP refused, not silently untied ({p.returncode}: {p.stderr.strip()[:200]})")

        # 4. The written record is a run folder the CLI reads, with the harness's truth.
        rec = os.path.join(out, "tiny-fsdp4-tp2-sel")
        truth = json.load(open(os.path.join(rec, "truth.json")))
        check(truth.get("category") == "calibration" and truth.get("fits") is True and truth.get("left_out"),
              "truth.json says calibration, ran, and what the fake process group leaves out")
        check(estimate(args.shardplan, rec).returncode in (0, 1), "shardplan estimate reads the written record")
        # 5. Scoring a record's two peaks against the targets: records whose measured figures sit
        # at known ratios to the estimate (+2% and -1% allocated, -4% and +2.5% reserved) give
        # medians of 1% and 2.5%, a 4% reserved under-prediction, and pass or fail the targets
        # as those numbers say.
        scored = os.path.join(tmp, "scored")
        for name, alloc_ratio, reserved_ratio in (("l8b-tt-fsdp8-s8k-b1-sel", 1.02, 0.96),
                                                  ("l1b-hf-amp-s2k-b4-full", 0.99, 1.025)):
            d = os.path.join(scored, name)
            os.makedirs(d)
            for f in ("config.json", "cluster.yaml", "workload.yaml", "layout.txt"):
                with open(os.path.join(committed, name, f)) as src_f, open(os.path.join(d, f), "w") as dst:
                    dst.write(src_f.read())
            mem = json.loads(estimate(args.shardplan, d).stdout)["memory"]["per_gpu"]
            with open(os.path.join(d, "truth.json"), "w") as f:
                json.dump({"id": name, "category": "calibration", "fits": True, "metric": "allocated",
                           "measured": mem["allocated_peak_bytes"] / alloc_ratio,
                           "measured_reserved": mem["reserved_peak_bytes"] / reserved_ratio}, f)
        score = os.path.join(os.path.dirname(HERE), "user_inputs", "score.py")
        p = subprocess.run([py, score, "--shardplan", args.shardplan, "--cases", scored, "--json"],
                           capture_output=True, text=True)
        s = json.loads(p.stdout)["summary"]
        check(abs(s["memory_median"] - 0.01) < 1e-9 and abs(s["worst_under_prediction"] - 0.01) < 1e-9,
              f"allocated: median 1%, worst under-prediction 1% (got {s['memory_median']}, {s['worst_under_prediction']})")
        check(s["reserved_scored"] == 2 and abs(s["reserved_median"] - 0.025) < 1e-9
              and abs(s["reserved_worst_under"] - 0.04) < 1e-9,
              f"reserved: median 2.5%, worst under-prediction 4% (got {s['reserved_median']}, {s['reserved_worst_under']})")
        targets = os.path.join(HERE, "targets.json")
        p = subprocess.run([py, score, "--shardplan", args.shardplan, "--cases", scored, "--thresholds", targets],
                           capture_output=True, text=True)
        check(p.returncode == 0, f"within the calibration targets ({p.stderr.strip()})")
        tight = os.path.join(tmp, "tight.json")
        with open(tight, "w") as f:
            json.dump({"max_reserved_under_prediction": 0.03}, f)
        p = subprocess.run([py, score, "--shardplan", args.shardplan, "--cases", scored, "--thresholds", tight],
                           capture_output=True, text=True)
        check(p.returncode == 1 and "max_reserved_under_prediction" in p.stderr,
              f"a 4% reserved under-prediction fails a 3% limit ({p.returncode}: {p.stderr.strip()[:200]})")
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

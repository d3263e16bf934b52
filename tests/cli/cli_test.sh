#!/usr/bin/env bash
# End-to-end checks of the shardplan binary ($SHARDPLAN): exit codes, results on stdout and
# diagnostics on stderr, JSON fields of DESIGN.md, plan.yaml reproduced by estimate --plan.
set -uo pipefail
bin="${SHARDPLAN:?set SHARDPLAN to the binary}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0

check() {  # check NAME EXPECTED_EXIT -- command...
  local name="$1" want="$2"
  shift 3
  "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$?
  if [[ $got -ne $want ]]; then
    echo "FAIL $name: exit $got, wanted $want"; sed 's/^/  stderr: /' "$tmp/err" | head -5
    failed=$((failed + 1)); return 1
  fi
  passed=$((passed + 1))
}

expect() {  # expect NAME FILE PATTERN
  if grep -q -- "$3" "$2"; then passed=$((passed + 1)); else
    echo "FAIL $1: '$3' not in $2:"; head -20 "$2" | sed 's/^/  /'; failed=$((failed + 1)); fi
}

json() {  # json NAME PYTHON_EXPR_OVER_j   (reads $tmp/out)
  if python3 -c "import json,sys; j=json.load(open('$tmp/out')); sys.exit(0 if ($2) else 1)"; then
    passed=$((passed + 1)); else echo "FAIL $1: $2"; failed=$((failed + 1)); fi
}

# inspect: exact counts, weight bytes by dtype
check inspect 0 -- "$bin" inspect --model llama-2-7b
expect inspect-total "$tmp/out" "6,738,415,616"
check inspect-json 0 -- "$bin" inspect --model deepseek-v3 --json
json inspect-json 'j["params_total"] == 671026419200 and j["params_active"] == 37552297472'

# The seed article's LLaMA-7B (7,000,559,616 parameters): 26.08 / 13.04 / 6.52 / 3.26 GiB.
printf '{"model_type": "llama", "vocab_size": 64000, "torch_dtype": "float16"}\n' >"$tmp/llama7b.json"
check seed-7b 0 -- "$bin" inspect --model "$tmp/llama7b.json" --json
json seed-7b-total 'j["params_total"] == 7000559616'
json seed-7b-gib 'all(abs(j["weights"][k]["gib"] - v) < 0.005 for k, v in {"fp32": 26.08, "fp16": 13.04, "int8": 6.52, "int4": 3.26}.items())'

# A quantized checkpoint (Meta's Llama-3.1-405B FP8 split: FFN of layers 1-124 in fp8) is
# served as it ships: inspect reports the split, estimate defaults to fp8 weights.
printf '{"model_type": "llama", "hidden_size": 16384, "intermediate_size": 53248, "num_hidden_layers": 126, "num_attention_heads": 128, "num_key_value_heads": 8, "vocab_size": 128256, "quantization_config": {"quant_method": "fbgemm_fp8", "modules_to_not_convert": ["lm_head", "self_attn", "model.layers.0.mlp", "model.layers.125.mlp"]}}\n' >"$tmp/fp8.json"
check inspect-fp8 0 -- "$bin" inspect --model "$tmp/fp8.json" --json
json inspect-fp8-split 'j["checkpoint"]["quant_method"] == "fbgemm_fp8" and j["checkpoint"]["quantized_params"] == 124 * 3 * 16384 * 53248'
check estimate-fp8 0 -- "$bin" estimate --model "$tmp/fp8.json" --cluster dgx-h100 --task inference --layout tp=8 --json
json estimate-fp8-weights 'j["layout"]["weights"] == "fp8" and abs(j["memory"]["per_gpu"]["terms"]["weights"] / 2**30 - 57.75) < 0.03 * 57.75'

# bad input: exit 2, file:line:col on stderr, nothing on stdout
printf '{\n  "model_type": "llama",\n  "hidden_sise": 4096\n}\n' >"$tmp/typo.json"
check bad-key 2 -- "$bin" inspect --model "$tmp/typo.json"
expect bad-key-msg "$tmp/err" "typo.json:3:3: unknown key 'hidden_sise', did you mean 'hidden_size'?"
[[ ! -s "$tmp/out" ]] && passed=$((passed + 1)) || { echo "FAIL bad-key: stdout not empty"; failed=$((failed + 1)); }
check missing-file 2 -- "$bin" inspect --model "$tmp/nope.json"
# LoRA targets name the model's own modules (BLOOM fuses q/k/v into query_key_value); a name it
# lacks is refused rather than adding no adapter
printf 'task: lora\nseq_len: 1024\nlora:\n  rank: 8\n  targets: [query_key_value, dense]\n' > "$tmp/bloom-lora.yaml"
printf '{"model_type": "bloom", "hidden_size": 4096, "n_head": 32, "n_layer": 30}\n' > "$tmp/bloom.json"
check lora-family-names 0 -- "$bin" estimate --model "$tmp/bloom.json" --cluster dgx-a100 --workload "$tmp/bloom-lora.yaml" --layout dp=8 --json
# 30 layers x r 8 x ((h + 3h) + (h + h)) adapters, fp32 (peft's autocast_adapter_dtype), an
# eighth per rank under FSDP 8 (the layout resolves to FULL_SHARD)
json lora-family-names-adapters 'j["layout"]["zero"] == 3 and j["memory"]["per_gpu"]["terms"]["adapter_params"] == 30 * 8 * ((4096 + 3 * 4096) + 2 * 4096) * 4 // 8'
printf 'task: lora\nlora:\n  targets: [c_attn]\n' > "$tmp/bloom-bad-lora.yaml"
check lora-unknown-target 2 -- "$bin" estimate --model "$tmp/bloom.json" --cluster dgx-a100 --workload "$tmp/bloom-bad-lora.yaml"
expect lora-unknown-target-msg "$tmp/err" 'bloom-bad-lora.yaml: lora.targets: "c_attn" names no Linear module of a bloom layer'
check bad-layout 2 -- "$bin" estimate --model llama-3.1-8b --layout tp=3
expect bad-layout-msg "$tmp/err" "tp (3) must divide the attention heads (32)"
check bad-flag 2 -- "$bin" plan --no-such-flag

# estimate: fits (0), does not fit (1), JSON as DESIGN.md gives it
check estimate-fits 0 -- "$bin" estimate --model llama-3.1-8b --cluster dgx-h100 --layout framework=fsdp,ac=full --json
json estimate-json 'all(k in j["memory"]["per_gpu"] for k in ["peak_bytes","reserved_peak_bytes","allocated_peak_bytes","required_bytes","capacity_bytes","headroom_bytes","fits","terms"]) and j["memory"]["per_gpu"]["fits"] and j["time"]["tokens_per_second_per_gpu"] > 0'
# The fit test and the headroom take what the step needs; the nvidia-smi peak is what the cache holds.
json estimate-json-required '(g := j["memory"]["per_gpu"])["headroom_bytes"] == g["capacity_bytes"] - g["required_bytes"] and g["allocated_peak_bytes"] < g["required_bytes"] <= g["peak_bytes"]'
check estimate-oom 1 -- "$bin" estimate --model llama-3.1-70b --cluster dgx-h100 --gpus-per-node 1 --layout framework=fsdp
expect estimate-oom-text "$tmp/out" "DOES NOT FIT"
# torchtitan with compile: the eager loss is priced, and where the compiled loss (torchtitan
# 2025-04 on) is the difference between OOM and a fit, the output says so.
printf 'task: pretrain\nseq_len: 8192\nglobal_batch: 96\ncompile: true\n' > "$tmp/titan.yaml"
check estimate-compiled-loss 1 -- "$bin" estimate --model llama-3.1-8b --cluster dgx-h100 --nodes 4 --workload "$tmp/titan.yaml" --layout framework=torchtitan,dp=32,zero=3,mbs=3,ac=selective
expect estimate-compiled-loss-note "$tmp/out" "with loss: compiled this fits"
# The same run on a stated torchtitan release of 2025-06 compiles its loss: it fits.
printf 'release: "2025-06"\n' >> "$tmp/titan.yaml"
check estimate-release 0 -- "$bin" estimate --model llama-3.1-8b --cluster dgx-h100 --nodes 4 --workload "$tmp/titan.yaml" --layout framework=torchtitan,dp=32,zero=3,mbs=3,ac=selective
expect estimate-release-said "$tmp/out" "assumed: loss: compiled (torchtitan compiles the loss with the model from 2025-04-02"
check estimate-inference 0 -- "$bin" estimate --model llama-2-70b --cluster rtxa6000-workstation --gpus-per-node 1 --workload inference --layout weights=int4,batch=1 --json
json inference-json 'j["inference"]["max_concurrent_sequences"] >= 1 and j["inference"]["kv_bytes_per_token"] == 327680'

# plan -> plan.yaml -> estimate --plan reproduces the numbers exactly
check plan 0 -- "$bin" plan --model llama-3.1-70b --cluster dgx-h100 --nodes 4 --top 3 -o "$tmp/plan.yaml" --json
json plan-json 'len(j["plans"]) == 3 and j["considered"] >= j["feasible"] > 0 and "search_seconds" in j'
peak=$(python3 -c "import json; print(json.load(open('$tmp/out'))['plans'][0]['memory']['per_gpu']['peak_bytes'])")
check estimate-plan 0 -- "$bin" estimate --plan "$tmp/plan.yaml" --json
json estimate-plan-same "j['memory']['per_gpu']['peak_bytes'] == $peak"
expect plan-yaml-rank-map "$tmp/plan.yaml" "^rank_map:"

# a LoRA plan names a framework emit can write, and says which it searched
check plan-lora 0 -- "$bin" plan --model llama-3.1-8b --cluster dgx-h100 --workload lora --top 3 -o "$tmp/lora.yaml" --json
json plan-lora-frameworks 'j["frameworks"] == ["deepspeed", "fsdp"] and "PEFT" in j["assumed"][0] and j["plans"][0]["layout"]["framework"] in ("deepspeed", "fsdp")'
check emit-lora 0 -- "$bin" emit "$tmp/lora.yaml" -o "$tmp/lora-out"
check plan-lora-megatron 0 -- "$bin" plan --model llama-3.1-8b --cluster dgx-h100 --workload lora --top 1 --frameworks megatron --json
json plan-lora-megatron-asked 'j["frameworks"] == ["megatron"] and "assumed" not in j'

# a model the emitted Megatron-LM arguments cannot build is planned on the other frameworks
cat > "$tmp/falcon-h1.json" <<'JSON'
{"model_type": "falcon_h1", "hidden_size": 1024, "intermediate_size": 4096, "num_hidden_layers": 8,
 "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 128, "vocab_size": 32768,
 "mamba_d_ssm": 1024, "mamba_n_heads": 16, "mamba_d_head": 64, "mamba_d_state": 128}
JSON
check plan-hybrid 0 -- "$bin" plan --model "$tmp/falcon-h1.json" --cluster dgx-h100 --top 1 --json
json plan-hybrid-frameworks '"megatron" not in j["frameworks"] and "falcon_h1 hybrids" in j["assumed"][0]'

# nothing fits is an answer, with what came closest and what would fix it
check plan-nothing 1 -- "$bin" plan --model llama-3.1-405b --cluster dgx-h100 --seq-len 8192
expect plan-nothing-text "$tmp/out" "NOTHING FITS"
expect plan-nothing-advice "$tmp/out" "more GPUs"

# several nodes of a cluster without a network between them
check no-network 2 -- "$bin" plan --model llama-3.1-8b --cluster rtx4090-pc --nodes 2
expect no-network-msg "$tmp/err" "no network between nodes"

# What a user types from a fine-tuning write-up: a GPU known by its memory, a flow-style
# workload, the library's own name; the answer states every default it took.
printf 'name: card\nnodes: 1\ngpus_per_node: 1\ngpu: {name: "24 GB card", memory: 24 GiB}\n' > "$tmp/card.yaml"
printf '{task: finetune, seq_len: 2048, global_batch: 2, optimizer: paged_adamw_8bit, optimizer_in_backward: true, compile: true}\n' > "$tmp/flow.yaml"
check user-inputs 0 -- "$bin" estimate --model llama-3.1-8b --cluster "$tmp/card.yaml" --workload "$tmp/flow.yaml" --layout framework=torchtune,mbs=2
expect user-inputs-time "$tmp/out" "step time unknown: the GPU '24 GB card' states no compute peak"
expect user-inputs-ac "$tmp/out" "assumed: ac: full (torchtune's configs set enable_activation_checkpointing: True)"
expect user-inputs-master "$tmp/out" "assumed: master_weights: none (torchtune trains in pure bf16"
check user-inputs-json 0 -- "$bin" estimate --model llama-3.1-8b --cluster "$tmp/card.yaml" --workload "$tmp/flow.yaml" --layout framework=torchtune,mbs=2 --json
json user-inputs-recipe 'j["recipe"]["paged_optimizer"] and not j["recipe"]["master_weights"] and j["time"]["known"] is False and j["layout"]["framework"] == "torchtune" and j["layout"]["engine"] == "fsdp"'
# A trainer's own file as the workload (LLaMA-Factory's keys): its micro-batch, accumulation and
# checkpointing become the layout's, the global batch follows, and what it read past is named;
# a --layout that says otherwise is refused.
printf 'stage: sft\nfinetuning_type: lora\nlora_rank: 8\nlora_target: all\ncutoff_len: 2048\nper_device_train_batch_size: 2\ngradient_accumulation_steps: 8\nlearning_rate: 1.0e-4\nbf16: true\n' > "$tmp/lf.yaml"
check trainer-file 0 -- "$bin" estimate --model llama-3.1-8b --cluster dgx-h100 --workload "$tmp/lf.yaml" --layout framework=llamafactory,dp=8 --json
json trainer-file-json 'j["workload"]["task"] == "lora" and j["workload"]["global_batch"] == 128 and j["layout"]["mbs"] == 2 and j["layout"]["grad_accum"] == 8 and j["layout"]["ac"] == "full" and any(a.startswith("read past learning_rate") for a in j["assumed"])'
check trainer-file-clash 2 -- "$bin" estimate --model llama-3.1-8b --cluster dgx-h100 --workload "$tmp/lf.yaml" --layout dp=8,mbs=4
expect trainer-file-clash-msg "$tmp/err" "lf.yaml: the micro-batch is 2, but --layout says mbs=4; give it once"
# plan with it: each layout's step is mbs x dp x grad_accum, as the trainer runs it.
check trainer-file-plan 0 -- "$bin" plan --model llama-3.1-8b --cluster dgx-h100 --workload "$tmp/lf.yaml" --top 2 --json
json trainer-file-plan-json 'len(j["plans"]) == 2 and all(p["layout"]["mbs"] == 2 and p["layout"]["grad_accum"] == 8 for p in j["plans"])'
# A vLLM config as the workload: its tensor_parallel_size is the layout's tp, and a --layout
# that says otherwise is refused.
printf 'model: meta-llama/Llama-3.1-8B-Instruct\ntensor-parallel-size: 2\nmax-model-len: 8192\nmax-num-seqs: 64\n' > "$tmp/vllm.yaml"
check serving-config 0 -- "$bin" estimate --model llama-3.1-8b --cluster dgx-h100 --gpus-per-node 2 --workload "$tmp/vllm.yaml" --json
json serving-config-json 'j["layout"]["tp"] == 2 and j["workload"]["task"] == "inference" and j["inference"]["max_kv_tokens"] > 0'
check serving-config-clash 2 -- "$bin" estimate --model llama-3.1-8b --cluster dgx-h100 --workload "$tmp/vllm.yaml" --layout tp=4
expect serving-config-clash-msg "$tmp/err" "vllm.yaml: tensor_parallel_size is 2, but --layout says tp=4; give it once"
# LitGPT's config file as it ships (config_hub/finetune/llama-3.1-8b/lora.yaml's keys): its
# devices: 1 runs on one GPU of a 4 x A10G machine, without checkpointing, in pure bf16.
printf 'checkpoint_dir: checkpoints/meta-llama/Meta-Llama-3.1-8B\nprecision: bf16-true\nquantize:\ndevices: 1\nnum_nodes: 1\nlora_r: 32\nlora_alpha: 16\nlora_dropout: 0.05\nlora_query: true\nlora_key: false\nlora_value: true\nlora_projection: false\nlora_mlp: false\nlora_head: false\ntrain:\n  save_interval: 200\n  global_batch_size: 8\n  micro_batch_size: 1\n  max_seq_length: 512\n  tie_embeddings:\noptimizer:\n  class_path: torch.optim.AdamW\n  init_args:\n    lr: 0.0002\n' > "$tmp/litgpt.yaml"
check litgpt-file 0 -- "$bin" estimate --model llama-3.1-8b --cluster 4xA10G --workload "$tmp/litgpt.yaml" --layout framework=litgpt --json
json litgpt-file-json 'j["cluster"]["nodes"] == 1 and j["cluster"]["gpus_per_node"] == 1 and j["layout"]["dp"] == 1 and j["layout"]["ac"] == "none" and j["layout"]["framework"] == "litgpt" and j["workload"]["task"] == "lora" and j["workload"]["seq_len"] == 512 and not j["recipe"]["master_weights"] and any(a.startswith("the layout runs on 1 of the cluster") for a in j["assumed"])'
# plan under framework=litgpt offers what LitGPT's scripts run: FSDP over every GPU with each
# block checkpointed, or one GPU plainly; no tensor parallelism.
check litgpt-plan 0 -- "$bin" plan --model llama-3.1-8b --cluster 8xH100 --task lora --layout framework=litgpt --top 5 --json
json litgpt-plan-json 'len(j["plans"]) > 0 and all(p["layout"]["zero"] == 3 and p["layout"]["ac"] == "full" and p["layout"]["tp"] == 1 for p in j["plans"])'
check litgpt-plan-one 0 -- "$bin" plan --model llama-3.1-8b --cluster 1xH100 --task lora --layout framework=litgpt --top 5 --json
json litgpt-plan-one-json 'len(j["plans"]) == 1 and j["plans"][0]["layout"]["ac"] == "none" and j["plans"][0]["layout"]["zero"] == 0'
check litgpt-tp 2 -- "$bin" estimate --model llama-3.1-8b --cluster 8xH100 --task lora --layout framework=litgpt,tp=2
expect litgpt-tp-msg "$tmp/err" "LitGPT's finetune and pretrain scripts run data parallelism alone"
# A stated dp below the cluster's GPUs runs on that part of it: one node's worth or whole nodes.
check part-of-cluster 0 -- "$bin" estimate --model llama-3.1-8b --cluster 2x8xH100 --layout dp=8 --json
json part-of-cluster-json 'j["cluster"]["nodes"] == 1 and j["cluster"]["gpus_per_node"] == 8'
check part-of-cluster-odd 2 -- "$bin" estimate --model llama-3.1-8b --cluster 2x8xH100 --layout dp=12
expect part-of-cluster-odd-msg "$tmp/err" "must equal the GPUs used (16)"
check litgpt-devices-clash 2 -- "$bin" estimate --model llama-3.1-8b --cluster 4xA10G --workload "$tmp/litgpt.yaml" --layout framework=litgpt,dp=4
expect litgpt-devices-clash-msg "$tmp/err" "litgpt.yaml: devices x num_nodes is 1, but --layout says dp=4; give it once"
# A cluster and a task in words on the command line: GPUs with their counts, sft, 4k tokens.
check cluster-words 0 -- "$bin" estimate --model llama-3.1-8b --cluster 2x8xH100 --task sft --seq-len 4k --layout dp=16 --json
json cluster-words-json 'j["cluster"]["nodes"] == 2 and j["cluster"]["gpus_per_node"] == 8 and j["cluster"]["gpu"] == "h100-sxm-80gb" and j["workload"]["task"] == "finetune" and j["workload"]["seq_len"] == 4096'
check cluster-words-unknown 2 -- "$bin" estimate --model llama-3.1-8b --cluster 8xFoo
expect cluster-words-unknown-msg "$tmp/err" "or a GPU with counts such as 8xH100"
# NVMe offload on a cluster that states no NVMe bandwidth: its transfers are not priced, and
# the answer says the step time is a floor.
printf 'nodes: 1\ngpus_per_node: 8\ngpu: H100\nnvme: 4 TB\n' > "$tmp/nvme.yaml"
check nvme-unpriced 0 -- "$bin" estimate --model llama-3.1-8b --cluster "$tmp/nvme.yaml" --layout framework=deepspeed,zero=3,offload_optimizer=nvme
expect nvme-unpriced-msg "$tmp/out" "assumed: NVMe bandwidth not stated in the cluster: the step time leaves out"
# An AMD node: the memory answered, no step time claimed, plans ranked by their structure.
printf 'name: mi\nnodes: 1\ngpus_per_node: 8\ngpu: MI300X\n' > "$tmp/mi300x.yaml"
check amd-estimate 0 -- "$bin" estimate --model llama-3.1-8b --cluster "$tmp/mi300x.yaml" --layout framework=fsdp,mbs=1 --json
json amd-estimate-json 'j["time"]["known"] is False and j["memory"]["per_gpu"]["fits"] and j["cluster"]["gpu"] == "mi300x-192gb"'
check amd-plan 0 -- "$bin" plan --model llama-3.1-8b --cluster "$tmp/mi300x.yaml" --top 3
expect amd-plan-ranked "$tmp/out" "ranked: by the step time NVIDIA-measured kernels would take at the AMD Instinct MI300X's datasheet peaks"
# A bare "A100" reads as the 40 GB card, and the estimate says the 80 GB one would hold it.
printf 'name: a\nnodes: 1\ngpus_per_node: 8\ngpu: A100\n' > "$tmp/a100.yaml"
printf 'task: finetune\nseq_len: 4096\nglobal_batch: 64\n' > "$tmp/ft.yaml"
check bare-a100 1 -- "$bin" estimate --model llama-3.1-8b --cluster "$tmp/a100.yaml" --workload "$tmp/ft.yaml" --layout framework=deepspeed,zero=2,mbs=1,ac=full
expect bare-a100-read "$tmp/out" "assumed: gpu: 'A100' read as a100-sxm-40gb, the smallest of"
expect bare-a100-hint "$tmp/out" "assumed: on a100-sxm-80gb this fits (needs"
check bare-a100-plan 0 -- "$bin" plan --model llama-3.1-8b --cluster "$tmp/a100.yaml" --workload "$tmp/ft.yaml" --top 2
expect bare-a100-plan-read "$tmp/out" "assumed: gpu: 'A100' read as a100-sxm-40gb"
# LOMO steps in backward: no gradient buffer beyond one parameter's, no optimizer state.
check lomo 0 -- "$bin" estimate --model llama-2-7b --cluster dgx-a100 --task finetune --optimizer lomo --precision fp16 --seq-len 512 --global-batch 1 --gpus-per-node 1 --layout framework=hf,ac=full --json
json lomo-json 'j["memory"]["per_stage"][0]["terms"]["gradients"] < 0.3 * 2**30 and "optimizer_states" not in j["memory"]["per_stage"][0]["terms"]'
# A layout that offloads to NVMe on a cluster that does not state NVMe: not checked, said so.
printf 'name: n\nnodes: 1\ngpus_per_node: 8\ngpu: h100-sxm-80gb\n' > "$tmp/no-nvme.yaml"
check nvme-unstated 0 -- "$bin" estimate --model llama-3.1-8b --cluster "$tmp/no-nvme.yaml" --layout framework=deepspeed,zero=3,offload_optimizer=nvme,mbs=1
expect nvme-unstated-note "$tmp/out" "assumed: NVMe not stated in the cluster"
# A framework with no recomputation default of its own: the least that fits, said aloud.
check ac-open 0 -- "$bin" estimate --model llama-3.1-8b --cluster dgx-h100 --layout framework=fsdp,mbs=1 --seq-len 8192
expect ac-open-selective "$tmp/out" "assumed: ac: selective (not stated; the least recomputation that fits)"
check ac-open-none 1 -- "$bin" estimate --model llama-3.1-8b --cluster dgx-h100 --layout framework=fsdp,mbs=1,ac=none --seq-len 8192
# An unstated micro-batch is said. torchtitan's pipelines take what older releases did, the
# larger memory: 256 sequences over dp=2 are 128 per rank, 16 per micro-batch when cut into
# pp=8; that does not fit, and the newer default's fit is said.
# Megatron-DeepSpeed's attention is unfused unless the workload says otherwise, in --json too.
check mds-json 0 -- "$bin" estimate --model llama-3.1-8b --cluster dgx-h100 --layout framework=megatron-deepspeed,tp=8,ac=full --json
json mds-flash 'j["recipe"]["flash_attention"] is False and j["layout"]["framework"] == "megatron-deepspeed" and any(a.startswith("flash_attention: false") for a in j["assumed"])'
# An MPT config's attn_config.attn_impl picks the kernel the time model prices.
printf '{"model_type": "mpt", "n_layers": 32, "d_model": 4096, "n_heads": 32, "attn_config": {"attn_impl": "triton"}}\n' > "$tmp/mpt.json"
check mpt-json 0 -- "$bin" estimate --model "$tmp/mpt.json" --cluster dgx-h100 --seq-len 8192 --layout framework=llm-foundry,zero=3,mbs=1,ac=full --json
json mpt-triton 'j["recipe"]["attention_kernel"] == "triton" and j["recipe"]["flash_attention"] is True'
check mds-json2 0 -- "$bin" estimate --model llama-3.1-8b --cluster dgx-h100 --layout framework=megatron-deepspeed,tp=8,ac=full --json
json mds-kernel 'j["recipe"]["attention_kernel"] == "materialized"'
check megatron-json 0 -- "$bin" estimate --model llama-3.1-8b --cluster dgx-h100 --layout framework=megatron,tp=8,ac=full --json
json megatron-cudnn 'j["recipe"]["attention_kernel"] == "cudnn"'
# torchtitan's tensorwise float8 over FSDP gathers float8 weights unless the workload says not,
# and --json carries the recipe it resolved
printf 'task: pretrain\nprecision: fp8\nseq_len: 4096\nglobal_batch: 8\n' > "$tmp/fp8.yaml"
check titan-fp8 0 -- "$bin" estimate --model llama-3.1-8b --cluster dgx-h100 --workload "$tmp/fp8.yaml" --layout framework=torchtitan,dp=8,zero=3,mbs=1 --json
json titan-fp8-gather 'j["recipe"]["float8_all_gather"] is True and j["recipe"]["fp8_recipe"] == "tensorwise" and any(a.startswith("fp8_all_gather: on") for a in j["assumed"])'
printf 'task: pretrain\nprecision: fp8\nseq_len: 4096\nglobal_batch: 8\nenable_fsdp_float8_all_gather: false\n' > "$tmp/fp8-off.yaml"
check titan-fp8-off 0 -- "$bin" estimate --model llama-3.1-8b --cluster dgx-h100 --workload "$tmp/fp8-off.yaml" --layout framework=torchtitan,dp=8,zero=3,mbs=1 --json
json titan-fp8-gather-off 'j["recipe"]["float8_all_gather"] is False'
check mbs-open 1 -- "$bin" estimate --model llama-3.1-8b --cluster dgx-h100 --nodes 2 --global-batch 256 --layout framework=torchtitan,dp=2,pp=8,ac=full
expect mbs-open-said "$tmp/out" "assumed: mbs: 16 (not stated; torchtitan releases before 2025-04-07 cut each rank's batch into pp micro-batches, the larger memory of the two; later ones default to pipeline_parallel_microbatch_size 1: say release: with the date of yours, or mbs=1)"
expect mbs-open-newer "$tmp/out" "assumed: with mbs=1 this fits (needs"
check mbs-open-one 0 -- "$bin" estimate --model llama-3.1-8b --cluster dgx-h100 --nodes 2 --global-batch 256 --layout framework=torchtitan,dp=2,pp=8,ac=full,mbs=1
expect mbs-one-layout "$tmp/out" "mbs=1,grad_accum=128"
# A torchtitan release from 2025-04-07 on defaults to one sequence per micro-batch.
printf 'task: pretrain\nrelease: "2025-04-07"\n' > "$tmp/titan-rel.yaml"
check mbs-release 0 -- "$bin" estimate --model llama-3.1-8b --cluster dgx-h100 --nodes 2 --global-batch 256 --workload "$tmp/titan-rel.yaml" --layout framework=torchtitan,dp=2,pp=8,ac=full
expect mbs-release-layout "$tmp/out" "mbs=1,grad_accum=128"
check seq-too-long 2 -- "$bin" estimate --model llama-3.1-8b --seq-len 1099511627776
expect seq-too-long-msg "$tmp/err" "--seq-len: expected at most 67108864 tokens"
printf '{"model_type": "t5", "d_model": 1024}\n' > "$tmp/t5.json"
check encoder-decoder 2 -- "$bin" inspect --model "$tmp/t5.json"
expect encoder-decoder-msg "$tmp/err" "is an encoder-decoder model, which shardplan does not support"

# Hub ids through a Hugging Face cache laid out as huggingface_hub writes it (config.json a
# symlink into blobs/); HF_HUB_CACHE wins over HF_HOME; nothing cached exits 2 with the fetch.
hub="$tmp/hf/hub/models--acme--tiny-llama"
mkdir -p "$hub/blobs" "$hub/refs" "$hub/snapshots/1111111111111111111111111111111111111111"
printf '{"model_type": "llama", "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 1000}\n' >"$hub/blobs/9f86d0"
printf '1111111111111111111111111111111111111111' >"$hub/refs/main"
ln -s ../../blobs/9f86d0 "$hub/snapshots/1111111111111111111111111111111111111111/config.json"
check hub-inspect 0 -- env HF_HUB_CACHE="$tmp/hf/hub" HF_HOME=/nonexistent "$bin" inspect --model acme/tiny-llama --json
json hub-inspect-params 'j["params_total"] == 1824000'
check hub-hf-home 0 -- env -u HF_HUB_CACHE HF_HOME="$tmp/hf" "$bin" estimate --model acme/tiny-llama --cluster dgx-h100 --layout tp=1 --json
json hub-estimate-name 'j["model"]["name"] == "acme/tiny-llama" and j["model"]["params_total"] == 1824000'
check hub-missing 2 -- env HF_HUB_CACHE="$tmp/hf/hub" "$bin" plan --model acme/tiny-llama@v2
expect hub-missing-msg "$tmp/err" "hf download acme/tiny-llama config.json --revision v2"
[[ ! -s "$tmp/out" ]] && passed=$((passed + 1)) || { echo "FAIL hub-missing: stdout not empty"; failed=$((failed + 1)); }

# capacity: per GPU kind, the smallest cluster that meets the target, priced by the search
check capacity-train 0 -- "$bin" capacity --model llama-3.1-8b --tokens 2T --deadline 5d --global-batch 512 --gpu h100,b200 --max-gpus 1024
expect capacity-train-table "$tmp/out" "the smallest size that meets the target"
expect capacity-train-price "$tmp/out" "price h100-sxm-80gb: CoreWeave"
check capacity-json 0 -- "$bin" capacity --model llama-3.1-8b --tokens 2T --deadline 5d --global-batch 512 --gpu h100 --price h100=2.5/h --max-gpus 1024 --json
json capacity-json-answer 'j["meets"] and j["kinds"][0]["answer"]["meets"] and j["kinds"][0]["answer"]["train_days"] <= 5 and j["kinds"][0]["price"]["per_gpu_hour"] == 2.5 and abs(j["kinds"][0]["answer"]["cost_usd"] - 2.5 * j["kinds"][0]["answer"]["gpu_hours"]) < 1e-6 * j["kinds"][0]["answer"]["cost_usd"]'
json capacity-json-curve 'all(p["gpus"] % 8 == 0 for p in j["kinds"][0]["points"]) and [p["gpus"] for p in j["kinds"][0]["points"] if p["on_ladder"]][:4] == [8, 16, 32, 64]'
# a layout naming its framework sweeps that framework (it once swept none: nothing fitted anywhere)
check capacity-fixed-framework 0 -- "$bin" capacity --model llama-3.1-8b --tokens 2T --deadline 12d --global-batch 512 --gpu h100 --max-gpus 1024 --layout framework=fsdp --json
json capacity-fixed-framework-fsdp 'j["meets"] and j["kinds"][0]["answer"]["layout"]["framework"] == "fsdp" and j["assumed"] == []'
check capacity-serve 0 -- "$bin" capacity --model llama-3.1-70b --concurrency 64 --context 32768 --output-len 1024 --gpu h100 --max-gpus 64 --json
json capacity-serve-kv 'j["kinds"][0]["answer"]["gpus"] == 16 and "KV cache binds" in j["kinds"][0]["points"][0]["miss"]'
check capacity-none 1 -- "$bin" capacity --model llama-3.1-405b --tokens 15T --deadline 1d --gpu h100 --max-gpus 256
expect capacity-none-text "$tmp/out" "NO GPU KIND MEETS"
expect capacity-none-advice "$tmp/out" "more time: the fastest size swept"
check capacity-deadline-zero 2 -- "$bin" capacity --model llama-3.1-8b --tokens 1T --deadline 0d
expect capacity-deadline-zero-msg "$tmp/err" "--deadline: expected a positive duration such as 60d"
check capacity-unknown-gpu 2 -- "$bin" capacity --model llama-3.1-8b --tokens 1T --deadline 5d --gpu h900
expect capacity-unknown-gpu-msg "$tmp/err" "--gpu: unknown GPU 'h900'"
check capacity-price-unit 2 -- "$bin" capacity --model llama-3.1-8b --tokens 1T --deadline 5d --price h100=2.9
expect capacity-price-unit-msg "$tmp/err" "--price 'h100=2.9' at column 6: expected a price per GPU-hour such as 2.9/h"
[[ ! -s "$tmp/out" ]] && passed=$((passed + 1)) || { echo "FAIL capacity-price-unit: stdout not empty"; failed=$((failed + 1)); }
check capacity-no-target 2 -- "$bin" capacity --model llama-3.1-8b
check capacity-partial-node 2 -- "$bin" capacity --model llama-3.1-8b --tokens 1T --gpus 100 --gpu h100
expect capacity-partial-node-msg "$tmp/err" "try 96 or 104"

# topology show
check topology 0 -- "$bin" topology show dgx-h100
expect topology-text "$tmp/out" "NVIDIA H100 80GB HBM3"

# topology discover from captured nvidia-smi output; the YAML it writes is a cluster plan accepts
data="$(cd "$(dirname "${BASH_SOURCE[0]}")/../topology/data" && pwd)"
check discover 0 -- "$bin" topology discover --from-topo "$data/dgx_h100_topo.txt" --from-query "$data/dgx_h100_query.csv" -o "$tmp/found.yaml"
expect discover-gpu "$tmp/found.yaml" "gpu: h100-sxm-80gb"
check discover-plan 0 -- "$bin" plan --model llama-3.1-8b --cluster "$tmp/found.yaml" --top 1
check discover-half 2 -- "$bin" topology discover --from-topo "$data/dgx_h100_topo.txt"

# emit: writes a directory once, refuses to overwrite without --force
check emit 0 -- "$bin" emit "$tmp/plan.yaml" --format all --launcher slurm -o "$tmp/out1"
[[ -f "$tmp/out1/README.md" ]] && passed=$((passed + 1)) || { echo "FAIL emit: no README"; failed=$((failed + 1)); }
check emit-again 2 -- "$bin" emit "$tmp/plan.yaml" --format all --launcher slurm -o "$tmp/out1"
check emit-force 0 -- "$bin" emit "$tmp/plan.yaml" --format all --launcher slurm -o "$tmp/out1" --force

# validate: print the cluster command without running it
check validate-print 0 -- "$bin" validate "$tmp/plan.yaml" --print-command
expect validate-print-cmd "$tmp/out" "mpirun"

# Progress on stderr only for a terminal: quiet into a file, shown under a pseudo-terminal.
check validate-host-quiet 0 -- "$bin" validate "$tmp/plan.yaml" --backend host --ranks 0
if grep -q "rehearsing" "$tmp/err"; then echo "FAIL validate-host-quiet: progress in a redirected stderr"; failed=$((failed + 1)); else passed=$((passed + 1)); fi
"$bin" topology discover >/dev/null 2>"$tmp/err"
if grep -q "discovering:" "$tmp/err"; then echo "FAIL discover-quiet: progress in a redirected stderr"; failed=$((failed + 1)); else passed=$((passed + 1)); fi
if command -v script >/dev/null; then
  script -qec "$bin topology discover" /dev/null >"$tmp/tty" 2>&1 </dev/null
  expect discover-tty-progress "$tmp/tty" "discovering: loading NVML"
fi

# explain-oom: a verdict for a real message, exit 2 for text that is not one
check explain-oom 0 -- "$bin" explain-oom "CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 15.78 GiB total capacity; 12.13 GiB already allocated; 1.67 GiB free; 12.52 GiB reserved in total by PyTorch)"
expect explain-oom-verdict "$tmp/out" "verdict: working set"
check explain-oom-bad 2 -- "$bin" explain-oom "Segmentation fault"

echo "cli: $passed passed, $failed failed"
[[ $failed -eq 0 ]]

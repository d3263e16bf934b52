#!/usr/bin/env bash
# Absurd and hostile inputs (docs/hardening.md): each ends with exit 2 and a located message,
# or a correct answer; none wraps around or hangs (every command runs under a time limit).
# Then plan files edited by hand, and outputs killed mid-write.
set -uo pipefail
bin="${SHARDPLAN:?set SHARDPLAN to the binary}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0

check() {  # check NAME EXPECTED_EXIT -- command...   (10 s limit: a hang fails)
  local name="$1" want="$2"
  shift 3
  timeout 10 "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$?
  if [[ $got -ne $want ]]; then
    echo "FAIL $name: exit $got, wanted $want"; sed 's/^/  stderr: /' "$tmp/err" | head -5
    failed=$((failed + 1)); return 1
  fi
  passed=$((passed + 1))
}

expect() {  # expect NAME FILE PATTERN
  if grep -q -- "$3" "$2"; then passed=$((passed + 1)); else
    echo "FAIL $1: '$3' not in $2:"; head -5 "$2" | sed 's/^/  /'; failed=$((failed + 1)); fi
}

model() {  # model FILE KEY VALUE...: llama-2-7b's shape with keys set to VALUEs (JSON text)
  python3 - "$@" <<'PY'
import sys
path, pairs = sys.argv[1], sys.argv[2:]
keys = {"model_type": '"llama"', "hidden_size": "4096", "intermediate_size": "11008", "num_hidden_layers": "32",
        "num_attention_heads": "32", "vocab_size": "32000"}
keys.update(zip(pairs[::2], pairs[1::2]))
open(path, "w").write("{\n" + ",\n".join(f'  "{k}": {v}' for k, v in keys.items()) + "\n}\n")
PY
}

# Model sizes: 10^15 parameters is refused by name; a vocabulary of 1 is a real (tiny) answer.
model "$tmp/huge.json" hidden_size 1000000000
check hidden-1e9 2 -- "$bin" inspect --model "$tmp/huge.json"
expect hidden-1e9-msg "$tmp/err" "huge.json:3:18: hidden_size: expected an integer from 1 to 4194304, got 1000000000"
model "$tmp/1e15.json" hidden_size 1048576 intermediate_size 4194304 num_hidden_layers 80 num_attention_heads 8192
check params-1e15 0 -- "$bin" inspect --model "$tmp/1e15.json" --json
python3 -c "import json,sys; j=json.load(open('$tmp/out')); sys.exit(0 if 1e15 < j['params_total'] < 2e15 else 1)" && passed=$((passed + 1)) || { echo "FAIL params-1e15 count"; failed=$((failed + 1)); }
check params-1e15-estimate 1 -- "$bin" estimate --model "$tmp/1e15.json" --cluster dgx-h100 --layout tp=8
model "$tmp/vocab1.json" vocab_size 1
check vocab-1 0 -- "$bin" inspect --model "$tmp/vocab1.json" --json
# llama-2-7b (6,738,415,616) less 31,999 rows of the untied embedding and LM head: 2 x 4096 x 31999.
expect vocab-1-total "$tmp/out" '"params_total": 6476279808'
model "$tmp/zero.json" num_hidden_layers 0
check layers-0 2 -- "$bin" inspect --model "$tmp/zero.json"
expect layers-0-msg "$tmp/err" 'zero.json:5:24: num_hidden_layers: expected an integer from 1 to 100000, got 0'
model "$tmp/neg.json" num_hidden_layers -4
check layers-negative 2 -- "$bin" inspect --model "$tmp/neg.json"
expect layers-negative-msg "$tmp/err" 'neg.json:5:24: num_hidden_layers: expected an integer from 1 to 100000, got -4'
model "$tmp/nan.json" rope_theta NaN
check model-nan 2 -- "$bin" inspect --model "$tmp/nan.json"
expect model-nan-msg "$tmp/err" 'nan.json:8:17: invalid JSON'

# Workloads: a sequence of 2^40, zero or negative counts, NaN and Inf in float fields.
for bad in "seq_len: 1099511627776" "seq_len: 0" "global_batch: -8" "inference: {gpu_memory_utilization: .nan}" \
           "inference: {gpu_memory_utilization: .inf}" "inference: {batch: 0}"; do
  printf 'task: pretrain\n%s\n' "$bad" >"$tmp/w.yaml"
  check "workload '$bad'" 2 -- "$bin" estimate --model llama-3.1-8b --cluster dgx-h100 --workload "$tmp/w.yaml" --layout tp=8
  expect "workload '$bad' msg" "$tmp/err" "w.yaml:2:"
done
check seq-flag-2e40 2 -- "$bin" estimate --model llama-3.1-8b --cluster dgx-h100 --seq-len 1099511627776 --layout tp=8

# Clusters: 10^7 GPUs answers in bounded time (a plan or exit 1), as 10^7 / 8 nodes is refused by the
# node limit; zero, negative, NaN and Inf quantities are located errors.
printf 'nodes: 10000\ngpus_per_node: 1000\ngpu: h100-sxm-80gb\n' >"$tmp/c7.yaml"
check cluster-1e7-plan 1 -- "$bin" plan --model llama-3.1-8b --cluster "$tmp/c7.yaml" --top 1 --json
printf 'nodes: 1250000\ngpus_per_node: 8\ngpu: h100-sxm-80gb\n' >"$tmp/c7b.yaml"
check cluster-1e7-nodes 2 -- "$bin" plan --model llama-3.1-8b --cluster "$tmp/c7b.yaml"
expect cluster-1e7-nodes-msg "$tmp/err" "c7b.yaml:1:8: nodes: expected an integer from 1 to 1048576"
for bad in "nodes: 0" "gpus_per_node: -8" "host: {memory: -2 TiB}" "host: {memory: NaN GiB}" "intra_node: {bandwidth: inf GB/s}" \
           "intra_node: {bandwidth: 1e300 TB/s}"; do
  printf 'gpu: h100-sxm-80gb\n%s\n' "$bad" >"$tmp/c.yaml"
  [[ "$bad" == gpus_per_node* ]] || printf 'gpus_per_node: 8\n' >>"$tmp/c.yaml"
  check "cluster '$bad'" 2 -- "$bin" estimate --model llama-3.1-8b --cluster "$tmp/c.yaml" --layout tp=8
  expect "cluster '$bad' msg" "$tmp/err" "c.yaml:2:[0-9]*: "
done

# Layouts whose degrees multiply past int: refused with the item at fault, never wrapped.
check layout-product 2 -- "$bin" estimate --model llama-3.1-8b --cluster dgx-h100 --layout dp=65536,tp=65536,pp=65536
expect layout-product-msg "$tmp/err" 'is past 16777216 GPUs ("dp=65536")'
check layout-zero 2 -- "$bin" estimate --model llama-3.1-8b --cluster dgx-h100 --layout tp=0
check layout-negative 2 -- "$bin" estimate --model llama-3.1-8b --cluster dgx-h100 --layout mbs=-1

# Plan files edited by hand: a model section that no longer matches its hash, and degrees that
# no longer cover the cluster, are located errors.
check plan-save 0 -- "$bin" plan --model llama-3.1-8b --cluster dgx-h100 --top 1 -o "$tmp/p.yaml"
sed 's/num_hidden_layers: 32/num_hidden_layers: 30/' "$tmp/p.yaml" >"$tmp/p-model.yaml"
check plan-model-edited 2 -- "$bin" estimate --plan "$tmp/p-model.yaml"
expect plan-model-edited-msg "$tmp/err" "p-model.yaml:[0-9]*:[0-9]*: model_hash: the model section no longer matches"
sed -E 's/(dp=)[0-9]+/\13/' "$tmp/p.yaml" >"$tmp/p-dp.yaml"
check plan-degrees-edited 2 -- "$bin" estimate --plan "$tmp/p-dp.yaml"
expect plan-degrees-edited-msg "$tmp/err" "p-dp.yaml:[0-9]*:[0-9]*: "

# Outputs killed mid-write: after SIGKILL at any moment, the named file or directory is absent
# or whole (a plan that loads; a directory with every file and the emit marker), never half.
complete=0
for delay in 0.00 0.01 0.02 0.03 0.05 0.08 0.12 0.2; do
  rm -rf "$tmp/k.yaml" "$tmp/kdir"
  "$bin" plan --model llama-3.1-70b --cluster dgx-h100 --nodes 4 --top 1 -o "$tmp/k.yaml" >/dev/null 2>&1 &
  pid=$!; sleep "$delay"; kill -9 "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
  if [[ -e "$tmp/k.yaml" ]]; then
    check "plan-killed-$delay loads" 0 -- "$bin" estimate --plan "$tmp/k.yaml" && complete=$((complete + 1))
  else passed=$((passed + 1)); fi
  "$bin" emit "$tmp/p.yaml" --format all --launcher slurm -o "$tmp/kdir" >/dev/null 2>&1 &
  pid=$!; sleep "$delay"; kill -9 "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
  if [[ -e "$tmp/kdir" ]]; then
    if [[ -f "$tmp/kdir/.shardplan-emit" && -f "$tmp/kdir/README.md" ]]; then passed=$((passed + 1)); else
      echo "FAIL emit-killed-$delay: partial directory:"; ls -a "$tmp/kdir" | sed 's/^/  /'; failed=$((failed + 1)); fi
  else passed=$((passed + 1)); fi
done
ls "$tmp" | grep -q '^k.yaml.\|^kdir.' && { echo "note: a killed write left a hidden temporary sibling (by design, never the named output)"; }

# emit writes only into a directory it made (its marker) unless --force.
mkdir -p "$tmp/mine" && echo keep >"$tmp/mine/notes.txt"
check emit-foreign-dir 2 -- "$bin" emit "$tmp/p.yaml" --format all --launcher slurm -o "$tmp/mine"
expect emit-foreign-dir-msg "$tmp/err" "was not written by .shardplan emit."
check emit-foreign-force 0 -- "$bin" emit "$tmp/p.yaml" --format all --launcher slurm -o "$tmp/mine" --force

# The validator without mpirun on PATH: an environment error (exit 3) that says what to do.
check validate-no-mpirun 3 -- env PATH=/nonexistent "$bin" validate "$tmp/p.yaml" --backend host
expect validate-no-mpirun-msg "$tmp/err" "mpirun is not on PATH"

echo "bad_input_test: $passed passed, $failed failed"
((failed == 0))

#!/usr/bin/env python3
"""Scores shardplan on the published runs through the CLI, with the inputs a user types.

    score.py --shardplan BIN [--cases DIR]... [--thresholds FILE] [--json] [--verbose]

For every folder under cases/ (written by make_cases.py) and extra_cases/ (runs gathered
from other sources by hand, each truth.json quoting its source) it runs

    shardplan estimate --model config.json --cluster cluster.yaml --workload workload.yaml \
        --layout "$(cat layout.txt)" --json

and compares the answer with truth.json: the fit verdict with whether the run ran, the memory
figure the source measured with the matching prediction (allocated with
allocated_peak_bytes, reserved or unstated with reserved_peak_bytes, nvidia-smi with
peak_bytes, each the largest over pipeline stages; weights with the weights term; a KV-cache
budget with max_kv_tokens), and tokens/s per GPU with the time model's. A record that also
measured the reserved peak (measured_reserved, as bench/calibrate writes) is scored on it too,
against reserved_peak_bytes. A run that ran out of memory is scored on its fit verdict, not
on the peak it reached (what it had allocated when it failed, a lower bound). An input the CLI
rejects (exit 2 or 3), or a case with no input a user could write, is a miss, never skipped.

Prints each case and a summary; with --thresholds, exits 1 when the summary is worse than the
file allows (0 pass, 1 worse, 2 bad input). Standard library only.
"""
import argparse
import json
import math
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
GIB = float(1 << 30)


def percentile(values, q):  # nearest rank, as bench/accuracy
    if not values:
        return 0.0
    v = sorted(values)
    rank = max(1, min(len(v), math.ceil(q * len(v))))
    return v[rank - 1]


def stage_max(memory, key):
    return max([s[key] for s in memory.get("per_stage", [])] + [memory["per_gpu"][key]])


def predicted_for(truth, out):
    metric = truth.get("metric")
    mem = out["memory"]
    if metric == "allocated":
        return stage_max(mem, "allocated_peak_bytes")
    if metric == "device":
        return stage_max(mem, "peak_bytes")
    if metric in ("reserved", "unspecified"):
        return stage_max(mem, "reserved_peak_bytes")
    if metric == "weights":
        return mem["per_gpu"]["terms"].get("weights", 0)
    if metric == "kv_tokens":
        return out.get("inference", {}).get("max_kv_tokens", 0)
    return None


def peak_at_oom(truth):
    """A peak measured by a run that ran out of memory is what it had allocated when it
    failed, a lower bound: such a run is scored on its fit verdict, not on those bytes (its
    weights or KV-cache size, measured before it failed, still are)."""
    return truth.get("fits") is False and truth.get("metric") in ("allocated", "reserved", "device", "unspecified")


def run_case(binary, folder, timeout):
    truth = json.load(open(os.path.join(folder, "truth.json")))
    row = {"id": truth["id"], "truth": truth, "status": "ok"}
    if truth.get("no_input"):
        row["status"] = "no input: " + truth["no_input"]
        return row
    layout = open(os.path.join(folder, "layout.txt")).read().strip()
    cmd = [binary, "estimate", "--model", os.path.join(folder, "config.json"), "--cluster",
           os.path.join(folder, "cluster.yaml"), "--workload", os.path.join(folder, "workload.yaml"), "--json"]
    if layout:
        cmd += ["--layout", layout]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        row["status"] = f"timed out after {timeout} s"
        return row
    if p.returncode not in (0, 1):
        msg = (p.stderr.strip().splitlines() or ["(no message)"])[-1]
        row["status"] = f"rejected (exit {p.returncode}): {msg}"
        return row
    try:
        out = json.loads(p.stdout)
    except json.JSONDecodeError as e:
        row["status"] = f"exit {p.returncode} without JSON ({e})"
        return row
    row["layout"] = out["layout"]["string"]
    row["group"] = group_of(out)
    row["fits"] = bool(out["memory"]["per_gpu"]["fits"])
    if "metric" in truth and not peak_at_oom(truth):
        pred = predicted_for(truth, out)
        if pred is not None and truth["measured"] > 0:
            row["predicted"] = pred
            row["mem_error"] = pred / truth["measured"] - 1
    if truth.get("measured_reserved") and not peak_at_oom(truth):
        row["reserved_error"] = stage_max(out["memory"], "reserved_peak_bytes") / truth["measured_reserved"] - 1
    steps = truth.get("record", {}).get("step_seconds")
    if steps and truth.get("fits") and out.get("time", {}).get("known"):
        # A calibration run's last step, timed under the fake process group, which moves no
        # data between GPUs: this rank's compute, recomputation and optimizer step, and what
        # crosses PCIe (paged optimizer states), without communication.
        terms = out["time"]["terms"]
        row["compute_time_error"] = (terms["compute"] + terms["recompute"] + terms["optimizer"]
                                     + terms.get("offload", 0)) / steps[-1] - 1
    if "tokens_per_sec_per_gpu" in truth and out.get("time", {}).get("known") and row["fits"]:
        tps = out["time"]["tokens_per_second_per_gpu"]
        if tps > 0:
            row["time_error"] = tps / truth["tokens_per_sec_per_gpu"] - 1
    return row


def summarize(rows):
    s = {"cases": len(rows), "rejected": [], "optimistic": [], "pessimistic": []}
    mem, reserved, reserved_signed, time_ = [], [], [], []
    fit_cases = fit_agree = 0
    worst_under, worst_under_id = 0.0, ""
    for r in rows:
        t = r["truth"]
        if r["status"] != "ok":
            s["rejected"].append(r["id"])
            if "fits" in t:
                fit_cases += 1  # a rejected input answers nothing: a miss
            if "metric" in t and not peak_at_oom(t):
                mem.append(float("inf"))
            if t.get("measured_reserved") and not peak_at_oom(t):
                reserved.append(float("inf"))
            if "tokens_per_sec_per_gpu" in t:
                time_.append(float("inf"))
            continue
        if "fits" in t:
            fit_cases += 1
            if r["fits"] == t["fits"]:
                fit_agree += 1
            else:
                (s["optimistic"] if r["fits"] else s["pessimistic"]).append(r["id"])
        if "mem_error" in r:
            mem.append(abs(r["mem_error"]))
            if -r["mem_error"] > worst_under:
                worst_under, worst_under_id = -r["mem_error"], r["id"]
        if "reserved_error" in r:
            reserved.append(abs(r["reserved_error"]))
            reserved_signed.append(r["reserved_error"])
        if "time_error" in r:
            time_.append(abs(r["time_error"]))
    s.update(fit_cases=fit_cases, fit_agree=fit_agree, fit_agreement=fit_agree / fit_cases if fit_cases else 1.0,
             memory_scored=len(mem), memory_median=percentile(mem, 0.5), memory_p90=percentile(mem, 0.9),
             worst_under_prediction=worst_under, worst_under_id=worst_under_id,
             reserved_scored=len(reserved), reserved_median=percentile(reserved, 0.5),
             reserved_worst=max(reserved, default=0.0),
             reserved_worst_under=max([0.0] + [-e for e in reserved_signed]), time_scored=len(time_),
             time_median=percentile(time_, 0.5), time_p90=percentile(time_, 0.9))
    return s


def group_of(out):
    """The kind of run a record is, from the CLI's own reading of its inputs."""
    layout, model = out["layout"], out["model"]
    if out["workload"]["task"] == "inference":
        return "serving (one GPU)"
    if out["workload"]["task"] in ("lora", "qlora"):
        return "LoRA"
    if model["params_active"] < model["params_total"]:
        return "MoE (FSDP)"
    if layout["tp"] > 1:
        return "tensor parallel"
    return "FSDP" if layout["dp"] > 1 else "one GPU"


def print_groups(rows):
    """Allocated and reserved peaks by kind of run: median and worst error, optimistic misses."""
    groups = {}
    for r in rows:
        groups.setdefault(r.get("group", "no answer"), []).append(r)
    print(f"{'group':<20} {'runs':>4} {'alloc median':>12} {'alloc worst':>11} {'resv median':>11} {'resv worst':>10} "
          f"{'optimistic':>10} {'step time (n, median signed)':>29}")
    def worst(rs, key):  # the largest error, with its sign
        errors = [r[key] for r in rs if key in r]
        return f"{100 * max(errors, key=abs):+.1f}%" if errors else "-"

    def med(n, v):
        return pct(v) if n else "-"

    for name in sorted(groups):
        rs = groups[name]
        s = summarize(rs)
        step = sorted(r["compute_time_error"] for r in rs if "compute_time_error" in r)
        step_txt = f"{len(step)}, {100 * percentile(step, 0.5):+.1f}%" if step else "-"
        print(f"{name:<20} {len(rs):>4} {med(s['memory_scored'], s['memory_median']):>12} {worst(rs, 'mem_error'):>11} "
              f"{med(s['reserved_scored'], s['reserved_median']):>11} {worst(rs, 'reserved_error'):>10} "
              f"{len(s['optimistic']):>10} {step_txt:>29}")


def pct(x):
    return "inf" if math.isinf(x) else f"{100 * x:.1f}%"


def print_rows(rows, verbose):
    print(f"{'case':<52} {'metric':<11} {'measured':>9} {'predicted':>9} {'error':>7}  {'fit':<16} {'tok/s err':>9}")
    for r in rows:
        t = r["truth"]
        if r["status"] != "ok":
            print(f"{r['id'][:52]:<52} {r['status']}")
            continue
        metric = t.get("metric", "fit")
        unit = (lambda v: f"{v:,}") if metric == "kv_tokens" else (lambda v: f"{v / GIB:.1f}G")
        meas = unit(t["measured"]) if "measured" in t else "-"
        pred = unit(r["predicted"]) if "predicted" in r else "-"
        err = f"{100 * r['mem_error']:+.1f}%" if "mem_error" in r else "-"
        fit = ("fits" if r["fits"] else "OOM")
        if "fits" in t:
            fit = ("ran" if t["fits"] else "OOM") + " / " + fit
            if r["fits"] != t["fits"]:
                fit += " OPTIMISTIC" if r["fits"] else " pessim."
        terr = f"{100 * r['time_error']:+.1f}%" if "time_error" in r else "-"
        print(f"{r['id'][:52]:<52} {metric:<11} {meas:>9} {pred:>9} {err:>7}  {fit:<16} {terr:>9}")
        if verbose:
            print(f"    --layout {r['layout']}")


def check(summary, path):
    try:
        limits = json.load(open(path))
    except (OSError, json.JSONDecodeError) as e:
        print(f"score: {path}: {e}", file=sys.stderr)
        sys.exit(2)
    checks = [("min_fit_agreement", summary["fit_agreement"], lambda v, lim: v >= lim),
              ("max_optimistic_misses", len(summary["optimistic"]), lambda v, lim: v <= lim),
              ("max_rejected", len(summary["rejected"]), lambda v, lim: v <= lim),
              ("max_memory_median", summary["memory_median"], lambda v, lim: v <= lim),
              ("max_memory_p90", summary["memory_p90"], lambda v, lim: v <= lim),
              ("max_under_prediction", summary["worst_under_prediction"], lambda v, lim: v <= lim),
              ("max_reserved_median", summary["reserved_median"], lambda v, lim: v <= lim),
              ("max_reserved_under_prediction", summary["reserved_worst_under"], lambda v, lim: v <= lim),
              ("max_time_median", summary["time_median"], lambda v, lim: v <= lim),
              ("max_time_p90", summary["time_p90"], lambda v, lim: v <= lim)]
    failed = False
    for key, value, ok in checks:
        if key not in limits:
            continue
        if not ok(value, limits[key]):
            print(f"score: {key} is {value} against the recorded {limits[key]}", file=sys.stderr)
            failed = True
    unknown = set(limits) - {k for k, _, _ in checks} - {"note"}
    if unknown:
        print(f"score: {path}: unknown keys {sorted(unknown)}", file=sys.stderr)
        sys.exit(2)
    return not failed


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shardplan", required=True)
    ap.add_argument("--cases", action="append",
                    help="a folder of case folders; repeatable (default: cases/ and extra_cases/)")
    ap.add_argument("--thresholds")
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args()
    roots = a.cases or [os.path.join(HERE, d) for d in ("cases", "extra_cases") if os.path.isdir(os.path.join(HERE, d))]
    folders = []
    for root in roots:
        if not os.path.isdir(root):
            print(f"score: {root}: no such folder (run make_cases.py)", file=sys.stderr)
            sys.exit(2)
        folders += sorted(os.path.join(root, d) for d in os.listdir(root))
    rows = [run_case(a.shardplan, f, a.timeout) for f in folders]
    s = summarize(rows)
    if a.json:
        print(json.dumps({"summary": s, "cases": rows}, indent=2, default=str))
    else:
        print_rows(rows, a.verbose)
        print()
        print(f"cases {s['cases']}; rejected or without input {len(s['rejected'])}")
        print(f"fit/OOM agreement {s['fit_agree']}/{s['fit_cases']} = {pct(s['fit_agreement'])}; "
              f"optimistic {len(s['optimistic'])} {s['optimistic']}; pessimistic {len(s['pessimistic'])}")
        print(f"memory: n={s['memory_scored']} median {pct(s['memory_median'])}, p90 {pct(s['memory_p90'])}, "
              f"worst under-prediction {pct(s['worst_under_prediction'])} ({s['worst_under_id'] or '-'})")
        if s["reserved_scored"]:
            print(f"reserved peak: n={s['reserved_scored']} median {pct(s['reserved_median'])}, worst "
                  f"{pct(s['reserved_worst'])}, worst under-prediction {pct(s['reserved_worst_under'])}")
        print(f"time (tokens/s per GPU): n={s['time_scored']} median {pct(s['time_median'])}, p90 {pct(s['time_p90'])}")
        if any(r["truth"].get("category") == "calibration" for r in rows):
            print()
            print_groups(rows)
    if a.thresholds and not check(s, a.thresholds):
        sys.exit(1)


if __name__ == "__main__":
    main()

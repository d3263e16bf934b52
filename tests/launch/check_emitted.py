#!/usr/bin/env python3
"""Proves what `shardplan emit` writes with the libraries that read it.

For every case directory (and its CASE.expect.json beside it, which states the plan's
world size, degrees, batch, ZeRO stage and offload):
  deepspeed.json / deepspeed_hf.json  deepspeed.runtime.config.DeepSpeedConfig, with an mpu
                                      reporting the plan's data-parallel size (as
                                      Megatron-DeepSpeed passes one); the HF flavour after
                                      transformers' HF Trainer filler fills its "auto" values
  accelerate_config.yaml              accelerate's config loader, then `accelerate launch`'s
                                      own argument validation and environment, then the
                                      FSDP / DeepSpeed plugin built from that environment
  torchtitan.toml                     tomllib; degrees multiply to the world size
  megatron_args.sh, launch.sh, job.sbatch  bash -n and shellcheck
  hostfile                            DeepSpeed's hostfile parser; slots add up to the world

With --shardplan, `shardplan emit CASE.plan.yaml` must write the same files (the plan
goes through SavePlan/LoadPlan), refuse to overwrite them without --force (exit 2,
nothing changed) and replace them with it. A reader that cannot be imported is a
failure with the reason, never a skip. Closes with "N passed, N failed".

Usage: check_emitted.py --driver launch_emit_driver --work DIR [--shardplan BIN]
       check_emitted.py CASE_DIR...                              (check existing output)
"""
import argparse
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys

try:
    import tomllib
except ImportError:  # Python < 3.11: scripts/python-env installs tomli
    import tomli as tomllib

class Results:
    def __init__(self):
        self.passed, self.failed = 0, 0

    def ok(self, where, what):
        self.passed += 1
        print(f"PASS {where}: {what}")

    def fail(self, where, why):
        self.failed += 1
        print(f"FAIL {where}: {why}")

    @contextlib.contextmanager
    def check(self, where):
        try:
            yield
        except Exception as e:  # any reader error is the verdict for that file
            self.fail(where, f"{type(e).__name__}: {e}")


def expect_equal(name, got, want):
    if got != want:
        raise AssertionError(f"{name} is {got!r}, the plan says {want!r}")


# --- DeepSpeed ---------------------------------------------------------------------------

class PlanMpu:
    """What Megatron-DeepSpeed hands DeepSpeedConfig: its data-parallel size, world/(tp*pp*cp)."""

    def __init__(self, e):
        self.e = e

    def get_data_parallel_world_size(self):
        return self.e["dp"]


def init_deepspeed_comm():
    """DeepSpeedConfig asks deepspeed.comm for the rank: a one-process gloo group on loopback."""
    import deepspeed
    import deepspeed.comm.torch
    # A one-process group needs no shared-memory allreduce kernel; building it is a minute of
    # JIT C++ compilation that has nothing to do with reading the config.
    deepspeed.comm.torch.build_shm_op = lambda: None
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK="0",
                      LOCAL_RANK="0", WORLD_SIZE="1", LOCAL_WORLD_SIZE="1")
    deepspeed.init_distributed(dist_backend="gloo", auto_mpi_discovery=False, verbose=False)


def fill_like_hf_trainer(cfg, e):
    """transformers' own filler (integrations/deepspeed.py HfTrainerDeepSpeedConfig), with the
    TrainingArguments the plan implies; a value that is not "auto" must match them."""
    from types import SimpleNamespace
    from transformers.integrations.deepspeed import HfTrainerDeepSpeedConfig
    args = SimpleNamespace(
        world_size=e["world"], per_device_train_batch_size=e["micro_batch"],
        gradient_accumulation_steps=e["grad_accum"], max_grad_norm=1.0, learning_rate=1e-5,
        adam_beta1=0.9, adam_beta2=0.999, adam_epsilon=1e-8, weight_decay=0.0, save_on_each_node=False,
        fp16=e["precision"] == "fp16", fp16_full_eval=False, bf16=e["precision"] in ("bf16", "fp8"),
        bf16_full_eval=False, get_warmup_steps=lambda steps: 0)
    model = SimpleNamespace(config=SimpleNamespace(hidden_size=e["hidden"]))
    hf = HfTrainerDeepSpeedConfig(cfg)
    hf.trainer_config_process(args)
    hf.trainer_config_finalize(args, model, num_training_steps=1000)  # raises on mismatches
    left = [k for k, v in walk(hf.config) if v == "auto"]
    if left:
        raise AssertionError(f'"auto" where the HF Trainer fills nothing: {left}')
    return hf.config


def walk(node, prefix=""):
    for k, v in node.items():
        if isinstance(v, dict):
            yield from walk(v, f"{prefix}{k}.")
        else:
            yield f"{prefix}{k}", v


def check_deepspeed(path, e, hf, results):
    from deepspeed.runtime.config import DeepSpeedConfig
    where = f"{e['case']}/{os.path.basename(path)}"
    with results.check(where):
        with open(path) as f:
            raw = json.load(f)
        if hf:
            raw = fill_like_hf_trainer(raw, e)
        elif any(v == "auto" for _, v in walk(raw)):
            raise AssertionError('"auto" in a standalone config breaks DeepSpeed outside the HF Trainer')
        cfg = DeepSpeedConfig(raw, mpu=PlanMpu(e))
        expect_equal("DeepSpeed's data-parallel size", cfg.world_size, e["dp"])
        expect_equal("train_batch_size", cfg.train_batch_size, e["global_batch"])
        expect_equal("train_micro_batch_size_per_gpu", cfg.train_micro_batch_size_per_gpu, e["micro_batch"])
        expect_equal("gradient_accumulation_steps", cfg.gradient_accumulation_steps, e["grad_accum"])
        expect_equal("ZeRO stage", int(cfg.zero_optimization_stage), e["zero"])
        z = cfg.zero_config
        opt_dev = z.offload_optimizer.device if z.offload_optimizer else "none"
        par_dev = z.offload_param.device if z.offload_param else "none"
        expect_equal("offload_optimizer.device", str(opt_dev), e["offload_optimizer"])
        expect_equal("offload_param.device", str(par_dev), e["offload_params"])
        expect_equal("bf16.enabled", bool(cfg.bfloat16_config.enabled), e["precision"] in ("bf16", "fp8"))
        expect_equal("fp16.enabled", bool(cfg.float16_config.enabled), e["precision"] == "fp16")
        if "nvme" in (opt_dev, par_dev) and "aio" not in raw:
            raise AssertionError("NVMe offload without an aio block")
        results.ok(where, f"DeepSpeedConfig accepts it: train_batch_size {cfg.train_batch_size} = "
                          f"{cfg.train_micro_batch_size_per_gpu} x {cfg.gradient_accumulation_steps} x dp "
                          f"{cfg.world_size}; ZeRO stage {int(cfg.zero_optimization_stage)}; offload "
                          f"optimizer={opt_dev} param={par_dev}")


# --- accelerate --------------------------------------------------------------------------

def check_accelerate(path, e, results):
    from accelerate.commands.config.config_args import load_config_from_file
    from accelerate.commands.launch import _validate_launch_command, launch_command_parser
    from accelerate.utils import patch_environment
    where = f"{e['case']}/accelerate_config.yaml"
    with results.check(where):
        cfg = load_config_from_file(path)
        expect_equal("num_processes", cfg.num_processes, e["world"])
        expect_equal("num_machines", cfg.num_machines, e["nodes"])
        argv = ["--config_file", path]
        if e["nodes"] > 1:  # what the launch script passes on node 0
            argv += ["--machine_rank", "0", "--main_process_ip", "127.0.0.1"]
        args, _, _ = _validate_launch_command(launch_command_parser().parse_args(argv + ["train.py"]))
        kind = str(cfg.distributed_type).split(".")[-1]
        expect_equal("distributed_type", kind, expected_distributed_type(e))
        expect_equal("mixed_precision", str(cfg.mixed_precision),
                     {"fp32": "no"}.get(e["precision"], e["precision"]))
        detail = ""
        if kind == "FSDP":
            detail = fsdp_plugin(args, patch_environment)
        elif kind == "DEEPSPEED":
            detail = deepspeed_plugin(args, patch_environment, e, cfg)
        results.ok(where, f"accelerate loads it: {kind}, {cfg.num_processes} processes on "
                          f"{cfg.num_machines} machine(s), mixed_precision {cfg.mixed_precision}{detail}")


def expected_distributed_type(e):
    if e["framework"] == "deepspeed":
        return "DEEPSPEED"
    if e["zero"] == 0 and e["tp"] == 1 and e["cp"] == 1:
        return "NO" if e["world"] == 1 else "MULTI_GPU"
    return "FSDP"


def fsdp_plugin(args, patch_environment):
    from accelerate.utils import FullyShardedDataParallelPlugin
    from accelerate.utils.launch import prepare_multi_gpu_env
    env = prepare_multi_gpu_env(args)
    with patch_environment(**env):
        p = FullyShardedDataParallelPlugin()
    expect_equal("fsdp_version", p.fsdp_version, 2)
    wrap = p.transformer_cls_names_to_wrap
    nd = ""
    if env.get("ACCELERATE_USE_PARALLELISM_CONFIG") == "true":
        from accelerate.parallelism_config import ParallelismConfig
        with patch_environment(**env):
            pc = ParallelismConfig()
        expect_equal("ParallelismConfig total_size", pc.total_size, args.num_processes)
        nd = (f" ParallelismConfig dp_replicate {pc.dp_replicate_size} x dp_shard {pc.dp_shard_size}"
              f" x tp {pc.tp_size} x cp {pc.cp_size} = {pc.total_size}")
    return nd + (f"; FSDP{p.fsdp_version} reshard_after_forward={p.reshard_after_forward} "
            f"offload={type(p.cpu_offload).__name__} wrap={wrap} "
            f"activation_checkpointing={p.activation_checkpointing} state_dict={p.state_dict_type}")


def deepspeed_plugin(args, patch_environment, e, cfg):
    from accelerate.utils import DeepSpeedPlugin
    from accelerate.utils.launch import prepare_deepspeed_cmd_env
    # As launch_command() does before deepspeed_launcher() (accelerate commands/launch.py).
    args.deepspeed_fields_from_accelerate_config = ",".join(
        list(cfg.deepspeed_config.keys()))
    _, env = prepare_deepspeed_cmd_env(args)
    with patch_environment(**env):
        p = DeepSpeedPlugin()
    expect_equal("accelerate's ZeRO stage", p.zero_stage, e["zero"])
    return f"; DeepSpeedPlugin reads {env.get('ACCELERATE_DEEPSPEED_CONFIG_FILE')}: ZeRO {p.zero_stage}"


# --- torchtitan, shell, hostfile ---------------------------------------------------------

def check_torchtitan(path, e, results):
    where = f"{e['case']}/torchtitan.toml"
    with results.check(where):
        with open(path, "rb") as f:
            t = tomllib.load(f)
        p = t["parallelism"]
        degrees = [p["data_parallel_replicate_degree"], p["data_parallel_shard_degree"],
                   p["context_parallel_degree"], p["tensor_parallel_degree"], p["pipeline_parallel_degree"]]
        product = 1
        for d in degrees:
            if d < 1:
                raise AssertionError(f"degree {d} < 1")
            product *= d
        expect_equal("dp_replicate x dp_shard x cp x tp x pp (parallel_dims.py)", product, e["world"])
        expect_equal("tensor_parallel_degree", p["tensor_parallel_degree"], e["tp"])
        expect_equal("pipeline_parallel_degree", p["pipeline_parallel_degree"], e["pp"])
        results.ok(where, f"tomllib parses it; degrees {' x '.join(map(str, degrees))} = {product} = world")


def check_shell(path, e, results, shellcheck):
    where = f"{e['case']}/{os.path.basename(path)}"
    with results.check(where):
        run = subprocess.run(["bash", "-n", path], capture_output=True, text=True)
        if run.returncode:
            raise AssertionError(f"bash -n: {run.stderr.strip()}")
        if shellcheck is None:
            raise AssertionError("shellcheck is not installed (apt-get install shellcheck)")
        run = subprocess.run([shellcheck, "-x", "-s", "bash", os.path.basename(path)],
                             capture_output=True, text=True, cwd=os.path.dirname(path))
        if run.returncode:
            raise AssertionError(f"shellcheck:\n{run.stdout.strip()}")
        results.ok(where, "bash -n and shellcheck pass")


def check_megatron(path, e, results):
    where = f"{e['case']}/megatron_args.sh (values)"
    with results.check(where):
        run = subprocess.run(["bash", "-c", 'source "$1"; printf "%s\\n" "${MEGATRON_ARGS[@]}"', "x", path],
                             capture_output=True, text=True, check=True)
        words = run.stdout.split()
        flag = lambda name: int(words[words.index(name) + 1])
        tp, pp = flag("--tensor-model-parallel-size"), flag("--pipeline-model-parallel-size")
        cp = flag("--context-parallel-size")
        expect_equal("tp x pp x cp x dp", tp * pp * cp * e["dp"], e["world"])
        gb, mb = flag("--global-batch-size"), flag("--micro-batch-size")
        if gb % (mb * e["dp"]):
            raise AssertionError(f"global batch {gb} is not a multiple of micro {mb} x dp {e['dp']}")
        expect_equal("micro-batches per step", gb // (mb * e["dp"]), e["grad_accum"])
        results.ok(where, f"tp {tp} x pp {pp} x cp {cp} x dp {e['dp']} = {e['world']}; global batch {gb}")


def check_hostfile(path, e, results):
    from deepspeed.launcher.runner import fetch_hostfile
    where = f"{e['case']}/hostfile"
    with results.check(where):
        pool = fetch_hostfile(path)
        expect_equal("hosts", len(pool), e["nodes"])
        expect_equal("slots", sum(pool.values()), e["world"])
        results.ok(where, f"DeepSpeed's parser reads {len(pool)} hosts x {e['procs_per_node']} slots")


@contextlib.contextmanager
def chdir(path):
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


def check_case(case_dir, results, shellcheck):
    case_dir = os.path.abspath(case_dir)
    with open(case_dir.rstrip("/") + ".expect.json") as f:
        e = json.load(f)
    e["case"] = os.path.basename(case_dir.rstrip("/"))
    for name in sorted(os.listdir(case_dir)):
        path = os.path.join(case_dir, name)
        if name in ("deepspeed.json", "deepspeed_hf.json"):
            check_deepspeed(path, e, name == "deepspeed_hf.json", results)
        elif name == "accelerate_config.yaml":
            with chdir(case_dir):  # deepspeed_config_file is relative to the launch dir
                check_accelerate(path, e, results)
        elif name == "torchtitan.toml":
            check_torchtitan(path, e, results)
        elif name in ("launch.sh", "job.sbatch", "megatron_args.sh"):
            check_shell(path, e, results, shellcheck)
            if name == "megatron_args.sh":
                check_megatron(path, e, results)
        elif name == "hostfile":
            check_hostfile(path, e, results)
        elif name == ".shardplan-emit":  # emit's marker: the folder is its own to replace
            with open(path) as f:
                if "written by shardplan emit" in f.read():
                    results.ok(f"{e['case']}/{name}", "emit's ownership marker")
                else:
                    results.fail(f"{e['case']}/{name}", "the marker does not say it was written by shardplan emit")
        elif name not in ("README.md", "deepspeed_env"):
            results.fail(f"{e['case']}/{name}", "no check knows this file")


def snapshot(root):
    """Every path under root with its size and mtime."""
    out = {}
    for d, _, files in os.walk(root):
        for f in files:
            st = os.stat(os.path.join(d, f))
            out[os.path.join(d, f)] = (st.st_size, st.st_mtime_ns)
    return out


def check_cli(shardplan, case_dir, results):
    case = os.path.basename(case_dir)
    plan, out = case_dir + ".plan.yaml", case_dir + ".cli"
    with open(case_dir + ".emit-args") as f:
        emit_args = f.read().split()
    where = f"{case}: shardplan emit"
    with results.check(where):
        shutil.rmtree(out, ignore_errors=True)
        cmd = [shardplan, "emit", plan, *emit_args, "-o", out]
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode:
            raise AssertionError(f"exit {run.returncode}: {run.stderr.strip()}")
        want, got = sorted(os.listdir(case_dir)), sorted(os.listdir(out))
        expect_equal("files", got, want)
        for name in want:
            with open(os.path.join(case_dir, name), "rb") as a, open(os.path.join(out, name), "rb") as b:
                if a.read() != b.read():
                    raise AssertionError(f"{name} differs from the library's output after SavePlan/LoadPlan")
        before = snapshot(os.path.dirname(out))
        again = subprocess.run(cmd, capture_output=True, text=True)
        expect_equal("exit code when files exist and no --force", again.returncode, 2)
        if snapshot(os.path.dirname(out)) != before:
            raise AssertionError("a refused run changed the output or left files behind")
        forced = subprocess.run(cmd + ["--force"], capture_output=True, text=True)
        expect_equal("exit code with --force", forced.returncode, 0)
        results.ok(where, f"writes the same {len(want)} files from {os.path.basename(plan)}; "
                          "exit 2 without --force, 0 with it")


def import_readers(results):
    try:
        import accelerate  # noqa: F401
        import deepspeed  # noqa: F401
        init_deepspeed_comm()
        return True
    except Exception as err:
        results.fail("python readers", f"cannot import deepspeed/accelerate ({err}); "
                                       "run scripts/python-env to install them from PyPI")
        return False


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cases", nargs="*", help="emitted directories, each with CASE.expect.json beside it")
    ap.add_argument("--driver", help="launch_emit_driver binary: emit the test plans into --work first")
    ap.add_argument("--work", help="directory for the driver's output")
    ap.add_argument("--shardplan", help="shardplan binary: check `shardplan emit` on the saved plans too")
    args = ap.parse_args()
    cases = list(args.cases)
    if args.driver:
        shutil.rmtree(args.work, ignore_errors=True)
        subprocess.run([args.driver, args.work], check=True)
        cases += sorted(os.path.join(args.work, d) for d in os.listdir(args.work)
                        if os.path.isdir(os.path.join(args.work, d)) and not d.endswith(".cli"))
    results = Results()
    if not cases:
        results.fail("arguments", "no emitted directories to check")
    elif import_readers(results):
        for case in cases:
            check_case(case, results, shutil.which("shellcheck"))
            if args.shardplan:
                check_cli(args.shardplan, os.path.abspath(case), results)
    print(f"{results.passed} passed, {results.failed} failed")
    return 1 if results.failed or not results.passed else 0


if __name__ == "__main__":
    sys.exit(main())

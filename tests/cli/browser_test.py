#!/usr/bin/env python3
"""Renders every kind of --html report in headless Chromium and checks what it drew.

For plan (a fit and a nothing-fits), estimate, validate and capacity: the page's embedded
JSON equals what --json prints; the page loads with no JavaScript error (its own error log
and Chromium's console); every chart's canvas has painted pixels; every number the page
shows, in a table or a chart, equals the --json value it names. Screenshots go to
--screenshots (docs/images/ for the README). Exit 77 (skipped) when Chromium is absent:
scripts/browser-setup installs it, and scripts/test runs that first.
"""
import argparse
import decimal
import html
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

GIB = 1073741824
failures = []
checked = 0


def fail(msg):
    failures.append(msg)
    print("FAIL " + msg)


def expect(cond, msg):
    global checked
    checked += 1
    if not cond:
        fail(msg)


def pointer(doc, p):
    v = doc
    for part in p.split("/")[1:]:
        part = part.replace("~1", "/").replace("~0", "~")
        v = v[int(part)] if isinstance(v, list) else v[part]
    return v


def to_fixed(v, digits):  # JavaScript's Number.prototype.toFixed: the exact value, halves away from zero
    q = decimal.Decimal(1).scaleb(-digits)
    return str(decimal.Decimal(v).quantize(q, rounding=decimal.ROUND_HALF_UP))


def formatted(v, fmt):
    if fmt == "gib2":
        return to_fixed(v / GIB, 2)
    if fmt == "f0":
        return format(math.floor(v + 0.5), ",")
    if fmt == "f1":
        return to_fixed(v, 1)
    if fmt == "f3":
        return to_fixed(v, 3)
    if fmt == "pct1":
        return to_fixed(100 * v, 1) + "%"
    if fmt == "int":
        return format(v, ",")
    if fmt == "bool":
        return "yes" if v else "no"
    return None  # str: compared below


def value_of(doc, path, div):
    if path is None:
        return 0.0
    if isinstance(path, list):
        total = sum((1 if sign == "+" else -1) * pointer(doc, p) for sign, p in path)
    else:
        total = pointer(doc, path)
    return total / div


def close(a, b):
    return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


def check_page(name, page, doc, command):
    cells = page["cells"]
    expect(page["errors"] == [], f"{name}: JavaScript errors {page['errors']}")
    expect(page["command"] == command, f"{name}: command line '{page['command']}', wanted '{command}'")
    expect(len(page["canvases"]) >= 2, f"{name}: {len(page['canvases'])} charts")
    for c in page["canvases"]:
        # A drawn chart paints axes, labels and data; an empty canvas paints nothing.
        expect(c["painted"] > 0.02 * c["width"] * c["height"], f"{name}: {c['id']} painted {c['painted']} pixels")
        expect(c["data_url_length"] > 5000, f"{name}: {c['id']} toDataURL is {c['data_url_length']} bytes")
    values = 0
    for ch in page["charts"]:
        for ds in ch["datasets"]:
            expect(len(ds["paths"]) == len(ds["data"]), f"{name}: {ch['id']} '{ds['label']}' has no source for each value")
            for v, p in zip(ds["data"], ds["paths"]):
                if isinstance(v, dict):
                    for axis in ("x", "y"):
                        expect(close(v[axis], value_of(doc, p[axis], ds["div"][axis])),
                               f"{name}: {ch['id']} {axis}={v[axis]} but {p[axis]} is {value_of(doc, p[axis], ds['div'][axis])}")
                    m = re.match(r"^/seen/points/(\d+)/", p["x"])
                    if m:
                        expect(v["layout"] == doc["seen"]["points"][int(m.group(1))]["layout"], f"{name}: tooltip layout")
                else:
                    expect(close(v, value_of(doc, p, ds["div"])), f"{name}: {ch['id']} '{ds['label']}' {v} but {p} is {value_of(doc, p, ds['div'])}")
                values += 1
    for c in cells:
        want = pointer(doc, c["pointer"])
        f = formatted(want, c["format"])
        if f is None:
            ok = c["text"] == str(want) if isinstance(want, str) else close(float(c["text"]), want)
            expect(ok, f"{name}: {c['pointer']} shows '{c['text']}', JSON has {want!r}")
        else:
            expect(c["text"] == f, f"{name}: {c['pointer']} shows '{c['text']}', JSON {want!r} is '{f}'")
    print(f"{name}: {len(page['canvases'])} charts, {values} chart values and {len(cells)} table values equal --json")


def chromium_binary():
    for b in (os.environ.get("CHROMIUM"), "chromium", "chromium-browser"):
        if b and shutil.which(b):
            return shutil.which(b)
    return None


def chromium(binary, profile, *args):
    cmd = [binary, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
           "--user-data-dir=" + profile, "--enable-logging=stderr", "--v=0", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shardplan", required=True)
    ap.add_argument("--screenshots", help="folder for one PNG per report")
    args = ap.parse_args()
    browser = chromium_binary()
    if not browser:
        print("SKIP: chromium is not installed (scripts/browser-setup installs it)")
        return 77
    tmp = tempfile.mkdtemp(prefix="shardplan-browser-")
    profile = os.path.join(tmp, "profile")
    bin_ = os.path.abspath(args.shardplan)

    def run(name, want_exit, argv):
        out = os.path.join(tmp, name + ".html")
        # Run in the temporary folder with relative names: the command line the page shows
        # (and the screenshots) name no folder of this machine.
        full = argv + ["--json", "--html", name + ".html"]
        p = subprocess.run([bin_] + full, capture_output=True, text=True, timeout=300, cwd=tmp)
        expect(p.returncode == want_exit, f"{name}: exit {p.returncode}, wanted {want_exit}: {p.stderr[-400:]}")
        doc = json.loads(p.stdout)
        return out, doc, " ".join(["shardplan"] + full)

    plan_yaml = "plan.yaml"
    subprocess.run([bin_, "plan", "--model", "gpt2", "--cluster", "dgx-h100", "--gpus-per-node", "2", "--top", "1",
                    "-o", plan_yaml], check=True, capture_output=True, cwd=tmp)
    reports = [
        ("plan", 0, ["plan", "--model", "llama-3.1-70b", "--cluster", "dgx-h100", "--nodes", "4", "--top", "5"]),
        ("plan-nothing-fits", 1, ["plan", "--model", "llama-3.1-405b", "--cluster", "dgx-h100", "--nodes", "1"]),
        ("estimate", 0, ["estimate", "--model", "llama-3.1-70b", "--cluster", "dgx-h100", "--nodes", "4",
                         "--layout", "framework=megatron,tp=8,pp=4,ac=selective,mbs=1"]),
        ("validate", 0, ["validate", plan_yaml, "--backend", "host", "--timeout", "120"]),
        ("capacity", 0, ["capacity", "--model", "llama-3.1-8b", "--tokens", "2T", "--deadline", "5d", "--global-batch", "512",
                         "--gpu", "h100,b200", "--max-gpus", "1024"]),
    ]
    for name, want_exit, argv in reports:
        path, doc, command = run(name, want_exit, argv)
        text = open(path, encoding="utf-8").read()
        embedded = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', text, re.S)
        expect(embedded and json.loads(embedded.group(1)) == doc, f"{name}: the page's JSON differs from --json")
        expect(not re.search(r"<script[^>]*\ssrc=|<link[^>]*\shref=|<img[^>]*\ssrc=", text),
               f"{name}: the page loads a file (it must be self-contained)")
        print(f"{name}: {os.path.getsize(path):,} bytes")
        p = chromium(browser, profile, "--virtual-time-budget=10000", "--dump-dom", "file://" + path + "#selftest")
        m = re.search(r'<pre id="selftest">(.*?)</pre>', p.stdout, re.S)
        if not m:
            fail(f"{name}: the page wrote no self-check (exit {p.returncode}): {p.stderr[-800:]}")
            continue
        console = [l for l in p.stderr.splitlines() if "CONSOLE" in l and ("Uncaught" in l or ":ERROR:" in l)]
        expect(console == [], f"{name}: console errors {console}")
        check_page(name, json.loads(html.unescape(m.group(1))), doc, command)
        if args.screenshots:
            os.makedirs(args.screenshots, exist_ok=True)
            shot = os.path.join(os.path.abspath(args.screenshots), "report-" + name + ".png")
            s = chromium(browser, profile, "--hide-scrollbars", "--window-size=1280,2200", "--virtual-time-budget=10000",
                         "--screenshot=" + shot, "file://" + path)
            expect(s.returncode == 0 and os.path.getsize(shot) > 20000, f"{name}: screenshot failed: {s.stderr[-400:]}")
    shutil.rmtree(tmp, ignore_errors=True)
    print(f"browser: {checked - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

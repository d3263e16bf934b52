#!/usr/bin/env python3
"""Replays a calibration record's allocator event trace through a model of PyTorch's CUDA
caching allocator and prints the reserved peak the model reaches beside the one measured.

    allocator_replay.py RECORD...       # folders whose truth.json holds allocator_events
    allocator_replay.py --self-test     # the model on hand-made traces, no GPU, no record

A record gets its trace when calibrate.py runs with CALIBRATE_TRACE_EVENTS=1: every
allocation and free the allocator saw, in order, as [action, bytes, address, stream] (the stream
is not modelled, nor are older traces' missing streams). The model is
the native allocator's policy without expandable segments (c10/cuda/CUDACachingAllocator.cpp):
  - a request is rounded up to 512 B;
  - requests of 1 MiB or less come from the small pool, whose segments are 2 MiB; larger
    ones from the large pool, whose segments are 20 MiB under 10 MiB and the request rounded
    up to 2 MiB from there;
  - a request takes the smallest free block of its pool that holds it (ties: the older
    segment, then the lower offset), else a new segment;
  - the rest of a block is split off as a free block when it is at least 512 B (small
    pool) or more than 1 MiB (large pool);
  - a freed block merges with free neighbours in its segment, and segments are never
    released (no empty_cache, no failed cudaMalloc to retry).
The reserved peak is the most segment bytes held at once. What it does not model: streams
(a block freed on one stream and used on another), expandable segments (torchtitan's runs),
and the allocator's address order between segments, which can break ties differently.
"""
import bisect
import json
import os
import sys

MiB = 1 << 20


def rounded(size):
    return 512 if size < 512 else (size + 511) // 512 * 512


def segment_size(size):
    if size <= MiB:
        return 2 * MiB
    if size < 10 * MiB:
        return 20 * MiB
    return (size + 2 * MiB - 1) // (2 * MiB) * (2 * MiB)


class CachingAllocator:
    def __init__(self):
        self.free = {"small": [], "large": []}  # sorted (size, segment, offset)
        self.segments = []                       # per segment: {"pool", "blocks": {offset: [size, in_use]}}
        self.live = {}                           # key -> (segment, offset)
        self.reserved = 0
        self.peak = 0

    def malloc(self, request, key):
        size = rounded(request)
        pool = "small" if size <= MiB else "large"
        free = self.free[pool]
        i = bisect.bisect_left(free, (size, -1, -1))
        if i < len(free):
            block, seg, off = free.pop(i)
        else:
            block, seg, off = segment_size(size), len(self.segments), 0
            self.segments.append({"pool": pool, "blocks": {0: [block, False]}})
            self.reserved += block
            self.peak = max(self.peak, self.reserved)
        blocks = self.segments[seg]["blocks"]
        rest = block - size
        if rest >= 512 if pool == "small" else rest > MiB:
            blocks[off] = [size, True]
            blocks[off + size] = [rest, False]
            bisect.insort(free, (rest, seg, off + size))
        else:
            blocks[off] = [block, True]
        self.live[key] = (seg, off)

    def release(self, key):
        seg, off = self.live.pop(key)
        segment = self.segments[seg]
        blocks, free = segment["blocks"], self.free[segment["pool"]]
        size = blocks[off][0]
        after = off + size
        if after in blocks and not blocks[after][1]:
            free.remove((blocks[after][0], seg, after))
            size += blocks.pop(after)[0]
        before = next((o for o, (s, used) in blocks.items() if o + s == off and not used), None)
        if before is not None:
            free.remove((blocks[before][0], seg, before))
            del blocks[off]
            off, size = before, size + blocks[before][0]
        blocks[off] = [size, False]
        bisect.insort(free, (size, seg, off))


def replay(events):
    """The model's reserved peak over [action, bytes, address] events ('a' allocate, 'f' free)."""
    model = CachingAllocator()
    for action, size, addr, *_ in events:
        if action == "a":
            model.malloc(size, addr)
        elif action == "f" and addr in model.live:
            model.release(addr)
    return model.peak


def self_test():
    ok = True

    def check(cond, what):
        nonlocal ok
        print(("ok   " if cond else "FAIL ") + what)
        ok = ok and cond

    # A 1 MiB request opens a 2 MiB small segment; 30 MiB opens its own 30 MiB segment; freed,
    # it serves 30 MiB again but not 31 MiB, which opens a 32 MiB segment: 64 MiB reserved.
    check(replay([["a", MiB, 1], ["a", 30 * MiB, 2], ["f", 30 * MiB, 2], ["a", 30 * MiB, 3], ["f", 30 * MiB, 3],
                  ["a", 31 * MiB, 4]]) == 64 * MiB, "segment sizes and reuse: 2 + 30 + 32 MiB")
    # Two 3 MiB requests share one 20 MiB segment (split); freed, they merge and serve 8 MiB.
    check(replay([["a", 3 * MiB, 1], ["a", 3 * MiB, 2], ["f", 3 * MiB, 1], ["f", 3 * MiB, 2],
                  ["a", 8 * MiB, 3]]) == 20 * MiB, "split and merge inside a 20 MiB segment")
    # A cache grown by concatenation, layer by layer: each step allocates every layer's tensor
    # one row longer, then frees the old one. The first step finds no freed block big enough
    # (the prompt's 320 MiB are exact) and opens a 322 MiB segment per layer; the second opens
    # one more, after which each freed segment of the step before holds the next request while
    # its rounding lasts: 8 x 320 + 9 x 322 MiB, the prompt's cache twice and a little, as
    # generate's first decode step showed on an H100.
    row, layers, prompt = 80 * 1024, 8, 4096
    events, key = [], 0
    live = []
    for _ in range(layers):
        key += 1
        events.append(["a", prompt * row, key])
        live.append(key)
    for step in range(1, 4):
        for layer in range(layers):
            key += 1
            events.append(["a", (prompt + step) * row, key])
            events.append(["f", 0, live[layer]])
            live[layer] = key
    peak = replay(events)
    check(peak == (8 * 320 + 9 * 322) * MiB, f"concatenated cache: {peak / MiB:,.0f} MiB reserved, 5,458 expected")
    return ok


def main(argv):
    if argv == ["--self-test"]:
        return 0 if self_test() else 1
    if not argv:
        print("usage: allocator_replay.py RECORD... | --self-test", file=sys.stderr)
        return 2
    status = 0
    for folder in argv:
        with open(os.path.join(folder, "truth.json")) as f:
            record = json.load(f)["record"]
        events = record.get("allocator_events")
        if not events:
            print(f"allocator_replay: {folder}/truth.json: no allocator_events (run calibrate.py with "
                  "CALIBRATE_TRACE_EVENTS=1)", file=sys.stderr)
            status = 2
            continue
        peak, measured = replay(events), record.get("reserved_peak_bytes", 0)
        print(f"{os.path.basename(os.path.normpath(folder))}: model {peak / 2**30:.2f} GiB reserved, measured "
              f"{measured / 2**30:.2f} GiB ({(peak - measured) / max(1, measured):+.1%}), {len(events):,} events")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/env python3
"""Replays an allocator event trace through a model of PyTorch's CUDA caching allocator and
prints the reserved peak the model reaches beside the one measured.

    allocator_replay.py TRACE.json.gz|RECORD...     # stored traces, or record folders
    allocator_replay.py --check 0.10 TRACE...       # and fail past that error
    allocator_replay.py --self-test                 # the model on hand-made traces

A trace comes from calibrate.py run with CALIBRATE_TRACE_EVENTS=1: every allocation and free
the allocator saw, in order, as [action, bytes, address, stream]; bench/data/allocator_traces
keeps eighteen. The model follows the allocator's policy (c10/cuda/CUDACachingAllocator.cpp):
  - a request is rounded up to 512 B;
  - every stream has pools of its own: a block freed on one stream never serves a request
    on another (FSDP's all-gather and reduce-scatter streams keep theirs);
  - requests of 1 MiB or less come from the small pool, larger ones from the large pool;
  - a request takes the smallest free block of its pool that holds it, the lowest address
    among equal sizes: each new segment lies below the ones before it (in every trace here),
    so a newer segment's block wins, then the lower offset. With expandable segments the free
    block at a segment's mapped end counts as the size it could grow to (get_free_block's
    expandable_size: the block plus the unmapped address space after it), so any other block
    that holds the request comes first;
  - else, natively, a new segment: 2 MiB for the small pool, 20 MiB for large requests under
    10 MiB, the request rounded up to 2 MiB from there; with expandable segments
    (expandable_segments:True, torchtitan's launcher) the pool's one segment maps pages (20 MiB
    large, 2 MiB small) at its end, joined to a free block that ends there;
  - the rest of a block is split off as a free block when it is at least 512 B (small
    pool) or more than 1 MiB (large pool);
  - a freed block merges with free neighbours in its segment, and nothing is released (no
    empty_cache, no failed cudaMalloc to retry).
The reserved peak is the most segment bytes held at once. What it does not model: the
allocator's address order between segments, which can break ties differently, and blocks
used on a second stream (record_stream), which wait for it before they are reused.
"""
import bisect
import gzip
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
    def __init__(self, expandable=False):
        self.expandable = expandable             # expandable_segments:True (torchtitan's launcher)
        self.tail = {}                           # expandable: (stream, pool) -> its one segment
        self.free = {}                           # (stream, pool) -> sorted (size, -segment, offset)
        self.segments = []                       # per segment: {"pool", "blocks": {offset: [size, in_use]}}
        self.live = {}                           # key -> (segment, offset)
        self.reserved = 0
        self.peak = 0

    def malloc(self, request, key, stream=0):
        size = rounded(request)
        pool = (stream, "small" if size <= MiB else "large")
        free = self.free.setdefault(pool, [])
        i = bisect.bisect_left(free, (size, -10**9, -1))
        if self.expandable and i + 1 < len(free) and self.at_tail(free[i]):
            i += 1  # best fit ranks the block at the mapped end by all it could grow to
        if i < len(free):
            block, seg, off = free.pop(i)
            seg = -seg  # free lists hold -segment: the newer segment, lower in memory, sorts first
        elif self.expandable:
            block, seg, off = self.grow(pool, size)
        else:
            block, seg, off = segment_size(size), len(self.segments), 0
            self.segments.append({"pool": pool, "blocks": {0: [block, False]}})
            self.reserved += block
            self.peak = max(self.peak, self.reserved)
        blocks = self.segments[seg]["blocks"]
        rest = block - size
        if rest >= 512 if pool[1] == "small" else rest > MiB:
            blocks[off] = [size, True]
            blocks[off + size] = [rest, False]
            bisect.insort(free, (rest, -seg, off + size))
        else:
            blocks[off] = [block, True]
        self.live[key] = (seg, off)

    def at_tail(self, entry):
        """Whether a free-list entry is the free block at the end of its expandable segment."""
        size, seg, off = entry
        segment = self.segments[-seg]
        return "end" in segment and off + size == segment["end"]

    def grow(self, pool, size):
        """Expandable segments: each stream's pool is one segment that maps pages (20 MiB for the
        large pool, 2 MiB for the small) at its end, merged with a free block ending there."""
        if pool not in self.tail:
            self.tail[pool] = len(self.segments)
            self.segments.append({"pool": pool, "blocks": {}, "end": 0})
        seg = self.tail[pool]
        segment = self.segments[seg]
        blocks, end = segment["blocks"], segment["end"]
        last = next((o for o, (b, used) in blocks.items() if o + b == end and not used), None)
        have = blocks.pop(last)[0] if last is not None else 0
        if last is not None:
            self.free[pool].remove((have, -seg, last))
        page = 2 * MiB if pool[1] == "small" else 20 * MiB
        mapped = (size - have + page - 1) // page * page
        segment["end"] = end + mapped
        self.reserved += mapped
        self.peak = max(self.peak, self.reserved)
        off = last if last is not None else end
        blocks[off] = [have + mapped, False]
        return have + mapped, seg, off

    def release(self, key):
        seg, off = self.live.pop(key)
        segment = self.segments[seg]
        blocks, free = segment["blocks"], self.free[segment["pool"]]
        size = blocks[off][0]
        after = off + size
        if after in blocks and not blocks[after][1]:
            free.remove((blocks[after][0], -seg, after))
            size += blocks.pop(after)[0]
        before = next((o for o, (s, used) in blocks.items() if o + s == off and not used), None)
        if before is not None:
            free.remove((blocks[before][0], -seg, before))
            del blocks[off]
            off, size = before, size + blocks[before][0]
        blocks[off] = [size, False]
        bisect.insort(free, (size, -seg, off))


def replay(events, expandable=False):
    """The model's reserved peak over [action, bytes, address, stream] events ('a' allocate,
    'f' free)."""
    model = CachingAllocator(expandable)
    for action, size, addr, *stream in events:
        if action == "a":
            model.malloc(size, addr, stream[0] if stream else 0)
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
    # A block freed on one stream does not serve another: 30 MiB freed on stream 1, then asked
    # for on stream 0, opens a second segment.
    check(replay([["a", 30 * MiB, 1, 1], ["f", 30 * MiB, 1, 1], ["a", 30 * MiB, 2, 0]]) == 60 * MiB,
          "streams keep their own blocks: 30 + 30 MiB")
    # Expandable segments: 30 MiB maps two 20 MiB pages; 5 MiB fits the 10 MiB left; with the
    # 30 MiB freed, 45 MiB fits no free block, so the segment maps 40 MiB more, joined to the
    # 5 MiB free at its end: 80 MiB, where native segments would hold 20 + 30 + 46 = 96 MiB.
    trace = [["a", 30 * MiB, 1], ["a", 5 * MiB, 2], ["f", 30 * MiB, 1], ["a", 45 * MiB, 3]]
    check(replay(trace, expandable=True) == 80 * MiB and replay(trace) == 96 * MiB,
          "expandable segments grow at their end: 80 MiB, natively 96")
    # Best fit with expandable segments passes over the free block at the mapped end: with 20
    # MiB free below and 5 MiB free at the end, 4 MiB goes below (the end block counts as all
    # it could grow to), so 18 MiB then fits nothing and the segment maps 20 MiB more: 60 MiB.
    # Taking the end block, as plain best fit would, leaves the 20 MiB whole for it: 40 MiB.
    trace = [["a", 20 * MiB, 1], ["a", 15 * MiB, 2], ["f", 20 * MiB, 1], ["a", 4 * MiB, 3], ["a", 18 * MiB, 4]]
    check(replay(trace, expandable=True) == 60 * MiB, "best fit ranks the mapped end's block last: 60 MiB")
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


def load(path):
    """A stored trace (bench/data/allocator_traces/ID.json.gz) or a record folder whose
    truth.json holds allocator_events: (name, events, expandable, measured reserved peak)."""
    if path.endswith(".json.gz"):
        with gzip.open(path, "rt") as f:
            trace = json.load(f)
        return trace["id"], trace["events"], "expandable_segments:True" in str(trace.get("allocator")), trace["reserved_peak_bytes"]
    with open(os.path.join(path, "truth.json")) as f:
        record = json.load(f)["record"]
    name = os.path.basename(os.path.normpath(path))
    return (name, record.get("allocator_events"), "expandable_segments:True" in str(record.get("allocator")),
            record.get("reserved_peak_bytes", 0))


def main(argv):
    if argv == ["--self-test"]:
        return 0 if self_test() else 1
    # --check TOLERANCE PATH...: fail when the model misses a trace's measured reserve by more.
    tolerance = None
    if argv[:1] == ["--check"] and len(argv) >= 3:
        tolerance, argv = float(argv[1]), argv[2:]
    if not argv:
        print("usage: allocator_replay.py [--check TOLERANCE] TRACE.json.gz|RECORD... | --self-test", file=sys.stderr)
        return 2
    status = 0
    for path in argv:
        name, events, expandable, measured = load(path)
        if not events:
            print(f"allocator_replay: {path}: no allocator_events (run calibrate.py with "
                  "CALIBRATE_TRACE_EVENTS=1)", file=sys.stderr)
            status = 2
            continue
        peak = replay(events, expandable)
        error = (peak - measured) / max(1, measured)
        print(f"{name}: model {peak / 2**30:.2f} GiB reserved, measured {measured / 2**30:.2f} GiB ({error:+.1%}), "
              f"{len(events):,} events{', expandable segments' if expandable else ''}")
        if tolerance is not None and abs(error) > tolerance:
            print(f"allocator_replay: {name}: off by {error:+.1%}, past {tolerance:.0%}", file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

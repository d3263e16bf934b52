// A model of PyTorch's CUDA caching allocator, to replay a sequence of allocations and frees
// and read the reserve it leaves (c10/cuda/CUDACachingAllocator.cpp, one stream, native
// segments):
//   - a request is rounded up to 512 B;
//   - requests of 1 MiB or less come from the small pool, whose segments are 2 MiB; larger
//     ones from the large pool, whose segments are 20 MiB under 10 MiB and the request
//     rounded up to 2 MiB from there;
//   - a request takes the smallest free block of its pool that holds it, the lowest address
//     among equal sizes (each new segment lies below the ones before it in every trace of
//     ours, so a newer segment's block wins, then the lower offset), else a new segment;
//   - the rest of a block is split off as a free block when it is at least 512 B (small
//     pool) or more than 1 MiB (large pool);
//   - a freed block merges with its free neighbours, and nothing is released.
// bench/calibrate/allocator_replay.py is the same model in Python, checked against the
// allocator's own event traces of our H100 runs (bench/data/allocator_traces).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <tuple>
#include <vector>

namespace shardplan {

// The block a request takes: rounded up to 512 B.
int64_t AllocatorBlockBytes(int64_t bytes);
// The segment a block that finds no free one opens: 2 MiB for the small pool, 20 MiB under
// 10 MiB, else rounded up to 2 MiB.
int64_t AllocatorSegmentBytes(int64_t block);

class CachingAllocatorModel {
 public:
  // Allocates `bytes` and returns a handle for Free.
  int Malloc(int64_t bytes);
  void Free(int handle);
  int64_t reserved() const { return reserved_; }
  int64_t reserved_peak() const { return reserved_peak_; }
  int64_t allocated_peak() const { return allocated_peak_; }

 private:
  struct Block {
    int64_t size = 0;
    bool used = false;
  };
  struct Segment {
    bool small = false;
    std::map<int64_t, Block> blocks;  // by offset
  };
  struct Live {
    int segment = 0;
    int64_t offset = 0;
    int64_t bytes = 0;  // as asked, for the allocated figures
  };
  using FreeKey = std::tuple<int64_t, int, int64_t>;  // size, -segment (lower in memory first), offset
  std::set<FreeKey>& FreeList(bool small) { return small ? free_small_ : free_large_; }

  std::vector<Segment> segments_;
  std::set<FreeKey> free_small_, free_large_;
  std::vector<Live> live_;
  int64_t reserved_ = 0, reserved_peak_ = 0, allocated_ = 0, allocated_peak_ = 0;
};

}  // namespace shardplan

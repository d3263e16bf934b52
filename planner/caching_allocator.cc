#include "planner/caching_allocator.h"

#include <algorithm>
#include <iterator>
#include <limits>

#include "planner/units.h"

namespace shardplan {

int64_t AllocatorBlockBytes(int64_t bytes) { return bytes < 512 ? 512 : (bytes + 511) / 512 * 512; }

int64_t AllocatorSegmentBytes(int64_t block) {
  if (block <= kMiB) return 2 * kMiB;
  if (block < 10 * kMiB) return 20 * kMiB;
  return (block + 2 * kMiB - 1) / (2 * kMiB) * (2 * kMiB);
}

int CachingAllocatorModel::Malloc(int64_t bytes) {
  const int64_t size = AllocatorBlockBytes(bytes);
  const bool small = size <= kMiB;
  std::set<FreeKey>& free = FreeList(small);
  int64_t block = 0, offset = 0;
  int segment = 0;
  if (auto it = free.lower_bound({size, std::numeric_limits<int>::min(), -1}); it != free.end()) {
    std::tie(block, segment, offset) = *it;
    segment = -segment;
    free.erase(it);
  } else {
    block = AllocatorSegmentBytes(size);
    segment = static_cast<int>(segments_.size());
    segments_.push_back({small, {{0, {block, false}}}});
    reserved_ += block;
    reserved_peak_ = std::max(reserved_peak_, reserved_);
  }
  std::map<int64_t, Block>& blocks = segments_[static_cast<size_t>(segment)].blocks;
  const int64_t rest = block - size;
  if (small ? rest >= 512 : rest > kMiB) {
    blocks[offset] = {size, true};
    blocks[offset + size] = {rest, false};
    free.insert({rest, -segment, offset + size});
  } else {
    blocks[offset] = {block, true};
  }
  allocated_ += bytes;
  allocated_peak_ = std::max(allocated_peak_, allocated_);
  live_.push_back({segment, offset, bytes});
  return static_cast<int>(live_.size()) - 1;
}

void CachingAllocatorModel::Free(int handle) {
  const Live& l = live_[static_cast<size_t>(handle)];
  Segment& seg = segments_[static_cast<size_t>(l.segment)];
  std::set<FreeKey>& free = FreeList(seg.small);
  allocated_ -= l.bytes;
  auto it = seg.blocks.find(l.offset);
  int64_t offset = it->first, size = it->second.size;
  if (auto next = std::next(it); next != seg.blocks.end() && !next->second.used) {
    free.erase({next->second.size, -l.segment, next->first});
    size += next->second.size;
    seg.blocks.erase(next);
  }
  if (it != seg.blocks.begin()) {
    if (auto prev = std::prev(it); !prev->second.used) {
      free.erase({prev->second.size, -l.segment, prev->first});
      offset = prev->first;
      size += prev->second.size;
      seg.blocks.erase(it);
      it = prev;
    }
  }
  it->second = {size, false};
  free.insert({size, -l.segment, offset});
}

}  // namespace shardplan

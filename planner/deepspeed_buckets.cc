#include "planner/deepspeed_buckets.h"

#include <algorithm>

#include "planner/framework_defaults.h"

namespace shardplan {

bool DeepSpeedOverlapComm(const Workload& w, const Layout& l) {
  return w.overlap_comm != Setting::kAuto ? w.overlap_comm == Setting::kOn : l.zero >= 2;
}

ZeroBuckets DeepSpeedBuckets(const ModelSpec& m, const Workload& w, const Layout& l) {
  const int64_t h = m.hidden > 0 ? m.hidden : 4096;
  ZeroBuckets b;
  b.reduce_bucket = defaults::kDeepSpeedReduceBucket;
  b.allgather_bucket = defaults::kDeepSpeedAllgatherBucket;
  b.prefetch_bucket = defaults::kDeepSpeedPrefetchBucket;
  if (l.zero == 3) {
    // transformers integrations/deepspeed.py (HfTrainerDeepSpeedConfig.trainer_config_finalize)
    b.reduce_bucket = h * h;
    b.prefetch_bucket = h * h * 9 / 10;
    b.persistence_threshold = 10 * h;
  }
  b.max_live_parameters = defaults::kDeepSpeedMaxLive;
  b.max_reuse_distance = defaults::kDeepSpeedMaxReuse;
  b.sub_group_size = defaults::kDeepSpeedSubGroup;
  b.param_buffer = std::max(defaults::kDeepSpeedParamBuffer, LargestParam(m));
  b.overlap_comm = DeepSpeedOverlapComm(w, l);
  return b;
}

}  // namespace shardplan

#include "validate/rehearsal.h"

#include <csignal>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <thread>

#include "validate/check.h"

namespace shardplan::validate {
namespace {

struct GroupHandle {
  std::string kind;
  int handle = -1;    // backend group; -1: not in one (fewer than two members present)
  int size = 1;
  int position = 0;   // this rank's place in the group, by plan rank
};

class Rehearsal {
 public:
  Rehearsal(const RankManifest& m, const RunConfig& cfg, DeviceBackend& backend, Communicator& world);
  RankResult Run(int local_rank);

 private:
  Status Setup(int local_rank);
  Status CreateGroups();
  Status Walk();
  Status Agree(const Status& local);
  Status AllocatePhase(Phase p, int iter);
  Status RunCollectives(Phase p, int iter);
  Status RunOne(size_t i, int iter);
  const GroupHandle* GroupFor(const CollectiveStep& c) const;
  CollectiveCall CallFor(size_t i, const GroupHandle& g) const;
  Status AllocateScratch(Phase p);
  Status FreePhase(Phase p, int iter);
  StatusOr<DeviceBuffer> Allocate(int64_t raw, Phase p, const std::string& label);
  Status Release(DeviceBuffer* b);
  Status Measure(Phase p, const std::string& label, int64_t raw);
  void InjectFault(Phase p, int iter);
  void Finish(const Status& s);
  void TrackTerm(size_t alloc, int64_t delta);
  bool Skipped(const Allocation& a) const {
    return a.pool == Pool::kNonTorch && backend_.MeasuresRuntimeOverheads();
  }
  int64_t Scaled(int64_t plan_bytes) const {
    return std::max<int64_t>(1, std::llround(static_cast<double>(plan_bytes) * cfg_.scale));
  }
  int64_t Unscaled(int64_t raw) const { return std::llround(static_cast<double>(raw) / cfg_.scale); }

  const RankManifest& m_;
  const RunConfig& cfg_;
  DeviceBackend& backend_;
  Communicator& world_;
  std::vector<GroupHandle> groups_;
  std::vector<DeviceBuffer> live_;        // by allocation; ptr == nullptr when not live
  DeviceBuffer scratch_;                  // the current phase's collective scratch, if any
  std::vector<size_t> term_of_;           // allocation -> r_.terms index
  std::vector<int64_t> term_live_;        // raw bytes live per term
  std::vector<double> seconds_;           // per collective, summed over timed iterations
  std::vector<int> samples_;
  int64_t own_live_ = 0, used_ = 0, peak_ = -1;
  int64_t capacity_raw_ = 0, limit_raw_ = 0;
  Failure crossing_;
  bool fault_fired_ = false;
  RankResult r_;
};

Rehearsal::Rehearsal(const RankManifest& m, const RunConfig& cfg, DeviceBackend& backend,
                     Communicator& world)
    : m_(m), cfg_(cfg), backend_(backend), world_(world), live_(m.allocations.size()) {
  r_.rank = m.rank;
  r_.world_rank = world.rank();
  r_.stage = m.stage;
  r_.host = HostName();
  r_.backend = std::string(backend.Name());
  r_.scale = cfg.scale;
  r_.capacity_bytes = cfg.capacity_bytes;
  r_.headroom_bytes = cfg.headroom_bytes;
  r_.planned_peak_bytes = m.planned_device_peak;
  r_.planned_peak_phase = m.planned_peak_phase;
  r_.manifest_peak_bytes = *std::max_element(m.live_bytes.begin(), m.live_bytes.end());
  r_.device_free_min_bytes = std::numeric_limits<int64_t>::max();
  capacity_raw_ = std::llround(static_cast<double>(cfg.capacity_bytes) * cfg.scale);
  limit_raw_ = std::llround(static_cast<double>(cfg.capacity_bytes - cfg.headroom_bytes) * cfg.scale);
  for (const Allocation& a : m.allocations) {
    auto it = std::find_if(r_.terms.begin(), r_.terms.end(), [&](const TermResult& t) { return t.name == a.term; });
    if (it == r_.terms.end()) {
      r_.terms.push_back({a.term, a.pool, 0, 0, Skipped(a)});
      it = r_.terms.end() - 1;
    }
    it->planned_bytes += a.bytes;
    term_of_.push_back(static_cast<size_t>(it - r_.terms.begin()));
  }
  term_live_.assign(r_.terms.size(), 0);
  for (const CollectiveStep& c : m.collectives) {
    CollectiveResult out;
    out.name = c.name;
    out.group = c.group;
    out.kind = c.kind;
    out.phase = c.phase;
    out.elem_bytes = c.elem_bytes;
    out.repeat = c.repeat;
    r_.collectives.push_back(out);
  }
  seconds_.assign(m.collectives.size(), 0);
  samples_.assign(m.collectives.size(), 0);
}

RankResult Rehearsal::Run(int local_rank) {
  Status s = Setup(local_rank);
  if (s.ok()) s = Walk();
  if (s.ok()) {
    s = backend_.Shutdown(cfg_.deadline);
  } else {
    backend_.Abort();  // no peer may wait on this rank's communicators
  }
  live_.push_back(scratch_);
  for (DeviceBuffer& b : live_) {
    if (b.ptr == nullptr) continue;
    Status f = Release(&b);
    if (s.ok()) s = f;
  }
  Finish(s);
  return r_;
}

Status Rehearsal::Setup(int local_rank) {
  SP_RETURN_IF_ERROR(Agree(backend_.Open(local_rank)));
  r_.device = backend_.DeviceName();
  SP_RETURN_IF_ERROR(Agree(backend_.Connect(world_, cfg_.deadline)));
  SP_RETURN_IF_ERROR(Agree(CreateGroups()));
  // The baseline: the CUDA context and NCCL communicators before any planned allocation.
  return Agree(Measure(Phase::kSetup, "runtime (context, communicators)", 0));
}

Status Rehearsal::CreateGroups() {
  for (const char* kind : kGroupKinds) {
    GroupHandle g;
    g.kind = kind;
    std::vector<int> members;
    if (const std::vector<int>* all = m_.Group(kind)) {
      for (int r : *all) {
        if (std::binary_search(cfg_.present.begin(), cfg_.present.end(), r)) members.push_back(r);
      }
    }
    const bool join = members.size() >= 2;
    SP_ASSIGN_OR_RETURN(g.handle, backend_.CreateGroup(join ? members.front() : -1, world_.rank(), cfg_.deadline));
    if (join) {
      g.size = backend_.GroupSize(g.handle);
      g.position = static_cast<int>(std::find(members.begin(), members.end(), m_.rank) - members.begin());
      if (g.size != static_cast<int>(members.size())) {
        return Status::Internal(std::string(kind) + " group: the plan gives " + std::to_string(members.size()) +
                                " ranks but the split made " + std::to_string(g.size) +
                                "; ranks disagree about the plan (same file on every node?)");
      }
    }
    groups_.push_back(g);
  }
  return Status::Ok();
}

Status Rehearsal::Agree(const Status& local) {
  const int64_t mine = local.ok() ? 0 : (local.code() == Code::kNegative ? 1 : 2);
  SP_ASSIGN_OR_RETURN(int64_t worst, world_.AllReduceMax(mine));
  if (!local.ok()) return local;
  if (worst > 0) {
    r_.stopped = true;
    return Status::Negative("stopped because another rank failed");
  }
  return Status::Ok();
}

Status Rehearsal::Walk() {
  for (int it = 0; it < cfg_.iterations; ++it) {
    for (int pi = it == 0 ? 0 : 1; pi < kPhaseCount; ++pi) {  // setup runs once
      const Phase p = static_cast<Phase>(pi);
      if (cfg_.progress) {
        cfg_.progress->iteration = it;
        cfg_.progress->phase = pi;
      }
      SP_RETURN_IF_ERROR(Agree(AllocatePhase(p, it)));
      Status s = RunCollectives(p, it);
      if (s.ok()) s = FreePhase(p, it);
      SP_RETURN_IF_ERROR(Agree(s));
    }
  }
  return Status::Ok();
}

void Rehearsal::InjectFault(Phase p, int iter) {
  if (cfg_.fault.rank != m_.rank || p != cfg_.fault.phase || iter != 0) return;
  if (cfg_.fault.kind == FaultKind::kHang) {
    std::fprintf(stderr, "shardplan-validate-worker: rank %d: injected hang\n", m_.rank);
    while (true) std::this_thread::sleep_for(std::chrono::seconds(1));  // the watchdog ends it
  }
  if (cfg_.fault.kind == FaultKind::kExit) {
    std::fprintf(stderr, "shardplan-validate-worker: rank %d: injected exit\n", m_.rank);
    std::fflush(stderr);
    _exit(3);
  }
}

Status Rehearsal::AllocatePhase(Phase p, int iter) {
  InjectFault(p, iter);
  for (size_t i = 0; i < m_.allocations.size(); ++i) {
    const Allocation& a = m_.allocations[i];
    if (a.first != p || Skipped(a) || (a.first == Phase::kSetup && iter > 0)) continue;
    const std::string label = a.count > 1 ? a.term + " [" + std::to_string(a.index + 1) + "/" +
                                                std::to_string(a.count) + "]"
                                          : a.term;
    SP_ASSIGN_OR_RETURN(live_[i], Allocate(Scaled(a.bytes), p, label));
    TrackTerm(i, live_[i].bytes);
  }
  // A phase that allocates nothing still has a level: read it before anything is freed.
  SP_RETURN_IF_ERROR(Measure(p, "start of " + std::string(PhaseName(p)), 0));
  return AllocateScratch(p);
}

Status Rehearsal::FreePhase(Phase p, int iter) {
  const bool final_iteration = iter == cfg_.iterations - 1;
  if (scratch_.ptr != nullptr) SP_RETURN_IF_ERROR(Release(&scratch_));
  for (size_t i = 0; i < m_.allocations.size(); ++i) {
    const Allocation& a = m_.allocations[i];
    // Terms born at setup stay across iterations; the rest die with their last phase.
    if (a.last != p || live_[i].ptr == nullptr) continue;
    if (a.first == Phase::kSetup && !final_iteration) continue;
    TrackTerm(i, -live_[i].bytes);
    SP_RETURN_IF_ERROR(Release(&live_[i]));
  }
  return Measure(p, "after freeing", 0);
}

void Rehearsal::TrackTerm(size_t alloc, int64_t delta) {
  const size_t t = term_of_[alloc];
  term_live_[t] += delta;
  r_.terms[t].allocated_bytes = std::max(r_.terms[t].allocated_bytes, Unscaled(term_live_[t]));
}

StatusOr<DeviceBuffer> Rehearsal::Allocate(int64_t raw, Phase p, const std::string& label) {
  Status why;
  if (cfg_.fault.kind == FaultKind::kOom && cfg_.fault.rank == m_.rank && p == cfg_.fault.phase &&
      !fault_fired_) {
    fault_fired_ = true;
    why = Status::Negative("injected out-of-memory (--inject-fault)");
  } else if (used_ + raw > capacity_raw_) {
    why = Status::Negative("does not fit in the capacity");
  } else {
    StatusOr<DeviceBuffer> b = backend_.Allocate(raw);
    if (b.ok()) {
      own_live_ += raw;
      SP_RETURN_IF_ERROR(Measure(p, label, raw));
      return b;
    }
    why = b.status();
  }
  if (why.code() == Code::kNegative) {
    r_.failure = {true, p, label, Unscaled(raw), Unscaled(used_), why.message()};
  }
  return why;
}

Status Rehearsal::Release(DeviceBuffer* b) {
  SP_RETURN_IF_ERROR(backend_.Free(*b));
  own_live_ -= b->bytes;
  *b = DeviceBuffer{};
  return Status::Ok();
}

Status Rehearsal::Measure(Phase p, const std::string& label, int64_t raw) {
  SP_ASSIGN_OR_RETURN(MemorySample s, backend_.Sample());
  used_ = s.process_bytes >= 0 ? s.process_bytes : s.used_bytes;
  int64_t& phase_max = r_.measured_by_phase[static_cast<size_t>(p)];
  phase_max = std::max(phase_max, Unscaled(used_));
  r_.device_free_min_bytes = std::min(r_.device_free_min_bytes, Unscaled(s.free_bytes));
  if (s.process_bytes >= 0) r_.process_peak_bytes = std::max(r_.process_peak_bytes, Unscaled(s.process_bytes));
  if (used_ > peak_) {
    peak_ = used_;
    r_.measured_peak_bytes = Unscaled(used_);
    r_.measured_peak_phase = p;
    r_.runtime_bytes_at_peak = Unscaled(std::max<int64_t>(0, used_ - own_live_));
  }
  if (used_ > limit_raw_ && !crossing_.failed) {
    crossing_ = {true, p, label, Unscaled(raw), Unscaled(used_),
                 "usage passed capacity minus the plan's headroom"};
  }
  return Status::Ok();
}

Status Rehearsal::RunCollectives(Phase p, int iter) {
  // The killed rank dies as its peers enter the phase's first collective: they block in it
  // until the launcher or the watchdog ends the job.
  if (cfg_.fault.kind == FaultKind::kKill && cfg_.fault.rank == m_.rank && p == cfg_.fault.phase && iter == 0) {
    std::fprintf(stderr, "shardplan-validate-worker: rank %d: injected SIGKILL\n", m_.rank);
    std::fflush(stderr);
    std::raise(SIGKILL);
  }
  for (size_t i = 0; i < m_.collectives.size(); ++i) {
    if (m_.collectives[i].phase == p) SP_RETURN_IF_ERROR(RunOne(i, iter));
  }
  return Status::Ok();
}

const GroupHandle* Rehearsal::GroupFor(const CollectiveStep& c) const {
  for (const GroupHandle& g : groups_) {
    if (g.kind == c.group) return g.handle >= 0 ? &g : nullptr;
  }
  return nullptr;
}

// The call for collective `i` at --scale; `buffer` is left empty when no planned
// allocation live now can hold it.
CollectiveCall Rehearsal::CallFor(size_t i, const GroupHandle& g) const {
  const CollectiveStep& c = m_.collectives[i];
  CollectiveCall call;
  call.kind = c.kind;
  call.elem_bytes = c.elem_bytes;
  call.size_bytes = RoundSize(c.kind, Scaled(c.size_bytes), g.size, c.elem_bytes);
  if (c.buffer >= 0 && live_[static_cast<size_t>(c.buffer)].bytes >= BufferBytes(c.kind, call.size_bytes)) {
    call.buffer = live_[static_cast<size_t>(c.buffer)];
  }
  if (c.kind == CollectiveKind::kSendRecv) {
    const int ahead = g.position + c.direction, behind = g.position - c.direction;
    call.send_to = ahead >= 0 && ahead < g.size ? ahead : -1;
    call.recv_from = behind >= 0 && behind < g.size ? behind : -1;
  }
  return call;
}

// One scratch buffer for the phase's collectives that no planned term can hold, made
// before the phase's agreement so that a failure to get it stops every rank before any
// collective starts (a peer would otherwise wait in it).
Status Rehearsal::AllocateScratch(Phase p) {
  int64_t need = 0;
  std::string first;
  for (size_t i = 0; i < m_.collectives.size(); ++i) {
    const GroupHandle* g = GroupFor(m_.collectives[i]);
    if (m_.collectives[i].phase != p || g == nullptr) continue;
    const CollectiveCall call = CallFor(i, *g);
    if (call.buffer.ptr != nullptr) continue;
    need = std::max(need, BufferBytes(call.kind, call.size_bytes));
    if (first.empty()) first = m_.collectives[i].name;
  }
  if (need == 0) return Status::Ok();
  SP_ASSIGN_OR_RETURN(scratch_, Allocate(need, p, "scratch for " + first));
  return Status::Ok();
}

Status Rehearsal::RunOne(size_t i, int iter) {
  const CollectiveStep& c = m_.collectives[i];
  CollectiveResult& out = r_.collectives[i];
  const GroupHandle* g = GroupFor(c);
  if (g == nullptr) {
    out.skipped = true;
    return Status::Ok();
  }
  CollectiveCall call = CallFor(i, *g);
  if (call.buffer.ptr == nullptr) {  // no planned term holds it: it ran in paid-for scratch
    call.buffer = scratch_;
    out.scratch = true;
  }
  SP_ASSIGN_OR_RETURN(double secs, backend_.Run(g->handle, call, cfg_.deadline));
  out.size_bytes = call.size_bytes;
  out.nranks = g->size;
  if (iter > 0 || cfg_.iterations == 1) {  // the first iteration warms up (nccl-tests -w)
    seconds_[i] += secs;
    ++samples_[i];
  }
  return Measure(c.phase, "collective " + c.name, 0);
}

void Rehearsal::Finish(const Status& s) {
  for (size_t i = 0; i < r_.collectives.size(); ++i) {
    if (samples_[i] > 0) r_.collectives[i].seconds = seconds_[i] / samples_[i];
  }
  if (r_.device_free_min_bytes == std::numeric_limits<int64_t>::max()) r_.device_free_min_bytes = 0;
  if (!s.ok() && !r_.stopped && s.code() != Code::kNegative) {
    r_.error_code = s.code();
    r_.error = s.message();
  }
  r_.fits = s.ok() && peak_ <= limit_raw_;
  if (s.ok() && !r_.fits) r_.failure = crossing_;
}

}  // namespace

RankResult Rehearse(const RankManifest& m, const RunConfig& cfg, DeviceBackend& backend,
                    Communicator& world, int local_rank) {
  return Rehearsal(m, cfg, backend, world).Run(local_rank);
}

}  // namespace shardplan::validate

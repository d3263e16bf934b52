#include "validate/rank_result.h"

#include <nlohmann/json.hpp>

namespace shardplan::validate {

using nlohmann::json;

StatusOr<Phase> ParsePhase(std::string_view name) {
  for (int p = 0; p < kPhaseCount; ++p) {
    if (PhaseName(static_cast<Phase>(p)) == name) return static_cast<Phase>(p);
  }
  return Status::BadInput("unknown phase '" + std::string(name) + "'");
}

static StatusOr<CollectiveKind> ParseKind(std::string_view name) {
  for (CollectiveKind k : {CollectiveKind::kAllReduce, CollectiveKind::kAllGather,
                           CollectiveKind::kReduceScatter, CollectiveKind::kAllToAll,
                           CollectiveKind::kSendRecv}) {
    if (CollectiveName(k) == name) return k;
  }
  return Status::BadInput("unknown collective '" + std::string(name) + "'");
}

static json TermJson(const TermResult& t) {
  return {{"name", t.name}, {"pool", PoolName(t.pool)},
          {"planned_bytes", t.planned_bytes}, {"allocated_bytes", t.allocated_bytes},
          {"measured_by_runtime", t.measured_by_runtime}};
}

static json CollectiveJson(const CollectiveResult& c) {
  return {{"name", c.name}, {"group", c.group}, {"op", CollectiveName(c.kind)},
          {"phase", PhaseName(c.phase)}, {"size", c.size_bytes}, {"elem_bytes", c.elem_bytes},
          {"nranks", c.nranks}, {"repeat", c.repeat}, {"seconds", c.seconds},
          {"scratch", c.scratch}, {"skipped", c.skipped}};
}

std::string ToJsonText(const RankResult& r) {
  json j = {{"rank", r.rank}, {"world_rank", r.world_rank}, {"stage", r.stage}, {"host", r.host},
            {"device", r.device}, {"backend", r.backend}, {"scale", r.scale},
            {"capacity_bytes", r.capacity_bytes}, {"headroom_bytes", r.headroom_bytes},
            {"planned_peak_bytes", r.planned_peak_bytes},
            {"planned_peak_phase", PhaseName(r.planned_peak_phase)},
            {"manifest_peak_bytes", r.manifest_peak_bytes},
            {"measured_peak_bytes", r.measured_peak_bytes},
            {"measured_peak_phase", PhaseName(r.measured_peak_phase)},
            {"runtime_bytes_at_peak", r.runtime_bytes_at_peak},
            {"process_peak_bytes", r.process_peak_bytes},
            {"device_free_min_bytes", r.device_free_min_bytes},
            {"measured_by_phase", r.measured_by_phase}, {"fits", r.fits}, {"stopped", r.stopped},
            {"error_code", static_cast<int>(r.error_code)}, {"error", r.error}};
  j["terms"] = json::array();
  for (const TermResult& t : r.terms) j["terms"].push_back(TermJson(t));
  j["collectives"] = json::array();
  for (const CollectiveResult& c : r.collectives) j["collectives"].push_back(CollectiveJson(c));
  const Failure& f = r.failure;
  j["failure"] = {{"failed", f.failed}, {"phase", PhaseName(f.phase)}, {"term", f.term},
                  {"bytes", f.bytes}, {"used_bytes", f.used_bytes}, {"detail", f.detail}};
  return j.dump();
}

static Status ReadCollective(const json& c, CollectiveResult* out) {
  SP_ASSIGN_OR_RETURN(out->kind, ParseKind(c.at("op").get<std::string>()));
  SP_ASSIGN_OR_RETURN(out->phase, ParsePhase(c.at("phase").get<std::string>()));
  out->name = c.at("name");
  out->group = c.at("group");
  out->size_bytes = c.at("size");
  out->elem_bytes = c.at("elem_bytes");
  out->nranks = c.at("nranks");
  out->repeat = c.at("repeat");
  out->seconds = c.at("seconds");
  out->scratch = c.at("scratch");
  out->skipped = c.at("skipped");
  return Status::Ok();
}

static Status ReadResult(const json& j, RankResult* r) {
  r->rank = j.at("rank");
  r->world_rank = j.at("world_rank");
  r->stage = j.at("stage");
  r->host = j.at("host");
  r->device = j.at("device");
  r->backend = j.at("backend");
  r->scale = j.at("scale");
  r->capacity_bytes = j.at("capacity_bytes");
  r->headroom_bytes = j.at("headroom_bytes");
  r->planned_peak_bytes = j.at("planned_peak_bytes");
  SP_ASSIGN_OR_RETURN(r->planned_peak_phase, ParsePhase(j.at("planned_peak_phase").get<std::string>()));
  r->manifest_peak_bytes = j.at("manifest_peak_bytes");
  r->measured_peak_bytes = j.at("measured_peak_bytes");
  SP_ASSIGN_OR_RETURN(r->measured_peak_phase, ParsePhase(j.at("measured_peak_phase").get<std::string>()));
  r->runtime_bytes_at_peak = j.at("runtime_bytes_at_peak");
  r->process_peak_bytes = j.at("process_peak_bytes");
  r->device_free_min_bytes = j.at("device_free_min_bytes");
  r->measured_by_phase = j.at("measured_by_phase");
  r->fits = j.at("fits");
  r->stopped = j.at("stopped");
  r->error_code = static_cast<Code>(j.at("error_code").get<int>());
  r->error = j.at("error");
  for (const json& t : j.at("terms")) {
    r->terms.push_back({t.at("name"), t.at("pool") == "torch" ? Pool::kTorch : Pool::kNonTorch,
                        t.at("planned_bytes"), t.at("allocated_bytes"), t.at("measured_by_runtime")});
  }
  for (const json& c : j.at("collectives")) {
    CollectiveResult cr;
    SP_RETURN_IF_ERROR(ReadCollective(c, &cr));
    r->collectives.push_back(std::move(cr));
  }
  const json& f = j.at("failure");
  r->failure.failed = f.at("failed");
  SP_ASSIGN_OR_RETURN(r->failure.phase, ParsePhase(f.at("phase").get<std::string>()));
  r->failure.term = f.at("term");
  r->failure.bytes = f.at("bytes");
  r->failure.used_bytes = f.at("used_bytes");
  r->failure.detail = f.at("detail");
  return Status::Ok();
}

StatusOr<RankResult> RankResultFromJson(const std::string& text) {
  // Ranks of one job send this to each other; a parse failure means a version mismatch
  // or a corrupted message, both internal errors.
  try {
    RankResult r;
    SP_RETURN_IF_ERROR(ReadResult(json::parse(text), &r));
    return r;
  } catch (const json::exception& e) {
    return Status::Internal(std::string("a rank's result could not be read: ") + e.what());
  }
}

int ExitCodeOf(const RankResult& r) {
  if (r.error_code != Code::kOk) return static_cast<int>(r.error_code);
  if (r.stopped) return 0;  // the rank that failed carries the verdict
  return r.fits ? 0 : 1;
}

}  // namespace shardplan::validate

// LocalRank: which GPU of its node a rank binds. Launchers say it in the environment; when
// none does, ranks on the same host are counted through an all-gather of host-name hashes,
// as nccl-tests does (src/common.cu).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "planner/status.h"
#include "validate/communicator.h"

namespace shardplan::validate {

// Reads an environment variable; nullptr when unset (std::getenv, or a table in tests).
using GetEnv = std::function<const char*(const char*)>;

// The variables consulted, in order: OpenMPI, PMIx, PMI, Slurm, torchrun.
inline constexpr const char* kLocalRankVariables[] = {
    "OMPI_COMM_WORLD_LOCAL_RANK", "PMIX_LOCAL_RANK", "PMI_LOCAL_RANK", "SLURM_LOCALID",
    "LOCAL_RANK"};

// The first variable set, parsed strictly; nullopt when none is set; bad input when one
// holds something other than a non-negative integer.
StatusOr<std::optional<int>> LocalRankFromEnv(const GetEnv& getenv);

// 64-bit FNV-1a of the host name up to its first '.', so "n1" and "n1.cluster" agree.
uint64_t HostHash(std::string_view hostname);

// The number of lower ranks whose host hash equals that of `rank`.
int LocalRankFromHashes(const std::vector<uint64_t>& hashes, int rank);

// Environment first, else the all-gather of host hashes over `world`.
StatusOr<int> DiscoverLocalRank(Communicator& world);

}  // namespace shardplan::validate

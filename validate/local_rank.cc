#include "validate/local_rank.h"

#include <charconv>
#include <cstdlib>

#include "validate/check.h"

namespace shardplan::validate {

StatusOr<std::optional<int>> LocalRankFromEnv(const GetEnv& getenv) {
  for (const char* name : kLocalRankVariables) {
    const char* value = getenv(name);
    if (value == nullptr || *value == '\0') continue;
    const std::string_view text(value);
    int out = -1;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    if (ec != std::errc() || end != text.data() + text.size() || out < 0) {
      return Status::BadInput(std::string(name) + "=\"" + value +
                              "\": expected a non-negative integer local rank");
    }
    return std::optional<int>(out);
  }
  return std::optional<int>();
}

uint64_t HostHash(std::string_view hostname) {
  hostname = hostname.substr(0, hostname.find('.'));
  uint64_t h = 14695981039346656037ull;  // FNV-1a offset basis
  for (char c : hostname) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;  // FNV-1a prime
  }
  return h;
}

int LocalRankFromHashes(const std::vector<uint64_t>& hashes, int rank) {
  int local = 0;
  for (int r = 0; r < rank; ++r) {
    if (hashes[static_cast<size_t>(r)] == hashes[static_cast<size_t>(rank)]) ++local;
  }
  return local;
}

StatusOr<int> DiscoverLocalRank(Communicator& world) {
  SP_ASSIGN_OR_RETURN(std::optional<int> env,
                      LocalRankFromEnv([](const char* n) { return std::getenv(n); }));
  if (env) return *env;
  const uint64_t mine = HostHash(HostName());
  std::vector<uint64_t> all(static_cast<size_t>(world.size()));
  SP_RETURN_IF_ERROR(world.AllGather(&mine, sizeof(mine), all.data()));
  return LocalRankFromHashes(all, world.rank());
}

}  // namespace shardplan::validate

#include "validate/check.h"

#include <unistd.h>

#include <cstring>

namespace shardplan::validate {

std::string HostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "unknown-host";
  std::string name(buf);
  return name.substr(0, name.find('.'));
}

Status CallFailed(const char* file, int line, const char* call, const std::string& error,
                  Code code) {
  // __FILE__ may be absolute; keep the path from the project's top folder.
  std::string where(file);
  const size_t cut = where.rfind("validate/");
  if (cut != std::string::npos) where = where.substr(cut);
  return Status(code, where + ":" + std::to_string(line) + ": " + call + " failed on " +
                          HostName() + ": " + error);
}

}  // namespace shardplan::validate

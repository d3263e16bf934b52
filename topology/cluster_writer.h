// Writes a ClusterSpec as the cluster YAML that topology/cluster_reader.h reads (DESIGN.md
// "--cluster"): quantities as strings with units ("81559 MiB", "450 GB/s", "400 Gb/s", "2 us"),
// each line with a comment saying what it means, so `shardplan plan --cluster FILE` accepts it
// and reads back the same spec.
//
// Rules: a GPU equal in every field to its catalog entry is written as the catalog name;
// otherwise as a mapping with every field. Unknowns (a quantity of 0, a link with an empty
// fabric) are left out with a comment, so the reader's default applies; a link whose fabric is
// "none" is written with its zeros. Numbers get as few digits as read back the same double.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "planner/status.h"
#include "topology/cluster_spec.h"

namespace shardplan {

struct ClusterYamlOptions {
  std::vector<std::string> header;  // comment lines for the top of the file, without "# "
  std::string source;               // the `source:` value; empty = no source line
};

std::string WriteClusterYaml(const ClusterSpec& cluster, const ClusterYamlOptions& options = {});


// Quantity strings the units parser (planner/units.h) reads back exactly.
std::string YamlBytes(int64_t bytes);          // "81559 MiB", "2 TiB", "30 TB"
std::string YamlBandwidth(double bytes_per_s);  // "450 GB/s"
std::string YamlBitRate(double bytes_per_s);    // "400 Gb/s", for network links
std::string YamlDuration(double seconds);       // "2 us"
// The shortest decimal that parses back to `v`: 56.25, 989.4, 0.
std::string ShortestDecimal(double v);

}  // namespace shardplan

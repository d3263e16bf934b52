// The cluster YAML writer: quantity strings, the file a discovery writes, and the round trip
// through the reader (topology/cluster_reader.h) that `shardplan plan --cluster` uses.
#include "planner/io/atomic_file.h"
#include "topology/cluster_writer.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "planner/io/document.h"
#include "planner/units.h"
#include "tests/topology/test_support.h"
#include "topology/cluster_reader.h"
#include "topology/discover.h"

namespace shardplan {
namespace {

StatusOr<ClusterSpec> ReadBack(const std::string& yaml) {
  SP_ASSIGN_OR_RETURN(Document doc, Document::Parse("written.yaml", yaml));
  return ParseCluster(doc);
}

void ExpectSameLink(const LinkSpec& a, const LinkSpec& b, const char* what) {
  EXPECT_EQ(a.fabric, b.fabric) << what;
  EXPECT_DOUBLE_EQ(a.bandwidth, b.bandwidth) << what;
  EXPECT_DOUBLE_EQ(a.latency_s, b.latency_s) << what;
  EXPECT_EQ(a.nics_per_node, b.nics_per_node) << what;
  EXPECT_EQ(a.domain, b.domain) << what;
}

void ExpectSameCluster(const ClusterSpec& a, const ClusterSpec& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.nodes, b.nodes);
  EXPECT_EQ(a.gpus_per_node, b.gpus_per_node);
  EXPECT_EQ(a.gpu.name, b.gpu.name);
  EXPECT_EQ(a.gpu.display_name, b.gpu.display_name);
  EXPECT_EQ(a.gpu.memory_bytes, b.gpu.memory_bytes);
  EXPECT_DOUBLE_EQ(a.gpu.bf16_flops, b.gpu.bf16_flops);
  EXPECT_DOUBLE_EQ(a.gpu.fp16_flops, b.gpu.fp16_flops);
  EXPECT_DOUBLE_EQ(a.gpu.fp8_flops, b.gpu.fp8_flops);
  EXPECT_DOUBLE_EQ(a.gpu.fp32_flops, b.gpu.fp32_flops);
  EXPECT_DOUBLE_EQ(a.gpu.memory_bandwidth, b.gpu.memory_bandwidth);
  EXPECT_DOUBLE_EQ(a.gpu.nvlink_bandwidth, b.gpu.nvlink_bandwidth);
  EXPECT_EQ(a.gpu.compute_capability, b.gpu.compute_capability);
  ExpectSameLink(a.intra_node, b.intra_node, "intra_node");
  ExpectSameLink(a.inter_node, b.inter_node, "inter_node");
  EXPECT_EQ(a.host_memory_bytes, b.host_memory_bytes);
  EXPECT_DOUBLE_EQ(a.pcie_bandwidth, b.pcie_bandwidth);
  EXPECT_EQ(a.nvme_bytes, b.nvme_bytes);
  EXPECT_DOUBLE_EQ(a.nvme_bandwidth, b.nvme_bandwidth);
}

TEST(Quantities, AsTheUnitsParserReadsThem) {
  EXPECT_EQ(YamlBytes(81559 * kMiB), "81559 MiB");
  EXPECT_EQ(YamlBytes(2 * kTiB), "2 TiB");
  EXPECT_EQ(YamlBytes(30'000'000'000'000), "30 TB");
  EXPECT_EQ(YamlBytes(1536), "1536 B");
  EXPECT_EQ(YamlBytes(0), "0 B");
  EXPECT_EQ(YamlBandwidth(450e9), "450 GB/s");
  EXPECT_EQ(YamlBandwidth(56.25e9), "56.25 GB/s");
  EXPECT_EQ(YamlBandwidth(31.51e9), "31.51 GB/s");
  EXPECT_EQ(YamlBandwidth(3.35e12), "3.35 TB/s");
  EXPECT_EQ(YamlBandwidth(0), "0 GB/s");
  EXPECT_EQ(YamlBitRate(400e9 / 8), "400 Gb/s");
  EXPECT_EQ(YamlDuration(2e-6), "2 us");
  EXPECT_EQ(YamlDuration(5e-6), "5 us");
  EXPECT_EQ(YamlDuration(0), "0 us");
  EXPECT_EQ(YamlDuration(0.0015), "1.5 ms");
  EXPECT_EQ(ShortestDecimal(989.4), "989.4");
  EXPECT_EQ(ShortestDecimal(1978.9), "1978.9");
  EXPECT_EQ(ShortestDecimal(19.5), "19.5");
}

Discovery DgxH100() {
  StatusOr<Discovery> d =
      DiscoverFromFiles(testing::DataPath("dgx_h100_topo.txt"), testing::DataPath("dgx_h100_query.csv"), {});
  EXPECT_TRUE(d.ok()) << d.status().message();
  return d.ok() ? *d : Discovery{};
}

TEST(WriteClusterYaml, DiscoveredDgxH100) {
  Discovery d = DgxH100();
  ClusterYamlOptions options{DiscoveryComments(d), "shardplan topology discover: " + d.source};
  EXPECT_EQ(WriteClusterYaml(d.cluster, options),
            "# Discovered by `shardplan topology discover` from captured nvidia-smi output (dgx_h100_topo.txt, "
            "dgx_h100_query.csv).\n"
            "# 8x NVIDIA H100 80GB HBM3, 81559 MiB each as the driver reports it.\n"
            "# NVLink islands: GPU 0-7 (18 links per GPU).\n"
            "# NUMA: GPU 0-3 on node 0; GPU 4-7 on node 1.\n"
            "# Note: the PCIe link was not reported; host.pcie_bandwidth is left to the reader's default.\n"
            "# Note: one node was discovered, so inter_node is left to the reader's default; set its fabric, "
            "bandwidth and nics_per_node before planning across nodes (NICs seen: mlx5_0, mlx5_1, mlx5_2, mlx5_3, "
            "mlx5_4, mlx5_5, mlx5_6, mlx5_7, mlx5_8, mlx5_9, mlx5_10, mlx5_11).\n"
            "name: discovered\n"
            "nodes: 1\n"
            "gpus_per_node: 8\n"
            "gpu: h100-sxm-80gb                          # NVIDIA H100 80GB HBM3: the catalog entry, 81559 MiB\n"
            "intra_node: {fabric: nvlink, bandwidth: 450 GB/s, latency: 2 us} # per GPU, one direction\n"
            "# inter_node: unknown; the reader's default applies\n"
            "# host: {memory, pcie_bandwidth} unknown; the reader's defaults apply\n"
            "source: \"shardplan topology discover: captured nvidia-smi output (dgx_h100_topo.txt, "
            "dgx_h100_query.csv)\"\n");
}

TEST(WriteClusterYaml, DiscoveredDgxH100ReadsBack) {
  Discovery d = DgxH100();
  StatusOr<ClusterSpec> back = ReadBack(WriteClusterYaml(d.cluster));
  ASSERT_TRUE(back.ok()) << back.status().message();
  // The unknowns were left out, so the reader's defaults fill them; everything else is exact.
  EXPECT_NE(back->inter_node.fabric, "");
  EXPECT_GT(back->pcie_bandwidth, 0);
  ClusterSpec expected = d.cluster;
  expected.inter_node = back->inter_node;
  expected.pcie_bandwidth = back->pcie_bandwidth;
  ExpectSameCluster(*back, expected);
}

TEST(WriteClusterYaml, NvmlDiscoveryWithHostAndPcie) {
  testing::FakeNvml fake = testing::DgxH100();
  StatusOr<Discovery> d = DiscoverFromNvml(fake.Table(), {"dgx052", 2 * kTiB});
  ASSERT_TRUE(d.ok()) << d.status().message();
  std::string yaml = WriteClusterYaml(d->cluster);
  EXPECT_EQ(yaml,
            "name: dgx052\n"
            "nodes: 1\n"
            "gpus_per_node: 8\n"
            "gpu: h100-sxm-80gb                          # NVIDIA H100 80GB HBM3: the catalog entry, 81559 MiB\n"
            "intra_node: {fabric: nvlink, bandwidth: 450 GB/s, latency: 2 us} # per GPU, one direction\n"
            "# inter_node: unknown; the reader's default applies\n"
            "host: {memory: 2 TiB, pcie_bandwidth: 63.02 GB/s} # memory per node; PCIe per GPU, one direction\n");
  StatusOr<ClusterSpec> back = ReadBack(yaml);
  ASSERT_TRUE(back.ok()) << back.status().message();
  ClusterSpec expected = d->cluster;
  expected.inter_node = back->inter_node;
  ExpectSameCluster(*back, expected);
}

TEST(WriteClusterYaml, BuiltInClustersRoundTripExactly) {
  for (const char* name : {"dgx-h100", "dgx-a100", "h200-node", "rtx4090-pc", "rtxa6000-workstation"}) {
    SCOPED_TRACE(name);
    StatusOr<ClusterSpec> c = LoadCluster(name);
    ASSERT_TRUE(c.ok()) << c.status().message();
    std::string yaml = WriteClusterYaml(*c);
    StatusOr<ClusterSpec> back = ReadBack(yaml);
    ASSERT_TRUE(back.ok()) << back.status().message() << "\n" << yaml;
    ExpectSameCluster(*back, *c);
  }
}

// A GB200 rack's NVLink domain is written out and read back as it was, whether it came
// from the catalog (NVL72) or the file stated trays on the network alone.
TEST(WriteClusterYaml, NvlinkDomainRoundTrips) {
  for (const char* text : {"nodes: 18\ngpus_per_node: 4\ngpu: GB200\n",
                           "nodes: 18\ngpus_per_node: 4\ngpu: GB200\nintra_node: {domain: 4}\n",
                           "nodes: 18\ngpus_per_node: 4\ngpu: GB200\nintra_node: {domain: 36}\n"}) {
    SCOPED_TRACE(text);
    StatusOr<ClusterSpec> c = ReadBack(text);
    ASSERT_TRUE(c.ok()) << c.status().message();
    const std::string yaml = WriteClusterYaml(*c);
    EXPECT_NE(yaml.find("domain: " + std::to_string(c->intra_node.domain)), std::string::npos) << yaml;
    StatusOr<ClusterSpec> back = ReadBack(yaml);
    ASSERT_TRUE(back.ok()) << back.status().message() << "\n" << yaml;
    ExpectSameCluster(*back, *c);
  }
}

TEST(WriteClusterYaml, BuiltInDgxH100Text) {
  StatusOr<ClusterSpec> c = LoadCluster("dgx-h100");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(WriteClusterYaml(*c),
            "name: dgx-h100\n"
            "nodes: 1\n"
            "gpus_per_node: 8\n"
            "gpu: h100-sxm-80gb                          # NVIDIA H100 80GB HBM3: the catalog entry, 81559 MiB\n"
            "intra_node: {fabric: nvlink, bandwidth: 450 GB/s, latency: 2 us} # per GPU, one direction\n"
            "inter_node: {fabric: infiniband, bandwidth: 400 Gb/s, nics_per_node: 8, latency: 5 us} # per NIC, one "
            "direction\n"
            "host: {memory: 2 TiB, pcie_bandwidth: 64 GB/s} # memory per node; PCIe per GPU, one direction\n"
            "nvme: {capacity: 30 TB, bandwidth: 25 GB/s} # per node\n");
}

TEST(WriteClusterYaml, CatalogGpuWithOtherLinksIsWrittenInFull) {
  StatusOr<ClusterSpec> c = LoadCluster("rtxa6000-workstation");
  ASSERT_TRUE(c.ok()) << c.status().message();
  c->gpu.nvlink_bandwidth = 0;  // the same cards without their bridge
  c->intra_node = {"pcie", 31.51e9, 5e-6, 0};
  std::string yaml = WriteClusterYaml(*c);
  EXPECT_NE(yaml.find("gpu:                                        # catalog rtx-a6000-48gb with this node's "
                      "nvlink_bandwidth\n  name: rtx-a6000-48gb\n  display_name: NVIDIA RTX A6000\n"
                      "  memory: 49140 MiB                         # as the driver reports it\n"),
            std::string::npos)
      << yaml;
  EXPECT_NE(yaml.find("  nvlink_bandwidth: 0 GB/s                  # per GPU, one direction; 0 = none\n"),
            std::string::npos)
      << yaml;
  StatusOr<ClusterSpec> back = ReadBack(yaml);
  ASSERT_TRUE(back.ok()) << back.status().message() << "\n" << yaml;
  ExpectSameCluster(*back, *c);
}

TEST(WriteClusterYaml, GpuOutsideTheCatalogWithFiguresRoundTrips) {
  ClusterSpec c;
  c.name = "lab: rack #3";  // needs quoting
  c.gpus_per_node = 4;
  c.gpu = {"mi-gpu", "Some GPU \"X\"", 96 * kGiB, 500e12, 500e12, 1000e12, 60e12, 3.2e12, 0, 90};
  c.intra_node = {"pcie", 63.02e9, 5e-6, 0};
  c.inter_node = {"ethernet", 100e9 / 8, 10e-6, 2};
  c.host_memory_bytes = 512 * kGiB;
  c.pcie_bandwidth = 63.02e9;
  c.nvme_bytes = 4'000'000'000'000;
  c.nvme_bandwidth = 7e9;
  std::string yaml = WriteClusterYaml(c);
  EXPECT_NE(yaml.find("name: \"lab: rack #3\"\n"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("  display_name: \"Some GPU \\\"X\\\"\"\n"), std::string::npos) << yaml;
  StatusOr<ClusterSpec> back = ReadBack(yaml);
  ASSERT_TRUE(back.ok()) << back.status().message() << "\n" << yaml;
  ExpectSameCluster(*back, c);
}

TEST(WriteClusterYaml, UnknownFiguresAreLeftForThePersonAndTheReaderSaysSo) {
  ClusterSpec c;
  c.name = "m40";
  c.gpus_per_node = 8;
  c.gpu.name = "tesla-m40";
  c.gpu.display_name = "Tesla M40 24GB";
  c.gpu.memory_bytes = 22945 * kMiB;
  c.intra_node = {"pcie", 0, 5e-6, 0};
  c.inter_node = {"none", 0, 0, 0};
  std::string yaml = WriteClusterYaml(c);
  EXPECT_NE(yaml.find("  # bf16_tflops, fp16_tflops, fp8_tflops, fp32_tflops: unknown; add the dense TFLOP/s "
                      "before planning\n"),
            std::string::npos)
      << yaml;
  EXPECT_NE(yaml.find("intra_node: {fabric: pcie, latency: 5 us}   # bandwidth unknown: the reader's default applies\n"),
            std::string::npos)
      << yaml;
  // A GPU known by its memory alone still answers the memory question; its time is unknown.
  StatusOr<ClusterSpec> back = ReadBack(yaml);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->gpu.memory_bytes, 22945 * kMiB);
  EXPECT_EQ(back->gpu.bf16_flops, 0);
  EXPECT_EQ(back->gpu.memory_bandwidth, 0);
}

TEST(WriteFileAtomically, WritesReplacesAndLeavesNoTemporaryFile) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("shardplan_writer_test_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string path = (dir / "cluster.yaml").string();
  ASSERT_TRUE(WriteFileAtomically(path, "old\n").ok());
  Status s = WriteFileAtomically(path, "name: x\n");
  ASSERT_TRUE(s.ok()) << s.message();
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), "name: x\n");
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
  Status missing = WriteFileAtomically((dir / "no-such-dir" / "x.yaml").string(), "x");
  EXPECT_EQ(missing.code(), Code::kInternal);
  EXPECT_EQ(missing.message(), "cannot write " + (dir / "no-such-dir" / "x.yaml").string() + ": No such file or directory");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace shardplan

// Discovery end to end: captured nvidia-smi outputs (data/README.md), a fake NVML
// (test_support.h) and a fake nvidia-smi command, each into the ClusterSpec a plan reads.
#include "topology/discover.h"

#include <gtest/gtest.h>


#include "planner/io/document.h"
#include "planner/strings.h"
#include "planner/units.h"
#include "tests/topology/test_support.h"
#include "topology/cluster_reader.h"
#include "topology/cluster_writer.h"

namespace shardplan {
namespace {

using testing::DataPath;
using testing::ReadData;

Discovery FromFiles(const std::string& topo, const std::string& query) {
  StatusOr<Discovery> d = DiscoverFromFiles(DataPath(topo), DataPath(query), {});
  EXPECT_TRUE(d.ok()) << d.status().message();
  return d.ok() ? *d : Discovery{};
}

bool HasNote(const Discovery& d, const std::string& start) {
  for (const std::string& n : d.notes)
    if (n.rfind(start, 0) == 0) return true;
  return false;
}

TEST(DiscoverFromFiles, DgxH100) {
  Discovery d = FromFiles("dgx_h100_topo.txt", "dgx_h100_query.csv");
  const ClusterSpec& c = d.cluster;
  EXPECT_EQ(c.name, "discovered");
  EXPECT_EQ(c.nodes, 1);
  EXPECT_EQ(c.gpus_per_node, 8);
  EXPECT_EQ(c.gpu.name, "h100-sxm-80gb");  // matched by the driver's name
  EXPECT_EQ(c.gpu.display_name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(c.gpu.memory_bytes, 81559 * kMiB);  // as the driver reports it, not "80 GB"
  EXPECT_EQ(c.gpu.compute_capability, 90);
  EXPECT_DOUBLE_EQ(c.gpu.bf16_flops, 989.4e12);  // from the catalog
  EXPECT_DOUBLE_EQ(c.gpu.nvlink_bandwidth, 450e9);  // 18 links x 25 GB/s, one direction
  EXPECT_EQ(c.intra_node.fabric, "nvlink");
  EXPECT_DOUBLE_EQ(c.intra_node.bandwidth, 450e9);
  EXPECT_DOUBLE_EQ(c.intra_node.latency_s, 2e-6);
  EXPECT_EQ(c.inter_node.fabric, "");  // not discoverable from one node
  EXPECT_EQ(c.pcie_bandwidth, 0);  // the four-column query does not report the PCIe link
  EXPECT_EQ(d.source, "captured nvidia-smi output (dgx_h100_topo.txt, dgx_h100_query.csv)");
  ASSERT_EQ(d.gpus.size(), 8u);
  for (const DiscoveredGpu& g : d.gpus) {
    EXPECT_EQ(g.nvlinks, 18) << g.index;
    EXPECT_EQ(g.numa_node, g.index < 4 ? 0 : 1) << g.index;
    for (int j = 0; j < 8; ++j) EXPECT_EQ(LinkName(d.links[g.index][j]), j == g.index ? "X" : "NV18");
  }
  EXPECT_EQ(d.gpus[5].pci_bus_id, "00000000:C3:00.0");
  EXPECT_EQ(d.gpus[5].cpu_affinity, "56-111,168-223");
  EXPECT_EQ(d.nvlink_islands, (std::vector<std::vector<int>>{{0, 1, 2, 3, 4, 5, 6, 7}}));
  EXPECT_EQ(d.nics.size(), 12u);
  EXPECT_TRUE(HasNote(d, "one node was discovered, so inter_node is left to the reader's default")) << ::testing::PrintToString(d.notes);
  EXPECT_FALSE(HasNote(d, "the catalog gives"));
}

TEST(DiscoverFromFiles, A100BehindNvSwitchesCountsTwelveLinksNotThirtySix) {
  Discovery d = FromFiles("a100_4gpu_topo.txt", "a100_4gpu_query.csv");
  EXPECT_EQ(d.cluster.gpu.name, "a100-sxm-80gb");
  EXPECT_EQ(d.cluster.gpu.memory_bytes, 81920 * kMiB);
  EXPECT_EQ(d.gpus[0].nvlinks, 12);  // NV12 to each of 3 peers: switched, not 36 links
  EXPECT_DOUBLE_EQ(d.cluster.gpu.nvlink_bandwidth, 300e9);
  EXPECT_EQ(d.cluster.intra_node.fabric, "nvlink");
  EXPECT_EQ(d.driver_version, "580.105.08");
  EXPECT_EQ(d.nics, std::vector<std::string>{"rocep49s0"});
}

TEST(DiscoverFromFiles, Rtx3090BridgeUsesTheBridgeLinkRate) {
  Discovery d = FromFiles("rtx3090_nvlink_topo.txt", "rtx3090_nvlink_query.csv");
  EXPECT_EQ(d.cluster.gpu.name, "rtx-3090-24gb");
  EXPECT_EQ(d.cluster.gpu.memory_bytes, 24576 * kMiB);
  EXPECT_EQ(d.gpus[1].nvlinks, 4);
  EXPECT_DOUBLE_EQ(d.cluster.gpu.nvlink_bandwidth, 56.25e9);  // 4 x 14.0625 GB/s
  EXPECT_EQ(d.cluster.intra_node.fabric, "nvlink");
  EXPECT_FALSE(HasNote(d, "the catalog gives"));
}

TEST(DiscoverFromFiles, PcieBoxHasNoNvLink) {
  Discovery d = FromFiles("l40s_pcie_topo.txt", "l40s_pcie_query.csv");
  EXPECT_EQ(d.cluster.gpus_per_node, 4);
  EXPECT_EQ(d.cluster.gpu.name, "l40s-48gb");
  EXPECT_EQ(d.cluster.gpu.memory_bytes, 46068 * kMiB);
  EXPECT_EQ(d.cluster.gpu.nvlink_bandwidth, 0);
  EXPECT_EQ(d.cluster.intra_node.fabric, "pcie");
  EXPECT_DOUBLE_EQ(d.cluster.intra_node.latency_s, 5e-6);
  EXPECT_TRUE(d.nvlink_islands.empty());
  for (const DiscoveredGpu& g : d.gpus) EXPECT_EQ(g.nvlinks, 0);
  EXPECT_EQ(LinkName(d.links[0][1]), "PIX");
  EXPECT_EQ(LinkName(d.links[0][2]), "NODE");
}

TEST(DiscoverFromFiles, MismatchedCapturesAreBadInput) {
  StatusOr<Discovery> d = DiscoverFromFiles(DataPath("dgx_h100_topo.txt"), DataPath("rtx3090_nvlink_query.csv"), {});
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), Code::kBadInput);
  EXPECT_EQ(d.status().message(),
            "captured nvidia-smi output (dgx_h100_topo.txt, rtx3090_nvlink_query.csv): the topology shows 8 GPUs but "
            "the GPU list has 2; capture both on the same machine");
}

TEST(DiscoverFromFiles, ErrorsNameTheFileAndLine) {
  StatusOr<Discovery> d = DiscoverFromFiles(DataPath("dgx_h100_query.csv"), DataPath("dgx_h100_query.csv"), {});
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), Code::kBadInput);
  EXPECT_EQ(d.status().message().rfind(DataPath("dgx_h100_query.csv") + ":1: expected the header of", 0), 0u)
      << d.status().message();
  d = DiscoverFromFiles(DataPath("no-such-topo.txt"), DataPath("dgx_h100_query.csv"), {});
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().message(), DataPath("no-such-topo.txt") + ": cannot read: No such file or directory");
}

// Constructed (not captured): four RTX A6000, two bridged pairs, PCIe between the pairs.
constexpr char kBridgedPairs[] =
    "\tGPU0\tGPU1\tGPU2\tGPU3\tCPU Affinity\tNUMA Affinity\n"
    "GPU0\t X \tNV4\tSYS\tSYS\t0-31\t0\n"
    "GPU1\tNV4\t X \tSYS\tSYS\t0-31\t0\n"
    "GPU2\tSYS\tSYS\t X \tNV4\t32-63\t1\n"
    "GPU3\tSYS\tSYS\tNV4\t X \t32-63\t1\n";

std::vector<QueryGpu> Gpus(int n, const std::string& name, int64_t mib) {
  std::vector<QueryGpu> gpus;
  for (int i = 0; i < n; ++i) gpus.push_back({i, name, mib * kMiB, "", 0, "", 4, 16});
  return gpus;
}

TEST(Combine, NvLinkIslandsSmallerThanTheNodeMeanPcieBetweenThem) {
  StatusOr<TopoMatrix> topo = ParseTopoMatrix(kBridgedPairs, "pairs");
  ASSERT_TRUE(topo.ok()) << topo.status().message();
  StatusOr<Discovery> d = Combine(*topo, Gpus(4, "NVIDIA RTX A6000", 49140), "pairs", {"ws", 256 * kGiB});
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d->nvlink_islands, (std::vector<std::vector<int>>{{0, 1}, {2, 3}}));
  EXPECT_EQ(d->cluster.gpu.name, "rtx-a6000-48gb");
  EXPECT_DOUBLE_EQ(d->cluster.gpu.nvlink_bandwidth, 56.25e9);
  EXPECT_EQ(d->cluster.intra_node.fabric, "pcie");
  EXPECT_DOUBLE_EQ(d->cluster.intra_node.bandwidth, 31.51e9);  // Gen4 x16 after 128b/130b
  EXPECT_DOUBLE_EQ(d->cluster.pcie_bandwidth, 31.51e9);
  EXPECT_EQ(d->cluster.host_memory_bytes, 256 * kGiB);
  EXPECT_EQ(d->cluster.name, "ws");
  EXPECT_TRUE(HasNote(*d, "NVLink joins only part of the node"));
}

// The capture is of a P40 host, which the catalog knows; the same topology with a card it
// does not know (the Maxwell M40, named as nvidia-smi prints it) keeps the driver's name.
TEST(Combine, GpuMissingFromTheCatalogKeepsItsDriverName) {
  StatusOr<TopoMatrix> topo = ParseTopoMatrix(ReadData("p40_soc_topo.txt"), "p40");
  ASSERT_TRUE(topo.ok()) << topo.status().message();
  StatusOr<Discovery> p40 = Combine(*topo, Gpus(8, "Tesla P40", 22919), "p40", {});
  ASSERT_TRUE(p40.ok()) << p40.status().message();
  EXPECT_EQ(p40->cluster.gpu.name, "tesla-p40-24gb");
  StatusOr<Discovery> d = Combine(*topo, Gpus(8, "Tesla M40 24GB", 22945), "m40", {});
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d->cluster.gpu.name, "tesla-m40-24gb");
  EXPECT_EQ(d->cluster.gpu.display_name, "Tesla M40 24GB");
  EXPECT_EQ(d->cluster.gpu.bf16_flops, 0);
  EXPECT_EQ(d->nics, std::vector<std::string>{"mlx5_0"});
  EXPECT_TRUE(HasNote(*d, "\"Tesla M40 24GB\" is not in the GPU catalog"));
}

TEST(Combine, MixedGpusTakeTheSmallestMemory) {
  StatusOr<TopoMatrix> topo = ParseTopoMatrix(ReadData("rtx3090_nvlink_topo.txt"), "t");
  std::vector<QueryGpu> gpus = Gpus(2, "NVIDIA GeForce RTX 3090", 24576);
  gpus[1].name = "NVIDIA RTX A6000";
  gpus[1].memory_bytes = 49140 * kMiB;
  StatusOr<Discovery> d = Combine(*topo, gpus, "t", {});
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d->cluster.gpu.name, "rtx-3090-24gb");
  EXPECT_EQ(d->cluster.gpu.memory_bytes, 24576 * kMiB);
  EXPECT_TRUE(HasNote(*d, "the GPUs differ (1x NVIDIA GeForce RTX 3090, 1x NVIDIA RTX A6000)"));
}

TEST(LinkRates, PerGenerationFigures) {
  EXPECT_DOUBLE_EQ(NvLinkBandwidthPerLink(90), 25e9);
  EXPECT_DOUBLE_EQ(NvLinkBandwidthPerLink(80), 25e9);
  EXPECT_DOUBLE_EQ(NvLinkBandwidthPerLink(70), 25e9);
  EXPECT_DOUBLE_EQ(NvLinkBandwidthPerLink(86), 14.0625e9);
  EXPECT_DOUBLE_EQ(NvLinkBandwidthPerLink(100), 50e9);
  EXPECT_DOUBLE_EQ(NvLinkBandwidthPerLink(0), 25e9);
  EXPECT_DOUBLE_EQ(PcieBandwidth(3, 16), 15.75e9);
  EXPECT_DOUBLE_EQ(PcieBandwidth(4, 16), 31.51e9);
  EXPECT_DOUBLE_EQ(PcieBandwidth(5, 16), 63.02e9);
  EXPECT_DOUBLE_EQ(PcieBandwidth(4, 8), 15.75e9);
  EXPECT_EQ(PcieBandwidth(0, 16), 0);
}

TEST(DiscoverFromNvml, FakeDgxH100MatchesTheCapturedOne) {
  testing::FakeNvml fake = testing::DgxH100();
  StatusOr<Discovery> d = DiscoverFromNvml(fake.Table(), {"dgx", 2048 * kGiB});
  ASSERT_TRUE(d.ok()) << d.status().message();
  Discovery files = FromFiles("dgx_h100_topo.txt", "dgx_h100_query.csv");
  EXPECT_EQ(d->source, "NVML (driver 550.90.07)");
  EXPECT_EQ(d->cluster.gpu.name, files.cluster.gpu.name);
  EXPECT_EQ(d->cluster.gpu.memory_bytes, 81559 * kMiB);
  EXPECT_DOUBLE_EQ(d->cluster.gpu.nvlink_bandwidth, 450e9);
  EXPECT_EQ(d->cluster.intra_node.fabric, "nvlink");
  EXPECT_DOUBLE_EQ(d->cluster.pcie_bandwidth, 63.02e9);  // Gen5 x16
  EXPECT_EQ(d->cluster.host_memory_bytes, 2048 * kGiB);
  EXPECT_EQ(d->nvlink_islands, files.nvlink_islands);
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(d->gpus[i].nvlinks, 18);
    EXPECT_EQ(d->gpus[i].numa_node, files.gpus[i].numa_node);
    EXPECT_EQ(d->gpus[i].cpu_affinity, files.gpus[i].cpu_affinity);
    EXPECT_EQ(d->gpus[i].pci_bus_id, files.gpus[i].pci_bus_id);
    for (int j = 0; j < 8; ++j) EXPECT_EQ(LinkName(d->links[i][j]), LinkName(files.links[i][j]));
  }
}

TEST(DiscoverFromNvml, DirectLinksBetweenTwoBridgedGpus) {
  testing::FakeNvml fake;
  const std::string bus[] = {"00000000:09:00.0", "00000000:0A:00.0"};
  for (int i = 0; i < 2; ++i)
    fake.gpus.push_back({"NVIDIA GeForce RTX 3090", 24576ULL << 20, bus[i], 8, 6, 0, {0, 1}, std::vector<std::string>(4, bus[1 - i]), 4, 16});
  fake.levels = {{0, 30}, {30, 0}};
  StatusOr<Discovery> d = DiscoverFromNvml(fake.Table(), {});
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(LinkName(d->links[0][1]), "NV4");
  EXPECT_DOUBLE_EQ(d->cluster.gpu.nvlink_bandwidth, 56.25e9);
  EXPECT_EQ(d->cluster.gpu.name, "rtx-3090-24gb");
  EXPECT_EQ(d->gpus[0].cpu_affinity, "0-1");
}

TEST(DiscoverFromNvml, WithoutNvLinkTheCommonAncestorGivesThePcieLevel) {
  testing::FakeNvml fake = testing::DgxH100();
  NvmlFunctions f = fake.Table();
  f.nvlink_state = nullptr;
  StatusOr<Discovery> d = DiscoverFromNvml(f, {});
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(LinkName(d->links[0][3]), "NODE");
  EXPECT_EQ(LinkName(d->links[0][4]), "SYS");
  EXPECT_EQ(d->cluster.intra_node.fabric, "pcie");
  EXPECT_TRUE(HasNote(*d, "the catalog gives h100-sxm-80gb 450 GB/s of NVLink per GPU; this node's links give 0 GB/s"));
}

TEST(DiscoverWithNvidiaSmi, FallsBackToTheFourColumnQueryOnOldDrivers) {
  std::vector<std::string> ran;
  CommandRunner fake = [&](const std::string& command) -> StatusOr<std::string> {
    ran.push_back(command);
    if (command == "nvidia-smi topo -m") return ReadData("rtx3090_nvlink_topo.txt");
    if (command.find("compute_cap") != std::string::npos)
      return Status::Internal("`" + command + "` exited with status 2: Field \"compute_cap\" is not a valid field");
    return ReadData("rtx3090_nvlink_query.csv");
  };
  StatusOr<Discovery> d = DiscoverWithNvidiaSmi(fake, {});
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(ran, (std::vector<std::string>{
                     "nvidia-smi topo -m",
                     "nvidia-smi --query-gpu=index,name,memory.total,pci.bus_id,compute_cap,pcie.link.gen.max,"
                     "pcie.link.width.max,driver_version,power.limit --format=csv,noheader,nounits",
                     "nvidia-smi --query-gpu=index,name,memory.total,pci.bus_id --format=csv,noheader,nounits"}));
  EXPECT_EQ(d->source, "nvidia-smi");
  EXPECT_DOUBLE_EQ(d->cluster.gpu.nvlink_bandwidth, 56.25e9);
}

// Cards capped below their TDP (torchtitan's H100s at 500 W of 700) are discovered as such,
// through nvidia-smi's power.limit or NVML's enforced limit, and the written file keeps the
// cap; cards at their TDP say nothing.
TEST(DiscoverWithNvidiaSmi, PowerCappedCardsKeepTheirLimit) {
  std::string query;
  for (const std::string& line : Split(ReadData("dgx_h100_query.csv"), '\n'))
    if (!line.empty()) query += line + ", 9.0, 5, 16, 550.90.07, 500.00\n";
  CommandRunner fake = [&](const std::string& command) -> StatusOr<std::string> {
    if (command == "nvidia-smi topo -m") return ReadData("dgx_h100_topo.txt");
    return query;
  };
  StatusOr<Discovery> d = DiscoverWithNvidiaSmi(fake, {});
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_DOUBLE_EQ(d->cluster.gpu.power_limit_watts, 500);
  EXPECT_TRUE(HasNote(*d, "the GPUs run under a 500 W power limit of the 700 W TDP; the plan prices their tensor cores "
                          "at the clock that allows"));
  const std::string yaml = WriteClusterYaml(d->cluster);
  EXPECT_NE(yaml.find("power_limit: 500 W"), std::string::npos) << yaml;
  StatusOr<Document> doc = Document::Parse("written.yaml", yaml);
  ASSERT_TRUE(doc.ok());
  StatusOr<ClusterSpec> back = ParseCluster(*doc);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_DOUBLE_EQ(back->gpu.power_limit_watts, 500);

  testing::FakeNvml nvml = testing::DgxH100();
  for (testing::FakeGpu& g : nvml.gpus) g.power_limit_mw = 500000;
  StatusOr<Discovery> n = DiscoverFromNvml(nvml.Table(), {});
  ASSERT_TRUE(n.ok()) << n.status().message();
  EXPECT_DOUBLE_EQ(n->cluster.gpu.power_limit_watts, 500);
  for (testing::FakeGpu& g : nvml.gpus) g.power_limit_mw = 700000;  // at the TDP: no cap
  StatusOr<Discovery> full = DiscoverFromNvml(nvml.Table(), {});
  ASSERT_TRUE(full.ok());
  EXPECT_DOUBLE_EQ(full->cluster.gpu.power_limit_watts, 0);
}

TEST(DiscoverWithNvidiaSmi, ACommandThatFailsIsItsStatus) {
  CommandRunner fake = [](const std::string&) -> StatusOr<std::string> {
    return Status::Internal("`nvidia-smi topo -m` exited with status 9: NVIDIA-SMI has failed");
  };
  StatusOr<Discovery> d = DiscoverWithNvidiaSmi(fake, {});
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), Code::kInternal);
}

TEST(RunCommand, StdoutAndExitStatus) {
  StatusOr<std::string> out = RunCommand("printf 'a\\nb\\n'");
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(*out, "a\nb\n");
  StatusOr<std::string> bad = RunCommand("echo oops; exit 3");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "`echo oops; exit 3` exited with status 3: oops");
}

}  // namespace
}  // namespace shardplan

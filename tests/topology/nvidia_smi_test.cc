// The nvidia-smi parsers on real captured outputs (data/README.md says where each came from)
// and on malformed text, whose errors must name the line.
#include "topology/nvidia_smi.h"

#include <gtest/gtest.h>

#include "tests/topology/test_support.h"

namespace shardplan {
namespace {

using testing::ReadData;

TopoMatrix Topo(const std::string& file) {
  StatusOr<TopoMatrix> m = ParseTopoMatrix(ReadData(file), file);
  EXPECT_TRUE(m.ok()) << m.status().message();
  return m.ok() ? *m : TopoMatrix{};
}

// Every GPU pair's link as nvidia-smi prints it, row by row: "X NV18 NV18 ...|NV18 X ...".
std::string Matrix(const TopoMatrix& m) {
  std::string out;
  for (const TopoGpu& g : m.gpus) {
    if (!out.empty()) out += "|";
    for (size_t j = 0; j < g.to_gpu.size(); ++j) {
      if (j) out += ' ';
      out += LinkName(g.to_gpu[j]);
    }
  }
  return out;
}

std::string Uniform(int n, const std::string& link) {
  std::string out;
  for (int i = 0; i < n; ++i) {
    if (i) out += "|";
    for (int j = 0; j < n; ++j) out += (j ? " " : "") + (i == j ? std::string("X") : link);
  }
  return out;
}

TEST(ParseTopoMatrix, DgxH100IsNv18EverywhereWithTwelveNics) {
  TopoMatrix m = Topo("dgx_h100_topo.txt");
  ASSERT_EQ(m.gpus.size(), 8u);
  EXPECT_EQ(Matrix(m), Uniform(8, "NV18"));
  ASSERT_EQ(m.nics.size(), 12u);
  EXPECT_EQ(m.nics[11], "NIC11");
  EXPECT_EQ(m.nic_devices[0], "mlx5_0");
  EXPECT_EQ(m.nic_devices[11], "mlx5_11");
  EXPECT_EQ(m.gpus[0].cpu_affinity, "0-55,112-167");
  EXPECT_EQ(m.gpus[0].numa_node, 0);
  EXPECT_EQ(m.gpus[4].cpu_affinity, "56-111,168-223");
  EXPECT_EQ(m.gpus[4].numa_node, 1);
  EXPECT_EQ(LinkName(m.gpus[0].to_nic[0]), "PXB");   // GPU0's own NIC
  EXPECT_EQ(LinkName(m.gpus[1].to_nic[3]), "PXB");
  EXPECT_EQ(LinkName(m.gpus[0].to_nic[1]), "NODE");
  EXPECT_EQ(LinkName(m.gpus[0].to_nic[6]), "SYS");   // the other socket
}

TEST(ParseTopoMatrix, A100Nv12WithOneNic) {
  TopoMatrix m = Topo("a100_4gpu_topo.txt");
  EXPECT_EQ(Matrix(m), Uniform(4, "NV12"));
  ASSERT_EQ(m.nic_devices.size(), 1u);
  EXPECT_EQ(m.nic_devices[0], "rocep49s0");
  EXPECT_EQ(m.gpus[3].cpu_affinity, "32-63,96-127");
  EXPECT_EQ(m.gpus[3].numa_node, 1);
}

TEST(ParseTopoMatrix, Rtx3090BridgeIsNv4) {
  TopoMatrix m = Topo("rtx3090_nvlink_topo.txt");
  EXPECT_EQ(Matrix(m), "X NV4|NV4 X");
  EXPECT_TRUE(m.nics.empty());
  EXPECT_EQ(m.gpus[1].cpu_affinity, "0-23");
  EXPECT_EQ(m.gpus[1].numa_affinity, "0");
}

TEST(ParseTopoMatrix, PcieBoxesHaveNoNvLink) {
  EXPECT_EQ(Matrix(Topo("l40s_pcie_topo.txt")), "X PIX NODE NODE|PIX X NODE NODE|NODE NODE X PIX|NODE NODE PIX X");
  EXPECT_EQ(Matrix(Topo("pcie_8gpu_sys_topo.txt")), Uniform(8, "SYS"));
  TopoMatrix m = Topo("rtx3090_8gpu_pcie_topo.txt");
  EXPECT_EQ(LinkName(m.gpus[0].to_gpu[3]), "NODE");
  EXPECT_EQ(LinkName(m.gpus[0].to_gpu[4]), "SYS");
  EXPECT_EQ(m.gpus[7].numa_node, 1);
}

TEST(ParseTopoMatrix, TabsTurnedIntoSpaces) {
  TopoMatrix m = Topo("nv18_spaces_topo.txt");
  EXPECT_EQ(Matrix(m), Uniform(8, "NV18"));
  EXPECT_EQ(m.gpus[3].cpu_affinity, "0-47,96-143");
  EXPECT_EQ(m.gpus[3].numa_node, 0);
  EXPECT_EQ(m.gpus[4].cpu_affinity, "48-95,144-191");
  EXPECT_EQ(m.gpus[4].numa_node, 1);
}

TEST(ParseTopoMatrix, OldDriverWithSocAndMlxColumnsAndNoNumaColumn) {
  TopoMatrix m = Topo("p40_soc_topo.txt");
  EXPECT_EQ(LinkName(m.gpus[0].to_gpu[3]), "PIX");
  EXPECT_EQ(LinkName(m.gpus[0].to_gpu[4]), "PXB");
  ASSERT_EQ(m.nics.size(), 1u);
  EXPECT_EQ(m.nics[0], "mlx5_0");
  EXPECT_EQ(LinkName(m.gpus[5].to_nic[0]), "SYS");  // printed SOC
  EXPECT_EQ(m.gpus[5].cpu_affinity, "0-13");
  EXPECT_EQ(m.gpus[5].numa_affinity, "");
  EXPECT_EQ(m.gpus[5].numa_node, -1);
}

TEST(ParseTopoMatrix, EmptyCpuAffinityCellsAndTrailingTabs) {
  TopoMatrix m = Topo("hgx_h100_della_topo.txt");
  EXPECT_EQ(Matrix(m), Uniform(8, "NV18"));
  EXPECT_EQ(m.gpus[0].cpu_affinity, "");
  EXPECT_EQ(m.gpus[0].numa_node, 0);
  EXPECT_EQ(m.gpus[4].cpu_affinity, "1");
  EXPECT_EQ(m.gpus[4].numa_node, 1);
  EXPECT_EQ(m.nic_devices[5], "mlx5_5");
}

TEST(ParseTopoMatrix, CrlfAndTerminalColoursAreIgnored) {
  std::string text = ReadData("rtx3090_nvlink_topo.txt");
  std::string crlf;
  for (char c : text) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
  crlf.insert(1, "\x1b[4m");  // nvidia-smi underlines the header on a terminal
  crlf.insert(crlf.find("\r\n"), "\x1b[0m");
  StatusOr<TopoMatrix> m = ParseTopoMatrix(crlf, "crlf.txt");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(Matrix(*m), "X NV4|NV4 X");
  EXPECT_EQ(m->gpus[0].numa_node, 0);
}

struct Bad {
  const char* text;
  const char* message;
};

class ParseTopoMatrixRejects : public ::testing::TestWithParam<Bad> {};

TEST_P(ParseTopoMatrixRejects, NamingTheLine) {
  StatusOr<TopoMatrix> m = ParseTopoMatrix(GetParam().text, "topo.txt");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), Code::kBadInput);
  EXPECT_EQ(m.status().message(), GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ParseTopoMatrixRejects,
    ::testing::Values(
        Bad{"", "topo.txt: empty; expected the output of `nvidia-smi topo -m`"},
        Bad{"\nNVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n",
            "topo.txt:2: expected the header of `nvidia-smi topo -m` (GPU0, GPU1, ..., CPU Affinity), got "
            "\"NVIDIA-SMI has failed because it couldn't communicate wit...\""},
        Bad{"\tGPU1\tGPU0\n", "topo.txt:1: expected column GPU0, got \"GPU1\""},
        Bad{"\tGPU0\tGPU1\tCPU Affinity\r\nGPU0\t X \tNV?\t0-3\r\nGPU1\tNV4\t X \t0-3\r\n",
            "topo.txt:2: GPU0, column GPU1: unknown link \"NV?\"; expected X, NV<n>, PIX, PXB, PHB, NODE or SYS"},
        Bad{"\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \tNV4\t0-3\nGPU1\tNV4\n",
            "topo.txt:3: GPU1 has 1 of the 2 device columns the header names"},
        Bad{"\tGPU0\tGPU1\nGPU0\tNV4\t X \nGPU1\tNV4\t X \n",
            "topo.txt:2: GPU0, column GPU0: expected X where the row meets its own column, got \"NV4\""},
        Bad{"\tGPU0\tGPU1\nGPU0\t X \t X \n",
            "topo.txt:2: GPU0, column GPU1: X belongs only where the row meets its own column"},
        Bad{"\tGPU0\tGPU1\nGPU0\t X \tSYS\nGPU0\t X \tSYS\n", "topo.txt:3: a second row for GPU0"},
        Bad{"\tGPU0\tGPU1\nGPU0\t X \tSYS\nGPU7 SYS X\n",
            "topo.txt:3: expected a row for GPU0..GPU1 or a NIC column, got \"GPU7 SYS X\""},
        Bad{"\tGPU0\tGPU1\nGPU0\t X \tSYS\n\nLegend:\n", "topo.txt:1: the header names GPU1 but no row follows for it"}));

TEST(ParseGpuQuery, DgxH100NoHeaderNoUnits) {
  StatusOr<std::vector<QueryGpu>> gpus = ParseGpuQuery(ReadData("dgx_h100_query.csv"), "q.csv");
  ASSERT_TRUE(gpus.ok()) << gpus.status().message();
  ASSERT_EQ(gpus->size(), 8u);
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ((*gpus)[i].index, i);
    EXPECT_EQ((*gpus)[i].name, "NVIDIA H100 80GB HBM3");
    EXPECT_EQ((*gpus)[i].memory_bytes, 81559LL * 1024 * 1024);
  }
  EXPECT_EQ((*gpus)[0].pci_bus_id, "00000000:1B:00.0");
  EXPECT_EQ((*gpus)[7].pci_bus_id, "00000000:DF:00.0");
  EXPECT_EQ((*gpus)[0].compute_capability, 0);
}

TEST(ParseGpuQuery, HeaderNamesTheColumnsAndUnits) {
  StatusOr<std::vector<QueryGpu>> gpus = ParseGpuQuery(ReadData("a100_4gpu_query.csv"), "q.csv");
  ASSERT_TRUE(gpus.ok()) << gpus.status().message();
  ASSERT_EQ(gpus->size(), 4u);
  EXPECT_EQ((*gpus)[3].name, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ((*gpus)[3].memory_bytes, 81920LL << 20);
  EXPECT_EQ((*gpus)[3].compute_capability, 80);
  EXPECT_EQ((*gpus)[3].driver_version, "580.105.08");
  EXPECT_EQ((*gpus)[3].pci_bus_id, "");
}

TEST(ParseGpuQuery, UnitsInValuesCrlfAndAnyOrder) {
  StatusOr<std::vector<QueryGpu>> gpus =
      ParseGpuQuery("1, NVIDIA L40S, 46068 MiB, 0000:1c:00.0\r\n\r\n0, NVIDIA L40S, 46068 MiB, 0000:1b:00.0\r\n", "q.csv");
  ASSERT_TRUE(gpus.ok()) << gpus.status().message();
  EXPECT_EQ((*gpus)[0].index, 0);
  EXPECT_EQ((*gpus)[0].pci_bus_id, "00000000:1B:00.0");
  EXPECT_EQ((*gpus)[1].memory_bytes, 46068LL << 20);
}

TEST(ParseGpuQuery, ExtraColumnsFromTheLiveQuery) {
  std::vector<std::string> cols = {"index", "name", "memory.total", "pci.bus_id", "compute_cap",
                                   "pcie.link.gen.max", "pcie.link.width.max", "driver_version"};
  StatusOr<std::vector<QueryGpu>> gpus =
      ParseGpuQuery("0, NVIDIA H100 80GB HBM3, 81559, 00000000:1B:00.0, 9.0, 5, 16, 550.90.07\n", "q", cols);
  ASSERT_TRUE(gpus.ok()) << gpus.status().message();
  EXPECT_EQ((*gpus)[0].compute_capability, 90);
  EXPECT_EQ((*gpus)[0].pcie_gen, 5);
  EXPECT_EQ((*gpus)[0].pcie_width, 16);
  EXPECT_EQ((*gpus)[0].driver_version, "550.90.07");
}

// power.limit is the enforced cap (nvidia-smi -pl), in watts with or without the unit;
// [N/A] on cards that do not report one leaves it unknown.
TEST(ParseGpuQuery, PowerLimit) {
  const std::vector<std::string> cols = {"index", "name", "memory.total", "pci.bus_id", "power.limit"};
  StatusOr<std::vector<QueryGpu>> gpus = ParseGpuQuery(
      "0, NVIDIA H100 80GB HBM3, 81559, 00000000:1B:00.0, 500.00\n"
      "1, NVIDIA H100 80GB HBM3, 81559, 00000000:43:00.0, 700.00 W\n"
      "2, NVIDIA H100 80GB HBM3, 81559, 00000000:52:00.0, [N/A]\n", "q", cols);
  ASSERT_TRUE(gpus.ok()) << gpus.status().message();
  EXPECT_DOUBLE_EQ((*gpus)[0].power_limit_watts, 500);
  EXPECT_DOUBLE_EQ((*gpus)[1].power_limit_watts, 700);
  EXPECT_DOUBLE_EQ((*gpus)[2].power_limit_watts, 0);
  StatusOr<std::vector<QueryGpu>> bad = ParseGpuQuery("0, A, 1, 00000000:1B:00.0, lots\n", "q", cols);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "q:1: power.limit: expected a power limit in watts, such as 500.00, got \"lots\"");
}

class ParseGpuQueryRejects : public ::testing::TestWithParam<Bad> {};

TEST_P(ParseGpuQueryRejects, NamingTheLine) {
  StatusOr<std::vector<QueryGpu>> gpus = ParseGpuQuery(GetParam().text, "q.csv");
  ASSERT_FALSE(gpus.ok());
  EXPECT_EQ(gpus.status().code(), Code::kBadInput);
  EXPECT_EQ(gpus.status().message(), GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ParseGpuQueryRejects,
    ::testing::Values(
        Bad{"", "q.csv: no GPU lines; expected the output of `nvidia-smi --query-gpu=...`"},
        Bad{"No devices were found\n", "q.csv:1: nvidia-smi found no GPUs"},
        Bad{"0, NVIDIA H100 80GB HBM3, 81559\n",
            "q.csv:1: expected 4 comma-separated fields (index, name, memory.total, pci.bus_id), got 3: "
            "\"0, NVIDIA H100 80GB HBM3, 81559\""},
        Bad{"0, NVIDIA H100 80GB HBM3, 81559, 00000000:1B:00.0\n1, NVIDIA H100 80GB HBM3, [N/A], 00000000:43:00.0\n",
            "q.csv:2: memory.total: expected the memory in MiB, such as 81559, got \"[N/A]\""},
        Bad{"zero, NVIDIA H100 80GB HBM3, 81559, 00000000:1B:00.0\n",
            "q.csv:1: index: expected a GPU index, got \"zero\""},
        Bad{"0, NVIDIA H100 80GB HBM3, 81559, bus0\n",
            "q.csv:1: pci.bus_id: expected a PCI address such as 00000000:1B:00.0, got \"bus0\""},
        Bad{"0, A, 1, 00000000:1B:00.0\n0, A, 1, 00000000:43:00.0\n", "q.csv:2: GPU index 0 repeats line 1"},
        Bad{"index, name\n0, A\n",
            "q.csv: the columns (index, name) lack memory.total; query with "
            "--query-gpu=index,name,memory.total,pci.bus_id"}));

TEST(NormalizeBusId, CanonicalForm) {
  EXPECT_EQ(NormalizeBusId("00000000:1B:00.0"), "00000000:1B:00.0");
  EXPECT_EQ(NormalizeBusId("0000:df:00.0"), "00000000:DF:00.0");
  EXPECT_EQ(NormalizeBusId(" 00000001:0a:1f.7 "), "00000001:0A:1F.7");
  EXPECT_EQ(NormalizeBusId("1b:00.0"), "");
  EXPECT_EQ(NormalizeBusId("00000000:1B:00.0x"), "");
  EXPECT_EQ(NormalizeBusId(""), "");
}

}  // namespace
}  // namespace shardplan

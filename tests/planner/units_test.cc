#include <gtest/gtest.h>

#include "planner/units.h"

namespace shardplan {
namespace {

TEST(Units, Bytes) {
  EXPECT_EQ(*ParseBytes("80 GiB"), 80LL << 30);
  EXPECT_EQ(*ParseBytes("81559 MiB"), 81559LL << 20);
  EXPECT_EQ(*ParseBytes("80GB"), 80'000'000'000LL);
  EXPECT_EQ(*ParseBytes("1.5 TB"), 1'500'000'000'000LL);
  EXPECT_EQ(*ParseBytes("2 TiB"), 2LL << 40);
  EXPECT_EQ(*ParseBytes("512 B"), 512);
  EXPECT_EQ(*ParseBytes("  7 KiB "), 7 * 1024);
}

TEST(Units, Bandwidth) {
  EXPECT_DOUBLE_EQ(*ParseBandwidth("900 GB/s"), 900e9);
  EXPECT_DOUBLE_EQ(*ParseBandwidth("400 Gb/s"), 50e9);  // bits: NDR InfiniBand = 50 GB/s
  EXPECT_DOUBLE_EQ(*ParseBandwidth("3.35 TB/s"), 3.35e12);
  EXPECT_DOUBLE_EQ(*ParseBandwidth("1 GiB/s"), 1073741824.0);
  EXPECT_DOUBLE_EQ(*ParseBandwidth("3.2 Tbps"), 400e9);
  // The example in the error is of the quantity asked for.
  EXPECT_NE(ParseBandwidth("fast").status().message().find("expected a bandwidth like \"400 Gb/s\", got \"fast\""),
            std::string::npos);
}

TEST(Units, Duration) {
  EXPECT_DOUBLE_EQ(*ParseDuration("5 us"), 5e-6);
  EXPECT_DOUBLE_EQ(*ParseDuration("1.2 ms"), 1.2e-3);
  EXPECT_DOUBLE_EQ(*ParseDuration("300 ns"), 300e-9);
  EXPECT_DOUBLE_EQ(*ParseDuration("2 s"), 2.0);
}

TEST(Units, Power) {
  EXPECT_DOUBLE_EQ(*ParsePower("500 W"), 500);
  EXPECT_DOUBLE_EQ(*ParsePower("700W"), 700);
  EXPECT_DOUBLE_EQ(*ParsePower("1.2 kW"), 1200);
  EXPECT_FALSE(ParsePower("500").ok());   // watts or kilowatts?
  EXPECT_FALSE(ParsePower("500 w").ok());  // "w" is a week elsewhere; the SI symbol is W
  EXPECT_FALSE(ParsePower("-5 W").ok());
}

TEST(Units, Rejections) {
  for (const char* bad : {"80", "eighty GiB", "80 GiBs", "-5 GiB", "", "GiB", "1e30 TiB", "nan GiB"}) {
    auto r = ParseBytes(bad);
    EXPECT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), Code::kBadInput) << bad;
  }
  EXPECT_NE(ParseBytes("80").status().message().find("needs a unit"), std::string::npos);
  EXPECT_NE(ParseBandwidth("400 Gbit").status().message().find("unknown unit"), std::string::npos);
  EXPECT_FALSE(ParseDuration("5").ok());
}

TEST(Units, Format) {
  EXPECT_EQ(FormatBytes(80LL << 30), "80.00 GiB");
  EXPECT_EQ(FormatBytes(512LL << 20), "512.0 MiB");
  EXPECT_EQ(FormatBytes(100), "100 B");
  EXPECT_EQ(FormatBandwidth(450e9), "450 GB/s");
}


}  // namespace
}  // namespace shardplan

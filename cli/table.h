// A plain text table: columns padded to their widest cell, numbers right-aligned.
#pragma once

#include <string>
#include <vector>

namespace shardplan::cli {

class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void Row(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
  void Rule() { rows_.push_back({}); }  // a separator line
  std::string Render() const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

std::string Fixed(double v, int decimals);

}  // namespace shardplan::cli

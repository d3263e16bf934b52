#include "topology/gpu_prices.h"

#include "configs/builtin.h"
#include "planner/io/document.h"
#include "planner/units.h"
#include "topology/gpu_catalog.h"

namespace shardplan {
namespace {

StatusOr<std::string> CatalogKey(const Document& doc, const YAML::Node& node) {
  auto key = ResolveGpuName(node.Scalar(), nullptr);
  if (!key.ok()) return doc.ErrorAt(node, key.status().message());
  if (*key != node.Scalar()) return doc.ErrorAt(node, "write the catalog key '" + *key + "', not '" + node.Scalar() + "'");
  return key;
}

StatusOr<PriceTable> Read(const Document& doc) {
  PriceTable t;
  const YAML::Node& root = doc.root();
  SP_RETURN_IF_ERROR(doc.ExpectMap(root, "price table"));
  SP_RETURN_IF_ERROR(doc.CheckKeys(root, {"default_gpus", "prices"}));
  const YAML::Node defaults = root["default_gpus"];
  if (!defaults.IsSequence() || defaults.size() == 0)
    return doc.ErrorAt(defaults.IsDefined() ? defaults : root, "default_gpus: expected a list of catalog GPU names");
  for (const YAML::Node& g : defaults) {
    SP_ASSIGN_OR_RETURN(std::string key, CatalogKey(doc, g));
    t.default_gpus.push_back(key);
  }
  const YAML::Node prices = root["prices"];
  SP_RETURN_IF_ERROR(doc.ExpectMap(prices, "prices"));
  for (const auto& kv : prices) {
    SP_RETURN_IF_ERROR(doc.ExpectMap(kv.second, "prices." + kv.first.Scalar()));
    SP_RETURN_IF_ERROR(doc.CheckKeys(kv.second, {"price", "offering", "date", "source"}));
    GpuPrice p;
    SP_ASSIGN_OR_RETURN(p.gpu, CatalogKey(doc, kv.first));
    SP_ASSIGN_OR_RETURN(std::optional<std::string> price, doc.String(kv.second, "price"));
    SP_ASSIGN_OR_RETURN(std::optional<std::string> source, doc.String(kv.second, "source"));
    SP_ASSIGN_OR_RETURN(std::optional<std::string> date, doc.String(kv.second, "date"));
    if (!price || !source || !date) return doc.ErrorAt(kv.second, "a price needs price, date and source");
    auto per_hour = ParsePricePerHour(*price);
    if (!per_hour.ok()) return doc.ErrorAt(kv.second["price"], "price: " + per_hour.status().message());
    p.per_gpu_hour = *per_hour;
    SP_ASSIGN_OR_RETURN(std::optional<std::string> offering, doc.String(kv.second, "offering"));
    p.offering = offering.value_or("");
    p.date = *date;
    p.source = *source;
    t.prices.push_back(std::move(p));
  }
  return t;
}

}  // namespace

const GpuPrice* PriceTable::Find(const std::string& gpu) const {
  for (const GpuPrice& p : prices)
    if (p.gpu == gpu) return &p;
  return nullptr;
}

StatusOr<PriceTable> ParsePrices(const std::string& name, const std::string& text) {
  SP_ASSIGN_OR_RETURN(Document doc, Document::Parse(name, text));
  return Guarded(doc, [&] { return Read(doc); });
}

StatusOr<PriceTable> BuiltinPrices() {
  for (const BuiltinFile& b : BuiltinFiles())
    if (b.path == "prices.yaml") return ParsePrices("builtin:prices.yaml", std::string(b.content));
  return Status::Internal("the built-in price table (configs/prices.yaml) is missing from this build");
}

}  // namespace shardplan

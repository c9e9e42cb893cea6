// Reading a Trace back from JSON (see trace.hpp, trace_from_json).
#include <cctype>
#include <fstream>
#include <limits>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "exec/executor.hpp"
#include "exec/trace.hpp"

namespace collv {

namespace {

class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}

  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw UsageError(fmt::format("{}: {}: {}", source_, where, what));
  }

  const nlohmann::json& field(const nlohmann::json& j, const char* key,
                              const std::string& where) const {
    if (!j.is_object() || !j.contains(key)) fail(where, fmt::format("missing \"{}\"", key));
    return j.at(key);
  }
  std::string str(const nlohmann::json& j, const char* key, const std::string& where) const {
    const auto& v = field(j, key, where);
    if (!v.is_string()) fail(where + "." + key, "expected a string");
    return v.get<std::string>();
  }
  std::uint64_t uint(const nlohmann::json& j, const char* key, const std::string& where,
                     std::uint64_t max = std::numeric_limits<std::uint32_t>::max()) const {
    const auto& v = field(j, key, where);
    if (!v.is_number_unsigned() || v.get<std::uint64_t>() > max)
      fail(where + "." + key, fmt::format("expected a whole number from 0 to {}", max));
    return v.get<std::uint64_t>();
  }

  // One item as Domain::describe writes it: "0", "#0123...", or terms "x3", "x3.1", "2*x3",
  // "x0..x7" joined by '+', in operand order.
  Item item(const std::string& text, Domain& d, const std::string& where) const {
    if (text == "0") return 0;
    if (!text.empty() && text[0] == '#') {
      if (d.kind() != DomainKind::Fingerprint)
        fail(where, "a fingerprint item in a " + std::string(domain_name(d.kind())) + " trace");
      try {
        std::size_t used = 0;
        Item v = std::stoull(text.substr(1), &used, 16);
        if (used + 1 != text.size()) fail(where, "bad fingerprint '" + text + "'");
        return v;
      } catch (const std::logic_error&) {
        fail(where, "bad fingerprint '" + text + "'");
      }
    }
    if (d.kind() == DomainKind::Fingerprint)
      fail(where, "a fingerprint trace needs items written #hex");
    Item acc = 0;
    std::size_t i = 0;
    auto number = [&]() -> std::uint64_t {
      std::size_t start = i;
      while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
      if (i == start || i - start > 9) fail(where, "bad item '" + text + "'");
      return std::stoull(text.substr(start, i - start));
    };
    auto contribution = [&]() -> std::uint64_t {  // xA or xA.B, as a contribution id
      if (i >= text.size() || text[i] != 'x') fail(where, "bad item '" + text + "'");
      ++i;
      std::uint64_t node = number(), elem = 0;
      if (i < text.size() && text[i] == '.' && (i + 1 >= text.size() || text[i + 1] != '.')) {
        ++i;
        elem = number();
      }
      if (node >= d.p() || elem >= d.elems())
        fail(where, fmt::format("'{}' names an input that does not exist (p = {}, {} element(s))",
                                text, d.p(), d.elems()));
      return node * d.elems() + elem;
    };
    auto leaf = [&](std::uint64_t c) {
      return d.leaf(static_cast<std::uint32_t>(c / d.elems()),
                    static_cast<std::uint32_t>(c % d.elems()));
    };
    for (;;) {
      std::uint64_t times = 1;
      if (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
        times = number();
        if (i >= text.size() || text[i] != '*' || times == 0 || times > 1000)
          fail(where, "bad item '" + text + "'");
        ++i;
      }
      std::uint64_t first = contribution(), last = first;
      if (text.compare(i, 2, "..") == 0) {
        i += 2;
        last = contribution();
        if (last < first) fail(where, "bad run in '" + text + "'");
      }
      for (std::uint64_t k = 0; k < times; ++k)
        for (std::uint64_t c = first; c <= last; ++c) acc = d.combine(acc, leaf(c));
      if (i == text.size()) return acc;
      if (text[i] != '+') fail(where, "bad item '" + text + "'");
      ++i;
    }
  }

  Buffer buffer(const nlohmann::json& arr, Domain& d, const std::string& where) const {
    if (!arr.is_array()) fail(where, "expected an array of items");
    Buffer b;
    for (std::size_t k = 0; k < arr.size(); ++k) {
      if (!arr[k].is_string()) fail(fmt::format("{}[{}]", where, k), "expected an item as text");
      b.push_back(item(arr[k].get<std::string>(), d, fmt::format("{}[{}]", where, k)));
    }
    return b;
  }

 private:
  std::string source_;
};

}  // namespace

Trace trace_from_json(const nlohmann::json& j, const std::string& source) {
  Reader r(source);
  if (!j.is_object()) r.fail("top level", "expected a JSON object");
  Trace t;
  t.model_name =
      j.contains("model") && j["model"].is_string() ? j["model"].get<std::string>() : "imported";
  t.model_file = source;
  auto coll = collective_from_name(r.str(j, "collective", "top level"));
  if (!coll) r.fail("collective", "unknown collective");
  t.collective = *coll;
  try {
    t.topology = Topology::parse(r.str(j, "topology", "top level"));
  } catch (const SpecError& e) {
    r.fail("topology", e.what());
  }
  auto dom = domain_from_name(r.str(j, "domain", "top level"));
  if (!dom) r.fail("domain", "expected exact, ordered or fingerprint");
  auto p = static_cast<std::uint32_t>(t.topology.num_processors());
  std::uint32_t elems = 1;
  if (j.contains("elements")) {
    elems = static_cast<std::uint32_t>(r.uint(j, "elements", "top level", 65535));
  } else if (t.collective == Collective::ReduceScatter || t.collective == Collective::Scatter ||
             t.collective == Collective::Alltoall) {
    elems = p;
  }
  if (elems == 0) r.fail("elements", "must be at least 1");
  t.domain = make_domain(*dom, p, elems, 1);
  if (j.contains("source"))
    t.root = static_cast<std::uint32_t>(r.uint(j, "source", "top level", p ? p - 1 : 0));
  if (j.contains("q")) {
    if (!j["q"].is_number_integer()) r.fail("q", "expected an integer");
    t.shift = j["q"].get<std::int64_t>();
  }
  if (j.contains("operator"))
    t.op_class = r.str(j, "operator", "top level") == "commutative" ? OperatorClass::Commutative
                                                                    : OperatorClass::Associative;
  if (j.contains("nodup")) {
    if (!j["nodup"].is_boolean()) r.fail("nodup", "expected true or false");
    t.nodup_claimed = j["nodup"].get<bool>();
  }
  if (j.contains("claimed")) {
    const auto& c = j["claimed"];
    if (c.contains("steps") && c["steps"].is_number())
      t.claimed_steps = c["steps"].get<std::int64_t>();
    if (c.contains("cost") && c["cost"].is_object() && c["cost"].contains("ts") &&
        c["cost"].contains("tw") && c["cost"]["ts"].is_number() && c["cost"]["tw"].is_number()) {
      t.claimed_ts = c["cost"]["ts"].get<double>();
      t.claimed_tw = c["cost"]["tw"].get<double>();
    }
  }
  if (!j.contains("transfers"))
    r.fail("top level", "no \"transfers\" (the trace was written without them: too many to list?)");
  const auto& xs = j["transfers"];
  if (!xs.is_array()) r.fail("transfers", "expected an array");
  for (std::size_t k = 0; k < xs.size(); ++k) {
    std::string where = fmt::format("transfers[{}]", k);
    const auto& x = xs[k];
    Transfer tr{};
    tr.step = static_cast<std::uint32_t>(r.uint(x, "step", where));
    if (tr.step == 0) r.fail(where + ".step", "steps count from 1");
    tr.src = static_cast<NodeId>(r.uint(x, "src", where));
    tr.dst = static_cast<NodeId>(r.uint(x, "dst", where));
    if (tr.src >= p || tr.dst >= p)
      r.fail(where,
             fmt::format("a node id is not a processor of {} (0 .. {})", t.topology.spec(), p - 1));
    Buffer b = r.buffer(r.field(x, "items", where), *t.domain, where + ".items");
    if (b.size() > 0xFFFF) r.fail(where, "more than 65535 items");
    tr.payload_begin = static_cast<std::uint32_t>(t.payload.size());
    tr.payload_len = static_cast<std::uint16_t>(b.size());
    tr.line = x.contains("line") && x["line"].is_number_unsigned()
                  ? static_cast<std::uint16_t>(
                        std::min<std::uint64_t>(x["line"].get<std::uint64_t>(), 0xFFFF))
                  : 0;
    if (x.contains("received")) {
      if (!x["received"].is_boolean()) r.fail(where + ".received", "expected true or false");
      if (!x["received"].get<bool>())
        t.unreceived.push_back(static_cast<std::uint32_t>(t.transfers.size()));
    }
    t.payload.insert(t.payload.end(), b.begin(), b.end());
    t.transfers.push_back(tr);
  }
  t.final_output.assign(p, Buffer{});
  if (j.contains("final")) {
    const auto& fs = j["final"];
    if (!fs.is_array()) r.fail("final", "expected an array");
    for (std::size_t k = 0; k < fs.size(); ++k) {
      std::string where = fmt::format("final[{}]", k);
      auto v = r.uint(fs[k], "node", where);
      if (v >= p) r.fail(where + ".node", "not a processor");
      t.final_output[v] = r.buffer(r.field(fs[k], "output", where), *t.domain, where + ".output");
    }
  }
  t.initial_input = initial_inputs(t.collective, *t.domain, p, t.root);
  if (j.contains("failure") && j["failure"].is_object()) {
    static const char* names[] = {"none", "deadlock", "step-limit", "op-limit", "runtime-error"};
    std::string kind = j["failure"].value("kind", "none");
    for (int k = 0; k < 5; ++k)
      if (kind == names[k]) t.failure.kind = static_cast<RunFailure::Kind>(k);
    t.failure.message = j["failure"].value("message", "");
    t.failure.cycle_closed = j["failure"].value("cycle_closed", false);
    if (j["failure"].contains("cycle") && j["failure"]["cycle"].is_array())
      for (const auto& v : j["failure"]["cycle"])
        if (v.is_number_unsigned() && v.get<std::uint64_t>() < p)
          t.failure.waiting_cycle.push_back(static_cast<NodeId>(v.get<std::uint64_t>()));
    if (j["failure"].contains("waiting") && j["failure"]["waiting"].is_array())
      for (const auto& v : j["failure"]["waiting"])
        if (v.is_number_unsigned() && v.get<std::uint64_t>() < p)
          t.failure.waiting.push_back(static_cast<NodeId>(v.get<std::uint64_t>()));
  }
  t.compute_stats();
  return t;
}

Trace read_trace_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError("cannot read schedule file '" + path + "'");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw UsageError(path + ": not valid JSON: " + e.what());
  }
  return trace_from_json(j, path);
}

}  // namespace collv

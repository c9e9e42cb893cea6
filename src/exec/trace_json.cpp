// Reading a Trace back from JSON (see trace.hpp, trace_from_json).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "exec/executor.hpp"
#include "exec/trace.hpp"
#include "util/deadline.hpp"
#include "util/json_read.hpp"
#include "util/memory.hpp"
#include "util/text.hpp"

namespace collv {

namespace {

// The largest `steps` a file may record or claim (the file's steps themselves are below 2^31).
constexpr std::int64_t kMaxRecordedSteps = 9'000'000'000'000'000;

class Reader {
 public:
  explicit Reader(std::string source, std::uint64_t max_memory)
      : source_(std::move(source)), watch_("reading " + source_, max_memory) {}

  static constexpr std::uint64_t kMaxItemTerms = 1ULL << 26;
  static constexpr std::uint64_t kMaxFileTerms = 1ULL << 28;

  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw UsageError(fmt::format("{}: {}: {}", source_, where, what));
  }

  const nlohmann::json& field(const nlohmann::json& j, const char* key,
                              const std::string& where) const {
    if (!j.is_object() || !j.contains(key)) fail(where, fmt::format("missing \"{}\"", key));
    return j.at(key);
  }
  // Every key of object j must be one of `keys`: a misspelt key would switch a claim off
  // silently. `where` is the object's JSON path ("" for the top level).
  void known_keys(const nlohmann::json& j, std::initializer_list<const char*> keys,
                  const std::string& where) const {
    if (!j.is_object()) return;
    for (auto it = j.begin(); it != j.end(); ++it) {
      const std::string& k = it.key();  // not a structured binding: clang 14 cannot capture one
      if (std::any_of(keys.begin(), keys.end(), [&](const char* n) { return k == n; })) continue;
      std::string list;
      for (const char* n : keys) list += (list.empty() ? "" : ", ") + std::string(n);
      fail(where.empty() ? printable(k) : where + "." + printable(k),
           fmt::format("unknown key (known here: {})", list));
    }
  }
  std::string str(const nlohmann::json& j, const char* key, const std::string& where) const {
    const auto& v = field(j, key, where);
    if (!v.is_string()) fail(where + "." + key, "expected a string");
    return v.get<std::string>();
  }
  std::uint64_t uint(const nlohmann::json& j, const char* key, const std::string& where,
                     std::uint64_t max = std::numeric_limits<std::uint32_t>::max()) const {
    // The one rule for whole numbers (util/json_read.hpp): 3 or 3.0, not 3.5 or -1.
    auto v = json_whole_unsigned(field(j, key, where), max);
    if (!v) fail(where + "." + key, fmt::format("expected a whole number from 0 to {}", max));
    return *v;
  }

  // One item as Domain::describe writes it: "0", "#0123...", or terms "x3", "x3.1", "2*x3",
  // "x0..x7" joined by '+', in operand order. The terms are counted before any is built: an item
  // may hold at most kMaxItemTerms of them and a file kMaxFileTerms in all.
  Item item(const std::string& text, Domain& d, const std::string& where) {
    if (text == "0") return 0;
    if (!text.empty() && text[0] == '#') {
      if (d.kind() != DomainKind::Fingerprint)
        fail(where, "a fingerprint item in a " + std::string(domain_name(d.kind())) + " trace");
      std::size_t used = 0;
      Item v = 0;
      try {
        v = std::stoull(text.substr(1), &used, 16);
      } catch (const std::logic_error&) {
        used = 0;
      }
      if (used == 0 || used + 1 != text.size() || text.size() > 17)
        fail(where, "bad fingerprint '" + printable(text) + "'");
      return v;
    }
    if (d.kind() == DomainKind::Fingerprint)
      fail(where, "a fingerprint trace needs items written #hex");
    auto bad = [&]() { fail(where, "bad item '" + printable(text) + "'"); };
    std::size_t i = 0;
    auto number = [&]() -> std::uint64_t {
      std::size_t start = i;
      while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
      if (i == start || i - start > 9) bad();
      return std::stoull(text.substr(start, i - start));
    };
    auto contribution = [&]() -> std::uint64_t {  // xA or xA.B, as a contribution id
      if (i >= text.size() || text[i] != 'x') bad();
      ++i;
      std::uint64_t node = number(), elem = 0;
      if (i < text.size() && text[i] == '.' && (i + 1 >= text.size() || text[i + 1] != '.')) {
        ++i;
        elem = number();
      }
      if (node >= d.p() || elem >= d.elems())
        fail(where, fmt::format("'{}' names an input that does not exist (p = {}, {} element(s))",
                                printable(text), d.p(), d.elems()));
      return node * d.elems() + elem;
    };
    struct Run {
      std::uint64_t times, first, last;
    };
    std::vector<Run> runs;
    std::uint64_t count = 0;
    for (;;) {
      std::uint64_t times = 1;
      if (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
        times = number();
        if (i >= text.size() || text[i] != '*' || times == 0 || times > 1000) bad();
        ++i;
      }
      std::uint64_t first = contribution(), last = first;
      if (text.compare(i, 2, "..") == 0) {
        i += 2;
        last = contribution();
        if (last < first) fail(where, "bad run in '" + printable(text) + "'");
      }
      runs.push_back({times, first, last});
      count = sat_add(count, sat_mul(times, last - first + 1));
      if (i == text.size()) break;
      if (text[i] != '+') bad();
      ++i;
    }
    if (count > kMaxItemTerms)
      throw LimitError(
          fmt::format("{}: {}: the item '{}' has {} terms; an item may have at most {}", source_,
                      where, printable(text), count, kMaxItemTerms));
    terms_ += count;
    if (terms_ > kMaxFileTerms)
      throw LimitError(fmt::format("{}: {}: the items of this file have more than {} terms in all",
                                   source_, where, kMaxFileTerms));
    watch_.charge(count * sizeof(std::uint32_t) * 2);
    std::vector<std::uint32_t> terms;
    terms.reserve(count);
    for (const Run& r : runs)
      for (std::uint64_t k = 0; k < r.times; ++k)
        for (std::uint64_t c = r.first; c <= r.last; ++c)
          terms.push_back(static_cast<std::uint32_t>(c));
    return d.from_terms(std::move(terms));
  }

  Buffer buffer(const nlohmann::json& arr, Domain& d, const std::string& where) {
    if (!arr.is_array()) fail(where, "expected an array of items");
    Buffer b;
    if (arr.size() > 0xFFFFFFFEu) fail(where, "too many items");
    watch_.charge(arr.size() * sizeof(Item));
    for (std::size_t k = 0; k < arr.size(); ++k) {
      if (!arr[k].is_string()) fail(fmt::format("{}[{}]", where, k), "expected an item as text");
      b.push_back(item(arr[k].get<std::string>(), d, fmt::format("{}[{}]", where, k)));
    }
    return b;
  }

 private:
  std::string source_;
  MemoryWatch watch_;
  std::uint64_t terms_ = 0;
};

}  // namespace

namespace {

Trace trace_from_json_impl(const nlohmann::json& j, const std::string& source,
                           std::uint64_t max_memory) {
  Reader r(source, max_memory);
  if (!j.is_object()) r.fail("top level", "expected a JSON object");
  // Every key is known: a misspelt one would switch a claim off. `expect` and `note` are free
  // annotations (a test's expected verdict, a comment) that collv does not read.
  r.known_keys(j,
               {"model",
                "file",
                "collective",
                "topology",
                "p",
                "domain",
                "elements",
                "operator",
                "nodup",
                "layout",
                "count",
                "source",
                "q",
                "port",
                "steps",
                "cost",
                "claimed",
                "per_step",
                "transfer_count",
                "transfers",
                "final",
                "failure",
                "words_per_message",
                "expect",
                "note"},
               "");
  Trace t;
  t.from_file = true;
  t.model_name = j.contains("model") ? r.str(j, "model", "top level") : "imported";
  if (j.contains("file")) (void)r.str(j, "file", "top level");
  for (const char* key : {"expect", "note"})
    if (j.contains(key)) (void)r.str(j, key, "top level");
  t.model_file = source;
  auto coll = collective_from_name(r.str(j, "collective", "top level"));
  if (!coll) r.fail("collective", "unknown collective");
  t.collective = *coll;
  if (collective_is_v(t.collective))
    r.fail("collective",
           fmt::format("a {} has per-rank counts, which a schedule file does not carry; verify "
                       "it as a model (docs/language.md, Per-rank counts)",
                       collective_name(t.collective)));
  try {
    t.topology = Topology::parse(r.str(j, "topology", "top level"));
  } catch (const SpecError& e) {
    r.fail("topology", e.what());
  }
  auto dom = domain_from_name(r.str(j, "domain", "top level"));
  if (!dom) r.fail("domain", "expected exact, ordered or fingerprint");
  auto p = static_cast<std::uint32_t>(t.topology.num_processors());
  if (p == 0) r.fail("topology", "has no processors");
  bool per_destination = t.collective == Collective::ReduceScatter ||
                         t.collective == Collective::Scatter ||
                         t.collective == Collective::Alltoall;
  std::uint32_t elems = 1;
  if (per_destination) {
    // Inputs indexed by destination: p blocks of one element (or of `count` elements when the
    // file says so: elements = p * count).
    elems = p;
    if (j.contains("elements")) {
      std::uint64_t e = json_whole_unsigned(j["elements"], 65535).value_or(0);
      bool ok = p > 0 && e >= p && e % p == 0;
      if (!ok)
        r.fail("elements", fmt::format("{} needs p blocks of elements: a multiple of {} on {}, "
                                       "at most 65535",
                                       collective_name(t.collective), p, t.topology.spec()));
      elems = static_cast<std::uint32_t>(e);
    }
  } else if (j.contains("elements")) {
    elems = static_cast<std::uint32_t>(r.uint(j, "elements", "top level", 65535));
  }
  if (elems == 0) r.fail("elements", "must be at least 1");
  if (static_cast<std::uint64_t>(p) * elems > 0xFFFFFFFFull)
    throw LimitError(fmt::format(
        "{}: {} on {} has {} processors x {} elements = {} inputs; at most 2^32-1 are supported",
        source, collective_name(t.collective), t.topology.spec(), p, elems,
        static_cast<std::uint64_t>(p) * elems));
  // What judging the schedule needs (inputs, outputs, the expected outputs), before any of it is
  // allocated.
  require_memory(collective_bytes(t.collective, *dom, p, elems),
                 fmt::format("{}: judging {} on {} ({} processors, {} element(s) each)", source,
                             collective_name(t.collective), t.topology.spec(), p, elems),
                 max_memory);
  t.domain = make_domain(*dom, p, elems, 1);
  if (j.contains("source"))
    t.root = static_cast<std::uint32_t>(r.uint(j, "source", "top level", p - 1));
  if (j.contains("q")) {
    auto q = json_whole(j["q"], INT64_MIN, INT64_MAX);
    if (!q) r.fail("q", "expected an integer within 64 bits");
    t.shift = *q;
  }
  if (j.contains("operator")) {
    std::string op = r.str(j, "operator", "top level");
    if (op != "commutative" && op != "associative")
      r.fail("operator", "expected commutative or associative");
    t.op_class = op == "commutative" ? OperatorClass::Commutative : OperatorClass::Associative;
  }
  if (j.contains("port")) {
    std::string port = r.str(j, "port", "top level");
    if (port != "single" && port != "all") r.fail("port", "expected \"single\" or \"all\"");
    t.port = port == "all" ? PortModel::All : PortModel::Single;
  }
  if (j.contains("nodup")) {
    if (!j["nodup"].is_boolean()) r.fail("nodup", "expected true or false");
    t.nodup_claimed = j["nodup"].get<bool>();
  }
  if (j.contains("count")) {
    auto c = json_whole_unsigned(j["count"], 65535);
    if (!c || *c < 1) r.fail("count", "expected a whole number from 1 to 65535");
    t.count = static_cast<std::uint32_t>(*c);
  }
  if (j.contains("layout")) {
    std::string layout = r.str(j, "layout", "top level");
    if (layout != "positional" && layout != "any")
      r.fail("layout", "expected \"positional\" or \"any\"");
    t.layout_any = layout == "any";
  }
  if (j.contains("claimed")) {
    const auto& c = j["claimed"];
    if (!c.is_object()) r.fail("claimed", "expected an object");
    r.known_keys(c, {"steps", "cost", "steps_at_most", "cost_at_most", "port"}, "claimed");
    if (c.contains("port")) {
      if (c["port"] != "single") r.fail("claimed.port", "expected \"single\"");
      t.claims_single_port = true;
    }
    if (c.contains("steps")) {
      auto v = json_whole(c["steps"], 0, kMaxRecordedSteps);
      if (!v) r.fail("claimed.steps", "expected a whole number from 0 to 9e15");
      t.claimed_steps = *v;
    }
    if (c.contains("cost")) {
      const auto& k = c["cost"];
      r.known_keys(k, {"ts", "tw"}, "claimed.cost");
      auto coef = [&](const char* key) {
        if (!k.is_object() || !k.contains(key) || !k[key].is_number() ||
            !std::isfinite(k[key].get<double>()))
          r.fail(fmt::format("claimed.cost.{}", key), "expected a finite number");
        return k[key].get<double>();
      };
      t.claimed_ts = coef("ts");
      t.claimed_tw = coef("tw");
    }
    for (const char* key : {"steps_at_most", "cost_at_most"}) {
      if (!c.contains(key)) continue;
      if (!c[key].is_boolean()) r.fail(std::string("claimed.") + key, "expected true or false");
      (std::string(key) == "steps_at_most" ? t.steps_at_most : t.cost_at_most) = c[key].get<bool>();
    }
  }
  // The statistics a writer recorded (`steps`, `cost`): claims about the transfers below, judged
  // by the steps and cost checks.
  if (j.contains("steps")) {
    auto v = json_whole(j["steps"], 0, kMaxRecordedSteps);
    if (!v) r.fail("steps", "expected a whole number from 0 to 9e15");
    t.recorded_steps = *v;
  }
  if (j.contains("cost")) {
    const auto& k = j["cost"];
    if (!k.is_object()) r.fail("cost", "expected an object {\"ts\", \"tw\"}");
    r.known_keys(k, {"ts", "tw"}, "cost");
    for (const char* key : {"ts", "tw"})
      if (!k.contains(key) || !k[key].is_number() || !std::isfinite(k[key].get<double>()))
        r.fail(fmt::format("cost.{}", key), "expected a finite number");
    t.recorded_ts = k["ts"].get<double>();
    t.recorded_tw = k["tw"].get<double>();
  }
  if (j.contains("words_per_message"))
    t.words_per_message = r.uint(j, "words_per_message", "top level", 0xFFFFFFFFull);
  if (!j.contains("transfers"))
    r.fail("top level", "no \"transfers\" (the trace was written without them: too many to list?)");
  const auto& xs = j["transfers"];
  if (!xs.is_array()) r.fail("transfers", "expected an array");
  if (xs.size() >= 0xFFFFFFFFull) r.fail("transfers", "more than 2^32-2 transfers");
  // The statistics and the checks hold a few words per step up to the largest one: a step is
  // allowed if that fits in the memory limit (and below 2^31).
  std::uint32_t max_step = 0;
  for (std::size_t k = 0; k < xs.size(); ++k)
    if (xs[k].is_object() && xs[k].contains("step"))
      if (auto s = json_whole_unsigned(xs[k]["step"], UINT64_MAX))
        max_step = static_cast<std::uint32_t>(
            std::min<std::uint64_t>(std::max<std::uint64_t>(max_step, *s), 0xFFFFFFFFull));
  if (max_step >= (1u << 31))
    r.fail("transfers", fmt::format("a transfer at step {}; steps must be below 2^31", max_step));
  require_memory(
      sat_add(sat_mul(max_step, kBytesPerStep), xs.size() * sizeof(Transfer)),
      fmt::format("{}: a schedule of {} steps and {} transfers", source, max_step, xs.size()),
      max_memory);
  t.transfers.reserve(xs.size());
  DeadlineTick tick;
  for (std::size_t k = 0; k < xs.size(); ++k) {
    tick([&] { return fmt::format("reading {} (at transfers[{}])", source, k); });
    std::string where = fmt::format("transfers[{}]", k);
    const auto& x = xs[k];
    if (!x.is_object()) r.fail(where, "expected an object");
    r.known_keys(x, {"step", "src", "dst", "route", "items", "words", "line", "received"}, where);
    Transfer tr{};
    tr.step = static_cast<std::uint32_t>(r.uint(x, "step", where));
    if (tr.step == 0) r.fail(where + ".step", "steps count from 1");
    tr.src = static_cast<NodeId>(r.uint(x, "src", where));
    tr.dst = static_cast<NodeId>(r.uint(x, "dst", where));
    if (tr.src >= p || tr.dst >= p)
      r.fail(where,
             fmt::format("a node id is not a processor of {} (0 .. {})", t.topology.spec(), p - 1));
    if (tr.src == tr.dst)
      r.fail(where,
             fmt::format("node {} sends to itself (a transfer joins two different nodes)", tr.src));
    if (x.contains("route")) {
      // collv routes a transfer by the topology's own route; a file that says another is refused
      // rather than judged on a route it did not take.
      const auto& rt = x["route"];
      std::vector<NodeId> want = t.topology.route(tr.src, tr.dst);
      bool same = rt.is_array() && rt.size() == want.size();
      for (std::size_t h = 0; same && h < want.size(); ++h)
        same = json_whole_unsigned(rt[h], UINT64_MAX) == std::optional<std::uint64_t>(want[h]);
      if (!same)
        r.fail(where + ".route",
               fmt::format("{} is not the route of {} -> {} on {}: {} (collv judges transfers on "
                           "the topology's own routes)",
                           json_excerpt(rt), tr.src, tr.dst, t.topology.spec(),
                           json_excerpt(nlohmann::json(want))));
    }
    Buffer b = r.buffer(r.field(x, "items", where), *t.domain, where + ".items");
    if (b.size() > 0xFFFF) r.fail(where, "more than 65535 items (the message size limit)");
    if (t.payload.size() + b.size() > 0xFFFFFFFFull)
      throw LimitError(source + ": the transfers carry more than 2^32-1 items in all");
    tr.payload_begin = static_cast<std::uint32_t>(t.payload.size());
    tr.payload_len = static_cast<std::uint16_t>(b.size());
    tr.line = x.contains("line") ? static_cast<std::uint16_t>(std::min<std::uint64_t>(
                                       r.uint(x, "line", where, UINT64_MAX), 0xFFFF))
                                 : 0;
    if (x.contains("words")) {
      // A claim about the message's size, judged by the cost check against the items.
      if (t.claimed_words.empty()) t.claimed_words.assign(xs.size(), kNoWordsClaim);
      t.claimed_words[k] = static_cast<std::uint32_t>(r.uint(x, "words", where, kNoWordsClaim - 1));
    }
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
    std::vector<std::size_t> first_final(p, SIZE_MAX);  // the entry that first names each node
    for (std::size_t k = 0; k < fs.size(); ++k) {
      std::string where = fmt::format("final[{}]", k);
      if (!fs[k].is_object()) r.fail(where, "expected an object");
      r.known_keys(fs[k], {"node", "label", "output"}, where);
      auto v = r.uint(fs[k], "node", where);
      if (v >= p) r.fail(where + ".node", "not a processor");
      if (fs[k].contains("label")) {
        std::string label = r.str(fs[k], "label", where);
        if (label != t.topology.label(static_cast<NodeId>(v)))
          r.fail(where + ".label",
                 fmt::format("node {} of {} is '{}', not '{}'", v, t.topology.spec(),
                             t.topology.label(static_cast<NodeId>(v)), printable(label)));
      }
      Buffer out = r.buffer(r.field(fs[k], "output", where), *t.domain, where + ".output");
      if (first_final[v] != SIZE_MAX) {
        // Two claims about one node's end: judged (the postcondition check fails), never one
        // silently taken; the first stays the node's output.
        t.final_twice.push_back(fmt::format(
            "{}: node {} is listed again in \"final\" (first at final[{}]){}; a node ends with "
            "one output",
            where, v, first_final[v],
            out == t.final_output[v] ? " with the same output" : " with another output"));
        continue;
      }
      first_final[v] = k;
      t.final_output[v] = std::move(out);
    }
  }
  t.initial_input = initial_inputs(t.collective, *t.domain, p, t.root);
  if (j.contains("failure")) {
    const auto& f = j["failure"];
    if (!f.is_object()) r.fail("failure", "expected an object");
    r.known_keys(f, {"kind", "message", "waiting", "cycle", "cycle_closed", "ports"}, "failure");
    static const char* names[] = {"none", "deadlock", "step-limit", "op-limit", "runtime-error"};
    if (f.contains("kind")) {
      std::string kind = r.str(f, "kind", "failure");
      bool known = false;
      for (int k = 0; k < 5; ++k)
        if (kind == names[k]) {
          t.failure.kind = static_cast<RunFailure::Kind>(k);
          known = true;
        }
      if (!known)
        r.fail("failure.kind",
               "expected none, deadlock, step-limit, op-limit or runtime-error, not '" +
                   printable(kind) + "'");
    }
    if (f.contains("message")) t.failure.message = r.str(f, "message", "failure");
    if (f.contains("cycle_closed")) {
      if (!f["cycle_closed"].is_boolean()) r.fail("failure.cycle_closed", "expected true or false");
      t.failure.cycle_closed = f["cycle_closed"].get<bool>();
    }
    if (f.contains("ports")) {
      if (!f["ports"].is_boolean()) r.fail("failure.ports", "expected true or false");
      t.failure.ports = f["ports"].get<bool>() && t.failure.kind == RunFailure::Kind::Deadlock;
    }
    auto nodes = [&](const char* key, std::vector<NodeId>& out) {
      if (!f.contains(key)) return;
      std::string where = std::string("failure.") + key;
      if (!f[key].is_array()) r.fail(where, "expected an array of node ids");
      for (std::size_t k = 0; k < f[key].size(); ++k) {
        auto v = json_whole_unsigned(f[key][k], p - 1);
        if (!v)
          r.fail(fmt::format("{}[{}]", where, k),
                 fmt::format("expected a processor of {} (0 .. {})", t.topology.spec(), p - 1));
        out.push_back(static_cast<NodeId>(*v));
      }
    };
    nodes("cycle", t.failure.waiting_cycle);
    nodes("waiting", t.failure.waiting);
  }
  t.compute_stats();
  // `p` restates the topology's processor count (checked last: the limits above come first).
  if (j.contains("p") && r.uint(j, "p", "top level", UINT64_MAX) != p)
    r.fail("p", fmt::format("the file says {} processors; {} has {}", json_excerpt(j["p"]),
                            t.topology.spec(), p));
  // The statistics a writer listed per step and in all are claims about the transfers: each
  // disagreement is kept for the steps check (Trace::recorded_disagree).
  if (j.contains("transfer_count") &&
      r.uint(j, "transfer_count", "top level", UINT64_MAX) != t.transfers.size())
    t.recorded_disagree.push_back(
        fmt::format("transfer_count: the file says {} but lists {} transfers",
                    json_excerpt(j["transfer_count"]), t.transfers.size()));
  if (j.contains("per_step")) {
    const auto& ps = j["per_step"];
    if (!ps.is_array()) r.fail("per_step", "expected an array");
    if (ps.size() != t.per_step.size())
      t.recorded_disagree.push_back(fmt::format(
          "per_step: {} entries, but the transfers take {} steps", ps.size(), t.per_step.size()));
    for (std::size_t s = 0; s < ps.size(); ++s) {
      std::string where = fmt::format("per_step[{}]", s);
      r.known_keys(ps[s], {"step", "transfers", "max_link_items", "max_link_transfers"}, where);
      if (s >= t.per_step.size()) {
        (void)r.uint(ps[s], "step", where, UINT64_MAX);
        continue;
      }
      const StepStats& st = t.per_step[s];
      std::pair<const char*, std::uint64_t> want[] = {
          {"step", s + 1},
          {"transfers", st.transfers},
          {"max_link_items", st.max_link_items},
          {"max_link_transfers", st.max_link_transfers}};
      for (const auto& [key, value] : want)
        if (ps[s].contains(key) && r.uint(ps[s], key, where, UINT64_MAX) != value &&
            t.recorded_disagree.size() < 8)
          t.recorded_disagree.push_back(
              fmt::format("{}.{}: the file says {} but its transfers "
                          "give {}",
                          where, key, json_excerpt(ps[s][key]), value));
    }
  }
  return t;
}

}  // namespace

Trace trace_from_json(const nlohmann::json& j, const std::string& source,
                      std::uint64_t max_memory) {
  try {
    return trace_from_json_impl(j, source, max_memory);
  } catch (const nlohmann::json::exception& e) {
    // Every access above checks its type first; this is the net under them, and still names the
    // file.
    throw UsageError(
        fmt::format("{}: unexpected JSON value: {}", source, json_error_text(e.what())));
  } catch (const std::length_error&) {
    throw LimitError(source + ": a buffer of the schedule is too large");
  }
}

Trace read_trace_file(const std::string& path, std::uint64_t max_memory) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError("cannot read schedule file '" + path + "'");
  in.seekg(0, std::ios::end);
  auto size = static_cast<std::uint64_t>(std::max<std::streamoff>(in.tellg(), 0));
  in.seekg(0);
  // nlohmann's DOM takes up to ~20 times the text (and the text itself); checked before parsing.
  require_memory(sat_mul(size, 21), fmt::format("reading {} ({} bytes)", path, size), max_memory);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return trace_from_json(parse_json_input(text, path), path, max_memory);
}

}  // namespace collv

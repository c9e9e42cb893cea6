// SCCL/msccl algorithm JSON reader (docs/formats.md, "SCCL/msccl JSON"). The file is read as
// msccl-tools reads it (msccl/serialization.py, algorithm.py, collectives.py): a send
// [addr, src, dst] moves every chunk the sender holds at buffer address `addr`; the collective is
// the one its name defines (Allgather(n=8), Reduce(n=4,root=0), ...), chunked up by
// `instance.chunks`; and the schedule is judged against that definition, not the file's own sets.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "import/import.hpp"
#include "util/deadline.hpp"
#include "util/error.hpp"
#include "util/json_read.hpp"
#include "util/memory.hpp"
#include "util/text.hpp"

namespace collv {

namespace {

using import_detail::add_violation;
using import_detail::make_check;
using nlohmann::json;

constexpr std::int64_t kMaxNodes = 4096;
constexpr std::int64_t kMaxAddr = std::int64_t{1} << 40;
constexpr std::uint64_t kMaxCells = std::uint64_t{1} << 28;  // ranks x chunks after chunk_up

[[noreturn]] void bad(const std::string& src, const std::string& key, const std::string& msg) {
  throw UsageError(src + ": " + key + ": " + msg);
}

const json& need(const json& j, const char* key, const std::string& src, const std::string& path) {
  if (!j.is_object() || !j.contains(key)) bad(src, path + key, "missing");
  return j.at(key);
}

std::int64_t need_int(const json& j, const std::string& src, const std::string& path,
                      std::int64_t lo, std::int64_t hi) {
  // The one rule for whole numbers of JSON inputs (util/json_read.hpp): 3 or 3.0.
  if (auto v = json_whole(j, lo, hi)) return *v;
  if (!json_whole(j, INT64_MIN, INT64_MAX)) bad(src, path, "expected an integer");
  bad(src, path, fmt::format("{} is outside {}..{}", json_excerpt(j, 40), lo, hi));
}

// msccl-tools' loader turns an object into an Algorithm, Step, ... by its msccl_type and reads
// only the keys it knows: another key is ignored (collv notes it), a missing one fails to load
// (KeyError; an error here), an object with another type is not what the reader expects (error).
void object_of(const json& j, const char* type, std::initializer_list<const char*> keys,
               const std::string& src, const std::string& path, std::vector<std::string>& ignored) {
  std::string where = path.empty() ? "the top level" : path.substr(0, path.size() - 1);
  if (!j.is_object()) bad(src, where, std::string("expected an object of msccl_type ") + type);
  const json* tag = j.contains("msccl_type")  ? &j["msccl_type"]
                    : j.contains("sccl_type") ? &j["sccl_type"]
                                              : nullptr;
  if (!tag) bad(src, path + "msccl_type", std::string("missing (expected \"") + type + "\")");
  if (!tag->is_string() || tag->get<std::string>() != type)
    bad(src, path + "msccl_type",
        fmt::format("is {}, expected \"{}\"", printable(tag->dump(), 40), type));
  for (const char* k : keys) need(j, k, src, path);
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() == "msccl_type" || it.key() == "sccl_type") continue;
    if (std::find_if(keys.begin(), keys.end(), [&](const char* k) { return it.key() == k; }) ==
        keys.end())
      ignored.push_back(path + printable(it.key(), 40));
  }
}

// One chunk of a collective: the ranks that hold it at the start and must hold it at the end
// (sorted, no repeats) and its buffer address.
struct SChunk {
  std::vector<int> pre, post;
  std::int64_t addr = 0;
  bool operator==(const SChunk&) const = default;
};

// A collective msccl-tools defines (msccl/collectives.py), recognized by the name it gives it.
struct Named {
  std::string kind;  // "Allgather", "Reduce", ...
  int n = 0;
  int root = 0;
  std::vector<int> roots;  // Multiroot*
  std::string runtime_name;
  Collective coll = Collective::Allgather;
  bool rooted = false;
};

std::optional<int> small_int(const std::string& s) {
  if (s.empty() || s.size() > 6 || !std::all_of(s.begin(), s.end(), ::isdigit)) return {};
  return std::stoi(s);
}

// The collectives msccl-tools defines (msccl/collectives.py), by the name it gives them, with
// the runtime_name it writes (ncclize copies it into the XML's `coll`, which the MSCCL runtime
// matches exactly: allgather, allreduce, alltoall, reduce_scatter; the others run as custom).
struct Kind {
  const char* name;
  Collective coll;
  const char* runtime;
};
constexpr Kind kKinds[] = {
    {"Broadcast", Collective::Broadcast, "custom"},
    {"Reduce", Collective::Reduce, "custom"},
    {"Scatter", Collective::Scatter, "custom"},
    {"Gather", Collective::Gather, "custom"},
    {"Allgather", Collective::Allgather, "allgather"},
    {"Allreduce", Collective::Allreduce, "allreduce"},
    {"Alltoall", Collective::Alltoall, "alltoall"},
    {"ReduceScatter", Collective::ReduceScatter, "reduce_scatter"},
    {"Scan", Collective::Scan, "custom"},
    {"MultirootBroadcast", Collective::Broadcast, "custom"},
    {"MultirootScatter", Collective::Scatter, "custom"},
    {"MultirootGather", Collective::Gather, "custom"},
};

// A name compared as a reader would: lower case, without '_', '-' and blanks.
std::string folded(const std::string& s) {
  std::string o;
  for (char c : s)
    if (c != '_' && c != '-' && c != ' ' && c != '\t')
      o += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return o;
}

// How the file's collective.name reads. msccl-tools' loader keeps the name as a plain string
// and judges a file by its own pre/post sets; collv reads a name that names one of msccl-tools'
// collectives as that collective, spelled as msccl-tools spells it ("Allgather(n=8)",
// "Reduce(n=4,root=0)", "MultirootBroadcast(n=4,roots=(0,2))") or otherwise (other case, '_',
// blanks: "allgather(n=8)", "all_gather(n = 8)"; without arguments, n is the file's node
// count), and judges the file against that definition. A name that reads as a collective
// whose arguments it does not give or gives otherwise is refused (`refusal`); any other name
// is a custom collective (neither set).
struct NameRead {
  std::optional<Named> named;
  std::string refusal;
};

NameRead read_name(const std::string& name, int p) {
  NameRead out;
  auto open = name.find('(');
  bool has_args = open != std::string::npos;
  std::string kind = folded(has_args ? name.substr(0, open) : name);
  const Kind* k = nullptr;
  for (const Kind& c : kKinds)
    if (folded(c.name) == kind) k = &c;
  if (!k) return out;
  Named c;
  c.kind = k->name;
  c.coll = k->coll;
  c.runtime_name = k->runtime;
  bool multi = c.kind.rfind("Multiroot", 0) == 0;
  c.rooted = !multi && collective_is_rooted(c.coll);
  const std::string form = multi      ? c.kind + "(n=N,roots=(R1,R2,...))"
                           : c.rooted ? c.kind + "(n=N,root=R)"
                                      : c.kind + "(n=N)";
  auto refuse = [&]() {
    out.refusal = fmt::format(
        "\"{}\" names msccl-tools' {} but not its arguments: msccl-tools writes {} (a name "
        "that reads as a collective msccl-tools defines is judged as that collective)",
        printable(name, 60), c.kind, form);
    return out;
  };
  if (!has_args) {
    if (c.rooted || multi) return refuse();
    c.n = p;
    out.named = c;
    return out;
  }
  if (name.back() != ')') return refuse();
  std::string args;
  for (char ch : name.substr(open + 1, name.size() - open - 2))
    if (ch != ' ' && ch != '\t')
      args += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (args.rfind("n=", 0) != 0) return refuse();
  std::size_t comma = args.find(',');
  auto n = small_int(args.substr(2, comma == std::string::npos ? std::string::npos : comma - 2));
  if (!n) return refuse();
  c.n = *n;
  std::string rest = comma == std::string::npos ? "" : args.substr(comma + 1);
  if (c.rooted) {
    if (rest.rfind("root=", 0) != 0) return refuse();
    auto r = small_int(rest.substr(5));
    if (!r) return refuse();
    c.root = *r;
  } else if (multi) {
    if (rest.rfind("roots=(", 0) != 0 || rest.back() != ')') return refuse();
    std::string list = rest.substr(7, rest.size() - 8);
    std::size_t b = 0;
    while (b <= list.size()) {
      std::size_t e = list.find(',', b);
      if (e == std::string::npos) e = list.size();
      auto r = small_int(list.substr(b, e - b));
      if (!r) return refuse();
      c.roots.push_back(*r);
      b = e + 1;
    }
    if (c.roots.empty()) return refuse();
  } else if (!rest.empty()) {
    return refuse();
  }
  out.named = c;
  return out;
}

// The name msccl-tools gives the collective.
std::string canonical_name(const Named& c) {
  if (c.rooted) return fmt::format("{}(n={},root={})", c.kind, c.n, c.root);
  if (!c.roots.empty()) {
    std::string list;
    for (int r : c.roots) {
      if (!list.empty()) list += ',';
      list += std::to_string(r);
    }
    return fmt::format("{}(n={},roots=({}))", c.kind, c.n, list);
  }
  return fmt::format("{}(n={})", c.kind, c.n);
}

// How many chunks the named collective has (before chunk_up), without building it.
std::uint64_t named_chunk_count(const Named& c) {
  std::uint64_t n = static_cast<std::uint64_t>(c.n), r = c.roots.size();
  if (c.kind == "Broadcast") return 1;
  if (c.kind == "Alltoall" || c.kind == "ReduceScatter") return n * n;
  if (c.kind == "MultirootBroadcast") return r;
  if (c.kind == "MultirootScatter" || c.kind == "MultirootGather") return n * r;
  return n;
}

// The chunks of the named collective as msccl-tools' collectives.py defines them.
std::vector<SChunk> build_named(const Named& c) {
  const int n = c.n;
  const int count = static_cast<int>(named_chunk_count(c));
  const int nr = static_cast<int>(c.roots.size());
  auto ranks_where = [&](auto pred) {
    std::vector<int> v;
    for (int r = 0; r < n; ++r)
      if (pred(r)) v.push_back(r);
    return v;
  };
  std::vector<SChunk> out(count);
  for (int k = 0; k < count; ++k) {
    SChunk& ch = out[k];
    auto scattered = [&](int r) { return r == k % n; };
    auto scattered_by = [&](int per) { return [&, per](int r) { return r == (k / per) % n; }; };
    auto all = [](int) { return true; };
    auto root = [&](int r) { return r == c.root; };
    auto roots = [&](int r) { return nr > 0 && r == c.roots[k % nr]; };
    auto transpose = [&](int r) { return r == k / n; };
    ch.addr = k;
    if (c.kind == "Broadcast") {
      ch.pre = ranks_where(root), ch.post = ranks_where(all);
    } else if (c.kind == "Scatter") {
      ch.pre = ranks_where(root), ch.post = ranks_where(scattered);
    } else if (c.kind == "Gather") {
      ch.pre = ranks_where(scattered), ch.post = ranks_where(root);
    } else if (c.kind == "Allgather") {
      ch.pre = ranks_where(scattered), ch.post = ranks_where(all);
    } else if (c.kind == "Alltoall") {
      ch.pre = ranks_where(scattered), ch.post = ranks_where(transpose);
    } else if (c.kind == "Reduce") {
      ch.pre = ranks_where(scattered), ch.post = ranks_where(root), ch.addr = k / n;
    } else if (c.kind == "Allreduce") {
      ch.pre = ranks_where(scattered), ch.post = ranks_where(all), ch.addr = k / n;
    } else if (c.kind == "ReduceScatter") {
      ch.pre = ranks_where(scattered), ch.post = ranks_where(transpose), ch.addr = k / n;
    } else if (c.kind == "Scan") {
      ch.pre = ranks_where(scattered);
      ch.post = ranks_where([&](int r) { return r >= k % n; });
      ch.addr = k / n;
    } else if (c.kind == "MultirootBroadcast") {
      ch.pre = ranks_where(roots), ch.post = ranks_where(all);
    } else if (c.kind == "MultirootScatter") {
      ch.pre = ranks_where(roots), ch.post = ranks_where(scattered_by(nr));
    } else if (c.kind == "MultirootGather") {
      ch.pre = ranks_where(scattered_by(nr)), ch.post = ranks_where(roots);
    }
  }
  return out;
}

std::string rank_set(const std::vector<int>& v) {
  std::string s = "{";
  for (std::size_t k = 0; k < v.size(); ++k) {
    if (k == 8 && v.size() > 9) {
      s += fmt::format(", ... ({} ranks)", v.size());
      break;
    }
    s += fmt::format("{}{}", k ? ", " : "", v[k]);
  }
  return s + "}";
}

std::string addr_set(const std::set<std::int64_t>& v) {
  std::string s = "{";
  std::size_t k = 0;
  for (auto a : v) {
    if (k == 12) {
      s += fmt::format(", ... ({} addresses)", v.size());
      break;
    }
    s += fmt::format("{}{}", k++ ? ", " : "", a);
  }
  return s + "}";
}

ImportedSchedule read_msccl_json(const std::string& text, const std::string& src);

}  // namespace

ImportedSchedule import_msccl_json(const std::string& text, const std::string& src) {
  // Every exception of the JSON library (a number out of range, a value of another type than
  // the reader checked for) becomes an input error naming the file, never a crash.
  try {
    return read_msccl_json(text, src);
  } catch (const json::exception& e) {
    throw UsageError(src + ": unexpected JSON: " + json_error_text(e.what()));
  }
}

namespace {

ImportedSchedule read_msccl_json(const std::string& text, const std::string& src) {
  json j = parse_json_input(text, src);
  if (!j.is_object()) throw UsageError(src + ": expected a JSON object");
  std::vector<std::string> ignored;  // keys msccl-tools' loader ignores

  // The collective as the file writes it.
  const json& coll = need(j, "collective", src, "");
  const int p = static_cast<int>(
      need_int(need(coll, "nodes", src, "collective."), src, "collective.nodes", 1, kMaxNodes));
  const json& jchunks = need(coll, "chunks", src, "collective.");
  if (!jchunks.is_array() || jchunks.empty())
    bad(src, "collective.chunks", "expected a non-empty list");
  if (jchunks.size() * static_cast<std::uint64_t>(p) > kMaxCells)
    bad(src, "collective.chunks",
        fmt::format("{} chunks on {} ranks is more than collv judges ({} rank-chunk pairs)",
                    jchunks.size(), p, kMaxCells));
  std::vector<SChunk> file_chunks(jchunks.size());
  for (std::size_t c = 0; c < jchunks.size(); ++c) {
    std::string path = fmt::format("collective.chunks[{}].", c);
    for (const char* key : {"pre", "post"}) {
      const json& l = need(jchunks[c], key, src, path);
      if (!l.is_array()) bad(src, path + key, "expected a list of ranks");
      auto& v = key[1] == 'r' ? file_chunks[c].pre : file_chunks[c].post;
      for (std::size_t k = 0; k < l.size(); ++k)
        v.push_back(
            static_cast<int>(need_int(l[k], src, fmt::format("{}{}[{}]", path, key, k), 0, p - 1)));
      std::sort(v.begin(), v.end());  // a set, as msccl-tools reads it
      v.erase(std::unique(v.begin(), v.end()), v.end());
    }
    object_of(jchunks[c], "chunk", {"pre", "post", "addr"}, src, path, ignored);
    file_chunks[c].addr = need_int(jchunks[c]["addr"], src, path + "addr", 0, kMaxAddr);
    if (file_chunks[c].pre.empty()) bad(src, path + "pre", "a chunk must start somewhere");
  }
  object_of(j, "algorithm",
            {"name", "instance", "input_map", "output_map", "steps", "collective", "topology"}, src,
            "", ignored);
  object_of(coll, "collective", {"name", "nodes", "chunks", "triggers", "runtime_name"}, src,
            "collective.", ignored);
  if (!coll["name"].is_string()) bad(src, "collective.name", "expected a string");
  if (!coll["runtime_name"].is_string()) bad(src, "collective.runtime_name", "expected a string");
  if (!coll["triggers"].is_object()) bad(src, "collective.triggers", "expected an object");
  const std::string coll_name = coll["name"].get<std::string>();
  const std::string runtime = coll["runtime_name"].get<std::string>();
  std::string name = j["name"].is_string() ? j["name"].get<std::string>() : "sccl";

  const json& inst = j["instance"];
  object_of(inst, "instance",
            {"steps", "extra_rounds", "chunks", "pipeline", "extra_memory", "allow_exchange"}, src,
            "instance.", ignored);
  const std::int64_t k_up = need_int(inst["chunks"], src, "instance.chunks", 1, 4096);
  const std::int64_t inst_steps = need_int(inst["steps"], src, "instance.steps", 0, 1 << 20);
  const std::int64_t extra_rounds =
      need_int(inst["extra_rounds"], src, "instance.extra_rounds", 0, 1 << 20);
  std::optional<std::int64_t> pipeline;
  if (!inst["pipeline"].is_null())
    pipeline = need_int(inst["pipeline"], src, "instance.pipeline", 1, 1 << 20);

  ImportedSchedule out;
  out.format = ScheduleFormat::MscclJson;
  CheckResult attributes = make_check("attributes");
  CheckResult postc = make_check("postcondition");
  CheckResult steps_check = make_check("steps");
  CheckResult link_check = make_check("links");
  CheckResult final_buffers = make_check("final-buffers");  // used only for custom collectives
  auto violation = [](CheckResult& r, std::string msg, std::vector<NodeId> nodes = {},
                      std::optional<std::uint32_t> step = std::nullopt) {
    Counterexample ce;
    ce.message = std::move(msg);
    ce.nodes = std::move(nodes);
    ce.step = step;
    add_violation(r, std::move(ce));
  };

  // The collective that sets the bar: the one the name defines, when msccl-tools defines it.
  NameRead read = read_name(coll_name, p);
  if (!read.refusal.empty()) bad(src, "collective.name", read.refusal);
  std::optional<Named> named = read.named;
  std::string how_read;  // how the name was read, when not as msccl-tools spells it
  if (named && canonical_name(*named) != coll_name)
    how_read = fmt::format(" (the file's name \"{}\" read as {})", printable(coll_name, 60),
                           canonical_name(*named));
  if (!named && runtime != "custom") {
    // The MSCCL runtime runs the file as the collective its runtime_name names (ncclize writes
    // it as the XML's coll): that collective's definition is the bar, not the file's sets.
    for (const Kind& k : kKinds)
      if (runtime == k.runtime) named = read_name(k.name, p).named;
    if (!named && (runtime == "reduce" || runtime == "broadcast"))
      bad(src, "collective.runtime_name",
          fmt::format("\"{}\" makes the MSCCL runtime run the file as a {}, whose root the name "
                      "must give ({}(n={},root=R))",
                      runtime, runtime, runtime == "reduce" ? "Reduce" : "Broadcast", p));
    if (named)
      how_read = fmt::format(
          " (the name \"{}\" is not one msccl-tools gives, but runtime_name \"{}\" makes the "
          "MSCCL runtime run the file as {})",
          printable(coll_name, 60), runtime, canonical_name(*named));
  }
  const std::string bar = named ? canonical_name(*named) : printable(coll_name, 60);
  std::vector<SChunk> defined = file_chunks;
  std::string judged_against;
  if (named) {
    if (named->n != p) {
      violation(postc, fmt::format("the collective is named {} but has {} nodes",
                                   printable(coll_name, 60), p));
      named.reset();
    } else if (named->rooted && named->root >= p) {
      violation(postc, fmt::format("{} names root {}, which is not a rank 0..{}", bar, named->root,
                                   p - 1));
      named.reset();
    } else if (std::any_of(named->roots.begin(), named->roots.end(),
                           [&](int r) { return r >= p; })) {
      violation(postc, fmt::format("{} names a root that is not a rank 0..{}", bar, p - 1));
      named.reset();
    }
  }
  if (named) {
    std::uint64_t count = named_chunk_count(*named);
    if (count != file_chunks.size()) {
      violation(postc, fmt::format("{} has {} chunks but collective.chunks lists {}", bar, count,
                                   file_chunks.size()));
    }
    if (count * static_cast<std::uint64_t>(p) > kMaxCells)
      bad(src, "collective.name", fmt::format("{} is larger than collv judges", bar));
    defined = build_named(*named);
    for (std::size_t c = 0; c < defined.size() && c < file_chunks.size(); ++c) {
      const SChunk& f = file_chunks[c];
      const SChunk& d = defined[c];
      if (f == d) continue;
      std::string what =
          f.pre != d.pre
              ? fmt::format("pre {} where {} defines {}", rank_set(f.pre), bar, rank_set(d.pre))
          : f.post != d.post
              ? fmt::format("post {} where {} defines {}", rank_set(f.post), bar, rank_set(d.post))
              : fmt::format("addr {} where {} defines {}", f.addr, bar, d.addr);
      violation(postc, fmt::format("collective.chunks[{}] has {}: the file's collective is not "
                                   "the one it names (judged against {})",
                                   c, what, bar));
    }
    if (runtime != named->runtime_name)
      violation(attributes, fmt::format("collective.runtime_name is \"{}\" but msccl-tools names "
                                        "{} \"{}\" (ncclize writes it as the XML's coll)",
                                        printable(runtime, 40), bar, named->runtime_name));
    judged_against = bar + " as msccl-tools defines it" + how_read;
  } else {
    judged_against = fmt::format(
        "the file's own pre/post sets: \"{}\" is not a collective msccl-tools defines (a custom "
        "collective is what its file says)",
        bar);
  }
  if (!coll["triggers"].empty())
    ignored.push_back("collective.triggers (not judged: collv does not model triggers)");

  // chunk_up(k): chunk c becomes c*k .. c*k+k-1 with the same sets, address a becomes a*k+j.
  const std::uint64_t C64 = defined.size() * static_cast<std::uint64_t>(k_up);
  if (C64 * static_cast<std::uint64_t>(p) > kMaxCells)
    bad(src, "instance.chunks",
        fmt::format("{} chunks x {} on {} ranks is more than collv judges", defined.size(), k_up,
                    p));
  require_memory(C64 * static_cast<std::uint64_t>(p) * 2 + C64 * 256,
                 src + ": the chunks of the collective on every rank");
  std::vector<SChunk> chunks;
  chunks.reserve(C64);
  for (const SChunk& c : defined)
    for (std::int64_t i = 0; i < k_up; ++i) {
      SChunk u = c;
      u.addr = c.addr * k_up + i;
      chunks.push_back(std::move(u));
    }
  const int C = static_cast<int>(chunks.size());
  std::map<std::int64_t, std::vector<int>> at_addr;
  for (int c = 0; c < C; ++c) at_addr[chunks[c].addr].push_back(c);
  const bool combining = at_addr.size() < static_cast<std::size_t>(C);

  // Trace, domain and items: chunk c is x{r}.{e}, r its first pre rank, e its position among the
  // chunks starting there; x{r}.{E} (E = most chunks starting on one rank) is rank r's memory at
  // an address where it holds no chunk, so sending it fails dataflow.
  Trace& t = out.trace;
  t.model_name = name;
  t.model_file = src;
  t.collective = named ? named->coll : Collective::Allgather;
  t.root = named && named->rooted ? static_cast<std::uint32_t>(named->root) : 0;
  t.op_class = OperatorClass::Commutative;
  t.nodup_claimed = false;
  t.port = PortModel::All;
  t.topology = Topology::parse(fmt::format("complete:{}", p));
  std::vector<std::uint32_t> elem(C, 0), per_rank(p, 0);
  for (int c = 0; c < C; ++c) elem[c] = per_rank[chunks[c].pre.front()]++;
  const std::uint32_t E = *std::max_element(per_rank.begin(), per_rank.end());
  t.domain = make_domain(DomainKind::Exact, static_cast<std::uint32_t>(p), E + 1, 1);
  Domain& d = *t.domain;
  auto term = [&](int c) {
    return static_cast<std::uint32_t>(chunks[c].pre.front()) * (E + 1) + elem[c];
  };

  // What each rank holds: count[r*C + c] = how many times chunk c's contribution is in rank r's
  // value at chunk c's address (0, 1, or 2 for "more than once").
  std::vector<std::uint8_t> count(static_cast<std::size_t>(p) * C, 0);
  auto cell = [&](int r, int c) -> std::uint8_t& {
    return count[static_cast<std::size_t>(r) * C + c];
  };
  for (int c = 0; c < C; ++c)
    for (int r : chunks[c].pre) cell(r, c) = 1;
  for (int r = 0; r < p; ++r) {
    t.initial_input.push_back({});
    for (auto& [a, cs] : at_addr)
      for (int c : cs)
        if (cell(r, c)) t.initial_input.back().push_back(d.from_terms({term(c)}));
  }
  auto value_at = [&](int r, std::int64_t a) -> std::optional<Item> {
    auto it = at_addr.find(a);
    if (it == at_addr.end()) return std::nullopt;
    std::vector<std::uint32_t> terms;
    for (int c : it->second)
      for (int m = 0; m < cell(r, c); ++m) terms.push_back(term(c));
    if (terms.empty()) return std::nullopt;
    std::sort(terms.begin(), terms.end());
    return d.from_terms(std::move(terms));
  };

  // input_map / output_map: rank -> set of addresses (msccl-tools reads the lists as sets). They
  // must be the addresses of the chunks the collective puts on the rank at the start and asks of
  // it at the end (Algorithm.make_implementation), or the buffers ncclize lays out are wrong.
  auto read_map = [&](const char* key) {
    std::vector<std::set<std::int64_t>> m(p);
    const json& jm = j[key];
    if (!jm.is_object()) bad(src, key, "expected an object of rank -> address list");
    for (auto it = jm.begin(); it != jm.end(); ++it) {
      std::string path = std::string(key) + "." + printable(it.key(), 20);
      auto r = small_int(it.key());
      if (!r || *r >= p) bad(src, path, "the key must be a rank 0.." + std::to_string(p - 1));
      if (!it.value().is_array()) bad(src, path, "expected a list of addresses");
      for (std::size_t k = 0; k < it.value().size(); ++k)
        m[*r].insert(need_int(it.value()[k], src, fmt::format("{}[{}]", path, k), 0, kMaxAddr));
    }
    return m;
  };
  auto input_map = read_map("input_map");
  auto output_map = read_map("output_map");
  std::vector<std::set<std::int64_t>> want_in(p), want_out(p);
  for (int c = 0; c < C; ++c) {
    for (int r : chunks[c].pre) want_in[r].insert(chunks[c].addr);
    for (int r : chunks[c].post) want_out[r].insert(chunks[c].addr);
  }
  for (int r = 0; r < p; ++r) {
    if (input_map[r] != want_in[r])
      violation(attributes,
                fmt::format("input_map[{}] is {} but the collective starts rank {} at addresses {}",
                            r, addr_set(input_map[r]), r, addr_set(want_in[r])),
                {static_cast<NodeId>(r)});
    if (output_map[r] != want_out[r])
      violation(attributes,
                fmt::format("output_map[{}] is {} but the collective asks rank {} for addresses {}",
                            r, addr_set(output_map[r]), r, addr_set(want_out[r])),
                {static_cast<NodeId>(r)});
  }

  // topology: links[dst][src] chunks per round, and switches [srcs, dsts, bandwidth, name].
  const json& topo = j["topology"];
  object_of(topo, "topology", {"name", "links", "switches"}, src, "topology.", ignored);
  const json& jl = topo["links"];
  if (!jl.is_array() || jl.size() != static_cast<std::size_t>(p))
    bad(src, "topology.links", fmt::format("expected a {}x{} matrix", p, p));
  std::vector<std::vector<std::int64_t>> links;
  for (std::size_t a = 0; a < jl.size(); ++a) {
    if (!jl[a].is_array() || jl[a].size() != static_cast<std::size_t>(p))
      bad(src, fmt::format("topology.links[{}]", a), fmt::format("expected {} entries", p));
    links.emplace_back();
    for (std::size_t b = 0; b < jl[a].size(); ++b)
      links.back().push_back(
          need_int(jl[a][b], src, fmt::format("topology.links[{}][{}]", a, b), 0, 1 << 20));
  }
  struct Constraint {
    std::vector<int> srcs, dsts;
    std::int64_t bw;
    std::string name;
  };
  std::vector<Constraint> switches;
  const json& js = topo["switches"];
  if (!js.is_array()) bad(src, "topology.switches", "expected a list");
  for (std::size_t s = 0; s < js.size(); ++s) {
    std::string path = fmt::format("topology.switches[{}]", s);
    if (!js[s].is_array() || js[s].size() != 4)
      bad(src, path, "expected [sources, destinations, bandwidth, name]");
    Constraint k;
    for (int side = 0; side < 2; ++side) {
      if (!js[s][side].is_array()) bad(src, fmt::format("{}[{}]", path, side), "expected ranks");
      for (std::size_t q = 0; q < js[s][side].size(); ++q)
        (side ? k.dsts : k.srcs)
            .push_back(static_cast<int>(
                need_int(js[s][side][q], src, fmt::format("{}[{}][{}]", path, side, q), 0, p - 1)));
    }
    // msccl-tools' Topology refuses a bandwidth that is not strictly positive.
    k.bw = need_int(js[s][2], src, path + "[2]", 1, 1 << 20);
    k.name = js[s][3].is_string() ? printable(js[s][3].get<std::string>(), 40) : path;
    switches.push_back(std::move(k));
  }
  // The file's own machine: its links route the transfers (`file:PATH` parses back to it).
  {
    std::vector<Topology::ListedLink> listed;
    for (int dst = 0; dst < p; ++dst)
      for (int a = 0; a < p; ++a)
        if (a != dst && links[dst][a] > 0)
          listed.push_back({static_cast<NodeId>(a), static_cast<NodeId>(dst),
                            static_cast<std::uint32_t>(links[dst][a]), 0});
    try {
      t.topology = Topology::listed("file:" + src, p, 0, listed);
    } catch (const SpecError&) {
      // Not a connected network (or a self-link): judged on complete:p, the links check stands.
    }
  }

  // The steps: every send [addr, src, dst] of step s moves, at the end of the step, every chunk
  // the sender held at addr when the step began (Algorithm.check_implements). For a combining
  // collective the receiver adds what arrives to what it holds there (ncclize turns a receive
  // into an initialized index into a reduction), so a contribution can be counted twice.
  const json& jsteps = j["steps"];
  if (!jsteps.is_array()) bad(src, "steps", "expected a list of steps");
  std::vector<std::int64_t> rounds;
  // load[s][(src, dst)]: sends on that pair in step s.
  std::vector<std::map<std::pair<int, int>, std::int64_t>> load;
  std::uint32_t uninit = 0;
  std::int64_t first_round = 0;  // rounds of the steps before this one
  DeadlineTick tick;
  for (std::size_t s = 0; s < jsteps.size(); ++s) {
    if (s > 0) first_round += rounds.back();
    std::string path = fmt::format("steps[{}].", s);
    object_of(jsteps[s], "step", {"rounds", "sends"}, src, path, ignored);
    rounds.push_back(need_int(jsteps[s]["rounds"], src, path + "rounds", 1, 1 << 20));
    const json& sends = jsteps[s]["sends"];
    if (!sends.is_array()) bad(src, path + "sends", "expected a list of [addr, src, dst]");
    load.emplace_back();
    std::vector<std::pair<std::size_t, std::uint8_t>> arrivals;  // (cell, contribution count)
    for (std::size_t k = 0; k < sends.size(); ++k) {
      tick([&] { return fmt::format("reading {} (at {}sends[{}])", src, path, k); });
      std::string sp = fmt::format("{}sends[{}]", path, k);
      if (!sends[k].is_array() || sends[k].size() != 3) bad(src, sp, "expected [addr, src, dst]");
      std::int64_t a = need_int(sends[k][0], src, sp + "[0]", 0, kMaxAddr);
      int from = static_cast<int>(need_int(sends[k][1], src, sp + "[1]", 0, p - 1));
      int to = static_cast<int>(need_int(sends[k][2], src, sp + "[2]", 0, p - 1));
      if (from == to) bad(src, sp, "a rank sends to itself");
      // A step of R rounds is R Trace steps: the k-th send on a pair goes in round
      // k / links[dst][src] (all of them read what the sender held when the step began).
      std::int64_t& on_pair = load.back()[{from, to}];
      std::int64_t bw = std::max<std::int64_t>(1, links[to][from]);
      Transfer x{};
      x.step =
          static_cast<std::uint32_t>(first_round + 1 + std::min(rounds.back() - 1, on_pair / bw));
      ++on_pair;
      x.src = static_cast<NodeId>(from);
      x.dst = static_cast<NodeId>(to);
      x.payload_begin = static_cast<std::uint32_t>(t.payload.size());
      x.payload_len = 1;
      x.line = 0;
      auto v = value_at(from, a);
      if (!v) ++uninit;
      // Nothing the collective defines is there: the sender's uninitialized memory goes.
      t.payload.push_back(v ? *v : d.leaf(static_cast<std::uint32_t>(from), E));
      t.transfers.push_back(x);
      auto it = at_addr.find(a);
      if (it != at_addr.end())
        for (int c : it->second)
          if (cell(from, c))
            arrivals.emplace_back(static_cast<std::size_t>(to) * C + c, cell(from, c));
    }
    for (auto [i, n] : arrivals)
      count[i] = combining ? static_cast<std::uint8_t>(std::min(2, count[i] + n)) : std::uint8_t{1};
  }

  // The postcondition of the collective: every rank of a chunk's post set holds it (msccl-tools'
  // check); for a combining collective, each output address holds exactly the contributions
  // asked of it, each once (an extra or doubled one makes a wrong sum).
  for (int r = 0; r < p; ++r)
    for (int c = 0; c < C; ++c)
      if (std::binary_search(chunks[c].post.begin(), chunks[c].post.end(), r) && !cell(r, c))
        violation(postc,
                  fmt::format("rank {} never gets chunk {} ({} at address {}), which {} requires",
                              r, c, d.describe(d.from_terms({term(c)})), chunks[c].addr,
                              named ? bar : std::string("its post set")),
                  {static_cast<NodeId>(r)});
  if (combining)
    for (int r = 0; r < p; ++r)
      for (std::int64_t a : want_out[r])
        for (int c : at_addr[a]) {
          bool asked = std::binary_search(chunks[c].post.begin(), chunks[c].post.end(), r);
          if (cell(r, c) == 2 || (!asked && cell(r, c)))
            violation(
                postc,
                fmt::format("rank {} ends with {} at address {}: {} {}", r,
                            d.describe(*value_at(r, a)), a, d.describe(d.from_terms({term(c)})),
                            cell(r, c) == 2 ? "is counted more than once"
                                            : "is not part of what the collective asks"),
                {static_cast<NodeId>(r)});
        }
  // What each output address must hold (Trace::file_expected, which both engines judge by):
  // the chunks there whose post set holds the rank, each once.
  std::vector<Buffer> expected(p);
  for (int r = 0; r < p; ++r) {
    Buffer fin;
    for (std::int64_t a : want_out[r]) {
      fin.push_back(value_at(r, a).value_or(Item{0}));
      std::vector<std::uint32_t> asked;
      for (int c : at_addr[a])
        if (std::binary_search(chunks[c].post.begin(), chunks[c].post.end(), r))
          asked.push_back(term(c));
      std::sort(asked.begin(), asked.end());
      expected[r].push_back(d.from_terms(std::move(asked)));
    }
    t.final_output.push_back(std::move(fin));
  }
  t.file_expected = import_detail::file_expected(expected);
  postc.note =
      "judged against " + judged_against +
      (k_up > 1 ? fmt::format(", chunked up by instance.chunks = {}", k_up) : "") +
      ": every rank of a chunk's post set holds it at the end" +
      (combining ? ", and each output address holds exactly the contributions asked, once" : "");

  // Claims of the instance: its step count and extra rounds.
  std::int64_t used_extra = 0;
  for (auto r : rounds) used_extra += r - 1;
  if (inst_steps != static_cast<std::int64_t>(jsteps.size()))
    violation(steps_check, fmt::format("instance.steps is {} but the file has {} steps", inst_steps,
                                       jsteps.size()));
  if (used_extra > extra_rounds)
    violation(steps_check,
              fmt::format("the steps use {} extra rounds but instance.extra_rounds allows {}",
                          used_extra, extra_rounds));
  steps_check.note = "instance.steps and instance.extra_rounds against the steps and their rounds";

  // Bandwidth: every link and switch constraint, per step, as msccl-tools checks it (a pipelined
  // instance adds the steps that overlap: s, s + pipeline, ...). A send on a pair without a link
  // fails too (msccl-tools' synthesizer never writes one; its loader does not check).
  // Only the pairs that carry sends are visited: the work is the sends times the switches, not
  // the p^2 pairs of every step. agg[s] holds the sends of step s plus, for a pipelined instance,
  // those of s + pipeline, s + 2 pipeline, ... (built backwards).
  const std::size_t S = load.size();
  std::vector<std::map<std::pair<int, int>, std::int64_t>> agg(S);
  std::uint64_t entries = 0, sends_total = 0;
  for (std::size_t s = S; s-- > 0;) {
    agg[s] = load[s];
    if (pipeline && s + static_cast<std::size_t>(*pipeline) < S)
      for (auto& [pair, n] : agg[s + static_cast<std::size_t>(*pipeline)]) agg[s][pair] += n;
    entries += agg[s].size();
    if (entries > (std::uint64_t{1} << 26))
      bad(src, "instance.pipeline", "the overlapping steps are more than collv judges");
  }
  for (auto& l : load) sends_total += l.size();
  if (switches.size() * static_cast<std::uint64_t>(p) > kMaxCells ||
      switches.size() * std::max<std::uint64_t>(entries, sends_total) > (std::uint64_t{1} << 32))
    bad(src, "topology.switches",
        fmt::format("{} switches over these steps are more than collv judges", switches.size()));
  std::vector<std::vector<bool>> in_src(switches.size(), std::vector<bool>(p, false)),
      in_dst(switches.size(), std::vector<bool>(p, false));
  for (std::size_t k = 0; k < switches.size(); ++k) {
    for (int r : switches[k].srcs) in_src[k][r] = true;
    for (int r : switches[k].dsts) in_dst[k][r] = true;
  }
  auto over = [&](std::size_t s, std::int64_t util, std::int64_t bw, bool is_switch,
                  const std::string& name) {
    if (util <= bw * rounds[s]) return;
    violation(
        link_check,
        fmt::format("step {}: {} chunk(s) cross {} {} but it allows {} ({} x {} round(s))", s + 1,
                    util, is_switch ? "switch" : "link", name, bw * rounds[s], bw, rounds[s]),
        {}, static_cast<std::uint32_t>(s + 1));
  };
  for (std::size_t s = 0; s < S; ++s) {
    for (auto& [pair, n] : agg[s])
      over(s, n, links[pair.second][pair.first], false,
           fmt::format("{}->{}", pair.first, pair.second));
    for (std::size_t k = 0; k < switches.size(); ++k) {
      std::int64_t util = 0;
      for (auto& [pair, n] : agg[s])
        if (in_src[k][pair.first] && in_dst[k][pair.second]) util += n;
      over(s, util, switches[k].bw, true, switches[k].name);
    }
  }
  link_check.note = fmt::format(
      "chunks per step on each link (topology.links[dst][src]) and through each of the {} "
      "switch constraint(s), against bandwidth x rounds{}",
      switches.size(), pipeline ? ", pipelined steps added" : "");

  if (!ignored.empty()) {
    std::string list;
    for (std::size_t k = 0; k < ignored.size() && k < 8; ++k) list += (k ? ", " : "") + ignored[k];
    if (ignored.size() > 8) list += fmt::format(", ... ({} in all)", ignored.size());
    attributes.note = "ignored, as msccl-tools' loader ignores them: " + list;
  }
  if (uninit > 0)
    attributes.note += fmt::format(
        "{}{} send(s) name an address where the sender holds no chunk: x{{r}}.{} stands for "
        "rank r's memory there (dataflow)",
        attributes.note.empty() ? "" : "; ", uninit, E);

  t.compute_stats();
  out.postcondition = postc;
  out.congestion_note = "judged by the links check (topology.links and topology.switches)";
  out.checks = {attributes, link_check, steps_check};
  if (!named) {
    final_buffers.verdict = Verdict::NotChecked;
    final_buffers.note = "a custom collective: its outputs need not be equal";
    out.checks.push_back(final_buffers);
  }
  return out;
}

}  // namespace

}  // namespace collv

// `collv mpi` and MPICH's smp algorithms (docs/mpi.md, "MPICH's smp algorithms"): they are
// selected through MPICH's collective-selection file (MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE)
// with the algorithm variable left at `auto`, so that the calls they make on the node and
// node-roots communicators take the algorithms the file names (the variable would ask them for
// smp too, which they refuse), and a run is judged only when the communicator spans several
// nodes (the harness's "node" lines).
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "app/mpi_internal.hpp"
#include "util/error.hpp"

namespace fs = std::filesystem;

namespace collv::mpi_detail {

namespace {

// MPICH 4.0.2's blocking collectives (src/mpi/coll/src/csel.c's `collective=` names) and the
// algorithm the file names for them on every communicator the algorithm under test does not
// concern: one that applies to every argument (no restriction in coll_algorithms.txt), and the
// inter-communicator one. gatherv and scatterv have one algorithm for both kinds (`allcomm`).
struct Fixed {
  const char* coll;
  const char* intra;
  const char* inter;  // nullptr: no inter-communicator algorithm (scan, exscan); "": allcomm
};
constexpr Fixed kFixed[] = {
    {"barrier", "dissemination", "bcast"},
    {"bcast", "binomial", "remote_send_local_bcast"},
    {"gather", "binomial", "linear"},
    {"gatherv", "linear", ""},
    {"scatter", "binomial", "linear"},
    {"scatterv", "linear", ""},
    {"allgather", "ring", "local_gather_remote_bcast"},
    {"allgatherv", "ring", "remote_gather_local_bcast"},
    {"alltoall", "pairwise", "pairwise_exchange"},
    {"alltoallv", "scattered", "pairwise_exchange"},
    {"alltoallw", "scattered", "pairwise_exchange"},
    {"reduce", "binomial", "local_reduce_remote_send"},
    {"allreduce", "recursive_doubling", "reduce_exchange_bcast"},
    {"reduce_scatter", "recursive_doubling", "remote_reduce_local_scatter"},
    {"reduce_scatter_block", "recursive_doubling", "remote_reduce_local_scatter"},
    {"scan", "recursive_doubling", nullptr},
    {"exscan", "recursive_doubling", nullptr},
};

std::string capitalized(std::string s) {
  if (!s.empty()) s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
  return s;
}

std::string algorithm_key(const std::string& coll, const std::string& kind,
                          const std::string& alg) {
  return fmt::format("\"algorithm=MPIR_{}_{}_{}\": {{}}", capitalized(coll), kind, alg);
}

}  // namespace

bool smp_nested_key(const std::string& key) { return key.rfind("node_", 0) == 0; }

std::string mpich_smp_selection(const std::string& collective,
                                const std::vector<std::pair<std::string, std::string>>& nested) {
  // node_<coll> / node_roots_<coll> = <algorithm>: the algorithm of <coll> on that communicator.
  std::map<std::string, std::string> node, roots;
  for (const auto& [k, v] : nested) {
    const bool is_roots = k.rfind("node_roots_", 0) == 0;
    const std::string coll = k.substr(is_roots ? 11 : 5);
    const auto* f = std::find_if(std::begin(kFixed), std::end(kFixed),
                                 [&](const Fixed& x) { return coll == x.coll; });
    if (!smp_nested_key(k) || f == std::end(kFixed) || (f->inter && !*f->inter))
      throw UsageError(fmt::format(
          "'{}': expected node_<collective> or node_roots_<collective> (barrier, bcast, reduce, "
          "allreduce, scan, ...: the calls MPICH's smp algorithms make on the node and "
          "node-roots communicators)",
          k));
    const auto algs = mpi_algorithms("mpich", coll);
    if (v == "auto" || v == "nb" || v == "smp" ||
        std::find(algs.begin(), algs.end(), v) == algs.end())
      throw UsageError(fmt::format(
          "'{} = {}': not an algorithm MPICH's selection file can name for {} (one of its own, "
          "not auto, nb or smp)",
          k, v, coll));
    (is_roots ? roots : node)[coll] = v;
  }
  std::string j = "{\n";
  bool first = true;
  for (const Fixed& f : kFixed) {
    const std::string c = f.coll;
    j += fmt::format("{}  \"collective={}\": {{\n", first ? "" : ",\n", c);
    first = false;
    if (f.inter && !*f.inter) {  // gatherv, scatterv
      j += "    " + algorithm_key(c, "allcomm", f.intra) + "\n  }";
      continue;
    }
    // Intra-communicators: the node-roots and node communicators' algorithms first, then smp on
    // the parent communicator for the collective under test, then the fixed one on any other
    // (a flat communicator: a run the harness's node lines skip). The keys are tried in order.
    j += "    \"comm_type=intra\": {\n";
    auto it = roots.find(c);
    j += fmt::format("      \"comm_hierarchy=node_roots\": {{ {} }},\n",
                     algorithm_key(c, "intra", it != roots.end() ? it->second : f.intra));
    it = node.find(c);
    j += fmt::format("      \"comm_hierarchy=node\": {{ {} }},\n",
                     algorithm_key(c, "intra", it != node.end() ? it->second : f.intra));
    if (c == collective)
      j += fmt::format("      \"comm_hierarchy=parent\": {{ {} }},\n",
                       algorithm_key(c, "intra", "smp"));
    j += fmt::format("      \"comm_hierarchy=any\": {{ {} }}\n    }}",
                     algorithm_key(c, "intra", f.intra));
    if (f.inter) j += ",\n    \"comm_type=inter\": { " + algorithm_key(c, "inter", f.inter) + " }";
    j += "\n  }";
  }
  return j + "\n}\n";
}

std::string smp_not_spread(const std::string& dir, int p) {
  std::vector<std::int64_t> leader(static_cast<std::size_t>(p), -1), local(leader);
  for (int r = 0; r < p; ++r) {
    const std::string text = slurp(fs::path(dir) / fmt::format("rank{}.jsonl", r), 1 << 16);
    const std::size_t nl = text.find('\n');
    nlohmann::json j = nlohmann::json::parse(text.substr(0, nl), nullptr, false);
    if (j.is_discarded() || !j.is_object() || j.value("k", "") != "node" || !j.contains("leader") ||
        !j["leader"].is_number_integer() || !j.contains("local") || !j["local"].is_number_integer())
      return fmt::format(
          "rank {} wrote no node line (the harness says which node each rank is on; without it "
          "collv cannot tell whether MPICH made node communicators)",
          r);
    leader[static_cast<std::size_t>(r)] = j["leader"].get<std::int64_t>();
    local[static_cast<std::size_t>(r)] = j["local"].get<std::int64_t>();
  }
  // The ranks' claims must agree: a node is its leader's ranks, as many as each of them says.
  std::map<std::int64_t, std::int64_t> size;
  for (int r = 0; r < p; ++r) ++size[leader[static_cast<std::size_t>(r)]];
  std::int64_t largest = 0;
  for (int r = 0; r < p; ++r) {
    const auto l = leader[static_cast<std::size_t>(r)];
    if (l < 0 || l >= p || leader[static_cast<std::size_t>(l)] != l ||
        size[l] != local[static_cast<std::size_t>(r)])
      return fmt::format("the ranks' node lines disagree (rank {}: leader {}, {} local ranks)", r,
                         l, local[static_cast<std::size_t>(r)]);
    largest = std::max(largest, size[l]);
  }
  std::string layout;
  for (const auto& [l, n] : size)
    layout += fmt::format("{}{} from rank {}", layout.empty() ? "" : ", ", n, l);
  if (size.size() < 2)
    return fmt::format(
        "the communicator spans one node ({} ranks): MPICH's node-roots communicator holds one "
        "rank and smp runs its node part only, not the several nodes a model of it describes",
        p);
  if (largest < 2)
    return fmt::format(
        "every node holds one rank ({}): MPICH makes no node communicator, the communicator is "
        "flat and smp does not run",
        layout);
  return "";
}

}  // namespace collv::mpi_detail

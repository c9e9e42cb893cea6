// `collv topology SPEC`: summary or DOT drawing of a topology.
#include "topology/topology_cmd.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <new>
#include <ostream>
#include <string>

#include "topology/topology.hpp"
#include "util/exit_codes.hpp"

namespace collv {
namespace {

// One line, whatever the message holds.
std::string one_line(std::string s) {
  for (char& ch : s) {
    if (ch == '\n' || ch == '\r') ch = ' ';
  }
  return s;
}

}  // namespace

int run_topology_command(const TopologyCommandOptions& opts, std::ostream& out, std::ostream& err) {
  try {
    Topology t = Topology::parse(opts.spec);
    if (opts.dot) {
      std::string dot = t.to_dot();
      if (opts.dot_file.empty() || opts.dot_file == "-") {
        out << dot;
        out.flush();
      } else {
        std::ofstream f(opts.dot_file, std::ios::binary);
        if (f) f << dot;
        if (f) f.close();
        if (!f) {
          err << "collv: error: cannot write '" << one_line(opts.dot_file)
              << "': " << std::strerror(errno) << '\n';
          return kExitUsage;
        }
      }
      return kExitOk;
    }
    const std::size_t switches = t.num_nodes() - t.num_processors();
    out << fmt::format("{:<11}{}\n", "topology", t.spec());
    out << fmt::format("{:<11}{} ({} processors, {} switches)\n", "nodes", t.num_nodes(),
                       t.num_processors(), switches);
    out << fmt::format("{:<11}{}\n", "links", t.num_links());
    out << fmt::format("{:<11}{} (min {}, max {})\n", "degree", t.max_degree(), t.min_degree(),
                       t.max_degree());
    out << fmt::format("{:<11}{}\n", "diameter", t.diameter());
    if (t.declares_bandwidth()) {
      std::uint32_t lo = UINT32_MAX, hi = 0;
      for (NodeId v = 0; v < t.num_nodes(); ++v)
        for (const Link& l : t.links(v)) {
          std::uint32_t w = t.bandwidth(v, l.to);
          if (w == 0) continue;
          lo = std::min(lo, w);
          hi = std::max(hi, w);
        }
      out << fmt::format("{:<11}{} to {} chunks per step on a directed link\n", "bandwidth", lo,
                         hi);
    }
    out.flush();
    return kExitOk;
  } catch (const SpecError& e) {
    err << "collv: error: " << one_line(e.what()) << '\n';
    return kExitUsage;
  } catch (const std::bad_alloc&) {
    err << "collv: error: out of memory building topology '" << one_line(opts.spec) << "'\n";
    return kExitInconclusive;
  }
}

}  // namespace collv

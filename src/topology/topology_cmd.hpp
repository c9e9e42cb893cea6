// `collv topology SPEC`: prints a topology's size, degree and diameter, or its DOT drawing.
#pragma once

#include <iosfwd>
#include <string>

namespace collv {

struct TopologyCommandOptions {
  std::string spec;
  bool dot = false;      // write Graphviz DOT instead of the summary
  std::string dot_file;  // with dot: write here instead of `out` ("" or "-" = out)
};

// Returns an exit code (see util/exit_codes.hpp). Bad specs print one line on `err` and return 2.
int run_topology_command(const TopologyCommandOptions& opts, std::ostream& out, std::ostream& err);

}  // namespace collv

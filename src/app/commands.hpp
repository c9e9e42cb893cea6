// The subcommands behind the `collv` executable. Each takes a plain options struct, writes to the
// given streams and returns an exit code (util/exit_codes.hpp); none reads global settings.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "exec/executor.hpp"
#include "import/import.hpp"
#include "lang/ast.hpp"

namespace collv {

// Where models are looked up by name: $COLLV_MODELS, else ./models if it exists, else the models/
// directory of the source tree collv was built from.
std::string default_models_dir();

// A MODEL argument: a path to a .coll file, or a model name (file stem) in `models_dir`.
std::string resolve_model_path(const std::string& arg, const std::string& models_dir);

// A small member of the model's first topology family (ring:8, mesh:4x4, hypercube:3, star:4,
// ...), for commands run without --topology. Throws UsageError if the model names none.
std::string default_topology_spec(const Model& m);

// Every .coll file under dir (recursively), sorted by path.
std::vector<std::string> list_model_files(const std::string& dir);

struct ListOptions {
  std::string models_dir;
};
int run_list_command(const ListOptions& o, std::ostream& out, std::ostream& err);

struct RunCommandOptions {
  std::string model;
  std::string models_dir;
  std::string topology;  // "" = the first size that fits the model's first family
  RunOptions run;
  bool source_given = false;  // --source was on the command line (a usage error if unrooted)
  std::string json_file;      // write the Trace as JSON here ("-" = stdout)
  bool schedule = false;      // print every transfer even for large runs
  bool quiet = false;
};
int run_run_command(const RunCommandOptions& o, std::ostream& out, std::ostream& err);

// `collv export TARGET --msccl-xml FILE`: a model's run (exact domain, all-port, on --topology
// and --count) or a schedule file written as MSCCL-XML; the written file is imported and judged
// at once, and a file that does not re-import to a passing verdict is an error, not an export.
struct ExportCommandOptions {
  std::string target;  // model name or file, or a schedule file
  std::string models_dir;
  std::string topology;
  RunOptions run;
  std::string msccl_xml;     // output path ("-" = stdout)
  MscclExportOptions msccl;  // --out-of-place, --msccl-runtime
};
int run_export_command(const ExportCommandOptions& o, std::ostream& out, std::ostream& err);

}  // namespace collv

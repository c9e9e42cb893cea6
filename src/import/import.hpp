// Readers for schedules written by other tools: MSCCL-XML (the MSCCL/RCCL runtimes), SCCL/msccl
// algorithm JSON (msccl-tools' synthesizer) and GOAL (LogGOPSim). Each turns a file into a Trace,
// collv's common currency, plus the checks that only make sense for that format (docs/formats.md).
//
//   collv::ImportedSchedule s = collv::import_schedule("allgather.xml");
//   for (const collv::CheckResult& r : collv::check_imported(s, {}))
//     std::cout << r.name << " " << collv::verdict_name(r.verdict) << "\n";
//
// Malformed input (bad XML or JSON, a missing or invalid attribute the runtime needs) throws
// UsageError naming the file and the place: `file:line:col: error: ...` for XML and GOAL,
// `file: key: ...` for JSON.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "check/checks.hpp"
#include "exec/trace.hpp"

namespace collv {

enum class ScheduleFormat { TraceJson, MscclXml, MscclJson, Goal };
struct GoalReach;  // GOAL: which rank's ops depend on which rank's (goal.cpp)
const char* schedule_format_name(ScheduleFormat f);  // "collv-json", "msccl-xml", ...

struct ImportedSchedule {
  ScheduleFormat format = ScheduleFormat::TraceJson;
  Trace trace;
  // Checks of the format: MSCCL-XML "attributes", "bounds", "race"; GOAL "flow". They are
  // appended to check_trace's by check_imported.
  std::vector<CheckResult> checks;
  // The collective's postcondition as the tool's runtime defines the output buffer (positional),
  // replacing check_trace's. Absent: check_trace's own postcondition stands (collv JSON), or the
  // format carries no data (GOAL: postcondition not checked).
  std::optional<CheckResult> postcondition;
  bool carries_data = true;  // false for GOAL: sizes only
  // Congestion per directed link is not a property of these schedules (parallel channels and
  // NIC queues are the runtime's business): check_imported marks it not checked, with this note.
  std::string congestion_note;
  // GOAL: who depends on whom, kept so that judge_goal_flow can ask the question of the
  // collective the user names (null for other formats, or when the file deadlocks).
  std::shared_ptr<const GoalReach> goal_reach;
};

// Which reader a path needs: by content (a leading '<' is XML; JSON with "msccl_type" or
// "sccl_type" is SCCL/msccl JSON, other JSON is collv's trace format; "num_ranks" opens GOAL),
// falling back to the extension (.xml, .json, .goal). Throws UsageError if the file cannot be
// read.
ScheduleFormat detect_schedule_format(const std::string& path);
// Whether a command-line target names a schedule file rather than a model (by extension).
bool looks_like_schedule_path(const std::string& path);

// The MSCCL runtime an MSCCL-XML `<step>` file is held to by the `runtime` check, and the replay's
// connection slots (docs/formats.md, "MSCCL-XML"). Azure/msccl-executor-nccl is the stricter.
enum class MscclRuntime { ExecutorNccl, Msccl };
const char* msccl_runtime_name(MscclRuntime r);  // "msccl-executor-nccl", "msccl"
struct MscclOptions {
  MscclRuntime runtime = MscclRuntime::ExecutorNccl;
  // Sends a connection (sender, receiver, channel) holds before the next send blocks; 0:
  // unbounded; -1: by the file's protocol, as the runtime's FIFO of NCCL_STEPS = 8 steps is
  // used: Simple 2 (each send takes MSCCL_CHUNKSTEPS = 4 steps), LL and LL128 8 (one step).
  int slots = -1;
  // A broadcast's or reduce's root: the call's argument (the file has none). Unset: inferred
  // (broadcast: the gpu that receives nothing; reduce: the gpu that sends nothing).
  std::optional<std::uint32_t> root;
};

ImportedSchedule import_schedule(const std::string& path, const MscclOptions& msccl = {});
ImportedSchedule import_msccl_xml(const std::string& text, const std::string& source,
                                  const MscclOptions& msccl = {});
ImportedSchedule import_msccl_json(const std::string& text, const std::string& source);
ImportedSchedule import_goal(std::string text, const std::string& source);

// GOAL names no collective: `flow` asks who must reach whom for `collective` (collv's names plus
// "incast" and "outcast"; empty: the default, some rank reaches every rank or every rank reaches
// some rank) and `root` (rooted collectives; for the default, the rank it must be). Replaces the
// file's `flow` check; throws UsageError for a name it does not know or a root that is no rank.
// import_goal applies the default.
void judge_goal_flow(ImportedSchedule& s, const std::string& collective,
                     std::optional<std::uint32_t> root);

// The trace as MSCCL-XML in the `<step>` format (allgather and allreduce, in place or out of
// place; exact domain; docs/formats.md), within the loading limits of `runtime`. Throws
// UsageError for what the format or the runtime's limits cannot express.
struct MscclExportOptions {
  bool out_of_place = false;
  MscclRuntime runtime = MscclRuntime::ExecutorNccl;
  // The file's `proto`: Simple, LL or LL128. The re-import's connection slots follow it (2 sends
  // under Simple, 8 under LL and LL128), so a schedule needing more buffering than the protocol
  // gives is refused.
  std::string proto = "Simple";
};
std::string export_msccl_xml(const Trace& t, const std::string& name,
                             const MscclExportOptions& opts = {});

// The time of a file's schedule on a machine with bandwidths (Topology::declares_bandwidth): each
// step of the file (a dependency level) takes as many machine steps as its busiest directed link
// needs, ceil(chunks / bandwidth), and the next level starts after it. An upper bound on the time
// (levels are not overlapped), exact when every level fits the links. Pairs with no link are
// left to the route check.
std::uint64_t level_synchronous_steps(const Trace& t);

// check_trace, with the format's postcondition and checks folded in (kCheckNames order first,
// then the format's own checks).
std::vector<CheckResult> check_imported(const ImportedSchedule& s, const CheckOptions& o);
// The checks of kCheckNames the format leaves not checked, each with the reason: the data checks
// of a format without data (GOAL), congestion where the format's links are judged otherwise
// (congestion_note), a format check that is not-checked (coll="custom"'s outputs).
// check_imported applies them; `collv verify --engine smt|both` hands them to the SMT engine with
// the trace (Trace::file_not_checked), so both engines leave the same checks open.
std::vector<std::pair<std::string, std::string>> not_checked_by_format(const ImportedSchedule& s);

// Shared by the readers (src/import/*.cpp).
namespace import_detail {
// A check result with a verdict of pass and no violations yet.
CheckResult make_check(const char* name);
void add_violation(CheckResult& r, Counterexample c, std::size_t max_kept = 20);
// The positional postcondition: final_output[r] must equal expected[r] item by item.
CheckResult positional_postcondition(const Trace& t, const std::vector<Buffer>& expected,
                                     const std::string& what);
// Trace::file_expected from a reader's expected buffers (only `only`'s, when given: a reduce).
std::shared_ptr<const std::vector<std::optional<Buffer>>> file_expected(
    const std::vector<Buffer>& expected, std::optional<NodeId> only = std::nullopt);
}  // namespace import_detail

}  // namespace collv

// Runs the collv binary of this build from a test and reads what it printed. ctest runs tests in
// parallel processes, so each call writes to a file of its own (process id and a counter): a shared
// file name let one test read another's output.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace collv::test {

// The whole text of a file ("" when it cannot be read).
inline std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The test process's own directory under the temporary directory, made on first use and
// removed with everything in it when the process exits (a forked child that exits does not
// remove it: only the process that made it does). Files the tests write went straight to /tmp
// before and stayed there (thousands after a few suite runs).
inline const std::filesystem::path& temp_root() {
  struct Root {
    std::filesystem::path dir;
    pid_t owner = ::getpid();
    Root()
        : dir(std::filesystem::temp_directory_path() /
              ("collv_tests_" + std::to_string(::getpid()))) {
      std::filesystem::create_directories(dir);
    }
    ~Root() {
      std::error_code ec;
      if (::getpid() == owner) std::filesystem::remove_all(dir, ec);
    }
  };
  static Root root;
  return root.dir;
}

// A path that no other test process uses: in the process's temp_root(), name + pid + counter.
inline std::string unique_temp(const std::string& name) {
  static std::atomic<int> counter{0};
  return (temp_root() / (name + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++)))
      .string();
}

// Runs `collv ARGS` (in directory `cwd` when given, under `timeout SECONDS` when seconds > 0),
// stdout and stderr together into `out`; returns the exit code, -1 when it did not exit.
inline int run_cli(const std::string& args, std::string& out, const std::string& cwd = "",
                   int seconds = 0) {
  std::string file = unique_temp("collv_cli_out");
  std::string cmd;
  if (!cwd.empty()) cmd += "cd '" + cwd + "' && ";
  if (seconds > 0) cmd += "timeout " + std::to_string(seconds) + " ";
  cmd += std::string(COLLV_BINARY) + " " + args + " >'" + file + "' 2>&1";
  int rc = std::system(cmd.c_str());
  std::ifstream in(file);
  std::stringstream ss;
  ss << in.rdbuf();
  out = ss.str();
  std::error_code ec;
  std::filesystem::remove(file, ec);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

// The model shown after `<!-- example: NAME -->` in a document (a path under root), written to a
// temporary file whose path is returned.
inline std::string doc_example(const std::string& root, const std::string& doc,
                               const std::string& name) {
  std::string text = slurp(root + "/" + doc);
  std::string marker = "<!-- example: " + name + " -->\n```\n";
  auto at = text.find(marker);
  REQUIRE(at != std::string::npos);
  at += marker.size();
  auto end = text.find("```", at);
  REQUIRE(end != std::string::npos);
  std::string path = unique_temp(name) + ".coll";
  std::ofstream(path) << text.substr(at, end - at);
  return path;
}

// A model variant: a copy of a model file (a temporary `name`.coll) with `edits` applied in
// order, each replacing the first occurrence of its `from`, which must be there, by its `to`.
inline std::string edited_copy(const std::string& model,
                               const std::vector<std::pair<std::string, std::string>>& edits,
                               const std::string& name) {
  std::string text = slurp(model);
  for (const auto& [from, to] : edits) {
    INFO(model << ": " << from);
    REQUIRE(text.find(from) != std::string::npos);
    text.replace(text.find(from), from.size(), to);
  }
  const std::string f = unique_temp(name) + ".coll";
  std::ofstream(f) << text;
  return f;
}

// A model variant with one edit: its first `from` replaced by `to`.
inline std::string edited_copy(const std::string& model, const std::string& from,
                               const std::string& to, const std::string& name) {
  return edited_copy(model, {{from, to}}, name);
}

}  // namespace collv::test

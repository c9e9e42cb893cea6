// The harness (mpi/: harness.c and the files it is split into) is compiled once per library,
// compiler and sources and cached under a key over every one of its .c and .h files
// (docs/mpi.md, "How it works"): changing any of them builds it again. No MPI is needed: a fake
// mpicc (a shell script) logs what it is asked to compile.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "app/mpi_internal.hpp"
#include "cli.hpp"
#include "util/error.hpp"

namespace fs = std::filesystem;
using namespace collv;
using namespace collv::mpi_detail;

namespace {

const std::string kSrc = COLLV_SOURCE_DIR;

std::string read_text(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f << text;
}

// A copy of mpi/ in a fresh directory.
fs::path copy_harness() {
  const fs::path dir = test::unique_temp("collv_harness_src");
  fs::create_directories(dir);
  for (const auto& e : fs::directory_iterator(kSrc + "/mpi"))
    fs::copy_file(e.path(), dir / e.path().filename());
  return dir;
}

}  // namespace

TEST_CASE("collv mpi: the harness is every .c and .h file of mpi/, and its cache key covers each",
          "[mpi][mpi-harness]") {
  const HarnessSources real = harness_sources(kSrc + "/mpi/harness.c");
  std::vector<std::string> names;
  for (const auto& f : real.files) names.push_back(f.filename().string());
  CHECK(names == std::vector<std::string>{"harness.c", "harness.h", "harness_coll.c",
                                          "harness_elems.c", "harness_trace.c"});

  const fs::path dir = copy_harness();
  const std::vector<std::string> flags = {"-Wl,--export-dynamic-symbol=x"};
  const auto key_of = [&] {
    return harness_cache_key("mpich", "/usr/bin/mpicc.mpich", flags,
                             harness_sources((dir / "harness.c").string()));
  };
  const std::string key0 = key_of();
  CHECK(key0 == harness_cache_key("mpich", "/usr/bin/mpicc.mpich", flags, real));
  // The directory names the same sources as its main file.
  CHECK(harness_cache_key("mpich", "/usr/bin/mpicc.mpich", flags, harness_sources(dir.string())) ==
        key0);
  // Each file: one more character changes the key; put back, the key is the old one.
  std::vector<std::string> keys;
  for (const auto& name : names) {
    const std::string text = read_text(dir / name);
    write_text(dir / name, text + "\n");
    keys.push_back(key_of());
    INFO(name);
    CHECK(keys.back() != key0);
    write_text(dir / name, text);
    CHECK(key_of() == key0);
  }
  std::sort(keys.begin(), keys.end());
  CHECK(std::unique(keys.begin(), keys.end()) == keys.end());
  // A new header is part of the harness too; the library, the compiler and the flags as before.
  write_text(dir / "extra.h", "/* more */\n");
  CHECK(key_of() != key0);
  fs::remove(dir / "extra.h");
  CHECK(harness_cache_key("openmpi", "/usr/bin/mpicc.mpich", flags, real) != key0);
  CHECK(harness_cache_key("mpich", "/usr/bin/mpicc", flags, real) != key0);
  CHECK(harness_cache_key("mpich", "/usr/bin/mpicc.mpich", {}, real) != key0);

  // Bounded and checked: no .c file, a file over 1 MiB.
  const fs::path empty = test::unique_temp("collv_harness_empty");
  fs::create_directories(empty);
  write_text(empty / "harness.h", "\n");
  CHECK_THROWS_AS(harness_sources((empty / "harness.c").string()), UsageError);
  write_text(empty / "harness.c", std::string((std::size_t{1} << 20) + 1, ' '));
  CHECK_THROWS_AS(harness_sources((empty / "harness.c").string()), UsageError);
  fs::remove_all(empty);
  fs::remove_all(dir);
}

TEST_CASE("collv mpi: the harness is built from all its .c files and built again when any changes",
          "[mpi][mpi-harness]") {
  const fs::path dir = copy_harness();
  const fs::path tmp = test::unique_temp("collv_harness_cc");
  fs::create_directories(tmp);
  // The fake compiler: logs its arguments one a line, writes an executable at -o.
  const fs::path log = tmp / "log";
  const fs::path cc = tmp / "fake-mpicc";
  write_text(cc,
             "#!/bin/sh\nout=\nwhile [ $# -gt 0 ]; do\n  if [ \"$1\" = -o ]; then shift; "
             "out=$1; fi\n  echo \"$1\" >> '" +
                 log.string() +
                 "'\n  shift\ndone\nprintf '#!/bin/sh\\n' > \"$out\"\nchmod +x \"$out\"\n");
  fs::permissions(cc, fs::perms::owner_all);
  MpiOptions o;
  o.impl = "mpich";
  o.cache_dir = (tmp / "cache").string();
  o.quiet = true;
  std::ostringstream err;
  const std::string main_c = (dir / "harness.c").string();
  const std::string bin1 = build_harness(o, cc.string(), main_c, err);
  const std::string args = read_text(log);
  for (const char* name : {"harness.c", "harness_coll.c", "harness_elems.c", "harness_trace.c"})
    CHECK_THAT(args, Catch::Contains((fs::absolute(dir) / name).string() + "\n"));
  CHECK(args.find("harness.h") == std::string::npos);  // included, not compiled
  // Cached: the same sources build nothing.
  CHECK(build_harness(o, cc.string(), main_c, err) == bin1);
  CHECK(read_text(log) == args);
  // A change in one of the split files: another binary, compiled again.
  write_text(dir / "harness_coll.c", read_text(dir / "harness_coll.c") + "/* changed */\n");
  const std::string bin2 = build_harness(o, cc.string(), main_c, err);
  CHECK(bin2 != bin1);
  CHECK(read_text(log).size() == 2 * args.size());
  fs::remove_all(tmp);
  fs::remove_all(dir);
}

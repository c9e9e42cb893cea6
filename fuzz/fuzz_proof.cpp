// libFuzzer harness: proof files. The text is written to a file and read by parse_proof_file;
// for `kind model` and `kind steps` the topology is parsed and the named model's run estimated
// (run_model with a small memory limit, fingerprint-free exact domain), which is where proof
// files reach the executor. Z3 is not called (that would measure Z3, not collv).
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>

#include "exec/executor.hpp"
#include "fuzz_common.hpp"
#include "lang/ast.hpp"
#include "smt/lemmas.hpp"
#include "util/error.hpp"
#include "util/memory.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 4096) return 0;
  static const std::string path = "/tmp/collv-fuzz-" + std::to_string(getpid()) + ".proof";
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  try {
    collv::ProofObligation po = collv::parse_proof_file(path);
    std::string kind = po.get("kind");
    if (kind == "model" || kind == "steps") {
      if (expensive_spec(po.get("topology"))) return 0;
      collv::Topology topo = collv::Topology::parse(po.get("topology"));
      std::string name = po.get("model");
      // Only the models of the repository, by plain name.
      if (name.empty() || name.find_first_of("/.") != std::string::npos) return 0;
      collv::Model m =
          collv::parse_model_file(std::string(COLLV_SOURCE_DIR) + "/models/" + name + ".coll");
      collv::RunOptions o;
      o.max_steps = 64;
      o.max_ops_per_node = 2000;
      o.max_memory = collv::resident_bytes() + (128ULL << 20);
      (void)collv::run_model(m, topo, o);
    }
  } catch (const collv::ModelError&) {
  } catch (const collv::UsageError&) {
  } catch (const collv::SpecError&) {
  }
  return 0;
}

// libFuzzer harness: the two analyses that read a program instead of a Trace. The first byte
// picks star:3, star:4, hypercube:2, hypercube:3, ring:5 or ring:65 (by value mod 6) for the
// symmetric engine
// (verify/symmetric.hpp); the rest is the model, also given to the induction over star levels
// (smt/star_induction.hpp, no solver: the obligations are only built). Both must refuse or answer
// within their bounds, never crash or hang.
#include <cstdint>
#include <string>

#include "lang/ast.hpp"
#include "smt/star_induction.hpp"
#include "util/error.hpp"
#include "util/memory.hpp"
#include "verify/symmetric.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1 || size > 16 * 1024) return 0;
  static const char* fams[] = {"star", "star", "hypercube", "hypercube", "ring", "ring"};
  static const int sizes[] = {3, 4, 2, 3, 5, 65};
  std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    collv::Model m = collv::parse_model(text, "fuzz.coll");
    collv::RunOptions o;
    o.max_ops_per_node = 20000;
    o.max_memory = collv::resident_bytes() + (256ULL << 20);
    collv::verify_symmetric(m, fams[data[0] % 6], sizes[data[0] % 6], o);
    collv::analyze_star_induction(m);
  } catch (const collv::ModelError&) {
  } catch (const collv::UsageError&) {  // includes LimitError
  }
  return 0;
}

// Every p from the model (smt/every_p.hpp, `collv prove --every-p`): library models proved for
// every p and count from their own program; mutants that are wrong only past p = 64 or only above
// count 1,000 are disproved by the obligation that the mutation breaks (so the test fails if that
// obligation is not checked); programs and proofs outside the fragment are refused, never proved.
#include <catch2/catch.hpp>

#include <filesystem>
#include <sstream>
#include <tuple>

#include "app/every_p_cmd.hpp"
#include "cli.hpp"
#include "every_p_util.hpp"
#include "smt/solver.hpp"
#include "util/exit_codes.hpp"
#include "verify/report.hpp"

using namespace collv;
using namespace collv::test::everyp;
namespace fs = std::filesystem;

namespace {

const std::string kRoot = COLLV_SOURCE_DIR;
const std::string kProofs = kRoot + "/proofs/every-p";

const std::string kRing = kRoot + "/models/mpich/allgather_ring.coll";

}  // namespace

TEST_CASE(
    "every-p: MPICH's ring allgather is proved for every p and count, z3 re-checks the "
    "certificates",
    "[every-p]") {
  std::string dir = collv::test::unique_temp("every_p_certs");
  EveryPOutcome r = prove(kRing, kProofs + "/allgather_ring.proof", dir);
  INFO(r.note);
  REQUIRE(r.exit == kExitOk);
  CHECK(r.answer == "proved for every p");
  // The obligations the method promises are all there.
  std::string all;
  for (const auto& l : r.lines) all += l + "\n";
  for (const char* n :
       {"initiation-result-loop-i", "consecution-result-loop-i", "consecution-j-loop-i",
        "consecution-jnext-loop-i", "match-line-24", "send-dst-loop-i", "nodup-result-line-24",
        "fill-line-24", "postcondition-blocks", "postcondition-length", "sends-received", "steps"})
    CHECK(all.find(std::string(n) + " ") != std::string::npos);
  // Every certificate is unsat for a fresh Z3 that reads only the file, and is built from the
  // program's terms (the round's source rank and the received slice), not from the invariant alone.
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    std::string text = collv::test::slurp(e.path().string());
    smt::Result s = smt::run_smt2_script(text, 60000, 1 << 24);
    INFO(e.path().string());
    CHECK(s.answer == smt::Answer::Unsat);
    if (e.path().string().find("consecution-result") != std::string::npos) {
      CHECK(text.find("src_r") != std::string::npos);
      CHECK(text.find("(mod (- src_r 1) p)") == std::string::npos);  // src is r's, renamed
      CHECK(text.find("(= src_r (mod (- r 1) p))") != std::string::npos);
    }
    ++files;
  }
  CHECK(files == static_cast<int>(r.obligations));
  fs::remove_all(dir);
}

TEST_CASE(
    "every-p: NCCL's ring allgather (send first, receive-forward loop, last receive after "
    "it) is proved, its mutant past p = 100 is disproved at p = 101",
    "[every-p]") {
  EveryPOutcome r = prove(kRoot + "/models/nccl/allgather_ring_nccl.coll",
                          kProofs + "/allgather_ring_nccl.proof");
  INFO(r.note);
  REQUIRE(r.exit == kExitOk);
  std::string all;
  for (const auto& l : r.lines) all += l + "\n";
  // The loop's receive is matched by the send before the loop or by the previous iteration's,
  // the last receive by the loop's last send; the loop's `r` is local (no initiation).
  for (const char* n : {"match-line-25 ", "match-line-29 ", "consecution-result-loop-j ",
                        "nodup-result-line-29 ", "steps "})
    CHECK(all.find(n) != std::string::npos);
  CHECK(all.find("initiation-r-") == std::string::npos);
  r = prove(kProofs + "/mutants/allgather_ring_nccl_p100.coll",
            kProofs + "/allgather_ring_nccl.proof");
  INFO(r.note);
  CHECK(r.exit == kExitViolation);
  CHECK(r.failed_obligation == "postcondition-length");
  CHECK(r.p == 101);
}

TEST_CASE("every-p: every proof in proofs/every-p proves its model, every mutant is refused",
          "[every-p][heavy]") {
  int proved = 0, refused = 0;
  for (const std::string& dir : {kProofs, kProofs + "/mutants"})
    for (const auto& e : fs::directory_iterator(dir)) {
      if (e.path().extension() != ".proof") continue;
      // NCCL's ring all-reduce and its mutant take a minute or more of Z3 (77 obligations): the
      // [slow] all-reduce test below proves the one and refuses the other.
      if (e.path().filename().string().rfind("allreduce_ring_nccl", 0) == 0) continue;
      // The recursive-doubling proofs split their queries per round (500 and more obligations,
      // 10 s of Z3 each): tests/test_every_p_xor.cpp proves them and refuses their mutants.
      if (e.path().filename().string().rfind("allgather_recursive_doubling_ompi", 0) == 0) continue;
      // Proofs of minutes (the folds, the halving, the binomial scatter): their own tests.
      if (proved_in_own_test(e.path().filename().string())) continue;
      // MPICH's binomial broadcast unrolls 32 iterations (474 obligations, about 6 s of CPU):
      // tests/test_every_p_tree.cpp proves it and disproves its mutants ([slow]).
      if (e.path().filename().string().rfind("bcast_binomial", 0) == 0) continue;
      EveryPProof pf = parse_every_p_proof(e.path().string());
      std::string model = (e.path().parent_path() / pf.model).string();
      EveryPOutcome r = prove(model, e.path().string());
      INFO(e.path().string() << ": " << r.note);
      if (pf.expect == "proved") {
        CHECK(r.exit == kExitOk);
        ++proved;
      } else {
        CHECK(r.exit != kExitOk);
        CHECK(r.exit == (pf.expect == "disproved" ? kExitViolation : kExitInconclusive));
        ++refused;
      }
    }
  CHECK(proved >= 4);
  CHECK(refused >= 4);
}

TEST_CASE(
    "every-p: reductions: NCCL's ring reduce-scatter adds disjoint, adjacent contributions, "
    "a mutant adding the wrong block past p = 64 fails the combine obligation",
    "[every-p]") {
  EveryPOutcome r = prove(kProofs + "/mutants/reduce_scatter_ring_nccl_p64.coll",
                          kProofs + "/reduce_scatter_ring_nccl.proof");
  INFO(r.note);
  CHECK(r.exit == kExitViolation);
  CHECK(r.failed_obligation == "combine-loop-j");
  CHECK(r.p == 65);
  // Without `operator commutative` the pairwise reduce-scatter (which adds each contribution in
  // front) ends in ring order from r + 1, not rank order: disproved by the postcondition, and the
  // executor's ordered domain agrees at p = 2.
  std::string pw = collv::test::slurp(kRoot + "/models/mpich/reduce_scatter_pairwise.coll");
  r = prove_text(replaced(pw, "  operator   commutative\n", ""),
                 collv::test::slurp(kProofs + "/reduce_scatter_pairwise.proof"));
  INFO(r.note);
  CHECK(r.exit == kExitViolation);
  CHECK(r.failed_obligation == "postcondition-blocks");
  CHECK(r.p == 2);
}

TEST_CASE("every-p: a ring wrong only past p = 64 is disproved by consecution, at p = 65",
          "[every-p]") {
  // The proof of the correct ring applied to the mutant (as --model does), and the mutant's own.
  for (const std::string& proof :
       {kProofs + "/allgather_ring.proof", kProofs + "/mutants/allgather_ring_p64.proof"}) {
    EveryPOutcome r = prove(kProofs + "/mutants/allgather_ring_p64.coll", proof);
    INFO(r.note);
    CHECK(r.exit == kExitViolation);
    CHECK(r.failed_obligation == "consecution-jnext-loop-i");
    CHECK(r.p == 65);
    CHECK(r.note.find("executor on complete:65") != std::string::npos);
  }
}

TEST_CASE("every-p: a ring one round short above count 1,000 is disproved at count 1,001",
          "[every-p]") {
  EveryPOutcome r =
      prove(kProofs + "/mutants/allgather_ring_count1000.coll", kProofs + "/allgather_ring.proof");
  INFO(r.note);
  CHECK(r.exit == kExitViolation);
  CHECK(r.failed_obligation == "postcondition-length");
  CHECK(r.p == 2);
  CHECK(r.count == 1001);
}

TEST_CASE("every-p: a correct change to the program still proves with the same proof",
          "[every-p]") {
  std::string proof = collv::test::slurp(kProofs + "/allgather_ring.proof");
  std::string ring = collv::test::slurp(kRing);
  // The destination written another way, and the last two assignments of a round swapped.
  std::string changed =
      replaced(replaced(ring, "to (my_id + 1) mod p;", "to (my_id + p + 1) mod p;"),
               "        j := jnext;\n        jnext := (jnext - 1) mod p;\n",
               "        jnext := (jnext + p - 1) mod p;\n        j := (jnext + 1) mod p;\n");
  EveryPOutcome r = prove_text(changed, proof);
  INFO(r.note);
  CHECK(r.exit == kExitOk);
  // Swapped without adjusting j: j then runs one block behind and the ring sends the wrong block.
  r = prove_text(replaced(ring, "        j := jnext;\n        jnext := (jnext - 1) mod p;\n",
                          "        jnext := (jnext - 1) mod p;\n        j := jnext;\n"),
                 proof);
  INFO(r.note);
  // The obligation fails from p = 2, where the program is still right (one round: j is not read
  // again); the executor fails from p = 3.
  CHECK(r.exit == kExitViolation);
  CHECK(r.failed_obligation == "consecution-j-loop-i");
  CHECK(r.p == 2);
  CHECK(r.note.find("executor on complete:3 count 1") != std::string::npos);
}

TEST_CASE("every-p: a wrong invariant is not proved (the executor passes there), never a verdict",
          "[every-p]") {
  std::string proof = collv::test::slurp(kProofs + "/allgather_ring.proof");
  // Claims one block too many at each iteration: initiation fails, the program is right.
  EveryPOutcome r = prove_text(collv::test::slurp(kRing),
                               replaced(proof, "(< (mod (- r b) p) i)", "(<= (mod (- r b) p) i)"));
  INFO(r.note);
  CHECK(r.exit == kExitInconclusive);
  CHECK(r.failed_obligation == "initiation-result-loop-i");
  CHECK(r.note.find("the executor passes") != std::string::npos);
  // A missing invariant: refused, naming the loop and the variable.
  r = prove_text(collv::test::slurp(kRing), replaced(proof, "invariant i jnext", "# "));
  CHECK(r.exit == kExitInconclusive);
  CHECK(r.note.find("'jnext'") != std::string::npos);
  CHECK(r.note.find("m.coll:") != std::string::npos);
  // A term that tries to leave its definition, or names something the prover does not bind.
  r = prove_text(collv::test::slurp(kRing),
                 replaced(proof, "(mod (- r i) p)", "(mod (- r i) p)) (assert false"));
  CHECK(r.exit == kExitInconclusive);
  CHECK(r.note.find("invariant term") != std::string::npos);
  r = prove_text(collv::test::slurp(kRing), replaced(proof, "(mod (- r i) p)", "(mod (- r k) p)"));
  CHECK(r.exit == kExitInconclusive);
  CHECK(r.note.find("'k'") != std::string::npos);
}

TEST_CASE("every-p: programs outside the fragment are refused with file:line:col", "[every-p]") {
  std::string proof = collv::test::slurp(kProofs + "/allgather_ring.proof");
  std::string ring = collv::test::slurp(kRing);
  // A trip count that depends on my_id.
  EveryPOutcome r =
      prove_text(replaced(ring, "for i := 1 to p - 1 do", "for i := 1 to my_id do"), proof);
  CHECK(r.exit == kExitInconclusive);
  CHECK(r.note.find("depends on my_id") != std::string::npos);
  CHECK(r.note.find("m.coll:22:") != std::string::npos);
  // A slice that is not in whole blocks.
  r = prove_text(
      replaced(ring, "send result[j * E .. j * E + E - 1]", "send result[j * E .. j * E]"), proof);
  CHECK(r.exit == kExitInconclusive);
  CHECK(r.note.find("whole blocks") != std::string::npos);
  // Each further rule of the fragment, with the reason it gives; none of these is proved.
  const std::vector<std::tuple<std::string, std::string, std::string>> cases = {
      {"for i := 1 to p - 1 do", "for i := p - 1 downto 1 do", "`downto`"},
      {"        j := jnext;\n", "        j := jnext;\n        i := i;\n", "its own counter"},
      {"        j := jnext;\n", "        j := jnext;\n        send x to (my_id + 1) mod p;\n",
       "more than one send"},
      {"jnext := (my_id - 1) mod p;", "jnext := (my_id - 1) mod count;", "only by p"},
      {"jnext := (my_id - 1) mod p;", "jnext := (my_id * count) mod p;", "count-dependent"},
      {"    E := count;", "    E := count * count;", "two count-dependent"},
      {"        j := jnext;\n",
       "        while j < 0 do j := j + 1; endwhile;\n        j := jnext;\n",
       "only assignments, one send and one receive"},
  };
  for (const auto& [from, to, why] : cases) {
    r = prove_text(replaced(ring, from, to), proof);
    INFO(to << ": " << r.note);
    CHECK(r.exit == kExitInconclusive);
    CHECK(r.note.find(why) != std::string::npos);
    CHECK(r.note.find("m.coll:") != std::string::npos);
  }
  // An `if` on my_id around the rounds is read as phases (tests/test_every_p_fold.cpp): rank 0
  // sits out, so its partners' sends are not received: disproved, the executor deadlocks.
  r = prove_text(replaced(ring, "  if count > 0 then", "  if my_id > 0 then"), proof);
  INFO(r.note);
  CHECK(r.exit == kExitViolation);
  CHECK(r.note.find("received-loop-i") != std::string::npos);
  CHECK(r.note.find("deadlock") != std::string::npos);
  // A collective outside the fragment (its postcondition is not written): refused, not guessed.
  std::string gather = replaced(ring, "collective allgather", "collective scan");
  for (const char* line : {"library    mpich 4.0 MPIR_CVAR_ALLGATHER_INTRA_ALGORITHM = ring\n",
                           "library    mpich 4.0 MPIR_CVAR_ALLGATHER_INTRA_ALGORITHM = nb "
                           "MPIR_CVAR_IALLGATHER_INTRA_ALGORITHM = sched_ring\n",
                           "library    mpich 4.0 MPIR_CVAR_ALLGATHER_INTRA_ALGORITHM = nb "
                           "MPIR_CVAR_IALLGATHER_INTRA_ALGORITHM = tsp_ring\n"})
    gather = replaced(gather, line, "");
  r = prove_text(gather, proof);
  CHECK(r.exit == kExitInconclusive);
  CHECK(r.note.find("not in the fragment yet") != std::string::npos);
}

TEST_CASE("every-p: the command ties a proof to its model, --model applies it elsewhere",
          "[every-p][heavy]") {
  std::string out;
  std::string proof = kProofs + "/allgather_ring.proof";
  std::string mutant = kProofs + "/mutants/allgather_ring_p64.coll";
  CHECK(collv::test::run_cli("prove --every-p " + proof + " " + mutant, out) == kExitUsage);
  CHECK(out.find("written for model 'allgather_ring'") != std::string::npos);
  CHECK(collv::test::run_cli("prove --every-p " + proof + " --model " + mutant, out) ==
        kExitViolation);
  CHECK(out.find("p = 65") != std::string::npos);
  CHECK(collv::test::run_cli("prove --every-p " + proof + " --quiet", out) == kExitOk);
  CHECK(out.find("allgather_ring: proved for every p") != std::string::npos);
  // The directory form judges every proof against its `expect` (the binomial broadcast's
  // mutants, 12 s of CPU each, are left to the [slow] test in tests/test_every_p_tree.cpp; the
  // binomial scatter's, the folds' and the halving's to their own tests: proved_in_own_test).
  std::string dir = collv::test::unique_temp("every_p_mutants");
  fs::create_directories(dir);
  for (const auto& e : fs::directory_iterator(kProofs + "/mutants"))
    if (e.path().filename().string().rfind("bcast_binomial", 0) != 0 &&
        !proved_in_own_test(e.path().filename().string()))
      fs::copy_file(e.path(), dir + "/" + e.path().filename().string());
  CHECK(collv::test::run_cli("prove " + dir, out) == kExitOk);
  fs::remove_all(dir);
}

TEST_CASE("every-p: verify --every-p reports the proof under the model (text, JSON and JUnit)",
          "[every-p]") {
  std::string out;
  std::string args = "verify " + kRing + " " + kRoot +
                     "/models/mpich/allgather_recursive_doubling.coll -t complete:4 --every-p";
  REQUIRE(collv::test::run_cli(args, out) == kExitOk);
  CHECK(out.find("  ^ every p: proved for every p and count (") != std::string::npos);
  CHECK(out.find("allgather_ring.proof") != std::string::npos);
  // One line: the recursive-doubling model has no proof, so nothing is said of it.
  CHECK(out.find("every p:") == out.rfind("every p:"));
  REQUIRE(collv::test::run_cli(args + " --json -", out) == kExitOk);
  CHECK(out.find("\"every_p\": \"proved for every p and count (") != std::string::npos);
  // JUnit: one testcase for the proved model, passing (no <skipped>), its text as a property.
  REQUIRE(collv::test::run_cli(args + " --junit -", out) == kExitOk);
  auto at = out.find("name=\"every-p\"");
  REQUIRE(at != std::string::npos);
  CHECK(out.find("name=\"every-p\"", at + 1) == std::string::npos);
  auto end = out.find("</testcase>", at);
  CHECK(out.substr(at, end - at).find("value=\"proved for every p and count (") !=
        std::string::npos);
  CHECK(out.substr(at, end - at).find("<skipped") == std::string::npos);
  // A proof that did not go through is skipped with its reason, never a pass.
  collv::VerifyReport rep;
  collv::VerifyGroup g;
  g.model = "m";
  g.family = "complete";
  g.every_p = "disproved: postcondition-blocks fails at p = 65";
  rep.groups.push_back(g);
  std::string x = collv::report_to_junit(rep);
  CHECK(x.find("<skipped message=\"not proved for every p: disproved: postcondition-blocks") !=
        std::string::npos);
  CHECK(x.find("skipped=\"1\"") != std::string::npos);
  // Without the flag nothing is run or said.
  REQUIRE(collv::test::run_cli("verify " + kRing + " -t complete:4", out) == kExitOk);
  CHECK(out.find("every p") == std::string::npos);
}

TEST_CASE(
    "every-p: alltoall: Open MPI's pairwise exchange is proved in MPI's layout, a wrong block, "
    "a missing local copy and a mutant past p = 64 are disproved",
    "[every-p]") {
  const std::string model = kRoot + "/models/openmpi/alltoall_pairwise.coll";
  const std::string proof = kProofs + "/alltoall_pairwise_ompi.proof";
  EveryPOutcome r = prove(model, proof);
  INFO(r.note);
  REQUIRE(r.exit == kExitOk);
  std::string all;
  for (const auto& l : r.lines) all += l + "\n";
  for (const char* n : {"postcondition-blocks ", "postcondition-length ", "nodup-x-line-24 ",
                        "consecution-result-loop-step ", "match-line-24 ", "steps "})
    CHECK(all.find(n) != std::string::npos);
  std::string text = collv::test::slurp(model), pf = collv::test::slurp(proof);
  // The own block copied from block 0 of the input: rank r's block r is not its own block r.
  r = prove_text(replaced(text, ":= x[my_id * E .. my_id * E + E - 1];", ":= x[0 .. E - 1];"), pf);
  INFO(r.note);
  CHECK(r.exit == kExitViolation);
  CHECK(r.failed_obligation == "postcondition-blocks");
  CHECK(r.p == 2);
  // No local copy: the last rank's output stops one block short (and block r is missing).
  r = prove_text(replaced(text, "    result[my_id * E .. my_id * E + E - 1] :=", "    nop :="), pf);
  INFO(r.note);
  CHECK(r.exit == kExitViolation);
  CHECK(r.failed_obligation.rfind("postcondition-", 0) == 0);
  // The receiver's block for the sender taken for the sender's own one: the layout is transposed
  // (rank r's block b would be rank r's input block b, allgather-like), which the block
  // obligation tells apart.
  r = prove_text(replaced(text, "send x[sendto * E .. sendto * E + E - 1]",
                          "send x[my_id * E .. my_id * E + E - 1]"),
                 pf);
  INFO(r.note);
  CHECK(r.exit == kExitViolation);
  // The mutant that sends its own block in the last round past p = 64, with the correct proof.
  r = prove(kProofs + "/mutants/alltoall_pairwise_p64.coll", proof);
  INFO(r.note);
  CHECK(r.exit == kExitViolation);
  CHECK(r.failed_obligation == "consecution-result-loop-step");
  CHECK(r.p == 65);
  CHECK(r.note.find("executor on complete:65") != std::string::npos);
}

TEST_CASE(
    "every-p: Open MPI's ring allgather and ring reduce-scatter are proved, the reduce-scatter "
    "dropping its own contribution above count 1,000 is disproved at count 1,001",
    "[every-p][heavy]") {
  for (const char* name : {"allgather_ring", "reduce_scatter_ring"}) {
    EveryPOutcome r =
        prove(kRoot + "/models/openmpi/" + name + ".coll", kProofs + "/" + name + "_ompi.proof");
    INFO(name << ": " << r.note);
    CHECK(r.exit == kExitOk);
  }
  const std::string rs = kRoot + "/models/openmpi/reduce_scatter_ring.coll";
  const std::string pf = collv::test::slurp(kProofs + "/reduce_scatter_ring_ompi.proof");
  EveryPOutcome r = prove(kProofs + "/mutants/reduce_scatter_ring_ompi_count1000.coll",
                          kProofs + "/reduce_scatter_ring_ompi.proof");
  INFO(r.note);
  CHECK(r.exit == kExitViolation);
  CHECK(r.failed_obligation == "postcondition-blocks");
  CHECK(r.p == 2);
  CHECK(r.count == 1001);
  // acc's invariant claiming one reduced block too many: initiation fails, the program is right.
  r = prove_text(collv::test::slurp(rs),
                 replaced(pf, "(< (mod (- r b) p) k)", "(<= (mod (- r b) p) k)"));
  INFO(r.note);
  CHECK(r.exit == kExitInconclusive);
  CHECK(r.failed_obligation == "initiation-acc-loop-k");
  // Rank order is not what the ring computes: without `operator commutative` it is disproved.
  r = prove_text(replaced(collv::test::slurp(rs), "  operator   commutative\n", ""), pf);
  INFO(r.note);
  CHECK(r.exit == kExitViolation);
}

TEST_CASE("every-p: z3 alone re-checks every certificate of every proved model",
          "[every-p][slow]") {
  int models = 0;
  for (const auto& e : fs::directory_iterator(kProofs)) {
    if (e.path().extension() != ".proof") continue;
    EveryPProof pf = parse_every_p_proof(e.path().string());
    if (pf.expect != "proved") continue;
    // Proofs of minutes: their own tests prove them and have z3 re-check every certificate.
    if (proved_in_own_test(e.path().filename().string())) continue;
    std::string dir = collv::test::unique_temp("every_p_recheck");
    EveryPOutcome r = prove((e.path().parent_path() / pf.model).string(), e.path().string(), dir);
    INFO(e.path().string() << ": " << r.note);
    REQUIRE(r.exit == kExitOk);
    CHECK(recheck_certificates(dir) == static_cast<int>(r.obligations));
    fs::remove_all(dir);
    ++models;
  }
  CHECK(models >= 7);
}

namespace {

// A ring all-reduce of whole vectors (one block): p - 1 rounds, each adds the left neighbour's
// input, which it then passes on.
const std::string kWholeRing = R"(model allreduce_whole_ring
  collective allreduce
  topology   complete, ring
  operator   commutative
  input      buf
  output     buf
  steps      if count = 0 then 0 else p - 1
procedure ALLREDUCE_WHOLE_RING(my_id, buf)
begin
  if count > 0 then
    t := buf;
    for i := 1 to p - 1 do
      send t to (my_id + 1) mod p;
      receive t from (my_id - 1) mod p;
      buf := t + buf;
    endfor;
  endif;
end ALLREDUCE_WHOLE_RING
)";
const std::string kWholeRingProof = R"(kind every-p
model allreduce_whole_ring
invariant i t length 1
invariant i t block (sm 0 (mod (+ (- r i) 1) p) 1)
invariant i buf length 1
invariant i buf block (sm 0 (mod (+ (- r i) 1) p) i)
)";

}  // namespace

TEST_CASE(
    "every-p: allreduce: a whole-vector ring is proved, a round short and rank order "
    "fail the allreduce postcondition",
    "[every-p]") {
  EveryPOutcome r = prove_text(kWholeRing, kWholeRingProof);
  INFO(r.note);
  REQUIRE(r.exit == kExitOk);
  r = prove_text(replaced(kWholeRing, "for i := 1 to p - 1 do", "for i := 1 to p - 2 do"),
                 kWholeRingProof);
  INFO(r.note);
  CHECK(r.exit == kExitViolation);
  CHECK(r.failed_obligation == "postcondition-blocks");
  CHECK(r.p == 2);
  // The sum ends in ring order from r + 1: not rank order without `operator commutative`.
  r = prove_text(replaced(kWholeRing, "  operator   commutative\n", ""), kWholeRingProof);
  INFO(r.note);
  CHECK(r.exit == kExitViolation);
  CHECK(r.failed_obligation == "postcondition-blocks");
}

TEST_CASE(
    "every-p: allreduce by chunks: NCCL's ring all-reduce is proved for every p and count, "
    "a slice that is not a chunk, a chunk written into another, and chunks that miss elements "
    "above count 1,000 are not",
    "[every-p][slow]") {
  const std::string model = kRoot + "/models/nccl/allreduce_ring_nccl.coll";
  const std::string proof = kProofs + "/allreduce_ring_nccl.proof";
  EveryPOutcome r = prove(model, proof);
  INFO(r.note);
  REQUIRE(r.exit == kExitOk);
  std::string all;
  for (const auto& l : r.lines) all += l + "\n";
  for (const char* n : {"chunk-line-30 ", "consecution-buf-loop-j#2 ", "postcondition-blocks ",
                        "combine-line-45 ", "steps "})
    CHECK(all.find(n) != std::string::npos);
  std::string text = collv::test::slurp(model), pf = collv::test::slurp(proof);
  // The first send's slice one element to the right: not chunk c.
  r = prove_text(replaced(text, "o := min(c * cs, count);", "o := min(c * cs + 1, count);"), pf);
  INFO(r.note);
  CHECK(r.exit != kExitOk);
  CHECK(r.failed_obligation == "chunk-line-30");
  // The last chunk received written into the chunk after it.
  r = prove_text(replaced(text, "    c := (my_id + 1) mod p;\n", "    c := (my_id + 2) mod p;\n"),
                 pf);
  INFO(r.note);
  CHECK(r.exit != kExitOk);
  CHECK(r.failed_obligation.rfind("assign-length-line-", 0) == 0);
  // Chunks rounded down above count 1,000: p cs < count, the last elements are never reduced.
  r = prove(kProofs + "/mutants/allreduce_ring_nccl_count1000.coll", proof);
  INFO(r.note);
  CHECK(r.exit == kExitViolation);
  CHECK(r.failed_obligation.rfind("chunk-", 0) == 0);
  CHECK(r.count == 1001);
}

TEST_CASE("every-p: a proof's chunks line is checked", "[every-p]") {
  CHECK_THROWS_WITH(parse_every_p_proof_text("kind every-p\nmodel m\nchunks cs\n", "m.proof"),
                    Catch::Contains("m.proof:3: chunks needs UNIT INDEX"));
  // chunks apply to allreduce only; and name variables the program has at its slices.
  EveryPOutcome r =
      prove_text(collv::test::slurp(kRing),
                 collv::test::slurp(kProofs + "/allgather_ring.proof") + "chunks E j\n");
  CHECK(r.exit == kExitInconclusive);
  CHECK(r.note.find("allreduce only") != std::string::npos);
  r = prove_text(collv::test::slurp(kRoot + "/models/nccl/allreduce_ring_nccl.coll"),
                 replaced(collv::test::slurp(kProofs + "/allreduce_ring_nccl.proof"),
                          "\nchunks cs c\n", "\nchunks cs cc\n"));
  CHECK(r.exit == kExitInconclusive);
  CHECK(r.note.find("'cc', which has no integer value") != std::string::npos);
  // One partition: a unit that changes, or depends on the rank, is refused.
  std::string nccl = collv::test::slurp(kRoot + "/models/nccl/allreduce_ring_nccl.coll");
  std::string pf = collv::test::slurp(kProofs + "/allreduce_ring_nccl.proof");
  r = prove_text(replaced(nccl, "    c := my_id;\n", "    cs := cs + 2;\n    c := my_id;\n"), pf);
  CHECK(r.exit == kExitInconclusive);
  CHECK(r.note.find("is not the value it had at the first slice") != std::string::npos);
  r = prove_text(replaced(nccl, "div 2 * 2;", "div 2 * 2 + my_id;"), pf);
  CHECK(r.exit == kExitInconclusive);
  CHECK(r.note.find("depends on the rank") != std::string::npos);
}

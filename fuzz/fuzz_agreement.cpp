// libFuzzer harness: collv-mpi's argument agreement (verify/agreement.hpp), the pure functions its
// processes run on what they exchange before and between runs. The input is split at 0xFF bytes
// into the processes' messages (at most 16); each is read both as an encoded command line and as
// an encoded status, and the disagreement functions must give an answer without crashing. Then
// the same bytes, split at NUL into arguments, must travel and come back unchanged (a property:
// a process's own command line always agrees with itself).
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "verify/agreement.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 1 << 16) return 0;
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> parts;
  std::size_t at = 0;
  while (parts.size() < 16) {
    std::size_t end = in.find('\xff', at);
    parts.emplace_back(in.substr(at, end == std::string_view::npos ? in.size() - at : end - at));
    if (end == std::string_view::npos) break;
    at = end + 1;
  }
  for (const auto& p : parts) {
    (void)collv::decode_arguments(p);
    (void)collv::decode_status(p);
  }
  (void)collv::argument_disagreement(parts);
  (void)collv::status_disagreement(parts);

  // Arguments split at NUL: encoded, they decode to themselves and agree with themselves, and
  // one changed argument is always a disagreement.
  std::vector<std::string> args;
  at = 0;
  for (;;) {
    std::size_t end = in.find('\0', at);
    args.emplace_back(in.substr(at, end == std::string_view::npos ? in.size() - at : end - at));
    if (end == std::string_view::npos) break;
    at = end + 1;
  }
  if (args.size() > collv::kMaxAgreedArgs) return 0;  // refused as a disagreement, by design
  const std::string enc = collv::encode_arguments(args);
  auto back = collv::decode_arguments(enc);
  if (!back || *back != args) std::abort();
  if (collv::argument_disagreement({enc, enc, enc})) std::abort();
  std::vector<std::string> changed = args;
  changed.back() += "x";
  if (!collv::argument_disagreement({enc, collv::encode_arguments(changed)})) std::abort();
  // Statuses the same way: the same Running status agrees; Running against Done does not.
  collv::RankStatus s;
  s.run = args.front();
  const std::string st = collv::encode_status(s);
  auto sb = collv::decode_status(st);
  if (!sb || (s.run.size() <= 4096 && sb->run != s.run)) std::abort();
  if (collv::status_disagreement({st, st})) std::abort();
  collv::RankStatus done;
  done.state = collv::RankStatus::State::Done;
  if (!collv::status_disagreement({st, collv::encode_status(done)})) std::abort();
  return 0;
}

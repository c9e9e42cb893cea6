// The agreement of a partitioned run's processes (see agreement.hpp).
#include "verify/agreement.hpp"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "util/text.hpp"

namespace collv {

namespace {

// Names the protocol: processes of builds that exchange different records disagree here first.
constexpr std::string_view kArgsTag = "collv-mpi args 1";
constexpr std::string_view kStatusTag = "collv-mpi status 1";
// A process's error is collv's own text; more than this is cut (a readable message).
constexpr std::size_t kMaxError = 4096;

void put32(std::string& s, std::uint32_t x) {
  for (int i = 0; i < 4; ++i) s += static_cast<char>((x >> (8 * i)) & 0xFF);
}

// Reads a 32-bit number at `at`, advancing it; false when the bytes end first.
bool get32(std::string_view s, std::size_t& at, std::uint32_t& x) {
  if (s.size() - at < 4) return false;
  x = 0;
  for (int i = 0; i < 4; ++i) x |= std::uint32_t{static_cast<unsigned char>(s[at + i])} << (8 * i);
  at += 4;
  return true;
}

bool get_bytes(std::string_view s, std::size_t& at, std::string& out) {
  std::uint32_t n = 0;
  if (!get32(s, at, n) || s.size() - at < n) return false;
  out.assign(s.substr(at, n));
  at += n;
  return true;
}

// Built by appending: `"'" + std::string` makes GCC 12 warn (-Wrestrict) from its own header.
std::string quoted(std::string_view s) {
  std::string out(1, '\'');
  out += printable(s, 80);
  out += '\'';
  return out;
}

}  // namespace

std::string encode_arguments(const std::vector<std::string>& args) {
  std::string s(kArgsTag);
  put32(s, static_cast<std::uint32_t>(args.size()));
  for (const auto& a : args) {
    put32(s, static_cast<std::uint32_t>(a.size()));
    s += a;
  }
  return s;
}

std::optional<std::vector<std::string>> decode_arguments(std::string_view bytes) {
  if (bytes.substr(0, kArgsTag.size()) != kArgsTag) return std::nullopt;
  std::size_t at = kArgsTag.size();
  std::uint32_t n = 0;
  if (!get32(bytes, at, n) || n > kMaxAgreedArgs) return std::nullopt;
  std::vector<std::string> args(n);
  for (auto& a : args)
    if (!get_bytes(bytes, at, a)) return std::nullopt;
  if (at != bytes.size()) return std::nullopt;
  return args;
}

std::optional<std::string> argument_disagreement(const std::vector<std::string>& encoded) {
  if (encoded.size() < 2) return std::nullopt;
  const std::string tail = "; every process of a partitioned run takes the same command line";
  auto decode = [&](std::size_t r) -> std::optional<std::vector<std::string>> {
    if (encoded[r].size() > kMaxAgreedBytes) return std::nullopt;
    return decode_arguments(encoded[r]);
  };
  const auto root = decode(0);
  if (!root)
    return fmt::format(
        "rank 0's command line ({} bytes) is not one collv-mpi compares (more than {} arguments "
        "or {} bytes, or another build of collv-mpi){}",
        encoded[0].size(), kMaxAgreedArgs, kMaxAgreedBytes, tail);
  for (std::size_t r = 1; r < encoded.size(); ++r) {
    if (encoded[r] == encoded[0]) continue;
    const auto mine = decode(r);
    if (!mine)
      return fmt::format(
          "rank {}'s command line ({} bytes) is not one collv-mpi compares (more than {} "
          "arguments or {} bytes, or another build of collv-mpi){}",
          r, encoded[r].size(), kMaxAgreedArgs, kMaxAgreedBytes, tail);
    const auto& a = *root;
    const auto& b = *mine;
    std::size_t i = 0;
    while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
    std::string what;
    if (i < a.size() && i < b.size())
      what = fmt::format("its argument {} is {} where rank 0's is {}", i + 1, quoted(b[i]),
                         quoted(a[i]));
    else if (i < b.size())
      what = fmt::format("it has {} argument(s) more, from argument {} ({})", b.size() - a.size(),
                         i + 1, quoted(b[i]));
    else
      what = fmt::format("it has {} argument(s) fewer: rank 0's argument {} is {}",
                         a.size() - b.size(), i + 1, quoted(a[i]));
    return fmt::format("rank {} was started with other arguments than rank 0: {}{}", r, what, tail);
  }
  return std::nullopt;
}

std::string encode_status(const RankStatus& s) {
  std::string out(kStatusTag);
  out += static_cast<char>(s.state);
  put32(out, static_cast<std::uint32_t>(s.code));
  for (std::string_view e : {std::string_view(s.error), std::string_view(s.run)}) {
    put32(out, static_cast<std::uint32_t>(std::min(e.size(), kMaxError)));
    out += e.substr(0, kMaxError);
  }
  return out;
}

std::optional<RankStatus> decode_status(std::string_view bytes) {
  if (bytes.substr(0, kStatusTag.size()) != kStatusTag) return std::nullopt;
  std::size_t at = kStatusTag.size();
  if (at >= bytes.size()) return std::nullopt;
  const auto state = static_cast<unsigned char>(bytes[at++]);
  if (state > 2) return std::nullopt;
  RankStatus s;
  s.state = static_cast<RankStatus::State>(state);
  std::uint32_t code = 0;
  if (!get32(bytes, at, code) || !get_bytes(bytes, at, s.error) || !get_bytes(bytes, at, s.run) ||
      at != bytes.size() || s.error.size() > kMaxError || s.run.size() > kMaxError)
    return std::nullopt;
  s.code = static_cast<std::int32_t>(code);
  return s;
}

std::optional<Disagreement> status_disagreement(const std::vector<std::string>& encoded) {
  using State = RankStatus::State;
  std::vector<RankStatus> all;
  for (std::size_t r = 0; r < encoded.size(); ++r) {
    auto s = decode_status(encoded[r]);
    if (!s)
      return Disagreement{fmt::format("rank {} sent a status collv-mpi cannot read ({} bytes; "
                                      "another build of collv-mpi?)",
                                      r, encoded[r].size()),
                          2};
    all.push_back(std::move(*s));
  }
  if (all.empty()) return std::nullopt;
  bool same = true;
  for (const auto& s : all)
    same = same && s.state == all[0].state &&
           (s.state != State::Failed || s.error == all[0].error) &&
           (s.state != State::Running || s.run == all[0].run);
  if (same) return std::nullopt;
  const std::size_t k = all.size();
  // The lowest rank that failed where another did not fail the same way.
  for (std::size_t r = 0; r < k; ++r) {
    if (all[r].state != State::Failed) continue;
    const int code = all[r].code == 0 ? 2 : all[r].code;
    return Disagreement{fmt::format("rank {} of {} stopped where the others did not: {}", r, k,
                                    all[r].error.empty() ? "(no message)" : all[r].error),
                        code};
  }
  // Every one at the start of a run, not the same one.
  if (std::all_of(all.begin(), all.end(),
                  [](const RankStatus& s) { return s.state == State::Running; })) {
    std::size_t r = 1;
    while (all[r].run == all[0].run) ++r;
    return Disagreement{fmt::format("rank {} of {} is about to run {} where rank 0 runs {}: the "
                                    "processes did not find the same runs (the same files on every "
                                    "host?)",
                                    r, k, all[r].run, all[0].run),
                        2};
  }
  // Some finished while others were at the start of a run.
  std::size_t done = 0, running = 0;
  while (all[done].state != State::Done) ++done;
  while (all[running].state != State::Running) ++running;
  return Disagreement{fmt::format("rank {} of {} finished its command while rank {} had runs left: "
                                  "the processes did not find the same runs (the same files on "
                                  "every host?)",
                                  done, k, running),
                      2};
}

}  // namespace collv

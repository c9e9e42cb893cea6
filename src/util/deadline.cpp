// The process-wide wall-clock limit (see deadline.hpp).
#include "util/deadline.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>

#include "util/error.hpp"

namespace collv {

namespace {
using Clock = std::chrono::steady_clock;
std::atomic<std::int64_t> g_deadline{0};  // steady_clock ticks; 0 = none
std::atomic<std::uint64_t> g_ms{0};
}  // namespace

void set_deadline_ms(std::uint64_t ms) {
  g_ms = ms;
  if (ms == 0) {
    g_deadline = 0;
    return;
  }
  auto at = Clock::now() + std::chrono::milliseconds(std::min<std::uint64_t>(ms, 1ULL << 40));
  g_deadline = at.time_since_epoch().count();
}

bool deadline_passed() {
  std::int64_t d = g_deadline.load(std::memory_order_relaxed);
  return d != 0 && Clock::now().time_since_epoch().count() >= d;
}

std::uint64_t deadline_remaining_ms() {
  std::int64_t d = g_deadline.load(std::memory_order_relaxed);
  if (d == 0) return UINT64_MAX;
  std::int64_t now = Clock::now().time_since_epoch().count();
  if (now >= d) return 0;
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::duration(d - now)).count());
}

std::uint64_t deadline_ms() { return g_ms; }

void check_deadline(const std::string& what) {
  if (deadline_passed())
    throw LimitError(what + " stopped at the time limit of --timeout " + std::to_string(g_ms) +
                     " ms; raise --timeout to allow more");
}

}  // namespace collv

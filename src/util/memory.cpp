// The process-wide memory budget (see memory.hpp).
#include "util/memory.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>

#include <fmt/format.h>
#include <unistd.h>

namespace collv {

namespace {
std::atomic<std::uint64_t> g_limit{8ULL << 30};
}

void set_memory_limit(std::uint64_t bytes) { g_limit = bytes; }
std::uint64_t memory_limit() { return g_limit; }

std::uint64_t resident_bytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  unsigned long long size = 0, resident = 0;
  int n = std::fscanf(f, "%llu %llu", &size, &resident);
  std::fclose(f);
  if (n != 2) return 0;
  long page = sysconf(_SC_PAGESIZE);
  return resident * static_cast<std::uint64_t>(page > 0 ? page : 4096);
}

std::string mib_text(std::uint64_t bytes) {
  if (bytes == UINT64_MAX) return "more than 16 EiB";
  double m = static_cast<double>(bytes) / (1024.0 * 1024.0);
  if (m >= 1024.0 * 1024.0) return fmt::format("{:.1f} TiB", m / (1024.0 * 1024.0));
  if (m >= 1024.0) return fmt::format("{:.1f} GiB", m / 1024.0);
  return fmt::format("{:.1f} MiB", m);
}

void require_memory(std::uint64_t bytes, const std::string& what, std::uint64_t limit) {
  std::uint64_t in_use = resident_bytes();
  if (sat_add(bytes, in_use) <= limit) return;
  throw LimitError(fmt::format(
      "{} needs about {}, more than the memory limit of {} ({} in use already); use a smaller "
      "input or raise --max-memory",
      what, mib_text(bytes), mib_text(limit), mib_text(in_use)));
}

MemoryWatch::MemoryWatch(std::string what, std::uint64_t limit)
    : what_(std::move(what)), limit_(limit), base_(resident_bytes()) {}

void MemoryWatch::charge(std::uint64_t bytes) {
  pending_ = sat_add(pending_, bytes);
  // Charges are estimates (an allocator's overhead, a hash table's growth are not in them), so
  // the resident size is re-read well before the charges alone reach the limit: whenever they
  // pass an eighth of the room left at the last reading (at least 1 MiB). The room shrinks as the
  // limit nears, so the overshoot stays a small fraction of the limit.
  std::uint64_t room = base_ < limit_ ? limit_ - base_ : 0;
  std::uint64_t step = std::max<std::uint64_t>(room / 8, std::uint64_t{1} << 20);
  if (pending_ < step && sat_add(base_, pending_) <= limit_) return;
  // The charges could have crossed the limit; the allocator may have reused freed memory, so
  // read the real size before deciding.
  base_ = resident_bytes();
  pending_ = bytes;
  if (sat_add(base_, bytes) > limit_) over(base_, bytes);
}

void MemoryWatch::check() {
  base_ = resident_bytes();
  pending_ = 0;
  if (base_ > limit_) over(base_, 0);
}

void MemoryWatch::over(std::uint64_t in_use, std::uint64_t more) const {
  throw LimitError(fmt::format(
      "{} stopped at the memory limit of {}: the process holds {}{}; use a smaller input or "
      "raise --max-memory",
      what_, mib_text(limit_), mib_text(in_use),
      more >= (std::uint64_t{1} << 20) ? fmt::format(" and needs {} more", mib_text(more))
                                       : std::string()));
}

}  // namespace collv

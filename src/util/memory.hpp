// The process-wide memory budget. `--max-memory` sets it; readers and the executor check what an
// input needs against it before allocating (require_memory), and long computations watch the
// process's resident size while they run (MemoryWatch).
//
//   collv::set_memory_limit(100ULL << 20);
//   collv::require_memory(p * elems * 8, "the inputs of allgather on ring:100000");  // may throw
//   collv::MemoryWatch w("running m on ring:8");
//   w.charge(bytes_about_to_be_allocated);  // throws LimitError near the limit
#pragma once

#include <cstdint>
#include <string>

#include "util/error.hpp"

namespace collv {

// The limit in bytes for the whole process (default 8 GiB).
void set_memory_limit(std::uint64_t bytes);
std::uint64_t memory_limit();

// The resident set size of this process in bytes (Linux: /proc/self/statm); 0 if unknown.
std::uint64_t resident_bytes();

// "12.5 MiB": for messages.
std::string mib_text(std::uint64_t bytes);

// Throws LimitError if `bytes` more (on top of what the process holds now) would exceed `limit`.
// The message names `what`, the bytes needed, the limit and the bytes in use.
void require_memory(std::uint64_t bytes, const std::string& what,
                    std::uint64_t limit = memory_limit());

// Watches the process while a computation grows: charge() the bytes about to be allocated; the
// resident size is re-read whenever the charges since the last reading could cross the limit, so
// most charges cost an addition. Throws LimitError naming `what` when the limit is reached.
class MemoryWatch {
 public:
  explicit MemoryWatch(std::string what, std::uint64_t limit = memory_limit());
  void charge(std::uint64_t bytes);
  // Re-reads the resident size and throws if it is over the limit.
  void check();
  std::uint64_t limit() const { return limit_; }

 private:
  [[noreturn]] void over(std::uint64_t in_use, std::uint64_t more) const;
  std::string what_;
  std::uint64_t limit_;
  std::uint64_t base_ = 0;     // resident bytes at the last reading
  std::uint64_t pending_ = 0;  // bytes charged since
};

// Saturating arithmetic for size estimates: never wraps, stays at UINT64_MAX.
inline std::uint64_t sat_mul(std::uint64_t a, std::uint64_t b) {
  std::uint64_t r;
  return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}
inline std::uint64_t sat_add(std::uint64_t a, std::uint64_t b) {
  std::uint64_t r;
  return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}

}  // namespace collv

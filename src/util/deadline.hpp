// The process-wide wall-clock limit (`--timeout` of run, verify, synth, prove and topology): long
// computations and the readers call check_deadline() (or a DeadlineTick) in their loops and stop
// with a LimitError (exit 3) naming the limit.
//
//   collv::set_deadline_ms(5000);               // from now; 0 = no limit
//   collv::check_deadline("running m on ring:8");  // throws once 5 s have passed
#pragma once

#include <cstdint>
#include <string>

namespace collv {

void set_deadline_ms(std::uint64_t ms);
// Throws LimitError "WHAT stopped at the time limit of --timeout N ms" once the limit has passed.
void check_deadline(const std::string& what);
bool deadline_passed();
// Milliseconds left before the limit; UINT64_MAX without a limit, 0 once passed.
std::uint64_t deadline_remaining_ms();
// The limit as set (ms; 0 = no limit), for messages that name it.
std::uint64_t deadline_ms();

// The check for a loop over a reader's elements: reads the clock once every 4,096 calls, and
// builds the message only when the limit has passed.
//   DeadlineTick tick;
//   for (...) { tick([&] { return "reading " + file; }); ... }
class DeadlineTick {
 public:
  template <class What>
  void operator()(const What& what) {
    if ((++n_ & 0xFFF) == 0 && deadline_passed()) check_deadline(what());
  }

 private:
  std::uint32_t n_ = 0;
};

}  // namespace collv

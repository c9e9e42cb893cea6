// The process-wide wall-clock limit (`--timeout` of run and topology): long computations call
// check_deadline() in their loops and stop with a LimitError (exit 3) naming the limit.
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

}  // namespace collv

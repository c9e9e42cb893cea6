// Helpers of the tests that read a Trace's payloads (tests/test_dataflow*.cpp).
#pragma once

#include <cstdint>

#include "exec/trace.hpp"

namespace collv::test {

// The trace with every transfer's items at a place of their own, in transfer order (how traces
// were recorded before payloads were shared).
inline Trace unshared(const Trace& t) {
  Trace u = t;
  u.payload.clear();
  for (auto& x : u.transfers) {
    const auto at = static_cast<std::uint32_t>(u.payload.size());
    u.payload.insert(u.payload.end(), t.payload.begin() + x.payload_begin,
                     t.payload.begin() + x.payload_begin + x.payload_len);
    x.payload_begin = at;
  }
  u.payload_shared = false;
  return u;
}

}  // namespace collv::test

// Reading a whole input file under a size bound: a file that never ends (/dev/zero, a FIFO) or a
// huge one is refused after `max_bytes` bytes, never read for ever or into all memory.
//
//   std::string text = collv::read_file_bounded(path, 1 << 20, "a proof file");  // may throw
#pragma once

#include <cstdint>
#include <string>

namespace collv {

// The file's bytes; throws UsageError when it cannot be opened and LimitError ("PATH: a proof file
// larger than 1.0 MiB ...") past max_bytes.
std::string read_file_bounded(const std::string& path, std::uint64_t max_bytes,
                              const std::string& what);

}  // namespace collv

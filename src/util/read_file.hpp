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

// Writes `text` to `path` (replacing it) and closes it; throws UsageError "cannot write 'PATH':
// REASON" if any part fails, including a full device (/dev/full) that only fails on close.
void write_file_checked(const std::string& path, const std::string& text);

// Creates the directory `dir` (and its parents) an option named; throws UsageError "cannot create
// the directory 'DIR' of OPTION: REASON" when it cannot (a path under /dev/null, no permission).
void make_dir_checked(const std::string& dir, const std::string& option);

}  // namespace collv

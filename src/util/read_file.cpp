// Bounded whole-file reading (see read_file.hpp).
#include "util/read_file.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "util/deadline.hpp"
#include "util/error.hpp"
#include "util/memory.hpp"

namespace collv {

std::string read_file_bounded(const std::string& path, std::uint64_t max_bytes,
                              const std::string& what) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw UsageError("cannot read " + path);
  std::string text;
  // A regular file's size is known: reserved at once, the text never doubles (a doubling held
  // the old and the new copy together: 768 MB of resident memory for a 278 MB file).
  std::error_code ec;
  const std::uint64_t known =
      std::filesystem::is_regular_file(path, ec) ? std::filesystem::file_size(path, ec) : 0;
  if (!ec && known > 0 && known <= max_bytes) text.reserve(static_cast<std::size_t>(known) + 1);
  char buf[1 << 16];
  while (f) {
    if (deadline_passed()) check_deadline("reading " + path);  // --timeout: a slow pipe
    f.read(buf, sizeof buf);
    auto n = static_cast<std::uint64_t>(f.gcount());
    if (text.size() + n > max_bytes)
      throw LimitError(path + ": " + what + " larger than " + mib_text(max_bytes) +
                       " is refused (a file that never ends, such as /dev/zero, is refused "
                       "here too)");
    text.append(buf, static_cast<std::size_t>(n));
  }
  if (f.bad()) throw UsageError("cannot read " + path);
  return text;
}

void write_file_checked(const std::string& path, const std::string& text) {
  errno = 0;
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (f) f.write(text.data(), static_cast<std::streamsize>(text.size()));
  if (f) f.close();
  if (!f)
    throw UsageError("cannot write '" + path + "'" +
                     (errno ? std::string(": ") + std::strerror(errno) : std::string()));
}

void make_dir_checked(const std::string& dir, const std::string& option) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir))
    throw UsageError("cannot create the directory '" + dir + "' of " + option + ": " +
                     (ec ? ec.message() : std::string("not a directory")));
}

}  // namespace collv

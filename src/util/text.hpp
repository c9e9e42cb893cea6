// Text from input files, made safe to echo in an error message.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

namespace collv {

// `s` with control bytes, NUL and DEL written as \xNN and cut to at most `max` bytes (then "...").
inline std::string printable(std::string_view s, std::size_t max = 80) {
  std::string o;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (o.size() >= max) {
      o += "...";
      break;
    }
    auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      o += buf;
    } else {
      o += static_cast<char>(c);
    }
  }
  return o;
}

// nlohmann's messages start with "[json.exception.parse_error.101] "; users need the rest.
inline std::string json_error_text(std::string_view what) {
  if (what.rfind("[json.exception.", 0) == 0) {
    auto end = what.find("] ");
    if (end != std::string_view::npos) what.remove_prefix(end + 2);
  }
  return printable(what, 200);
}

}  // namespace collv

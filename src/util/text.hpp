// Text from input files, made safe to echo in an error message.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace collv {

// FNV-1a, 64 bits: a cheap, stable hash of bytes (not a cryptographic one), continued from `h`.
inline std::uint64_t fnv1a(std::string_view s, std::uint64_t h = 1469598103934665603ull) {
  for (unsigned char ch : s) {
    h ^= ch;
    h *= 1099511628211ull;
  }
  return h;
}

// The length of the well-formed UTF-8 sequence (RFC 3629: no overlong forms, no surrogates, at
// most U+10FFFF) that starts at s[i]; 0 if none does.
inline std::size_t utf8_length_at(std::string_view s, std::size_t i) {
  auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) return 1;
  std::size_t len = c >= 0xC2 && c <= 0xDF   ? 2
                    : c >= 0xE0 && c <= 0xEF ? 3
                    : c >= 0xF0 && c <= 0xF4 ? 4
                                             : 0;
  if (len == 0 || i + len > s.size()) return 0;
  for (std::size_t k = 1; k < len; ++k)
    if ((b(i + k) & 0xC0) != 0x80) return 0;
  const unsigned char n = b(i + 1);
  if ((c == 0xE0 && n < 0xA0) || (c == 0xED && n > 0x9F) || (c == 0xF0 && n < 0x90) ||
      (c == 0xF4 && n > 0x8F))
    return 0;
  return len;
}

// The offset of the first byte of `s` that is not part of well-formed UTF-8; npos if none.
inline std::size_t utf8_invalid_at(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    std::size_t n = utf8_length_at(s, i);
    if (n == 0) return i;
    i += n;
  }
  return std::string_view::npos;
}

// `s` with every byte that is not part of well-formed UTF-8 replaced by U+FFFD, as nlohmann's
// dump does with error_handler_t::replace.
inline std::string utf8_replaced(std::string_view s) {
  std::string o;
  o.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    std::size_t n = utf8_length_at(s, i);
    if (n == 0) {
      o += "\xEF\xBF\xBD";
      ++i;
    } else {
      o.append(s.substr(i, n));
      i += n;
    }
  }
  return o;
}

// Messages that quote input show at most this many bytes of it (printable(s, kMaxQuotedBytes)).
inline constexpr std::size_t kMaxQuotedBytes = 200;

// `s` with control bytes, NUL, DEL and bytes that are not well-formed UTF-8 written as \xNN and
// cut to at most `max` bytes (then "...").
inline std::string printable(std::string_view s, std::size_t max = 80) {
  std::string o;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (o.size() >= max) {
      o += "...";
      break;
    }
    auto c = static_cast<unsigned char>(s[i]);
    if (std::size_t n = c >= 0x80 ? utf8_length_at(s, i) : 0; n > 1) {
      o.append(s.substr(i, n));
      i += n - 1;
    } else if (c < 0x20 || c >= 0x7F) {
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

// Why `text` is not JSON, in collv's words: where its first byte that is not UTF-8 is ("byte 3
// (line 1, column 4): byte 0xE6 is not valid UTF-8; JSON text must be UTF-8"), or else the
// parser's message without its library prefix ("not valid JSON: parse error at line 1, ...").
inline std::string json_parse_error(std::string_view text, std::string_view what) {
  std::size_t at = utf8_invalid_at(text);
  if (at == std::string_view::npos) return "not valid JSON: " + json_error_text(what);
  std::size_t line = 1, col = 1;
  for (std::size_t i = 0; i < at; ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) {
      ++col;
    }
  }
  char byte[8];
  std::snprintf(byte, sizeof byte, "0x%02X", static_cast<unsigned char>(text[at]));
  return "byte " + std::to_string(at) + " (line " + std::to_string(line) + ", column " +
         std::to_string(col) + "): byte " + byte + " is not valid UTF-8; JSON text must be UTF-8";
}

}  // namespace collv

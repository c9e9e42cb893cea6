// Reading JSON input files (see json_read.hpp).
#include "util/json_read.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <iterator>
#include <set>
#include <vector>

#include <fmt/format.h>

#include "util/deadline.hpp"
#include "util/error.hpp"
#include "util/text.hpp"

namespace collv {

namespace {

using nlohmann::json;

// A character iterator over the text that records how far the parser has read, so that an
// event (a key, an opening bracket) can be placed at file:line:col.
class TrackedIt {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;

  TrackedIt(const char* p, const char** seen) : p_(p), seen_(seen) {}
  reference operator*() const { return *p_; }
  TrackedIt& operator++() {
    *seen_ = ++p_;
    return *this;
  }
  TrackedIt operator++(int) {
    TrackedIt old = *this;
    ++*this;
    return old;
  }
  bool operator==(const TrackedIt& o) const { return p_ == o.p_; }
  bool operator!=(const TrackedIt& o) const { return p_ != o.p_; }

 private:
  const char* p_;
  const char** seen_;
};

// The SAX events of nlohmann's parser, checked and then handed to its own DOM builder (the one
// json::parse uses). The parser itself does not recurse; the checks here stop the nesting before
// the value is ever walked recursively.
class CheckedSax {
 public:
  CheckedSax(json& root, std::string_view text, const std::string& source, const char** seen)
      : dom_(root, true), text_(text), source_(source), seen_(seen) {}

  // Each event returns true to read on; once the nesting is too deep (counting mode) nothing
  // more is built.
  bool null() { return !value() || dom_.null(); }
  bool boolean(bool v) { return !value() || dom_.boolean(v); }
  bool number_integer(json::number_integer_t v) { return !value() || dom_.number_integer(v); }
  bool number_unsigned(json::number_unsigned_t v) { return !value() || dom_.number_unsigned(v); }
  bool number_float(json::number_float_t v, const json::string_t& s) {
    return !value() || dom_.number_float(v, s);
  }
  bool string(json::string_t& v) { return !value() || dom_.string(v); }
  bool binary(json::binary_t& v) { return !value() || dom_.binary(v); }

  bool start_object(std::size_t n) { return !open(true) || dom_.start_object(n); }
  bool start_array(std::size_t n) { return !open(false) || dom_.start_array(n); }
  bool end_object() { return !close() || dom_.end_object(); }
  bool end_array() { return !close() || dom_.end_array(); }

  bool key(json::string_t& k) {
    tick();
    if (too_deep_) return true;
    Frame& f = frames_.back();
    if (!f.keys.insert(k).second)
      fail(
          fmt::format("{}: the key \"{}\" is given twice in this object (JSON readers differ on "
                      "which one counts; collv reads a key once)",
                      path(frames_.size() - 1), printable(k, 40)));
    f.key = k;
    return dom_.key(k);
  }

  template <class Exception>
  bool parse_error(std::size_t, const std::string&, const Exception& e) {
    if (too_deep_) deep_error();
    throw UsageError(source_ + ": " + json_parse_error(text_, e.what()));
  }

  // Called after the parse: a value nested too deep is refused with the depth it reached.
  void finish() const {
    if (too_deep_) deep_error();
  }

 private:
  struct Frame {
    bool object = false;
    std::size_t index = 0;  // arrays: the element being read
    std::string key;        // objects: the key being read
    std::set<std::string> keys;
  };

  void tick() {
    tick_([&] { return "reading " + source_; });
  }

  // A value that is not a container ends an element of the enclosing array. Each of these
  // returns whether the event goes on to the DOM builder.
  bool value() {
    tick();
    if (too_deep_) return false;
    if (!frames_.empty() && !frames_.back().object) ++frames_.back().index;
    return true;
  }

  bool open(bool object) {
    tick();
    depth_ = too_deep_ ? depth_ + 1 : frames_.size() + 1;
    max_depth_ = std::max(max_depth_, depth_);
    if (too_deep_) return false;
    if (depth_ > kMaxJsonDepth) {
      // Read on without building, only to learn how deep the file goes.
      too_deep_ = true;
      deep_at_ = where() + ": " + path(frames_.size());
      return false;
    }
    frames_.push_back({object, 0, {}, {}});
    return true;
  }

  bool close() {
    tick();
    if (too_deep_) {
      --depth_;
      return false;
    }
    frames_.pop_back();
    depth_ = frames_.size();
    if (!frames_.empty() && !frames_.back().object) ++frames_.back().index;
    return true;
  }

  // The JSON path of the value being read inside the first `n` frames: $.transfers[3].route.
  std::string path(std::size_t n) const {
    std::string p = "$";
    for (std::size_t k = 0; k < n && p.size() <= kMaxQuotedBytes; ++k) {
      const Frame& f = frames_[k];
      if (!f.object) {
        p += fmt::format("[{}]", f.index);
      } else if (!f.key.empty() && std::all_of(f.key.begin(), f.key.end(), [](char c) {
                   return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
                 })) {
        p += "." + f.key;
      } else {
        p += "[\"" + printable(f.key, 40) + "\"]";
      }
    }
    if (p.size() > kMaxQuotedBytes) p = p.substr(0, kMaxQuotedBytes) + "...";
    return p;
  }

  // file:line:col of the last byte the parser read.
  std::string where() const {
    std::size_t at = static_cast<std::size_t>(*seen_ - text_.data());
    if (at > 0) --at;
    std::size_t line = 1, col = 1;
    for (std::size_t i = 0; i < at && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        line = 1 + line, col = 1;
      } else if ((static_cast<unsigned char>(text_[i]) & 0xC0) != 0x80) {
        ++col;
      }
    }
    return fmt::format("{}:{}:{}", source_, line, col);
  }

  [[noreturn]] void fail(const std::string& what) const { throw UsageError(where() + ": " + what); }

  [[noreturn]] void deep_error() const {
    throw UsageError(fmt::format(
        "{}: arrays and objects nested {} deep; collv reads JSON nested at most {} deep "
        "(docs/formats.md, \"JSON inputs\")",
        deep_at_, max_depth_, kMaxJsonDepth));
  }

  nlohmann::detail::json_sax_dom_parser<json> dom_;
  std::string_view text_;
  const std::string& source_;
  const char** seen_;
  std::vector<Frame> frames_;
  std::size_t depth_ = 0, max_depth_ = 0;
  bool too_deep_ = false;
  std::string deep_at_;
  DeadlineTick tick_;
};

}  // namespace

json parse_json_input(std::string_view text, const std::string& source) {
  json root;
  const char* seen = text.data();
  CheckedSax sax(root, text, source, &seen);
  TrackedIt first(text.data(), &seen), last(text.data() + text.size(), &seen);
  try {
    json::sax_parse(first, last, &sax);
  } catch (const json::exception& e) {
    // An exception of the DOM builder itself (a size limit): in collv's words, with the file.
    throw UsageError(source + ": " + json_parse_error(text, e.what()));
  }
  sax.finish();
  return root;
}

std::optional<std::int64_t> json_whole(const json& v, std::int64_t lo, std::int64_t hi) {
  if (v.is_number_unsigned()) {
    auto u = v.get<std::uint64_t>();
    if (hi < 0 || u > static_cast<std::uint64_t>(hi) || static_cast<std::int64_t>(u) < lo)
      return std::nullopt;
    return static_cast<std::int64_t>(u);
  }
  if (v.is_number_integer()) {
    auto i = v.get<std::int64_t>();
    if (i < lo || i > hi) return std::nullopt;
    return i;
  }
  if (!v.is_number_float()) return std::nullopt;
  double d = v.get<double>();
  // Checked as a double before converting: a double outside the 64-bit range does not convert.
  if (!std::isfinite(d) || d != std::floor(d) || d < -9.2e18 || d > 9.2e18) return std::nullopt;
  auto i = static_cast<std::int64_t>(d);
  if (i < lo || i > hi) return std::nullopt;
  return i;
}

std::optional<std::uint64_t> json_whole_unsigned(const json& v, std::uint64_t hi) {
  if (v.is_number_unsigned()) {
    auto u = v.get<std::uint64_t>();
    if (u > hi) return std::nullopt;
    return u;
  }
  if (v.is_number_integer()) {
    auto i = v.get<std::int64_t>();
    if (i < 0 || static_cast<std::uint64_t>(i) > hi) return std::nullopt;
    return static_cast<std::uint64_t>(i);
  }
  if (!v.is_number_float()) return std::nullopt;
  double d = v.get<double>();
  if (!std::isfinite(d) || d != std::floor(d) || d < 0 || d >= 18446744073709551616.0)
    return std::nullopt;
  auto u = static_cast<std::uint64_t>(d);
  if (u > hi) return std::nullopt;
  return u;
}

namespace {

// Appends `v` as JSON text to `out` until `out` holds more than `max` bytes.
void excerpt(const json& v, std::string& out, std::size_t max, std::size_t depth) {
  if (out.size() > max) return;
  if (!v.is_structured()) {
    out += v.dump(-1, ' ', false, json::error_handler_t::replace);
    return;
  }
  if (depth >= kMaxJsonDepth) {
    out += v.is_array() ? "[...]" : "{...}";
    return;
  }
  out += v.is_array() ? '[' : '{';
  bool first = true;
  for (auto it = v.begin(); it != v.end() && out.size() <= max; ++it) {
    if (!first) out += ',';
    first = false;
    if (v.is_object())
      out += json(it.key()).dump(-1, ' ', false, json::error_handler_t::replace) + ':';
    excerpt(*it, out, max, depth + 1);
  }
  out += v.is_array() ? ']' : '}';
}

}  // namespace

std::string json_excerpt(const json& v, std::size_t max) {
  std::string out;
  excerpt(v, out, max, 0);
  return printable(out, max);
}

}  // namespace collv

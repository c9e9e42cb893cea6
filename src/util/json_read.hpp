// Reading JSON input files one way everywhere (docs/formats.md, "JSON inputs"):
//  - parse_json_input: the text parsed in one pass that refuses a key given twice in one object
//    and a value nested deeper than kMaxJsonDepth (both with file:line:col and the JSON path,
//    before anything recurses over the value), under the --timeout limit (util/deadline.hpp);
//    text that is not JSON is an error in collv's words (util/text.hpp, json_parse_error).
//  - json_whole: the one rule for whole numbers: an integer, or a number with a fraction that is
//    zero (3.0, 3e0), within the reader's range.
//  - json_excerpt: a value as JSON text cut to a readable length, for messages that quote input.
//
//   nlohmann::json j = collv::parse_json_input(text, path);      // UsageError on bad input
//   if (auto v = collv::json_whole(j["steps"], 0, 1000)) ...     // nullopt: not a whole number
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "util/text.hpp"

namespace collv {

// The deepest nesting of arrays and objects collv reads: its formats need at most 5 (a Trace's
// transfers[k].items, an SCCL file's topology.switches[k][0]).
inline constexpr std::size_t kMaxJsonDepth = 64;

// `text` parsed as JSON (`source` names it in errors). Throws UsageError (exit 2) for text that
// is not JSON, a key given twice in one object ("s.json:3:14: $.transfers[3]: the key \"route\"
// is given twice ...") and nesting deeper than kMaxJsonDepth (the depth the file reaches and the
// path where it first passes the limit); LimitError (exit 3) when --timeout passes.
nlohmann::json parse_json_input(std::string_view text, const std::string& source);

// The number `v` as an integer in lo..hi: an integer, or a float whose value is whole (3.0);
// nullopt for anything else (a string, 3.5, a value out of range, a non-finite number).
std::optional<std::int64_t> json_whole(const nlohmann::json& v, std::int64_t lo, std::int64_t hi);
// The same for unsigned values up to `hi` (which may be UINT64_MAX).
std::optional<std::uint64_t> json_whole_unsigned(const nlohmann::json& v, std::uint64_t hi);

// `v` as JSON text, cut to at most `max` bytes (then "...") with control and invalid bytes
// escaped: safe to put in a message whatever the value's size.
std::string json_excerpt(const nlohmann::json& v, std::size_t max = kMaxQuotedBytes);

}  // namespace collv

// nlohmann's JSON parser under the --timeout limit (util/deadline.hpp): with a limit set, the
// parse checks it every 4,096 parse events and stops with a LimitError (exit 3) naming `what`;
// without one it is the plain parse. Exceptions of the parse itself are nlohmann's, as before.
//
//   nlohmann::json j = collv::parse_json_in_time(text, "reading " + path);
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "util/deadline.hpp"

namespace collv {

template <class Input>
nlohmann::json parse_json_in_time(Input&& in, const std::string& what) {
  if (deadline_remaining_ms() == UINT64_MAX) return nlohmann::json::parse(std::forward<Input>(in));
  DeadlineTick tick;
  return nlohmann::json::parse(std::forward<Input>(in),
                               [&](int, nlohmann::json::parse_event_t, nlohmann::json&) {
                                 tick([&] { return what; });
                                 return true;
                               });
}

}  // namespace collv

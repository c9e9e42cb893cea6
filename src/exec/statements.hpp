// Statement execution, a room of the executor (exec/machine.hpp): one instruction of the program
// run for a chunk of nodes at the same program point (assignments, arrays, branches, loops,
// sends and receives; irecv, isend and wait through Requests), moving each node on to its next
// program point or leaving it waiting for a message.
#pragma once

#include <unordered_map>

#include "exec/requests.hpp"

namespace collv::interp {

class Statements : public Requests {
 public:
  using Requests::Requests;

 protected:
  void exec(std::uint32_t pc, const NodeId* nodes, std::size_t cnt);
  void for_test(std::uint32_t pc, const NodeId* nodes, std::size_t cnt);
  bool combine_in_place(std::uint32_t pc, const NodeId* nodes, std::size_t cnt);
  bool combine_into_operand(std::uint32_t pc, const NodeId* nodes, std::size_t cnt);

 private:
  // Where a sent buffer's items go in Trace::payload: a payload of kShareItems items or more
  // equal to one already recorded refers to it (the nodes of a recursive-doubling group send
  // equal buffers at each step), every other one is appended. Sets Trace::payload_shared.
  std::uint32_t record_payload(const Item* data, std::size_t n);
  static constexpr std::size_t kShareItems = 4;
  // Hash of a payload's items -> the latest payload begin with that hash.
  std::unordered_map<std::uint64_t, std::uint32_t> payload_at_;
  // A receive's chunk: the nodes whose message is there and its transfer ids (kept between
  // chunks: no allocation per chunk).
  std::vector<NodeId> got_;
  std::vector<std::uint32_t> tids_;
};

}  // namespace collv::interp

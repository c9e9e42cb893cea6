// Statement execution, a room of the executor (exec/machine.hpp): one instruction of the program
// run for a chunk of nodes at the same program point (assignments, arrays, branches, loops,
// sends and receives; irecv, isend and wait through Requests), moving each node on to its next
// program point or leaving it waiting for a message.
#pragma once

#include "exec/requests.hpp"

namespace collv::interp {

class Statements : public Requests {
 public:
  using Requests::Requests;

 protected:
  void exec(std::uint32_t pc, const NodeId* nodes, std::size_t cnt);
  void for_test(std::uint32_t pc, const NodeId* nodes, std::size_t cnt);
  bool combine_in_place(std::uint32_t pc, const NodeId* nodes, std::size_t cnt);

 private:
  // A receive's chunk: the nodes whose message is there and its transfer ids (kept between
  // chunks: no allocation per chunk).
  std::vector<NodeId> got_;
  std::vector<std::uint32_t> tids_;
};

}  // namespace collv::interp

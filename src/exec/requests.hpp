// Nonblocking requests, a room of the executor (exec/machine.hpp): irecv and isend posted, an
// irecv matched with its message in posting order per source, wait and waitall completing
// them, and the receive ports of nonblocking models handed to the timing pass. The buffers a
// request holds meanwhile: request_locks.hpp.
#pragma once

#include <cstdint>
#include <vector>

#include "exec/request_locks.hpp"

namespace collv::interp {

class Requests : public RequestLocks {
 public:
  using RequestLocks::RequestLocks;

 protected:
  // The node's next program point.
  std::uint32_t tick(NodeId v) {
    NbNode& n = nb_[v];
    if (n.clock == std::numeric_limits<std::uint32_t>::max() - 1)
      throw LimitError(fmt::format(
          "node {} posts, receives and waits more than 2^32 times; collv's timing counts at most "
          "that many per node",
          topo_.label(v)));
    return ++n.clock;
  }
  std::uint32_t new_handle(const Stmt& s, NodeId v);
  void store_handles(const Expr& tgt, const NodeId* nodes, std::size_t cnt,
                     const std::vector<std::int64_t>& h);
  void post_irecv(std::uint32_t pc, const NodeId* nodes, std::size_t cnt);
  void post_isend(std::uint32_t pc, const NodeId* nodes, std::size_t cnt);
  bool match_pending(NodeId v, NodeId src, std::uint32_t upto);
  void complete(NodeId v, std::uint32_t h, std::uint32_t at);
  void run_wait(std::uint32_t pc, const NodeId* nodes, std::size_t cnt);
  void check_requests();
};

}  // namespace collv::interp

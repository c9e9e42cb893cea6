// Expression evaluation, a room of the executor (exec/machine.hpp): integer and data expressions
// over a chunk of nodes at once (one column per subexpression), the lvalues statements store
// into, and the peers of sends and receives. Runtime errors of the model throw
// ModelRuntimeError; collv's limits throw LimitError.
#pragma once

#include "exec/machine_state.hpp"

namespace collv::interp {

class Evaluator : public MachineState {
 public:
  using MachineState::MachineState;

 protected:
  std::int64_t env_value(const Expr& e, NodeId v);
  void eval_int(const Expr& e, const NodeId* nodes, std::size_t cnt, std::int64_t* out, int depth);
  void eval_v_count(const Expr& e, const NodeId* nodes, std::size_t cnt, std::int64_t* out,
                    int depth);
  void eval_data(const Expr& e, const NodeId* nodes, std::size_t cnt, Buffer* out, int depth);
  void store(const Expr& target, const NodeId* nodes, std::size_t cnt, Buffer* val, int depth,
             bool receive = false);
  void check_buffer_size(const Expr& e, NodeId v, std::uint64_t n);
  void check_positions(const Expr& target, NodeId v, std::int64_t a, std::int64_t b,
                       const char* verb);

  NodeId peer_of(const Stmt& s, NodeId v, std::int64_t x) {
    if (s.along_link) {
      if (x < std::numeric_limits<int>::min() || x > std::numeric_limits<int>::max())
        rt_error(*s.peer, v, fmt::format("no link {} at this node", x));
      auto r = neighbor(v, static_cast<int>(x));
      if (!r) rt_error(*s.peer, v, fmt::format("no link {} at this node", x));
      return *r;
    }
    if (x < 0 || x >= static_cast<std::int64_t>(p_))
      rt_error(*s.peer, v, fmt::format("node {} does not exist (p = {})", x, p_));
    return static_cast<NodeId>(x);  // may be v itself: a self-message (no link, no port)
  }
};

}  // namespace collv::interp

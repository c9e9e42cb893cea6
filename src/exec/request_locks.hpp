// The buffers nonblocking requests hold, a room of the executor (exec/machine.hpp): each node's
// outstanding requests, the positions of data variables each irecv and isend holds until its
// wait, and the checks that no statement reads or writes them meanwhile and that no two
// receives overlap (MPI's rules for pending buffers). Requests (requests.hpp) posts, matches and
// completes them.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "exec/ports.hpp"

namespace collv::interp {

// Outstanding nonblocking requests per node (docs/language.md, "Nonblocking point-to-point"):
// a limit of collv, checked before a request is added.
constexpr std::size_t kMaxRequests = 65536;

// ---- Nonblocking point-to-point (docs/language.md, "Nonblocking point-to-point") ----
// An irecv is matched, in posting order per source (MPI's non-overtaking rule), when a wait
// or a later blocking receive from the same source needs it; its data is written into the
// buffer at its wait. Until then the positions it targets may be neither read nor written
// (other positions of the variable may; a read of the whole variable reads them all); the
// positions an isend sends may not be written until its wait. Each receive's program points
// (posted, completed) go to the timing pass when the run ends, which orders the receive port
// (timing.cpp, assign_steps_free).
// A buffer (part) a request holds: positions lo .. hi of a data variable (kWholeBuffer: the
// whole variable, as `irecv x` or `isend x` name it). Empty when hi < lo.
inline constexpr std::int64_t kWholeBuffer = std::numeric_limits<std::int64_t>::max();
struct Part {
  int slot = -1;
  std::int64_t lo = 0, hi = -1;
};
struct Request {
  const Stmt* stmt = nullptr;
  NodeId peer = 0;
  bool recv = false, matched = false, whole = false;
  int slot = -1;                 // irecv: the target buffer
  std::int64_t lo = 0, hi = -1;  // irecv into a slice: its positions
  std::uint32_t port = kNone;    // irecv: its place in NbNode::port (not for self-messages)
  std::uint32_t tid = kNoTransfer;
  Buffer self_val;  // irecv from the node itself, once matched
  DepTag self_dep = 0;
  std::vector<Part> send_parts;  // isend: the positions its message is made of (not writable
                                 // until its wait)
};
// The outstanding requests that hold one data variable of a node: how many irecvs write it, and
// the positions each irecv and isend holds. A read or write of positions no irecv holds is
// allowed, as MPI allows it (and a write of positions no isend sends); MPI forbids a receive
// buffer that overlaps the buffer of another pending receive or send.
struct Held {
  std::int64_t hi;
  std::uint32_t handle;
};
struct Lock {
  int slot = -1;
  std::uint32_t recv = 0;
  std::map<std::int64_t, Held> recvs;       // irecvs' buffers by first position: disjoint
  std::multimap<std::int64_t, Held> sends;  // isends' parts by first position: may overlap
  std::int64_t send_span = 0;  // the largest hi - lo in `sends` since it was last empty
};
// A receive of the node (a transfer id once matched) and the node's program points at which
// it was posted and completed (TimingRecord::posted, completed).
struct PortEntry {
  std::uint32_t tid = kNoTransfer, posted = 0, completed = 0;
};
struct NbNode {
  std::map<std::uint32_t, Request> reqs;                  // outstanding, by handle
  std::map<NodeId, std::deque<std::uint32_t>> unmatched;  // irecvs per source, posting order
  std::uint32_t next = 0;                                 // the last handle given
  std::vector<PortEntry> port;  // this node's receives from other nodes, posting order
  std::uint32_t clock = 0;      // the node's program points: posts, receives, waits
  std::vector<Lock> locks;
  // The wait the node is blocked in (run_wait): its program point, its requests and the first
  // one not yet matched.
  std::uint32_t wait_pc = kNone, wait_pos = 0;
  std::vector<std::uint32_t> wait_list;
};
struct Access {
  std::vector<int> reads;          // data slots an instruction reads
  std::vector<const Expr*> roots;  // the expressions it reads them from
  int write = -1;                  // the data slot it writes
  const Expr* target = nullptr;    // and its target: `x`, `x[i]` or `x[i .. j]`
};

// An outstanding request's buffer that a part overlaps: its positions and its handle.
struct Hit {
  std::int64_t lo = 0, hi = -1;
  std::uint32_t handle = 0;
};

class RequestLocks : public Ports {
 public:
  RequestLocks(const Model& m, const Topology& t, const RunOptions& o, Trace& tr, MemoryWatch& w,
               NodeId lo, NodeId hi);

 protected:
  void init_nonblocking();
  static Lock* find_lock(NbNode& n, int slot);
  static Lock& lock_of(NbNode& n, int slot);
  static void unlock_empty(NbNode& n);
  static std::optional<Hit> recv_hit(const Lock& l, const Part& part);
  static std::optional<Hit> send_hit(const Lock& l, const Part& part);
  Part part_at(const Expr& e, NodeId v);
  void parts_read(const Expr& e, int slot, NodeId v, std::vector<Part>& out);
  void access_error(const Stmt& s, NodeId v, const Part& part, const Hit& hit, bool write,
                    bool recv);
  void check_access(std::uint32_t pc, const NodeId* nodes, std::size_t cnt);
  void send_parts(const Expr& e, const NodeId* nodes, std::size_t cnt,
                  std::vector<std::vector<Part>>& out);
  std::string part_name(const Part& p) const;
  void check_overlap(const Stmt& s, NodeId v, const Part& part);

  NodeCol<NbNode> nb_;
  std::vector<Access> acc_;
};

}  // namespace collv::interp

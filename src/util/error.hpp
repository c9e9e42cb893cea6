// Errors that reach the user. Bad input is a typed exception carrying `file:line:col`; internal
// invariants use COLLV_ASSERT, which throws InternalError (never abort() inside the library).
#pragma once

#include <stdexcept>
#include <string>

namespace collv {

struct SourceLoc {
  std::string file;
  int line = 0;
  int col = 0;
  std::string str() const { return file + ":" + std::to_string(line) + ":" + std::to_string(col); }
};

// A model that cannot be parsed or type-checked, or a topology name it may not use.
class ModelError : public std::runtime_error {
 public:
  ModelError(SourceLoc loc, const std::string& msg)
      : std::runtime_error(loc.str() + ": error: " + msg), loc_(std::move(loc)), msg_(msg) {}
  const SourceLoc& loc() const { return loc_; }
  const std::string& message() const { return msg_; }

 private:
  SourceLoc loc_;
  std::string msg_;
};

// Bad usage that is not tied to a file position (bad option values, missing files).
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A run or an input refused or stopped because it would exceed a resource limit (memory, size).
class LimitError : public UsageError {
 public:
  using UsageError::UsageError;
};

// "This should never happen": a bug in collv, not in the user's input.
class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

#define COLLV_ASSERT(cond)                                                                       \
  do {                                                                                           \
    if (!(cond))                                                                                 \
      throw ::collv::InternalError(std::string("internal error: ") + #cond + " at " + __FILE__ + \
                                   ":" + std::to_string(__LINE__));                              \
  } while (0)

}  // namespace collv

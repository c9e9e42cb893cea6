// The exit codes of the collv executable, each with exactly one meaning.
#pragma once

namespace collv {

enum ExitCode : int {
  kExitOk = 0,            // every check holds / the command did what was asked
  kExitViolation = 1,     // a checked invariant was violated
  kExitUsage = 2,         // bad usage or bad input (model, spec, file)
  kExitInconclusive = 3,  // a check could not be decided (solver unknown, timeout, limit)
  kExitInternal = 70,     // a bug in collv itself (an internal assertion failed)
};

}  // namespace collv

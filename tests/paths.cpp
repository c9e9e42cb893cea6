// The absolute paths of this checkout, compiled into this one file (see paths.hpp).
#include "paths.hpp"

namespace collv_test {
const std::string& source_dir() {
  static const std::string dir = COLLV_TEST_SOURCE_DIR;
  return dir;
}
const std::string& binary_path() {
  static const std::string bin = COLLV_TEST_BINARY;
  return bin;
}
const std::string& mpi_binary_path() {
  static const std::string bin = COLLV_TEST_MPI_BINARY;
  return bin;
}
}  // namespace collv_test

// Where the tests find the repository (COLLV_SOURCE_DIR) and the collv executable (COLLV_BINARY).
// Both are std::string expressions defined in tests/paths.cpp, the only test file compiled with
// the absolute paths: a -D with a checkout's path on every test file's command line would make
// the compiler cache miss for each checkout and each clone CI makes. CMake includes this header
// in every test file. Join with +: `COLLV_SOURCE_DIR + "/models"`.
#pragma once
#include <string>

namespace collv_test {
const std::string& source_dir();
const std::string& binary_path();
// collv-mpi of this build, or "" when MPI was not found (tests/test_partitioned.cpp skips).
const std::string& mpi_binary_path();
}  // namespace collv_test

#define COLLV_SOURCE_DIR (::collv_test::source_dir())
#define COLLV_BINARY (::collv_test::binary_path())
#define COLLV_MPI_BINARY (::collv_test::mpi_binary_path())

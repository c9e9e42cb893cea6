# ctest: one benchmark executable (EXE) ends cleanly on its command line (issue 26): `--help`
# prints its usage with exit 0, a bad argument is refused with exit 2 and a message, and neither
# ends on an uncaught exception. Registered for every bench_* target in CMakeLists.txt, so a
# benchmark that is not built fails here (ctest cannot find it) instead of being skipped.
#   cmake -DEXE=build/release/bench_verify -P tests/bench_cli.cmake
if(NOT EXISTS "${EXE}")
  message(FATAL_ERROR "${EXE} was not built (cmake --build --preset release builds every bench_*)")
endif()
function(expect args want_rc want_text)
  execute_process(COMMAND "${EXE}" ${args} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE err TIMEOUT 30)
  set(all "${out}${err}")
  if(NOT rc STREQUAL "${want_rc}")
    message(FATAL_ERROR "${EXE} ${args}: exit ${rc}, expected ${want_rc}:\n${all}")
  endif()
  foreach(bad "terminate called" "what():" "Aborted" "uncaught")
    string(FIND "${all}" "${bad}" at)
    if(NOT at EQUAL -1)
      message(FATAL_ERROR "${EXE} ${args}: '${bad}' in its output:\n${all}")
    endif()
  endforeach()
  string(FIND "${all}" "${want_text}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${EXE} ${args}: no '${want_text}' in its output:\n${all}")
  endif()
endfunction()
expect("--help" 0 "usage: ")
expect("-h" 0 "usage: ")
expect("--no-such-option" 2 "error: unknown option '--no-such-option'")
if(BAD_ARGS)  # the benchmark's own bad argument, refused before any work
  expect("${BAD_ARGS}" 2 "error: ")
endif()

# Runs PROGRAM and checks it: exit status 0 and, if the file EXPECTED exists, stdout equal to
# its contents (CRLF read as LF; whitespace at the very start and end ignored). ARGS (a ;-list) are passed to it
# (python3's script, for the Python examples). Used by ctest:
#   cmake -DPROGRAM=<exe> [-DARGS=<args>] -DEXPECTED=<file> [-DTIMEOUT=<s>] -P check_output.cmake
if(NOT DEFINED PROGRAM)
  message(FATAL_ERROR "check_output.cmake: PROGRAM is not set")
endif()
if(NOT DEFINED TIMEOUT)
  set(TIMEOUT 60)
endif()

execute_process(COMMAND ${PROGRAM} ${ARGS}
  OUTPUT_VARIABLE out
  ERROR_VARIABLE err
  RESULT_VARIABLE rc
  TIMEOUT ${TIMEOUT})

# Echo the program's output so `ctest --output-on-failure` / `-V` shows it.
message("${out}")
if(err)
  message("stderr:\n${err}")
endif()

if(NOT rc STREQUAL "0")
  message(FATAL_ERROR "${PROGRAM} failed: ${rc}")
endif()

if(DEFINED EXPECTED AND EXISTS "${EXPECTED}")
  file(READ "${EXPECTED}" want)
  string(REPLACE "\r\n" "\n" want "${want}")
  string(REPLACE "\r\n" "\n" out "${out}")
  string(STRIP "${want}" want)
  string(STRIP "${out}" out)
  if(NOT out STREQUAL want)
    message("--- expected ---\n${want}\n--- got ---\n${out}")
    message(FATAL_ERROR "output of ${PROGRAM} differs from ${EXPECTED}")
  endif()
endif()

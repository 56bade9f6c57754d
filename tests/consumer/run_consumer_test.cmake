# cmake -P script behind the Install.ConsumerProject test: install moka to a scratch prefix, then
# configure, build and run tests/consumer against it. Every step's failure fails the test with its output.
foreach(var MOKA_BUILD_DIR WORK_DIR CONSUMER_SOURCE_DIR GENERATOR CXX_COMPILER)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "run_consumer_test.cmake: -D${var}=... is required")
  endif()
endforeach()
if(NOT BUILD_TYPE)
  set(BUILD_TYPE Release)
endif()

set(prefix ${WORK_DIR}/prefix)
set(consumer_build ${WORK_DIR}/build)
file(REMOVE_RECURSE ${prefix} ${consumer_build})

function(step what)
  execute_process(COMMAND ${ARGN}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "consumer test: ${what} failed (${rc})\n${out}\n${err}")
  endif()
  message(STATUS "consumer test: ${what}: ok")
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

step("install moka to ${prefix}"
  ${CMAKE_COMMAND} --install ${MOKA_BUILD_DIR} --prefix ${prefix})

set(flag_args)
if(SANITIZE_FLAGS)
  list(APPEND flag_args "-DCMAKE_CXX_FLAGS=${SANITIZE_FLAGS}" "-DCMAKE_EXE_LINKER_FLAGS=${SANITIZE_FLAGS}")
endif()
step("configure the consumer project"
  ${CMAKE_COMMAND} -S ${CONSUMER_SOURCE_DIR} -B ${consumer_build}
    -G ${GENERATOR}
    -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
    -DCMAKE_BUILD_TYPE=${BUILD_TYPE}
    -DCMAKE_PREFIX_PATH=${prefix}
    -DCMAKE_FIND_PACKAGE_PREFER_CONFIG=ON
    ${flag_args})

step("build the consumer project" ${CMAKE_COMMAND} --build ${consumer_build})

step("run the consumer program" ${consumer_build}/moka_consumer)
message(STATUS "${step_output}")
if(NOT step_output MATCHES "moka_consumer: ok")
  message(FATAL_ERROR "consumer test: unexpected output from moka_consumer:\n${step_output}")
endif()

# Registers Install.ConsumerProject: installs this build tree, then builds and runs tests/consumer against it.
# Included from tests/CMakeLists.txt; the work happens in run_consumer_test.cmake (cmake -P) at test time.
set(_moka_consumer_dir ${CMAKE_CURRENT_BINARY_DIR}/consumer)

# The consumer must be compiled and linked with the same sanitizer flags as the installed static library.
set(_moka_consumer_flags "")
if(MOKA_SANITIZE)
  set(_moka_consumer_flags "-fsanitize=${MOKA_SANITIZE} -fno-omit-frame-pointer")
endif()

add_test(NAME Install.ConsumerProject
  COMMAND ${CMAKE_COMMAND}
    -DMOKA_BUILD_DIR=${PROJECT_BINARY_DIR}
    -DWORK_DIR=${_moka_consumer_dir}
    -DCONSUMER_SOURCE_DIR=${CMAKE_CURRENT_SOURCE_DIR}/consumer
    "-DGENERATOR=${CMAKE_GENERATOR}"
    -DCXX_COMPILER=${CMAKE_CXX_COMPILER}
    -DBUILD_TYPE=${CMAKE_BUILD_TYPE}
    "-DSANITIZE_FLAGS=${_moka_consumer_flags}"
    -P ${CMAKE_CURRENT_SOURCE_DIR}/consumer/run_consumer_test.cmake)
set_tests_properties(Install.ConsumerProject PROPERTIES
  TIMEOUT 300
  LABELS "install"
  # It installs into and builds under one folder: never run two copies at once.
  RUN_SERIAL TRUE)

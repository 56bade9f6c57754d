# The library's layers: one static library per folder pair include/moka/<layer>/ + src/<layer>/, each linking
# only the layers below it (docs/architecture.md §2), and moka::moka, the umbrella users link.
#
# The order is enforced twice. Each layer compiles against a view of the tree that holds only its own folders
# and those of the layers it may use (symbolic links under <build>/layer_views/<layer>/), so including a
# higher layer's header fails to compile. And a link check per layer (moka_layer_link_check_<layer>) links
# all of the layer's objects with only the layers below it, so a call into a higher layer fails to link.
# tests/layout/check_layers.py compares these declarations and every #include with the table of
# docs/architecture.md §2.

set(MOKA_LAYERS "")

function(moka_layer name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "USES")
  set(view ${CMAKE_BINARY_DIR}/layer_views/${name})
  file(REMOVE_RECURSE ${view})
  file(MAKE_DIRECTORY ${view}/include/moka ${view}/src)
  foreach(layer ${name} ${arg_USES})
    file(CREATE_LINK ${PROJECT_SOURCE_DIR}/include/moka/${layer} ${view}/include/moka/${layer} SYMBOLIC)
    if(IS_DIRECTORY ${PROJECT_SOURCE_DIR}/src/${layer})
      file(CREATE_LINK ${PROJECT_SOURCE_DIR}/src/${layer} ${view}/src/${layer} SYMBOLIC)
    endif()
  endforeach()

  file(GLOB sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/${name}/*.cpp)
  add_library(moka_${name} STATIC ${sources})
  target_include_directories(moka_${name} PRIVATE ${view}/include ${view}/src)
  target_compile_options(moka_${name} PRIVATE ${MOKA_WARNINGS})
  target_link_libraries(moka_${name} PUBLIC Threads::Threads PRIVATE fmt::fmt nlohmann_json::nlohmann_json)
  foreach(layer ${arg_USES})
    target_link_libraries(moka_${name} PUBLIC moka_${layer})
  endforeach()
  set_target_properties(moka_${name} PROPERTIES POSITION_INDEPENDENT_CODE ON EXPORT_NAME ${name})

  add_executable(moka_layer_link_check_${name} ${PROJECT_SOURCE_DIR}/cmake/layer_link_check.cpp)
  target_link_libraries(moka_layer_link_check_${name} PRIVATE "$<LINK_LIBRARY:WHOLE_ARCHIVE,moka_${name}>")

  set(MOKA_LAYERS ${MOKA_LAYERS} ${name} PARENT_SCOPE)
endfunction()

# From the bottom. USES names every layer a layer may include and call; nothing else is reachable from it.
moka_layer(core)
moka_layer(defs USES core)
moka_layer(operators USES core defs)
moka_layer(storage USES core defs operators)
moka_layer(exec USES core defs operators storage)
moka_layer(builder USES core defs operators storage exec)
moka_layer(session USES core defs operators storage exec builder)
moka_layer(data USES core defs operators storage exec builder)
moka_layer(job USES core defs operators storage exec builder session data)

# mpi: MpiSession (docs/distributed.md) on Open MPI (Debian: libopenmpi-dev, openmpi-bin). Not in moka::moka:
# only programs that link moka::mpi link MPI. The C API is all it uses; MPI::MPI_CXX finds it with the C++
# compiler. The version goes into the definition digests the ranks compare.
find_package(MPI REQUIRED COMPONENTS CXX)
moka_layer(mpi USES core defs operators storage exec builder session data job)
target_link_libraries(moka_mpi PRIVATE MPI::MPI_CXX)
target_compile_definitions(moka_mpi PRIVATE MOKA_VERSION_STRING="${PROJECT_VERSION}")

# The DB backends (src/storage/db_*.cpp): LevelDB and LMDB. cmake/mokaConfig.cmake.in includes the same module
# so that the installed moka::moka finds them again. xxHash (XXH3-64 record and manifest checksums) is used
# header-only (XXH_INLINE_ALL): nothing to link. Debian: libxxhash-dev.
include(${CMAKE_CURRENT_LIST_DIR}/MokaDbBackends.cmake)
target_link_libraries(moka_storage PRIVATE moka_dep::leveldb moka_dep::lmdb)
find_path(MOKA_XXHASH_INCLUDE_DIR xxhash.h REQUIRED)
target_include_directories(moka_storage SYSTEM PRIVATE ${MOKA_XXHASH_INCLUDE_DIR})
target_include_directories(moka_job SYSTEM PRIVATE ${MOKA_XXHASH_INCLUDE_DIR})

# moka::moka: every layer, and the public headers (include/moka/moka.h includes them all).
add_library(moka INTERFACE)
add_library(moka::moka ALIAS moka)
target_include_directories(moka INTERFACE
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
foreach(layer ${MOKA_LAYERS})
  if(NOT layer STREQUAL "mpi")
    target_link_libraries(moka INTERFACE moka_${layer})
  endif()
endforeach()
add_library(moka::mpi ALIAS moka_mpi)

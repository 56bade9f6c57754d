# Finds the DB backend libraries (LevelDB, LMDB) and defines moka_dep::leveldb and moka_dep::lmdb.
# Used by the build and by the installed package config. Plain find_path/find_library on purpose:
# Debian's leveldbConfig.cmake asks for -lsnappy, which libleveldb-dev does not install.
if(NOT TARGET moka_dep::leveldb)
  find_path(MOKA_LEVELDB_INCLUDE_DIR leveldb/db.h REQUIRED)
  find_library(MOKA_LEVELDB_LIBRARY leveldb REQUIRED)
  add_library(moka_dep::leveldb UNKNOWN IMPORTED)
  set_target_properties(moka_dep::leveldb PROPERTIES
    IMPORTED_LOCATION "${MOKA_LEVELDB_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${MOKA_LEVELDB_INCLUDE_DIR}")
endif()
if(NOT TARGET moka_dep::lmdb)
  find_path(MOKA_LMDB_INCLUDE_DIR lmdb.h REQUIRED)
  find_library(MOKA_LMDB_LIBRARY lmdb REQUIRED)
  add_library(moka_dep::lmdb UNKNOWN IMPORTED)
  set_target_properties(moka_dep::lmdb PROPERTIES
    IMPORTED_LOCATION "${MOKA_LMDB_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${MOKA_LMDB_INCLUDE_DIR}")
endif()

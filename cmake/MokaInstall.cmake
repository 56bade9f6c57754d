# Installs moka::moka with its headers and a CMake package config (find_package(moka CONFIG REQUIRED)).
include(CMakePackageConfigHelpers)
# moka::moka is an interface library over one static library per layer (moka::core, moka::defs, ...).
list(TRANSFORM MOKA_LAYERS PREPEND moka_ OUTPUT_VARIABLE moka_layer_targets)
install(TARGETS moka ${moka_layer_targets} EXPORT mokaTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS moka_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# Headers of moka::detail only (used by moka's own tests) are not installed; moka/moka.h names them.
install(DIRECTORY include/moka DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} PATTERN "worker_pool.h" EXCLUDE)
install(EXPORT mokaTargets NAMESPACE moka:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/moka)
configure_package_config_file(cmake/mokaConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/mokaConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/moka)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/mokaConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/mokaConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/mokaConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/moka)
# Found again by mokaConfig.cmake for the DB backends moka::moka links.
install(FILES ${CMAKE_CURRENT_SOURCE_DIR}/cmake/MokaDbBackends.cmake DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/moka)

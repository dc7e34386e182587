# Debian packages of tally (cpack -G DEB in the build tree; tests/package installs
# them). One package per install component:
#   libtally1     runtime: libtally.so.1 (the package is named for the SONAME, so
#                 that 1.x and a later 2.x install side by side)
#   libtally-dev  dev: headers, libtally.so, the CMake package, tally.pc, the
#                 Fortran module and its static library
#   tally-tools   tools: tally-sim, tally-trace, tally_bench and its scripts
# Dependencies on shared libraries come from dpkg-shlibdeps; libtally1 ships a
# shlibs file (>= this version) for packages built against it.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME tally)
set(CPACK_PACKAGE_VENDOR "the tally authors")
set(CPACK_PACKAGE_CONTACT "tally developers <tally@example.org>")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)  # 1.0.0-1: built from an upstream release, not native
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL runtime dev tools)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://example.org/tally")
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)
# dpkg-shlibdeps finds libtally.so.1 in the staged runtime component.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${PROJECT_BINARY_DIR})

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME libtally1)
# The loader's cache is refreshed by dpkg's ldconfig trigger (Debian policy 8.1.1).
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_EXTRA ${PROJECT_SOURCE_DIR}/cmake/deb/triggers)
set(CPACK_COMPONENT_RUNTIME_DESCRIPTION "Suzuki-Kasami distributed mutual exclusion for MPI - library
 tally gives MPI applications a distributed critical section with the
 Suzuki-Kasami token algorithm: re-entry costs no message, any other entry at
 most one message per rank. This package holds the shared library.")
set(CPACK_DEBIAN_DEV_PACKAGE_NAME libtally-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_COMPONENT_DEV_DEPENDS runtime)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "libopenmpi-dev")
set(CPACK_COMPONENT_DEV_DESCRIPTION "Suzuki-Kasami distributed mutual exclusion for MPI - development files
 tally gives MPI applications a distributed critical section with the
 Suzuki-Kasami token algorithm. This package holds the C, C++ and Fortran
 headers and module, the CMake package (find_package(tally)) and tally.pc.")
set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME tally-tools)
set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION devel)
set(CPACK_COMPONENT_TOOLS_DEPENDS runtime)
set(CPACK_DEBIAN_TOOLS_PACKAGE_DEPENDS "python3, openmpi-bin")
set(CPACK_DEBIAN_TOOLS_PACKAGE_RECOMMENDS "python3-matplotlib")
set(CPACK_COMPONENT_TOOLS_DESCRIPTION "Suzuki-Kasami distributed mutual exclusion for MPI - tools
 tally-sim (the protocol's simulator and replay), tally-trace (merges per-rank
 traces into one timeline) and tally_bench with its scripts (handoff latency
 against the physical floor and the locks users would pick instead).")

# Debian policy asks each package for /usr/share/doc/<package>/copyright and
# changelog.Debian.gz. Only packages get them (EXCLUDE_FROM_ALL: a plain
# cmake --install keeps share/doc/tally/LICENSE alone).
set(tally_deb_changelog ${PROJECT_BINARY_DIR}/package/changelog.Debian)
string(TIMESTAMP tally_deb_date "%a, %d %b %Y %H:%M:%S +0000" UTC)
file(WRITE ${tally_deb_changelog} "tally (${PROJECT_VERSION}-${CPACK_DEBIAN_PACKAGE_RELEASE}) unstable; urgency=medium

  * Release ${PROJECT_VERSION}; the changes are in CHANGELOG.md.

 -- ${CPACK_PACKAGE_CONTACT}  ${tally_deb_date}
")
find_program(TALLY_GZIP gzip)
if(TALLY_GZIP)
  execute_process(COMMAND ${TALLY_GZIP} -9nf ${tally_deb_changelog})
  foreach(component runtime dev tools)
    string(TOUPPER ${component} upper)
    install(FILES LICENSE DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/${CPACK_DEBIAN_${upper}_PACKAGE_NAME}
      RENAME copyright COMPONENT ${component} EXCLUDE_FROM_ALL)
    install(FILES ${tally_deb_changelog}.gz DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/${CPACK_DEBIAN_${upper}_PACKAGE_NAME}
      COMPONENT ${component} EXCLUDE_FROM_ALL)
  endforeach()
endif()
include(CPack)

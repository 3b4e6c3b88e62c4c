# libterrafort.so: the installed library (terrain.h's calls) for programs, Python and
# QGIS. One shared library of libterrain and the libraries under it (the AAP engine,
# libft, libcoll) without MPI - the same static copies the plain `terrafort` links
# (terrafort_solo, CMakeLists.txt), compiled position-independent - with a versioned
# SONAME and only terrain.h's functions exported (a version script made from the header
# at configure time: the header is the one list). No CUDA (the GPU is the module,
# local/device_module.h) and no MPI in it. Installed with the header, terrafort.pc and
# a CMake package (find_package(terrafort) gives terrafort::terrafort).
# libterrain/tests/installed_tree.sh builds and runs a program against the installed tree.
set(_tf_parts terrain ft coll aap)
set(_tf_static)
foreach(p ${_tf_parts})
  set(t ${p})
  if(TERRAFORT_HAVE_MPI)
    set(t ${p}_solo)
  endif()
  # position-independent; calls inside stay direct (no interposition of the library's
  # own functions), so the code is what a non-PIC build gives
  # (with the objects it shares with the MPI build, terrafort_solo: that build's copies
  # of them are position-independent too, as terrafort-solo's always were)
  foreach(c ${t} ${p}_neutral)
    if(TARGET ${c})
      set_target_properties(${c} PROPERTIES POSITION_INDEPENDENT_CODE ON)
      target_compile_options(${c} PRIVATE $<$<COMPILE_LANGUAGE:C>:-fno-semantic-interposition>)
    endif()
  endforeach()
  list(APPEND _tf_static ${t})
endforeach()

file(STRINGS ${PROJECT_SOURCE_DIR}/libterrain/include/terrain.h _tf_decls
     REGEX "^[a-z][a-z_ *]*[ *](tr_[a-z0-9_]+)\\(")
set(_tf_map "{\n  global:\n")
foreach(d ${_tf_decls})
  string(REGEX MATCH "(tr_[a-z0-9_]+)\\(" _m "${d}")
  string(APPEND _tf_map "    ${CMAKE_MATCH_1};\n")
endforeach()
string(APPEND _tf_map "  local: *;\n};\n")
file(WRITE ${CMAKE_BINARY_DIR}/libterrafort.map "${_tf_map}")

add_library(libterrafort SHARED ${PROJECT_SOURCE_DIR}/libterrain/package/library.c)
set_target_properties(libterrafort PROPERTIES OUTPUT_NAME terrafort VERSION ${PROJECT_VERSION}
                      SOVERSION ${PROJECT_VERSION_MAJOR} LINK_DEPENDS ${CMAKE_BINARY_DIR}/libterrafort.map
                      LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/lib)
# terrain whole (every call terrain.h declares); what it uses of the others comes with it
list(GET _tf_static 0 _tf_terrain)
target_link_libraries(libterrafort PRIVATE "$<LINK_LIBRARY:WHOLE_ARCHIVE,${_tf_terrain}>" GDAL::GDAL
                      OpenMP::OpenMP_C Threads::Threads m)
target_link_options(libterrafort PRIVATE -Wl,--version-script=${CMAKE_BINARY_DIR}/libterrafort.map -Wl,-z,defs)
target_include_directories(libterrafort INTERFACE $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/terrafort>)

install(TARGETS libterrafort EXPORT terrafortTargets LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES ${PROJECT_SOURCE_DIR}/libterrain/include/terrain.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/terrafort)
install(EXPORT terrafortTargets NAMESPACE terrafort:: FILE terrafortTargets.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/terrafort)
include(CMakePackageConfigHelpers)
file(WRITE ${CMAKE_BINARY_DIR}/terrafortConfig.cmake
     "# find_package(terrafort): the target terrafort::terrafort (libterrafort.so, terrain.h)\n"
     "include(\${CMAKE_CURRENT_LIST_DIR}/terrafortTargets.cmake)\n"
     "if(TARGET terrafort::libterrafort AND NOT TARGET terrafort::terrafort)\n"
     "  add_library(terrafort::terrafort INTERFACE IMPORTED)\n"
     "  set_target_properties(terrafort::terrafort PROPERTIES INTERFACE_LINK_LIBRARIES terrafort::libterrafort)\n"
     "endif()\n")
write_basic_package_version_file(${CMAKE_BINARY_DIR}/terrafortConfigVersion.cmake VERSION ${PROJECT_VERSION}
                                 COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_BINARY_DIR}/terrafortConfig.cmake ${CMAKE_BINARY_DIR}/terrafortConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/terrafort)
# relocatable: the prefix is found from the .pc file's own folder (pkg-config's
# pcfiledir), so `cmake --install --prefix` anywhere gives a working file
file(RELATIVE_PATH TERRAFORT_PC_UP /x/${CMAKE_INSTALL_LIBDIR}/pkgconfig /x)
# the Python package over the library (tools/python/terrafort), where Debian's
# /usr/bin/python3 looks: PREFIX/lib/python3/dist-packages for /usr, else
# PREFIX/lib/python3.X/dist-packages (/usr/local's, on Debian's path too). It finds the
# library beside it (../../../libterrafort.so.0 when LIBDIR is lib) or through
# ldconfig (terrafort/_lib.py).
execute_process(COMMAND /usr/bin/python3 -c "import sys; print('python%d.%d' % sys.version_info[:2])"
                OUTPUT_VARIABLE _tf_py OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr" OR NOT _tf_py)
  set(TERRAFORT_PYTHON_DIR lib/python3/dist-packages)
else()
  set(TERRAFORT_PYTHON_DIR lib/${_tf_py}/dist-packages)
endif()
install(DIRECTORY ${PROJECT_SOURCE_DIR}/tools/python/terrafort DESTINATION ${TERRAFORT_PYTHON_DIR}
        PATTERN __pycache__ EXCLUDE)
configure_file(${PROJECT_SOURCE_DIR}/libterrain/package/terrafort.pc.in ${CMAKE_BINARY_DIR}/terrafort.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/terrafort.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

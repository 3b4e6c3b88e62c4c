# terrafort interpolate (issue 10): gdal_grid parity on every algorithm, a brute-force
# reference, the same bytes for threads/tiles/--ft dual/mpirun and XYZ vs OGR input, bad input;
# --fill-voids against gdal_fillnodata; more points than --mem, read from disk (issue 13); SIGTERM/SIGINT
# within a second on a huge grid (issue 28). One C program (test_interpolate.c); the case is its first
# argument.
add_executable(test_interpolate ${CMAKE_CURRENT_LIST_DIR}/test_interpolate.c)
target_link_libraries(test_interpolate PRIVATE terrain m)
target_include_directories(test_interpolate PRIVATE ${PROJECT_SOURCE_DIR}/scripts/testkit)
foreach(c gdal_grid brute same_bytes errors fill_voids on_disk interrupt)
  add_test(NAME interp_${c}
           COMMAND test_interpolate ${c} ${CMAKE_BINARY_DIR}/testdata $<TARGET_FILE:terrafort>
                   ${PROJECT_SOURCE_DIR}/../shared/data)
  set_tests_properties(interp_${c} PROPERTIES LABELS "cli;interp" FIXTURES_REQUIRED testdata
                       ENVIRONMENT "${TERRAFORT_MPI_TEST_ENV}")
  if(TERRAFORT_SANITIZE)
    set_property(TEST interp_${c} APPEND PROPERTY ENVIRONMENT "ASAN_OPTIONS=detect_leaks=0")
  endif()
endforeach()
set_property(TEST interp_gdal_grid APPEND PROPERTY LABELS peer) # Release tree only, see cli_tests.cmake

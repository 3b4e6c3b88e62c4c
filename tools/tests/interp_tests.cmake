# terrafort interpolate (issue 10): gdal_grid parity on every algorithm, a brute-force
# reference, the same bytes for threads/tiles/--ft dual/mpirun and XYZ vs OGR input, bad input;
# --fill-voids against gdal_fillnodata.
# Python (python3-gdal, numpy): see test_interpolate.py's header.
foreach(c gdal_grid brute same_bytes errors fill_voids)
  add_test(NAME interp_${c}
           COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/test_interpolate.py ${c} $<TARGET_FILE:terrafort>
                   ${PROJECT_SOURCE_DIR}/testdata ${PROJECT_SOURCE_DIR}/../shared/data
                   ${CMAKE_CURRENT_BINARY_DIR}/interp_${c})
  set_tests_properties(interp_${c} PROPERTIES LABELS "cli;interp"
                       ENVIRONMENT "${TERRAFORT_MPI_TEST_ENV}")
  if(TERRAFORT_SANITIZE)
    set_property(TEST interp_${c} APPEND PROPERTY ENVIRONMENT "ASAN_OPTIONS=detect_leaks=0")
  endif()
endforeach()
set_property(TEST interp_gdal_grid APPEND PROPERTY LABELS peer) # Release tree only, see cli_tests.cmake

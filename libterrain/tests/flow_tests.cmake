# Tests of D8 flow directions (tr_flowdir: fill, the flowdir graph program, the d8 kernel),
# label flow. The reference and the DEMs are in test_flow_ref.c (with test_fill_ref.c's fill).
set(_flow_t ${CMAKE_CURRENT_LIST_DIR})
set(_flow_ref ${_flow_t}/test_flow_ref.c ${_flow_t}/test_fill_ref.c)
terrafort_add_test(flow_equal SOURCES ${_flow_t}/test_flow_equal.c ${_flow_ref} LIBS terrain aap LABELS flow)
target_include_directories(flow_equal PRIVATE ${TERRAIN_PRIVATE_INCLUDES})
# Against TauDEM 5.3's outputs in ../shared/data/taudem; exit 77 (skipped) when absent.
set(TF_FLOW_SHARED_DATA ${PROJECT_SOURCE_DIR}/../shared/data)
terrafort_add_test(flow_dir_taudem SOURCES ${_flow_t}/test_flow_dir_taudem.c LIBS terrain ARGS ${TF_FLOW_SHARED_DATA}
                   LABELS flow)
set_tests_properties(flow_dir_taudem PROPERTIES SKIP_RETURN_CODE 77)
set_property(TEST flow_dir_taudem APPEND PROPERTY LABELS peer) # Release tree only, see tools/tests/cli_tests.cmake
# Under mpirun with 1, 2 and 3 ranks: the same reference.
foreach(np 1 2 3)
  terrafort_add_mpi_test(flow_mpi NP ${np} SOURCES ${_flow_t}/test_flow_mpi.c ${_flow_ref} LIBS terrain aap LABELS flow)
  # Open MPI's own allocations look like leaks to LeakSanitizer (as in libcoll and libft).
  if(TERRAFORT_SANITIZE AND TERRAFORT_HAVE_MPI)
    set_property(TEST flow_mpi_np${np} APPEND PROPERTY ENVIRONMENT "ASAN_OPTIONS=detect_leaks=0")
  endif()
endforeach()
# Bad input and options: documented status, one line, nothing left behind.
terrafort_add_test(flow_errors SOURCES ${_flow_t}/test_flow_errors.c LIBS terrain ARGS ${CMAKE_BINARY_DIR}/testdata
                   LABELS flow)
set_tests_properties(flow_errors PROPERTIES FIXTURES_REQUIRED testdata)
# Tests of the programs computed from D8 directions (d8_up, d8_basins)
# against sequential references; they use hydro/'s internal headers.
terrafort_add_test(flow_engine SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_flow_engine.c ${CMAKE_CURRENT_LIST_DIR}/test_fill_ref.c
                   LIBS terrain aap LABELS aap)
target_include_directories(flow_engine PRIVATE ${TERRAIN_PRIVATE_INCLUDES})

# flowgraph: TauDEM parity (skipped without ../shared/data/taudem), the same
# bytes for every schedule, tile size, thread and rank count, bad inputs.
set(_flow_env "${TERRAFORT_MPI_TEST_ENV}")
terrafort_add_test(flowgraph_taudem SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_flowgraph_taudem.c LIBS terrain
                   ARGS ${CMAKE_BINARY_DIR}/testdata $<TARGET_FILE:terrafort> ${PROJECT_SOURCE_DIR}/../shared/data
                   LABELS "cli;aap")
set_tests_properties(flowgraph_taudem PROPERTIES FIXTURES_REQUIRED testdata)
set_property(TEST flowgraph_taudem APPEND PROPERTY LABELS peer) # Release tree only, see cli_tests.cmake
terrafort_add_test(flow_cli SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_flowgraph.c LIBS terrain
                   ARGS ${CMAKE_BINARY_DIR}/testdata $<TARGET_FILE:terrafort> LABELS "cli;aap;mpi")
set_tests_properties(flow_cli PROPERTIES FIXTURES_REQUIRED testdata ENVIRONMENT "${_flow_env}")
if(TERRAFORT_SANITIZE)
  set_property(TEST flow_cli APPEND PROPERTY ENVIRONMENT "ASAN_OPTIONS=detect_leaks=0")
endif()

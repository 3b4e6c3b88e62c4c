# flowgraph: TauDEM parity (skipped without ../shared/data/taudem), the same
# bytes for every schedule, tile size, thread and rank count, bad inputs.
set(_flow_env "${TERRAFORT_MPI_TEST_ENV}")
terrafort_add_test(flowgraph_taudem SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_flowgraph_taudem.c LIBS terrain
                   ARGS ${CMAKE_BINARY_DIR}/testdata $<TARGET_FILE:terrafort> ${PROJECT_SOURCE_DIR}/../shared/data
                   LABELS "cli;aap")
set_tests_properties(flowgraph_taudem PROPERTIES FIXTURES_REQUIRED testdata ENVIRONMENT "${_flow_env}") # mpirun: streamnet's bytes
set_property(TEST flowgraph_taudem APPEND PROPERTY LABELS peer) # Release tree only, see cli_tests.cmake
# D-infinity: analytic planes, the same bytes across settings and bad options
# (flowgraph_dinf); TauDEM's dinfflowdir/areadinf/twi files (flowgraph_dinf_taudem,
# exit 77 = skipped without ../shared/data/taudem).
terrafort_add_test(flowgraph_dinf SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_flowgraph_dinf.c LIBS terrain
                   ARGS ${CMAKE_BINARY_DIR}/testdata $<TARGET_FILE:terrafort> ${PROJECT_SOURCE_DIR}/../shared/data
                   LABELS "cli;aap;mpi")
set_tests_properties(flowgraph_dinf PROPERTIES ENVIRONMENT "${_flow_env}")
add_test(NAME flowgraph_dinf_taudem
         COMMAND flowgraph_dinf ${CMAKE_BINARY_DIR}/testdata $<TARGET_FILE:terrafort> ${PROJECT_SOURCE_DIR}/../shared/data
                 test_taudem)
set_tests_properties(flowgraph_dinf_taudem PROPERTIES SKIP_RETURN_CODE 77 LABELS "cli;aap;peer")
# one binary, one output folder (flow_dinf_out): never both at once
set_tests_properties(flowgraph_dinf flowgraph_dinf_taudem PROPERTIES RESOURCE_LOCK flow_dinf_out)
# Multiple flow directions: a cone against a sequential reference, the same bytes
# across settings and bad options (flowgraph_mfd); RichDEM's rd_flow_accumulation
# files (flowgraph_mfd_richdem, exit 77 = skipped without ../shared/data/richdem).
terrafort_add_test(flowgraph_mfd SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_flowgraph_mfd.c LIBS terrain
                   ARGS ${CMAKE_BINARY_DIR}/testdata $<TARGET_FILE:terrafort> ${PROJECT_SOURCE_DIR}/../shared/data
                   LABELS "cli;aap;mpi")
set_tests_properties(flowgraph_mfd PROPERTIES ENVIRONMENT "${_flow_env}")
add_test(NAME flowgraph_mfd_richdem
         COMMAND flowgraph_mfd ${CMAKE_BINARY_DIR}/testdata $<TARGET_FILE:terrafort> ${PROJECT_SOURCE_DIR}/../shared/data
                 test_richdem)
set_tests_properties(flowgraph_mfd_richdem PROPERTIES SKIP_RETURN_CODE 77 LABELS "cli;aap;peer")
# one binary, one output folder (flow_mfd_out): never both at once
set_tests_properties(flowgraph_mfd flowgraph_mfd_richdem PROPERTIES RESOURCE_LOCK flow_mfd_out)
# HAND and the D8 distance to the streams: analytic planes, the same bytes across
# settings and bad options (flowgraph_hand); TauDEM's dinfdistdown/d8hdisttostrm
# files (flowgraph_hand_taudem, exit 77 = skipped without ../shared/data/taudem).
terrafort_add_test(flowgraph_hand SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_flowgraph_hand.c LIBS terrain
                   ARGS ${CMAKE_BINARY_DIR}/testdata $<TARGET_FILE:terrafort> ${PROJECT_SOURCE_DIR}/../shared/data
                   LABELS "cli;aap;mpi")
set_tests_properties(flowgraph_hand PROPERTIES FIXTURES_REQUIRED testdata ENVIRONMENT "${_flow_env}")
add_test(NAME flowgraph_hand_taudem
         COMMAND flowgraph_hand ${CMAKE_BINARY_DIR}/testdata $<TARGET_FILE:terrafort> ${PROJECT_SOURCE_DIR}/../shared/data
                 test_taudem)
set_tests_properties(flowgraph_hand_taudem PROPERTIES SKIP_RETURN_CODE 77 LABELS "cli;aap;peer")
# one binary, one output folder (flow_hand_out): never both at once
set_tests_properties(flowgraph_hand flowgraph_hand_taudem PROPERTIES RESOURCE_LOCK flow_hand_out)
terrafort_add_test(flow_cli SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_flowgraph.c LIBS terrain
                   ARGS ${CMAKE_BINARY_DIR}/testdata $<TARGET_FILE:terrafort> LABELS "cli;aap;mpi")
set_tests_properties(flow_cli PROPERTIES FIXTURES_REQUIRED testdata ENVIRONMENT "${_flow_env}")
if(TERRAFORT_SANITIZE)
  # their mpirun runs: Open MPI's own allocations outlive the process
  set_property(TEST flow_cli flowgraph_dinf flowgraph_hand flowgraph_mfd APPEND PROPERTY ENVIRONMENT
               "ASAN_OPTIONS=detect_leaks=0")
endif()
# Stream burning (--burn, --burn-depth) in fill, breach and flowgraph: against
# gdal_rasterize's cells, the same bytes across settings and ranks, an
# embankment crossed, bad input, lines in another CRS.
terrafort_add_test(cli_burn SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_burn.c LIBS terrain
                   ARGS ${CMAKE_BINARY_DIR}/testdata $<TARGET_FILE:terrafort> LABELS "cli;aap;mpi")
set_tests_properties(cli_burn PROPERTIES ENVIRONMENT "${_flow_env}")
if(TERRAFORT_SANITIZE)
  set_property(TEST cli_burn APPEND PROPERTY ENVIRONMENT "ASAN_OPTIONS=detect_leaks=0") # mpirun's runs
endif()

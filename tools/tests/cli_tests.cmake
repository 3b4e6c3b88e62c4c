# Tests of the terrafort command as a user runs it: gdaldem compatibility
# (gdaldem from gdal-bin is the reference), errors and exit codes, files
# left behind, help, progress.
set(TF_SHARED_DATA ${PROJECT_SOURCE_DIR}/../shared/data)
foreach(t gdaldem_compat errors parallel_modes)
  terrafort_add_test(cli_${t} SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_${t}.c LIBS terrain
                     ARGS ${CMAKE_BINARY_DIR}/testdata $<TARGET_FILE:terrafort> ${TF_SHARED_DATA}
                     LABELS cli)
  set_tests_properties(cli_${t} PROPERTIES FIXTURES_REQUIRED testdata)
endforeach()
set_tests_properties(cli_parallel_modes PROPERTIES LABELS "unit;cli;ft;mpi"
                     ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OMPI_MCA_rmaps_base_oversubscribe=1")
if(TERRAFORT_SANITIZE)
  # Open MPI's start-up allocations are never freed; memory errors are still caught.
  set_property(TEST cli_parallel_modes APPEND PROPERTY ENVIRONMENT "ASAN_OPTIONS=detect_leaks=0")
endif()

# fill: the reference priority-flood lives with the engine's tests.
terrafort_add_test(cli_fill SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_fill.c
                   ${PROJECT_SOURCE_DIR}/libterrain/tests/test_fill_ref.c LIBS terrain aap
                   ARGS ${CMAKE_BINARY_DIR}/testdata $<TARGET_FILE:terrafort> LABELS "cli;aap")
target_include_directories(cli_fill PRIVATE ${PROJECT_SOURCE_DIR}/libterrain/tests)
set_tests_properties(cli_fill PROPERTIES FIXTURES_REQUIRED testdata
                     ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OMPI_MCA_rmaps_base_oversubscribe=1")
if(TERRAFORT_SANITIZE)
  set_property(TEST cli_fill APPEND PROPERTY ENVIRONMENT "ASAN_OPTIONS=detect_leaks=0")
endif()

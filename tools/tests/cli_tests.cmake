# Tests of the terrafort command as a user runs it: gdaldem compatibility
# (gdaldem from gdal-bin is the reference), errors and exit codes, files
# left behind, help, progress.
set(TF_SHARED_DATA ${PROJECT_SOURCE_DIR}/../shared/data)
foreach(t gdaldem_compat cli_errors)
  terrafort_add_test(test_${t} SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_${t}.c LIBS terrain
                     ARGS ${CMAKE_BINARY_DIR}/testdata $<TARGET_FILE:terrafort> ${TF_SHARED_DATA}
                     LABELS cli)
  set_tests_properties(test_${t} PROPERTIES FIXTURES_REQUIRED testdata)
endforeach()

# Tests of libterrain's rasters and local kernels. The test DEMs are made
# fresh in the build tree by scripts/make-testdata (fixture "testdata").
add_test(NAME testdata_make COMMAND ${PROJECT_SOURCE_DIR}/scripts/make-testdata ${CMAKE_BINARY_DIR}/testdata)
set_tests_properties(testdata_make PROPERTIES FIXTURES_SETUP testdata LABELS "unit")

# The JSON writer (core/json.c): strings (invalid UTF-8 as \udcXX), numbers read back by
# json-c's parser, key order, parsed and verbatim texts, a lost value leaving no text; the
# reports of libft and the AAP engine (core/report_json.c) byte for byte
terrafort_add_test(terrain_json SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_json.c LIBS terrain ft aap PkgConfig::JSONC
                   LABELS terrain)
target_include_directories(terrain_json PRIVATE ${TERRAIN_PRIVATE_INCLUDES})

# tr_batch's job list against the program's option tables (`terrafort CMD --options`): every
# spelling of every option read as the table says (its value an output or skipped), the
# TauDEM command lines, and the lines it refuses
terrafort_add_test(terrain_batch_jobs SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_batch_jobs.c LIBS terrain
                   ARGS $<TARGET_FILE:terrafort> LABELS terrain)
target_include_directories(terrain_batch_jobs PRIVATE ${TERRAIN_PRIVATE_INCLUDES})

foreach(t gradient_analytic local_determinism local_cache_plan heap_spill)
  terrafort_add_test(terrain_${t} SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_${t}.c LIBS terrain
                     ARGS ${CMAKE_BINARY_DIR}/testdata LABELS terrain)
  set_tests_properties(terrain_${t} PROPERTIES FIXTURES_REQUIRED testdata)
endforeach()

# The CUDA path is compiled and linked (runs without a GPU): the GPU slots are filled in CUDA builds.
terrafort_add_test(terrain_gpu_slot SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_gpu_slot.c LIBS terrain LABELS terrain)
target_include_directories(terrain_gpu_slot PRIVATE ${TERRAIN_PRIVATE_INCLUDES})

# The installed library (package/library.cmake) as its users build against it: SONAME,
# exports = terrain.h's functions, no CUDA/MPI, a program built with pkg-config and with
# find_package(terrafort) writes the command's bytes. Not in the sanitizer tree (a
# program without the sanitizer's runtime cannot load that library).
if(NOT TERRAFORT_SANITIZE)
  add_test(NAME terrain_installed_tree
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/installed_tree.sh ${CMAKE_BINARY_DIR} ${PROJECT_SOURCE_DIR}
                   ${CMAKE_BINARY_DIR}/testdata)
  set_tests_properties(terrain_installed_tree PROPERTIES FIXTURES_REQUIRED testdata LABELS "unit;terrain" TIMEOUT 300)
endif()
# hydro/dinf.h's cell rule against the plain rule written in the test (internal header).
terrafort_add_test(terrain_dinf_cell SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_dinf_cell.c LIBS terrain LABELS terrain)
target_include_directories(terrain_dinf_cell PRIVATE ${TERRAIN_PRIVATE_INCLUDES})

# The floods' queue (core/radix_heap.h: fill's and breach's) against a reference queue in the
# test: pops in (value, time queued) order exactly, or lowest first; the peek hint; chunks
terrafort_add_test(terrain_radix_heap SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_radix_heap.c LIBS terrain LABELS terrain)
target_include_directories(terrain_radix_heap PRIVATE ${TERRAIN_PRIVATE_INCLUDES})

# The graph runner's store of input windows (io/tile_store.h): windows cell by cell for budgets
# from none to all, the budget held between calls, spare windows reused
terrafort_add_test(terrain_tile_store SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_tile_store.c LIBS terrain LABELS terrain)
target_include_directories(terrain_tile_store PRIVATE ${TERRAIN_PRIVATE_INCLUDES})

# tr_input's direct reads (io/raster.h): which GeoTIFFs take them, and their windows against
# GDAL's RasterIO of the same file, byte for byte (files written by the test itself)
terrafort_add_test(terrain_direct_read SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_direct_read.c LIBS terrain
                   LABELS terrain)
target_include_directories(terrain_direct_read PRIVATE ${TERRAIN_PRIVATE_INCLUDES})

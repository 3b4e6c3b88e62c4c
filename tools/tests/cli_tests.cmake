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
                     ENVIRONMENT "${TERRAFORT_MPI_TEST_ENV}")
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
                     ENVIRONMENT "${TERRAFORT_MPI_TEST_ENV}")
if(TERRAFORT_SANITIZE)
  set_property(TEST cli_fill APPEND PROPERTY ENVIRONMENT "ASAN_OPTIONS=detect_leaks=0")
endif()

# breach: RichDEM's complete breaching cell for cell on the shared DEMs; every mode, fill and
# epsilon against a second breaching written in the test (breach_ref.h) and against RichDEM's
# rd_depressions_breach when RICHDEM_BIN names its folder (each difference counted and its cause
# shown); corridors whose outcomes are worked out by hand; no pit left, cuts no deeper than
# --max-depth; the same bytes for threads, tiles, --ft dual and mpirun in every mode; bad input.
terrafort_add_test(cli_breach SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_breach.c LIBS terrain
                   ARGS ${CMAKE_BINARY_DIR}/testdata $<TARGET_FILE:terrafort> ${TF_SHARED_DATA} LABELS "cli;mpi")
set_tests_properties(cli_breach PROPERTIES FIXTURES_REQUIRED testdata ENVIRONMENT "${TERRAFORT_MPI_TEST_ENV}")
if(TERRAFORT_SANITIZE)
  set_property(TEST cli_breach APPEND PROPERTY ENVIRONMENT "ASAN_OPTIONS=detect_leaks=0")
endif()
# tri, tpi, roughness: parity with gdaldem, and the same bytes from threads, tiles, --ft dual and mpirun.
terrafort_add_test(cli_tri_tpi_roughness SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_tri_tpi_roughness.c LIBS terrain
                   ARGS ${CMAKE_BINARY_DIR}/testdata $<TARGET_FILE:terrafort> ${TF_SHARED_DATA} LABELS "cli;ft;mpi")
set_tests_properties(cli_tri_tpi_roughness PROPERTIES FIXTURES_REQUIRED testdata
                     ENVIRONMENT "${TERRAFORT_MPI_TEST_ENV}")
if(TERRAFORT_SANITIZE)
  set_property(TEST cli_tri_tpi_roughness APPEND PROPERTY ENVIRONMENT "ASAN_OPTIONS=detect_leaks=0")
endif()

# hillshade: parity with gdaldem to the byte, and the same bytes from threads, tiles, --ft dual and mpirun.
terrafort_add_test(cli_hillshade SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_hillshade.c LIBS terrain
                   ARGS ${CMAKE_BINARY_DIR}/testdata $<TARGET_FILE:terrafort> ${TF_SHARED_DATA} LABELS "cli;ft;mpi")
set_tests_properties(cli_hillshade PROPERTIES FIXTURES_REQUIRED testdata
                     ENVIRONMENT "${TERRAFORT_MPI_TEST_ENV}")
if(TERRAFORT_SANITIZE)
  set_property(TEST cli_hillshade APPEND PROPERTY ENVIRONMENT "ASAN_OPTIONS=detect_leaks=0")
endif()

# color-relief: parity with gdaldem on every ramp_*.txt, and the same bytes from threads, tiles, --ft dual and mpirun.
terrafort_add_test(cli_color_relief SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_color_relief.c LIBS terrain
                   ARGS ${CMAKE_BINARY_DIR}/testdata $<TARGET_FILE:terrafort> ${PROJECT_SOURCE_DIR}/testdata
                   LABELS "cli;ft;mpi")
set_tests_properties(cli_color_relief PROPERTIES FIXTURES_REQUIRED testdata
                     ENVIRONMENT "${TERRAFORT_MPI_TEST_ENV}")
if(TERRAFORT_SANITIZE)
  set_property(TEST cli_color_relief APPEND PROPERTY ENVIRONMENT "ASAN_OPTIONS=detect_leaks=0")
endif()

# issue 14: outputs that are the input or not regular files, driver types, fill -ot, non-finite
# cells, orientation, signals and stale temporaries, thread limits, GDAL names; and a fuzz test of
# the GeoTIFF reader path (fewer cases under the sanitizers).
terrafort_add_test(cli_robust SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_robust.c LIBS terrain
                   ARGS ${CMAKE_BINARY_DIR}/testdata $<TARGET_FILE:terrafort> LABELS "cli;mpi")
# every command's option table against the parser, row by row (issue 30 item 1; what batch
# reads from a job's words: terrain_batch_jobs; --help and man pages: cli_help_man)
terrafort_add_test(cli_options SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_options.c LIBS terrafort_commands LABELS cli)
# fill's and flowgraph's heap set-up (process.c) and the environment that turns it off
# (terrafort(1), ENVIRONMENT), seen in glibc's count of mapped blocks
terrafort_add_test(cli_heap_setup SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_heap_setup.c LIBS terrafort_commands LABELS cli)
set_tests_properties(cli_heap_setup PROPERTIES SKIP_RETURN_CODE 77)
if(TERRAFORT_SANITIZE)
  set_property(TEST cli_options APPEND PROPERTY ENVIRONMENT "ASAN_OPTIONS=detect_leaks=0")
endif()

# every file a run writes guarded like its main output (issue 28): side outputs,
# the files behind an input (VRT sources, containers, archives), symbolic links
# (the walk reads the command table itself: linked with the commands' objects)
terrafort_add_test(cli_files_written SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_files_written.c LIBS terrafort_commands
                   ARGS ${CMAKE_BINARY_DIR}/testdata $<TARGET_FILE:terrafort> LABELS cli)
set_tests_properties(cli_files_written PROPERTIES FIXTURES_REQUIRED testdata ENVIRONMENT "${TERRAFORT_MPI_TEST_ENV}")
if(TERRAFORT_SANITIZE)
  set_property(TEST cli_files_written APPEND PROPERTY ENVIRONMENT "ASAN_OPTIONS=detect_leaks=0")
endif()
terrafort_add_test(cli_fuzz SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_fuzz.c LIBS terrain
                   ARGS ${CMAKE_BINARY_DIR}/testdata $<TARGET_FILE:terrafort> LABELS cli)
set_tests_properties(cli_robust cli_fuzz PROPERTIES FIXTURES_REQUIRED testdata
                     ENVIRONMENT "${TERRAFORT_MPI_TEST_ENV}")
if(TERRAFORT_SANITIZE)
  set_property(TEST cli_robust APPEND PROPERTY ENVIRONMENT "ASAN_OPTIONS=detect_leaks=0")
  target_compile_definitions(cli_fuzz PRIVATE FUZZ_CASES=100 FUZZ_SANITIZED=1)
endif()

# --ft replay (issue 11): same bytes as --ft off, exact repair counts, the in-place kernel's
# relaunch set and checkpoint, the error limit, threads and mpirun -n 2/3.
terrafort_add_test(cli_replay SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_replay.c LIBS terrain
                   ARGS ${CMAKE_BINARY_DIR}/testdata $<TARGET_FILE:terrafort> ${PROJECT_SOURCE_DIR}/testdata
                   LABELS "cli;ft;mpi")
set_tests_properties(cli_replay PROPERTIES FIXTURES_REQUIRED testdata
                     ENVIRONMENT "${TERRAFORT_MPI_TEST_ENV}")
if(TERRAFORT_SANITIZE)
  set_property(TEST cli_replay APPEND PROPERTY ENVIRONMENT "ASAN_OPTIONS=detect_leaks=0")
endif()

# Memory failures in a local kernel's launch (issue 26 item 3): SIGBUS BUS_MCEERR_AR/AO in a
# launch's buffers recovered on fresh buffers under --ft off and replay, --ft off's bytes and exact
# counts for 1 and 2 threads and mpirun -n 2; a SIGBUS not ours still kills. The same for the graph
# programs' rounds (fill, flowgraph --dir --acc) under --ft replay and dual. cli_sigbus_hwpoison is
# the real page poisoning alone (madvise(MADV_HWPOISON)): skipped (77) where the kernel refuses it.
# Release tree only for the local cases: not yet run under ASan, which has a SIGBUS handler of its
# own (handle_sigbus) beside the one these runs install and leave by siglongjmp.
if(NOT TERRAFORT_SANITIZE)
  terrafort_add_test(cli_sigbus SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_sigbus.c LIBS terrain
                     ARGS ${CMAKE_BINARY_DIR}/testdata $<TARGET_FILE:terrafort> LABELS "cli;ft;mpi")
  add_test(NAME cli_sigbus_hwpoison COMMAND cli_sigbus ${CMAKE_BINARY_DIR}/testdata $<TARGET_FILE:terrafort>
           test_sigbus_hwpoison)
  set_tests_properties(cli_sigbus_hwpoison PROPERTIES LABELS "unit;cli;ft" SKIP_RETURN_CODE 77 TIMEOUT 120)
  # one binary, one output folder (out_sigbus): never both at once
  set_tests_properties(cli_sigbus cli_sigbus_hwpoison PROPERTIES FIXTURES_REQUIRED testdata
                       ENVIRONMENT "${TERRAFORT_MPI_TEST_ENV}" RESOURCE_LOCK out_sigbus)
else()
  # The sanitizer tree runs the graph rounds' recoveries (ours leave ASan's handler unused: the
  # signal is ours and jumps back); not the deaths by SIGBUS, which ASan's handler reports instead.
  terrafort_add_test(cli_sigbus_graph SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_sigbus.c LIBS terrain
                     ARGS ${CMAKE_BINARY_DIR}/testdata $<TARGET_FILE:terrafort> test_sigbus_graph LABELS "cli;ft")
  add_test(NAME cli_sigbus_graph_dual COMMAND cli_sigbus_graph ${CMAKE_BINARY_DIR}/testdata
           $<TARGET_FILE:terrafort> test_sigbus_graph_dual)
  set_tests_properties(cli_sigbus_graph_dual PROPERTIES LABELS "unit;cli;ft")
  # one binary, one output folder (out_sigbus): run together, test_sigbus_graph compared the
  # other's fill with its flowgraph directions (CI, 2026-11-28)
  set_tests_properties(cli_sigbus_graph cli_sigbus_graph_dual PROPERTIES FIXTURES_REQUIRED testdata
                       RESOURCE_LOCK out_sigbus)
endif()

# --ft dual and replay for the graph programs (issue 26): fill and every flowgraph product with
# faults in rounds' state, messages, tiles and inputs give --ft off's bytes and closing counts;
# exact counts per tile for any thread count and under mpirun -n 3; out of core; the error limit.
terrafort_add_test(cli_graph_ft SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_graph_ft.c LIBS terrain
                   ARGS ${CMAKE_BINARY_DIR}/testdata $<TARGET_FILE:terrafort>
                   LABELS "cli;ft;aap;mpi")
set_tests_properties(cli_graph_ft PROPERTIES FIXTURES_REQUIRED testdata
                     ENVIRONMENT "${TERRAFORT_MPI_TEST_ENV}")
if(TERRAFORT_SANITIZE)
  set_property(TEST cli_graph_ft APPEND PROPERTY ENVIRONMENT "ASAN_OPTIONS=detect_leaks=0")
endif()

# GPU kernels (needs a GPU; exits 77 = skipped without one): GPU vs CPU bytes, GPU launch replay.
terrafort_add_test(cli_gpu SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_gpu.c LIBS terrain
                   ARGS ${CMAKE_BINARY_DIR}/testdata $<TARGET_FILE:terrafort> ${PROJECT_SOURCE_DIR}
                   LABELS "cli;gpu")
# its counterfeit NVML (the ECC count rises at a chosen read: test_gpu_nvml_ecc)
add_library(fake_nvml MODULE ${CMAKE_CURRENT_LIST_DIR}/fake_nvml.c)
set_target_properties(fake_nvml PROPERTIES PREFIX "lib" LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tools)
add_dependencies(cli_gpu fake_nvml)
set_tests_properties(cli_gpu PROPERTIES FIXTURES_REQUIRED testdata SKIP_RETURN_CODE 77 TIMEOUT 900
                     ENVIRONMENT "FAKE_NVML_LIB=$<TARGET_FILE:fake_nvml>")
# issue 12 / 14 item 4: a rank of an mpirun job really stopped or killed mid-run (slope, fill,
# --stats): exit 10 within the rank timeout, every survivor naming the rank, no output.
terrafort_add_test(cli_rank_loss SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_rank_loss.c LIBS terrain
                   ARGS ${CMAKE_BINARY_DIR}/testdata $<TARGET_FILE:terrafort> LABELS "cli;mpi")
set_tests_properties(cli_rank_loss PROPERTIES FIXTURES_REQUIRED testdata
                     ENVIRONMENT "${TERRAFORT_MPI_TEST_ENV}")
if(TERRAFORT_SANITIZE)
  # a request given up and later completed into a returned frame shows as stack-use-after-return
  set_property(TEST cli_rank_loss APPEND PROPERTY ENVIRONMENT "ASAN_OPTIONS=detect_leaks=0:detect_stack_use_after_return=1")
endif()

# issue 27 item 5: a rank stopped at 0, 0.1, 0.3, 0.6 and 1 s after mpirun starts (inside MPI_Init
# or mid-run), for slope --stats, fill and flowgraph --acc: exit 10 within the rank timeout + margin,
# a line naming what was not answered, nothing in the output folder.
# Labelled slow: 15 mpirun jobs whose point is timing, run in the Release tree only (scripts/test
# leaves 'slow' out of the sanitizer tree, where the same exit paths run in cli_rank_loss).
terrafort_add_test(cli_stopped_rank SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_stopped_rank.c LIBS terrain
                   ARGS ${CMAKE_BINARY_DIR}/testdata $<TARGET_FILE:terrafort> LABELS "cli;mpi;slow")
set_tests_properties(cli_stopped_rank PROPERTIES FIXTURES_REQUIRED testdata
                     ENVIRONMENT "${TERRAFORT_MPI_TEST_ENV}")
if(TERRAFORT_SANITIZE)
  set_property(TEST cli_stopped_rank APPEND PROPERTY ENVIRONMENT "ASAN_OPTIONS=detect_leaks=0")
endif()

# Every local mode on every DEM type: 1 thread vs 2 threads and small tiles give the same bytes.
# The one test that runs every kernel under the sanitizers (the "peer" tests are Release-only).
terrafort_add_test(cli_modes_threads SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_modes_threads.c LIBS terrain
                   ARGS ${CMAKE_BINARY_DIR}/testdata $<TARGET_FILE:terrafort> ${PROJECT_SOURCE_DIR}/testdata
                   LABELS cli)
set_tests_properties(cli_modes_threads PROPERTIES FIXTURES_REQUIRED testdata)

# Parity with a peer tool (values against gdaldem / gdal_grid / TauDEM): half their time is the
# peer, which no sanitizer instruments, so scripts/test runs them in the Release tree only
# (cli_modes_threads runs every kernel under the sanitizers instead).
set_property(TEST cli_gdaldem_compat cli_color_relief cli_tri_tpi_roughness cli_hillshade APPEND PROPERTY LABELS peer)

# issue 12: terrafort batch: 20 jobs over mpirun -n 3 (one failing, one slow) byte-identical to each
# job alone, handed out dynamically, resumed; one process; --dir; bad input; a signal; a rank lost.
terrafort_add_test(cli_batch SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_batch.c LIBS terrain
                   ARGS ${CMAKE_BINARY_DIR}/testdata $<TARGET_FILE:terrafort> ${PROJECT_SOURCE_DIR}/testdata
                   LABELS "cli;mpi")
set_tests_properties(cli_batch PROPERTIES FIXTURES_REQUIRED testdata
                     ENVIRONMENT "${TERRAFORT_MPI_TEST_ENV}")
if(TERRAFORT_SANITIZE)
  set_property(TEST cli_batch APPEND PROPERTY ENVIRONMENT "ASAN_OPTIONS=detect_leaks=0")
endif()

# out of core (--mem, --tmp): fill and every flowgraph product byte-identical to
# the in-memory run with 1/4 and 1/16 of the state in memory; failures leave nothing.
terrafort_add_test(cli_outofcore SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_outofcore.c LIBS terrain
                   ARGS ${CMAKE_BINARY_DIR}/testdata $<TARGET_FILE:terrafort> LABELS "cli;aap")
set_tests_properties(cli_outofcore PROPERTIES FIXTURES_REQUIRED testdata
                     ENVIRONMENT "${TERRAFORT_MPI_TEST_ENV}")
if(TERRAFORT_SANITIZE)
  set_property(TEST cli_outofcore APPEND PROPERTY ENVIRONMENT "ASAN_OPTIONS=detect_leaks=0")
endif()

# --stats histograms and --percentiles (issue 27 item 1): GDAL's own histogram over the same
# bounds, numpy's percentiles, the same bytes for 1, 3 and 4 ranks, the halving path under -n 4.
terrafort_add_test(cli_stats_hist SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_stats_hist.c LIBS terrain
                   ARGS ${CMAKE_BINARY_DIR}/testdata $<TARGET_FILE:terrafort> LABELS "cli;mpi")
set_tests_properties(cli_stats_hist PROPERTIES FIXTURES_REQUIRED testdata ENVIRONMENT "${TERRAFORT_MPI_TEST_ENV}")
if(TERRAFORT_SANITIZE)
  set_property(TEST cli_stats_hist APPEND PROPERTY ENVIRONMENT "ASAN_OPTIONS=detect_leaks=0")
endif()

# bash completion (tools/terrafort.bash): registered when sourced; commands, flags and an
# option's values from the program's own help, file names otherwise.
add_test(NAME cli_completion COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/completion.sh $<TARGET_FILE:terrafort>
                                     ${PROJECT_SOURCE_DIR})
set_tests_properties(cli_completion PROPERTIES LABELS "unit;cli" TIMEOUT 120)

# The Python package over libterrafort.so (tools/python): pytest, against this build's
# program, library and test DEMs. Not in the sanitizer tree (no shared library there).
if(TARGET libterrafort)
  add_test(NAME python_package
           COMMAND /usr/bin/python3 -m pytest -q -p no:cacheprovider ${PROJECT_SOURCE_DIR}/tools/python/tests)
  set_tests_properties(python_package PROPERTIES FIXTURES_REQUIRED testdata LABELS "unit;python" TIMEOUT 300
                       ENVIRONMENT "PYTHONPATH=${PROJECT_SOURCE_DIR}/tools/python;PYTHONDONTWRITEBYTECODE=1;TERRAFORT_LIBRARY=$<TARGET_SONAME_FILE:libterrafort>;TERRAFORT_BIN=$<TARGET_FILE:terrafort>;TERRAFORT_TESTDATA=${CMAKE_BINARY_DIR}/testdata")
endif()

# The QGIS Processing provider (tools/qgis): a headless QGIS (Debian's qgis, python3-qgis)
# runs terrafort:slope, fill and flowgraph, also through qgis_process, for the command's
# bytes. Skipped (77) only where QGIS's Python API cannot be imported.
if(TARGET libterrafort)
  add_test(NAME qgis_provider
           COMMAND sh -c "/usr/bin/python3 -c 'import qgis.core' || { echo 'skipped: no QGIS Python API (apt-get install qgis python3-qgis; scripts/setup does)'; exit 77; }; exec /usr/bin/python3 -m pytest -q -p no:cacheprovider ${PROJECT_SOURCE_DIR}/tools/qgis/tests")
  set_tests_properties(qgis_provider PROPERTIES FIXTURES_REQUIRED testdata LABELS "python;qgis" TIMEOUT 600
                       SKIP_RETURN_CODE 77
                       ENVIRONMENT "QT_QPA_PLATFORM=offscreen;PYTHONPATH=${PROJECT_SOURCE_DIR}/tools/python;PYTHONDONTWRITEBYTECODE=1;TERRAFORT_LIBRARY=$<TARGET_SONAME_FILE:libterrafort>;TERRAFORT_BIN=$<TARGET_FILE:terrafort>;TERRAFORT_TESTDATA=${CMAKE_BINARY_DIR}/testdata;TERRAFORT_BUILD=${CMAKE_BINARY_DIR}")
endif()

# each command's --help and its man page name the same options (tools/tests/help_man.sh)
add_test(NAME cli_help_man COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/help_man.sh $<TARGET_FILE:terrafort>
                                   ${PROJECT_SOURCE_DIR})
set_tests_properties(cli_help_man PROPERTIES LABELS "unit;cli" TIMEOUT 120)

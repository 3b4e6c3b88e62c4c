# Tests of the AAP engine and the depression fill (label aap).
set(_aap_t ${CMAKE_CURRENT_SOURCE_DIR}/tests)
terrafort_add_test(test_fill_equal SOURCES ${_aap_t}/test_fill_equal.c ${_aap_t}/test_fill_ref.c
                   LIBS terrain LABELS aap)
terrafort_add_test(test_aap_sim SOURCES ${_aap_t}/test_aap_sim.c LIBS terrain LABELS aap)
terrafort_add_mpi_test(test_aap_mpi NP 2 SOURCES ${_aap_t}/test_aap_mpi.c ${_aap_t}/test_fill_ref.c
                       LIBS terrain LABELS aap)
terrafort_add_mpi_test(test_aap_mpi NP 3 SOURCES ${_aap_t}/test_aap_mpi.c ${_aap_t}/test_fill_ref.c
                       LIBS terrain LABELS aap)
# Open MPI's own allocations look like leaks to LeakSanitizer (as in libcoll and libft).
if(TERRAFORT_SANITIZE AND TERRAFORT_HAVE_MPI)
  foreach(np 2 3)
    set_property(TEST test_aap_mpi_np${np} APPEND PROPERTY ENVIRONMENT "ASAN_OPTIONS=detect_leaks=0")
  endforeach()
endif()

# Tests of the depression fill on the AAP engine (label aap). They are
# libterrain's own tests: they may use hydro/'s internal fill.h.
set(_hydro_t ${CMAKE_CURRENT_LIST_DIR})
terrafort_add_test(terrain_fill_equal SOURCES ${_hydro_t}/test_fill_equal.c ${_hydro_t}/test_fill_ref.c
                   LIBS terrain aap LABELS aap)
target_include_directories(terrain_fill_equal PRIVATE ${TERRAIN_PRIVATE_INCLUDES})
foreach(np 2 3)
  terrafort_add_mpi_test(terrain_fill_mpi NP ${np} SOURCES ${_hydro_t}/test_fill_mpi.c ${_hydro_t}/test_fill_ref.c
                         LIBS terrain aap LABELS aap)
  # Open MPI's own allocations look like leaks to LeakSanitizer (as in libcoll and libft).
  if(TERRAFORT_SANITIZE AND TERRAFORT_HAVE_MPI)
    set_property(TEST terrain_fill_mpi_np${np} APPEND PROPERTY ENVIRONMENT "ASAN_OPTIONS=detect_leaks=0")
  endif()
endforeach()
if(TARGET terrain_fill_mpi_bin)
  target_include_directories(terrain_fill_mpi_bin PRIVATE ${TERRAIN_PRIVATE_INCLUDES})
endif()

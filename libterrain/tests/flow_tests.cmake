# Tests of the programs computed from D8 directions (d8_up, d8_basins)
# against sequential references; they use hydro/'s internal headers.
terrafort_add_test(flow_engine SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_flow_engine.c ${CMAKE_CURRENT_LIST_DIR}/test_fill_ref.c
                   LIBS terrain aap LABELS aap)
target_include_directories(flow_engine PRIVATE ${TERRAIN_PRIVATE_INCLUDES})

# Tests of D8 flow directions (tr_flowdir: fill, the flowdir graph program, the d8 kernel),
# label flow. The reference and the DEMs are in test_flow_ref.c (with test_fill_ref.c's fill).
set(_flow_t ${CMAKE_CURRENT_LIST_DIR})
set(_flow_ref ${_flow_t}/test_flow_ref.c ${_flow_t}/test_fill_ref.c)
terrafort_add_test(flow_equal SOURCES ${_flow_t}/test_flow_equal.c ${_flow_ref} LIBS terrain aap LABELS flow)
target_include_directories(flow_equal PRIVATE ${TERRAIN_PRIVATE_INCLUDES})

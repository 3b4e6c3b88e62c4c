# The sanitizer tree's share of the longest CLI tests (the suite's 25 minutes: README).
#
# Under ASan+UBSan a process starts twice as slowly, and those tests start hundreds: run whole,
# they took 1,640 of the sanitizer tree's 2,400 test-seconds (2-core machine, 2026-11-28). What
# the sanitizers add is each code path reached once, so that tree runs, of each test below, the
# cases whose paths no other of its cases reaches: errors and refusals, a lost or stopped rank,
# spilling, --ft's repairs, each product and each option once. It leaves to the Release tree the
# matrices that run those same paths again over threads, tile sizes, ranks, schedules and data
# types (the byte-identity checks), the comparisons with peers, and the file-guard walk, which
# runs every command's refusal once per output. The Release tree runs every case of every test.
# The library tests (engine, libft, libcoll, kernels) run whole in both trees.
#
# TR_TEST_CASES is read by tr_test_main (scripts/testkit/tr_test.h); a name that is not a case
# of the test fails it.

# the one such test that is no tr_test binary: a byte-identity matrix whole, Release tree only
set_property(TEST interp_same_bytes APPEND PROPERTY LABELS slow)
if(NOT TERRAFORT_SANITIZE)
  return()
endif()

function(terrafort_sanitized_cases test)
  list(JOIN ARGN " " cases)
  set_property(TEST ${test} APPEND PROPERTY ENVIRONMENT "TR_TEST_CASES=${cases}")
endfunction()

terrafort_sanitized_cases(flow_cli test_setup test_help test_from_dem test_bad_inputs test_basins_by_outlets
                          test_basin_stats_links test_sigterm_between_stages test_all_or_nothing)
terrafort_sanitized_cases(cli_graph_ft test_fill_dual test_fill_replay test_invariants test_out_of_core
                          test_helper_late test_bad_options)
terrafort_sanitized_cases(cli_batch test_bad_input test_rank_lost test_signal test_reported_outputs
                          test_dir_template)
terrafort_sanitized_cases(cli_outofcore test_refusals test_failures_leave_nothing)
terrafort_sanitized_cases(cli_rank_loss test_stopped_at_start test_slope_stopped test_late_rank_stats
                          test_ft_dual_stopped_mid_message test_fill_stopped_mid_message test_killed_recovery
                          test_rank_timeout_option)
terrafort_sanitized_cases(cli_parallel_modes test_ft_flips_corrected test_mpi_ft_dual_with_flips test_compressed_input
                          test_ft_source_profile_counts test_stats_huge_values test_mpi_errors_once
                          test_ft_exact_schedule)
terrafort_sanitized_cases(cli_breach test_corridors test_bad_input test_nonfinite test_richdem_parity
                          test_writer_only)
terrafort_sanitized_cases(cli_files_written test_output_options_agree test_side_outputs_onto_inputs
                          test_side_outputs_under_mpirun test_side_files_full_disk test_files_behind_the_input
                          test_stdout_only_json test_symlink_outputs test_long_names)
terrafort_sanitized_cases(cli_fill test_equals_reference test_mpi_ranks test_errors test_epsilon
                          test_taudem_form_types_stats test_equals_saga)
terrafort_sanitized_cases(cli_replay test_replay_flip_one_launch test_replay_random_flips_threads
                          test_replay_inplace_relaunch test_replay_inplace_checkpoint test_replay_error_limit
                          test_replay_sampled_check test_replay_invariants test_replay_bad_options)
terrafort_sanitized_cases(flowgraph_dinf test_plane_analytic test_ang_in test_ang_in_bad test_twi_in test_spi
                          test_bad_options)
terrafort_sanitized_cases(flowgraph_hand test_plane_analytic test_gridnet_reference test_given_inputs
                          test_out_of_core test_bad_options)
terrafort_sanitized_cases(flowgraph_mfd test_cone_analytic test_rho8 test_richdem test_bad_options)
terrafort_sanitized_cases(cli_stats_hist test_hist_and_percentiles_match_references test_mpi_halving_path
                          test_side_file_written_and_removed test_bad_values test_side_file_refused
                          test_no_histogram test_all_nodata)
terrafort_sanitized_cases(cli_burn test_bad_input test_against_gdal_rasterize test_other_crs test_counted_in_mem
                          test_embankment)

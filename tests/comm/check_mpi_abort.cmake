# Runs the abort helper under mpirun and checks that the job fails, and that stderr names
# the failing rank and its message. Invoked by ctest with -DMPIEXEC=... -DNP_FLAG=...
# -DPROGRAM=...
execute_process(
  COMMAND ${MPIEXEC} ${NP_FLAG} 3 --oversubscribe ${PROGRAM}
  RESULT_VARIABLE rc
  OUTPUT_VARIABLE out
  ERROR_VARIABLE err
  TIMEOUT 60)
if(rc MATCHES "timeout")
  message(FATAL_ERROR "mpirun did not finish within 60 s: the abort path hangs\n${err}")
endif()
if(rc EQUAL 0)
  message(FATAL_ERROR "mpirun exited 0 although rank 1 threw\n${out}\n${err}")
endif()
if(NOT err MATCHES "rank 1: deliberate failure on rank 1")
  message(FATAL_ERROR "stderr does not name the failing rank and message\n${out}\n${err}")
endif()
message(STATUS "mpirun exited with ${rc} and stderr names rank 1")

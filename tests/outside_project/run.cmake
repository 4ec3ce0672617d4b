# Installs weft into a scratch prefix and moves the prefix elsewhere, as a user copying an
# installation would; runs the installed `weft info` from there; then configures, builds and runs
# the outside project against it with find_package(weft). Called by CTest with -DBUILD_DIR=...
# -DWORK_DIR=...
file(REMOVE_RECURSE ${WORK_DIR})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/installed
                RESULT_VARIABLE rc OUTPUT_QUIET)
if(rc)
  message(FATAL_ERROR "cmake --install failed: ${rc}")
endif()
file(RENAME ${WORK_DIR}/installed ${WORK_DIR}/prefix)
execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=OMP_WAIT_POLICY --unset=GOMP_SPINCOUNT
                        OMP_DISPLAY_ENV=verbose ${WORK_DIR}/prefix/bin/weft info
                RESULT_VARIABLE rc OUTPUT_VARIABLE info ERROR_VARIABLE info)
if(rc)
  message(FATAL_ERROR "the installed weft info failed (${rc}): ${info}")
endif()
# libgomp starts with weft's wait policy (weft/core/openmp_wait_policy.cc): OMP_DISPLAY_ENV makes
# it print the spin count it read, when it initialised.
if(NOT info MATCHES "GOMP_SPINCOUNT = '30000'" OR
   NOT info MATCHES "openmp wait policy: GOMP_SPINCOUNT=30000")
  message(FATAL_ERROR "the installed weft did not start OpenMP with weft's wait policy: ${info}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -S ${CMAKE_CURRENT_LIST_DIR} -B ${WORK_DIR}/build
                        -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix -DCMAKE_BUILD_TYPE=Release
                RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "configuring the outside project failed: ${rc}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${WORK_DIR}/build RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "building the outside project failed: ${rc}")
endif()
execute_process(COMMAND ${WORK_DIR}/build/numpy_snippet RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "numpy_snippet failed: ${rc}")
endif()

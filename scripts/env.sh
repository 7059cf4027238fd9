# Source this to run MPI programs with the components built in build/ (no
# `make install` needed): `. scripts/env.sh; mpirun --mca pml ubermatch ./app`.
# UM_BUILD overrides the build folder (make check gives its own; with it set,
# any POSIX shell can source this file, without it bash).
if [ -z "${UM_BUILD:-}" ]; then
    _um_build=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/build
else
    _um_build=$UM_BUILD
fi
_um_sysdir=$(ompi_info --parsable --path pkglibdir 2>/dev/null | sed -n 's/^path:pkglibdir://p')
export OMPI_MCA_mca_base_component_path="${_um_sysdir}:${_um_build}/mca-components"
# Oversubscribe (these machines have 2 cores); mpirun refuses root without leave.
export OMPI_MCA_rmaps_base_oversubscribe=1
if [ "$(id -u)" -eq 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
unset _um_build _um_sysdir

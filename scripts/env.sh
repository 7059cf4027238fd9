# Source this to run MPI programs with the components built in build/ (no
# `make install` needed): `. scripts/env.sh; mpirun --mca pml ubermatch ./app`.
# UM_BUILD overrides the build folder.
_um_top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
_um_build=${UM_BUILD:-$_um_top/build}
_um_sysdir=$(ompi_info --parsable --path pkglibdir 2>/dev/null | sed -n 's/^path:pkglibdir://p')
export OMPI_MCA_mca_base_component_path="${_um_sysdir}:${_um_build}/mca-components"
# Everything runs as root on these machines, on 2 cores.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
unset _um_top _um_build _um_sysdir

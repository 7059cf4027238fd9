# shellcheck shell=bash
# Shared by bench/mpi/six-shapes.sh and bench/run-all.sh (sourced, not run).

# mpirun arguments of a configuration: ob1, ucx or ubermatch:BACKEND.
um_pml_args() {
    case $1 in
    ob1) echo "--mca pml ob1 --mca btl self,vader" ;;
    ucx) echo "--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any" ;;
    ubermatch:*) echo "--mca pml ubermatch --mca pml_ubermatch_backend ${1#ubermatch:}" ;;
    *) echo "--mca pml $1" ;;
    esac
}

# Idle share (%) of all CPUs over half a second, from /proc/stat: other jobs on
# these cores skew the numbers.
um_cpu_idle_pct() {
    local a b total=0 i idle
    read -ra a < <(grep '^cpu ' /proc/stat)
    sleep 0.5
    read -ra b < <(grep '^cpu ' /proc/stat)
    for i in 1 2 3 4 5 6 7 8; do total=$((total + b[i] - a[i])); done
    idle=$((b[4] - a[4] + b[5] - a[5]))
    if [ "$total" -gt 0 ]; then echo $((100 * idle / total)); else echo 100; fi
}

# One line describing this machine.
um_machine() {
    echo "$(nproc) cores ($(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -n1), L2 $(($(getconf LEVEL2_CACHE_SIZE 2>/dev/null || echo 0) >> 20)) MiB per core, L3 $(($(getconf LEVEL3_CACHE_SIZE 2>/dev/null || echo 0) >> 20)) MiB), $(free -g | awk '/^Mem:/ { print $2 }') GiB, $(. /etc/os-release && echo "$PRETTY_NAME"), $(mpirun --version 2>/dev/null | head -n1), UCX $(pkg-config --modversion ucx 2>/dev/null || echo '?')"
}

# Reads the key=value fields of a queue_bench result line into the associative
# array named by $1: um_parse_line kv "$line".
um_parse_line() {
    local -n _kv=$1
    local f
    _kv=()
    for f in $2; do _kv[${f%%=*}]=${f#*=}; done
}

# Waits up to $1 seconds for the CPUs to be at least 90% idle (other jobs on a
# shared machine), then prints the idle share as um_cpu_idle_pct does.
um_wait_idle() {
    local until=$((SECONDS + ${1:-0})) idle
    idle=$(um_cpu_idle_pct)
    while [ "$idle" -lt 90 ] && [ "$SECONDS" -lt "$until" ]; do
        sleep 2
        idle=$(um_cpu_idle_pct)
    done
    echo "$idle"
}

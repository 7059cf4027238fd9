#!/bin/sh
# Prints the ubermatch(7) manual page. The parameter list comes from the
# components themselves (ompi_info --parsable), so the page lists exactly what
# the built code registers. Usage: man/ubermatch-7.sh COMPONENT_DIR
set -eu
[ $# -eq 1 ] && [ -f "$1/mca_pml_ubermatch.so" ] || {
    echo "usage: $0 DIR (the folder holding mca_pml_ubermatch.so and mca_coll_ubermatch.so)" >&2
    exit 2
}
dir=$(cd "$1" && pwd)
sysdir=$(ompi_info --parsable --path pkglibdir | sed -n 's/^path:pkglibdir://p')
version=$(sed -n 's/^AC_INIT(\[ubermatch\], \[\([^]]*\)\].*/\1/p' "$(dirname "$0")/../configure.ac")

params() { # framework component
    OMPI_MCA_mca_base_component_path="$sysdir:$dir" \
        ompi_info --parsable --level 9 --param "$1" "$2" |
        awk -F: -v fw="$1" -v comp="$2" '
            $1 == "mca" && $2 == fw && $3 == comp && $4 == "param" {
                name = $5; field = $6
                rest = $0; sub("^[^:]*:[^:]*:[^:]*:[^:]*:[^:]*:[^:]*:", "", rest) # no {6}: mawk lacks intervals
                if (!(name in seen)) { seen[name] = 1; order[n++] = name }
                if (field == "value") value[name] = rest
                else if (field == "help") help[name] = rest
                else if (field == "type") type[name] = rest
                else if (field == "enumerator") {
                    split(rest, e, ":"); enums[name] = enums[name] (enums[name] == "" ? "" : ", ") e[3]
                }
            }
            END {
                for (i = 0; i < n; i++) {
                    p = order[i]
                    gsub(/\\/, "\\\\", help[p]); gsub(/^[.'"'"']/, "\\\\\\&&", help[p])
                    printf ".TP\n.B %s\n(%s, default \\fI%s\\fR", p, type[p], value[p] == "" ? "empty" : value[p]
                    if (enums[p] != "") printf "; one of %s", enums[p]
                    printf ")\n%s\n", help[p]
                }
            }'
}

cat <<HEAD
.TH UBERMATCH 7 "" "ubermatch $version" "ubermatch"
.SH NAME
ubermatch \- MPI message matching engine for Open MPI
.SH SYNOPSIS
.B mpirun \-\-mca pml ubermatch
[\fB\-\-mca\fR \fIparameter value\fR]... \fIprogram\fR
.SH DESCRIPTION
ubermatch is an Open MPI point-to-point messaging layer (PML) whose
message matching is done by one of several engines (backends), chosen
with \fBpml_ubermatch_backend\fR. The coll/ubermatch component tells it
which traffic belongs to collectives. Parameters are set with
\fB\-\-mca\fR \fIname value\fR or the environment variable
\fBOMPI_MCA_\fR\fIname\fR.
.SH PML PARAMETERS
HEAD
params pml ubermatch
echo ".SH COLL PARAMETERS"
params coll ubermatch
cat <<TAIL
.SH FILES
.TP
.I /usr/include/ubermatch_engine.h
the engine's C interface, for use without MPI (link with \fB\-lubermatch\fR)
.SH SEE ALSO
.BR mpirun (1),
.BR ompi_info (1),
.BR engine_demo (1)
TAIL

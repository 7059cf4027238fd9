# Build glue shared by the ubermatch components: where Open MPI's devel
# headers are, and where its components are installed.

# UM_FIND_OMPI: sets MPICC, OMPI_INFO, MPIRUN, OMPI_CPPFLAGS, MPI_CFLAGS,
# MPI_LIBS, OMPI_LIBDIR, OMPI_COMPONENT_CFLAGS and ompi_componentdir, or stops
# with the name of the Debian package to install.
AC_DEFUN([UM_FIND_OMPI], [
    AC_ARG_WITH([ompi-component-dir],
        [AS_HELP_STRING([--with-ompi-component-dir=DIR],
            [where `make install` puts the MCA components (default: Open MPI's pkglibdir, from ompi_info)])],
        [], [with_ompi_component_dir=])
    AC_PATH_PROG([MPICC], [mpicc], [no])
    AC_PATH_PROG([OMPI_INFO], [ompi_info], [no])
    AC_PATH_PROG([MPIRUN], [mpirun], [no])
    AS_IF([test "x$MPICC" = xno || test "x$OMPI_INFO" = xno || test "x$MPIRUN" = xno],
        [AC_MSG_ERROR([Open MPI not found (mpicc, ompi_info, mpirun): install the Debian packages libopenmpi-dev and openmpi-bin])])

    AC_MSG_CHECKING([for Open MPI's include directories])
    OMPI_CPPFLAGS=""
    for dir in `$MPICC --showme:incdirs`; do
        OMPI_CPPFLAGS="$OMPI_CPPFLAGS -I$dir"
    done
    AC_MSG_RESULT([$OMPI_CPPFLAGS])

    um_save_CPPFLAGS=$CPPFLAGS
    CPPFLAGS="$CPPFLAGS $OMPI_CPPFLAGS"
    AC_LANG_PUSH([C])
    # (AC_CHECK_HEADER: nothing reads a HAVE_ macro; a missing header stops here.)
    for um_header in ompi_config.h ompi/mca/pml/pml.h; do
        AC_CHECK_HEADER([$um_header], [],
            [AC_MSG_ERROR([Open MPI's devel headers are missing ($um_header): install the Debian package libopenmpi-dev])],
            [#include <ompi_config.h>])
    done
    AC_LANG_POP([C])
    CPPFLAGS=$um_save_CPPFLAGS

    AC_MSG_CHECKING([for Open MPI's version])
    # (shown in configure's summary)
    OMPI_VERSION=`$OMPI_INFO --parsable 2>/dev/null | sed -n 's/^ompi:version:full://p'`
    AC_MSG_RESULT([$OMPI_VERSION])

    AC_MSG_CHECKING([where Open MPI looks for components])
    AS_IF([test -n "$with_ompi_component_dir"],
        [ompi_componentdir=$with_ompi_component_dir],
        [ompi_componentdir=`$OMPI_INFO --parsable --path pkglibdir | sed -n 's/^path:pkglibdir://p'`])
    AS_IF([test -z "$ompi_componentdir"],
        [AC_MSG_ERROR([could not read Open MPI's component directory from ompi_info; give --with-ompi-component-dir])])
    AC_MSG_RESULT([$ompi_componentdir])

    # Open MPI's inline atomics (opal_lifo under MPI_THREAD_MULTIPLE) use the
    # 16-byte compare-and-swap it was built with: components need -mcx16 on x86-64.
    OMPI_COMPONENT_CFLAGS=""
    AC_MSG_CHECKING([whether components need -mcx16])
    um_save_CFLAGS=$CFLAGS
    CFLAGS="$CFLAGS -mcx16"
    AC_COMPILE_IFELSE([AC_LANG_PROGRAM([], [])],
        [OMPI_COMPONENT_CFLAGS="-mcx16"; AC_MSG_RESULT([yes])], [AC_MSG_RESULT([no])])
    CFLAGS=$um_save_CFLAGS
    AC_SUBST([OMPI_COMPONENT_CFLAGS])

    # Flags to build MPI programs (tests, examples, benchmarks) without the wrapper.
    MPI_CFLAGS=`$MPICC --showme:compile`
    MPI_LIBS=`$MPICC --showme:link`
    OMPI_LIBDIR=`$MPICC --showme:libdirs | cut -d' ' -f1`

    AC_SUBST([OMPI_CPPFLAGS])
    AC_SUBST([MPI_CFLAGS])
    AC_SUBST([MPI_LIBS])
    AC_SUBST([OMPI_LIBDIR])
    AC_SUBST([ompi_componentdir])
])

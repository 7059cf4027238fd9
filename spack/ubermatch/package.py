# Spack recipe for ubermatch (not run here: spack is not installed on the
# project's machines). Copy this folder into a Spack repository's packages/.
from spack.package import *


class Ubermatch(AutotoolsPackage):
    """MPI message-matching engine as Open MPI PML and coll components, with
    the engine as a standalone C library."""

    homepage = "https://example.invalid/ubermatch"
    git = "https://example.invalid/ubermatch.git"

    version("main", branch="main")

    depends_on("autoconf", type="build")
    depends_on("automake", type="build")
    depends_on("libtool", type="build")
    depends_on("pkgconfig", type="build")
    depends_on("catch2@2", type="build")
    depends_on("benchmark", type="build")
    # Components are built against one Open MPI's internal headers and ABI.
    depends_on("openmpi@4.1")
    depends_on("ucx@1.13:")
    depends_on("hwloc")

    def autoreconf(self, spec, prefix):
        autoreconf("-fi")

    def configure_args(self):
        # Open MPI finds components in its own pkglibdir only (or through
        # OMPI_MCA_mca_base_component_path): install them under our prefix
        # and point Open MPI there from the module (setup_run_environment).
        return ["--with-ompi-component-dir={0}".format(self.prefix.lib.openmpi)]

    def setup_run_environment(self, env):
        ompi = self.spec["openmpi"].prefix.lib.openmpi
        env.set("OMPI_MCA_mca_base_component_path", "{0}:{1}".format(ompi, self.prefix.lib.openmpi))

# gpu_deps.sh: sourced by the bench/gpu*.sh scripts on the GPU machine (after `log` is
# defined). When pkg-config cannot find the build's libraries and .gpudeps/ holds their
# Debian 12 .deb files (carried with the device call; how to make it: bench/gpu.sh's
# header), they are unpacked into /tmp/gpudeps: headers, .pc files and link-time libraries
# are used from there, and at run time only the shared libraries whose soname the machine
# lacks (ldconfig -p) are put on LD_LIBRARY_PATH, so the machine's own Python, CMake and
# CUDA tools keep their own libraries.
HY_GPU_PCS="jansson oniguruma libutf8proc libcurl libcrypto sqlite3 expat"
# shellcheck disable=SC2086
if ! pkg-config --exists $HY_GPU_PCS 2>/dev/null && [ -d .gpudeps ]; then
    D=/tmp/gpudeps
    L=$D/usr/lib/x86_64-linux-gnu
    mkdir -p $D $D/rt
    for f in .gpudeps/*.deb; do dpkg -x "$f" $D; done
    for f in $L/lib*.so.*; do
        so=$(basename "$f")
        case $so in *.so.[0-9]*) ;; *) continue ;; esac
        ldconfig -p | grep -q "[[:space:]]$so " || cp -a "$f" $D/rt/
    done
    for f in $D/lib/x86_64-linux-gnu/lib*.so.*; do
        [ -e "$f" ] || continue
        so=$(basename "$f")
        ldconfig -p | grep -q "[[:space:]]$so " || cp -a "$f" $D/rt/
    done
    export PATH="$D/usr/bin:$PATH" PKG_CONFIG_LIBDIR="$L/pkgconfig:$D/usr/share/pkgconfig"
    export PKG_CONFIG_SYSROOT_DIR="$D" LD_LIBRARY_PATH="$D/rt:${LD_LIBRARY_PATH:-}"
    export CPATH="$D/usr/include:$D/usr/include/x86_64-linux-gnu" LIBRARY_PATH="$L"
    # shellcheck disable=SC2086
    log "build deps from .gpudeps ($(pkg-config --modversion $HY_GPU_PCS | tr '\n' ' '); carried at run time: $(ls $D/rt | tr '\n' ' '))"
fi

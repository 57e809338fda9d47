# gpu_deps.sh: sourced by the bench/gpu*.sh scripts on the GPU machine (after `log` is
# defined). When pkg-config cannot find the build's libraries and .gpudeps/ holds their
# .deb files (carried with the device call; how to make it: bench/gpu.sh's header), they
# are unpacked into /tmp/gpudeps and the build and the binaries use them from there.
if ! pkg-config --exists jansson oniguruma libutf8proc libmicrohttpd 2>/dev/null && [ -d .gpudeps ]; then
    D=/tmp/gpudeps
    mkdir -p $D
    for f in .gpudeps/*.deb; do dpkg -x "$f" $D; done
    # libmicrohttpd.pc names gnutls only for static links; we have no gnutls.pc
    sed -i '/^Requires.private:/d' $D/usr/lib/x86_64-linux-gnu/pkgconfig/libmicrohttpd.pc
    # libmicrohttpd.so.12 needs libgnutls.so.30: the system's if it has one, else carried
    ldconfig -p | grep -q 'libgnutls.so.30 ' || for f in .gpudeps/gnutls/*.deb; do dpkg -x "$f" $D; done
    export PATH="$D/usr/bin:$PATH" PKG_CONFIG_LIBDIR="$D/usr/lib/x86_64-linux-gnu/pkgconfig"
    export PKG_CONFIG_SYSROOT_DIR="$D" LD_LIBRARY_PATH="$D/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
    export CPATH="$D/usr/include" LIBRARY_PATH="$D/usr/lib/x86_64-linux-gnu"
    log "build deps from .gpudeps ($(pkg-config --modversion jansson oniguruma libutf8proc libmicrohttpd | tr '\n' ' '); system gnutls: $(ldconfig -p | grep -c 'libgnutls.so.30 '))"
fi

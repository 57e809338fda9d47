# serve_ready.sh: sourced (". FILE") by the shell tests that start `hymt serve --port 0` in
# the background and read the port from its log.
# serve_ready LOG PID [STEPS]: waits in 0.05 s steps (STEPS, default 300: 15 s, room for a
# loaded machine or ASan) until LOG has "serve: ready", then sets PORT to the port it names
# (text or JSON log line). A server that exits first or never gets ready: prints LOG and
# returns 1; the caller decides whether that ends the test.
serve_ready() {
    _n=0
    while ! grep -q "serve: ready" "$1"; do
        _n=$((_n + 1))
        if [ "$_n" -gt "${3:-300}" ] || ! kill -0 "$2" 2>/dev/null; then
            echo "FAIL: the server did not start ($1):"
            cat "$1"
            return 1
        fi
        sleep 0.05
    done
    PORT=$(sed -n 's|.*serve: ready: .*:\([0-9][0-9]*\)/\("}\)\{0,1\}$|\1|p' "$1")
}

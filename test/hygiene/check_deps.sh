#!/bin/sh
# check_deps.sh: the build installs packages only for the goals deps, test and demo. Runs make
# (dry runs, -n, but for deps itself) in a fresh build directory with json-c's and zlib's headers
# named missing (JSONC_INC, ZLIB_INC) and a stand-in apt-get first on the PATH that logs each
# call. The plain goals (all, lib, cli, wheel) must not call it and must name `make deps`;
# demo calls it once per build directory, deps each time it is asked, and a build that follows
# an install sees what was installed (the stand-in puts the headers where they were missing).
# Prints "hygiene/deps: N passed, N failed".
cd "$(dirname "$0")/../.." || exit 1
unset MAKEFLAGS MFLAGS MAKELEVEL   # the make that runs the tests is not ours to inherit
passed=0; failed=0
ok() { passed=$((passed+1)); }
no() { failed=$((failed+1)); echo "  FAIL $*"; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/commlens-deps-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin"
# the stand-in: logs its arguments; with INSTALL_TO set, "installs" by copying the real headers
cat >"$tmp/bin/apt-get" <<'EOF'
#!/bin/sh
echo "$*" >>"$APT_LOG"
case "$1" in update) exit 0 ;; esac
[ -n "$INSTALL_TO" ] || exit 100
mkdir -p "$INSTALL_TO/json-c" && cp /usr/include/json-c/json.h "$INSTALL_TO/json-c/" && cp /usr/include/zlib.h "$INSTALL_TO/"
EOF
chmod +x "$tmp/bin/apt-get"
export APT_LOG="$tmp/apt.log"
: >"$APT_LOG"
inc=$tmp/inc
calls() { grep -c install "$APT_LOG"; }
# mk GOAL...: make in build directory $tmp/b with the headers named missing; output in $tmp/out
mk() {
  PATH="$tmp/bin:$PATH" make --no-print-directory BUILD="$tmp/b" JSONC_INC="$inc/json-c/json.h" \
    ZLIB_INC="$inc/zlib.h" "$@" >"$tmp/out" 2>&1
}

for goal in all lib cli wheel; do
  mk -n "$goal"
  if [ "$(calls)" -eq 0 ]; then ok; else no "make $goal called apt-get: $(cat "$APT_LOG")"; fi
  if grep -q 'make deps' "$tmp/out"; then ok; else no "make $goal does not say that make deps installs what is missing:"; head -n 5 "$tmp/out"; fi
done

mk -n demo
if [ "$(calls)" -eq 1 ] && grep -q 'install .*libjson-c-dev zlib1g-dev' "$APT_LOG"; then ok
else no "make demo should install libjson-c-dev and zlib1g-dev once: $(cat "$APT_LOG")"; fi
mk -n demo
if [ "$(calls)" -eq 1 ]; then ok; else no "a second make demo in the same build directory tried apt-get again"; fi

mk deps; rc=$?
if [ "$(calls)" -eq 2 ] && [ $rc -ne 0 ] && grep -q 'make deps: libjson-c-dev zlib1g-dev missing: apt-get could not install it' "$tmp/out"; then ok
else no "make deps (asked by name) should try again and fail saying what is missing (rc $rc):"; cat "$tmp/out"; fi

# an install that works: the same make sees the headers and builds the CLI with zlib
rm -rf "$tmp/b"
INSTALL_TO=$inc mk -n demo
if [ -f "$inc/zlib.h" ] && ! grep -q 'CLI not built\|COMMLENS_NO_ZLIB' "$tmp/out" && grep -q 'ljson-c' "$tmp/out"; then ok
else no "after make demo installed the headers, the build did not use them:"; grep -m 3 'CLI not built\|NO_ZLIB\|zlib' "$tmp/out"; fi
mk deps; rc=$?
if [ $rc -eq 0 ] && grep -q 'json-c and zlib are installed' "$tmp/out" && [ "$(calls)" -eq 3 ]; then ok
else no "make deps with everything there should say so and call nothing (rc $rc):"; cat "$tmp/out"; fi

echo "hygiene/deps: $passed passed, $failed failed"
[ "$failed" -eq 0 ]

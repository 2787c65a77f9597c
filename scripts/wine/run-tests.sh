#!/usr/bin/env bash
# Runs Go packages' tests as Windows binaries under Wine (docs/agent.md
# "Windows tests under Wine"):
#   scripts/wine/run-tests.sh ./agent/inventory ./agent/operations ...
# Each package is compiled with GOOS=windows (`go test -c`) and its .exe run
# by Debian's wine64 in a private prefix, .data/wine (WINE_TEST_PREFIX),
# which holds the ProcessPrng shim Go binaries need (bcryptprimitives.c).
# The shim, the test binaries and the boot log go in .data/wine/cairn-test.
# Extra arguments for the test binaries go in WINE_TEST_FLAGS
# (e.g. "-test.run TestX -test.v"). Any failing package fails the script,
# after every package has run.
set -euo pipefail
cd "$(dirname "$0")/../.."

GO=${GO:-go}
wine=${WINE:-}
if [ -z "$wine" ]; then
  for c in wine64 /usr/lib/wine/wine64 wine; do
    if command -v "$c" >/dev/null 2>&1; then wine=$(command -v "$c"); break; fi
  done
fi
if [ -z "$wine" ]; then
  echo "wine: wine64 is not installed (scripts/deps.sh test installs it)" >&2
  exit 1
fi
wineserver=$(dirname "$wine")/wineserver
[ -x "$wineserver" ] || wineserver=$(command -v wineserver || command -v wineserver64 || true)
if [ -z "$wineserver" ]; then
  echo "wine: wineserver not found next to $wine" >&2
  exit 1
fi

prefix=${WINE_TEST_PREFIX:-$PWD/.data/wine}
out=$prefix/cairn-test
export WINEPREFIX=$prefix WINEDEBUG=${WINEDEBUG:--all} WINEARCH=win64
# No Mono or Gecko installers (they would reach for the network) and no
# display: the prefix's graphics driver is Wine's null driver (below), so
# nothing needs X.
export WINEDLLOVERRIDES="mscoree,mshtml=" DISPLAY=
unset WAYLAND_DISPLAY

# Whatever happens, the prefix's wineserver and its processes (services
# Wine starts, a test's leftover children) are gone when this script ends,
# so a later run or another tool never meets a half-dead server.
xvfb_pid=
finish() {
  "$wineserver" -k >/dev/null 2>&1 || true
  if [ -n "$xvfb_pid" ]; then
    # Back to the null driver the prefix is made with.
    DISPLAY= "$wine" reg add 'HKCU\Software\Wine\Drivers' /v Graphics /d null /f >/dev/null 2>&1 || true
    "$wineserver" -k >/dev/null 2>&1 || true
    kill "$xvfb_pid" 2>/dev/null || true
  fi
}
trap finish EXIT

# A prefix is made once and reused; a half-made one (killed mid-boot) has no
# marker and is made again. wineboot returns before the prefix's services
# have settled; `wineserver -w` waits for every process of the prefix to end,
# however long a loaded machine takes.
if [ ! -f "$prefix/.cairn-ready" ]; then
  "$wineserver" -k >/dev/null 2>&1 || true
  rm -rf "$prefix"
  mkdir -p "$prefix"
  echo "wine: making a prefix in $prefix"
  "$wine" wineboot -i >"$prefix/wineboot.log" 2>&1 || { cat "$prefix/wineboot.log" >&2; exit 1; }
  # Wine's null display driver: windows can be created (a test posts
  # WM_CLOSE to one) without an X server.
  "$wine" reg add 'HKCU\Software\Wine\Drivers' /v Graphics /d null /f >>"$prefix/wineboot.log" 2>&1 \
    || { cat "$prefix/wineboot.log" >&2; exit 1; }
  # A 60 s service start timeout instead of Wine's 10 s (services.exe
  # reads it at start): the first start of a Go test binary as a service
  # in a fresh prefix once took longer.
  "$wine" reg add 'HKLM\System\CurrentControlSet\Control' /v ServicesPipeTimeout /t REG_DWORD /d 60000 /f >>"$prefix/wineboot.log" 2>&1 \
    || { cat "$prefix/wineboot.log" >&2; exit 1; }
  "$wineserver" -w
  touch "$prefix/.cairn-ready"
fi
mkdir -p "$out"

shim=$out/bcryptprimitives.dll
if [ ! -f "$shim" ] || [ scripts/wine/bcryptprimitives.c -nt "$shim" ] || [ scripts/wine/bcryptprimitives.def -nt "$shim" ]; then
  x86_64-w64-mingw32-gcc -O2 -shared -o "$shim.tmp" scripts/wine/bcryptprimitives.c scripts/wine/bcryptprimitives.def -ladvapi32
  mv "$shim.tmp" "$shim"
fi
cp "$shim" "$prefix/drive_c/windows/system32/bcryptprimitives.dll"

# WINE_TEST_XVFB=1: the tests read the screen (GDI capture of the
# desktop, agent/vnc/rfbserver), which Wine's null driver cannot give
# (BitBlt from the screen DC fails): they run on Wine's X11 driver over a
# private Xvfb display, the prefix's driver set back to null at the end.
if [ -n "${WINE_TEST_XVFB:-}" ]; then
  command -v Xvfb >/dev/null 2>&1 || { echo "wine: Xvfb is not installed (scripts/deps.sh test installs it)" >&2; exit 1; }
  "$wineserver" -k >/dev/null 2>&1 || true
  Xvfb -displayfd 3 -screen 0 1024x768x24 -nolisten tcp 3>"$out/xvfb.display" >"$out/xvfb.log" 2>&1 &
  xvfb_pid=$!
  for _ in $(seq 100); do [ -s "$out/xvfb.display" ] && break; sleep 0.1; done
  [ -s "$out/xvfb.display" ] || { echo "wine: Xvfb did not start: $(cat "$out/xvfb.log")" >&2; exit 1; }
  export DISPLAY=:$(head -n1 "$out/xvfb.display")
  "$wine" reg add 'HKCU\Software\Wine\Drivers' /v Graphics /d x11 /f >/dev/null 2>&1
  "$wineserver" -k >/dev/null 2>&1 || true
fi

failed=()
for pkg in "$@"; do
  name=$(echo "${pkg#./}" | tr '/' '-')
  exe=$out/$name.test.exe
  rm -f "$exe"
  if ! GOOS=windows GOARCH=amd64 "$GO" test -c -o "$exe" "$pkg"; then
    failed+=("$pkg")
    continue
  fi
  if [ ! -f "$exe" ]; then
    # A package without test files builds nothing: listing it is a mistake.
    echo "wine: $pkg has no tests for Windows" >&2
    failed+=("$pkg")
    continue
  fi
  echo "wine: $pkg"
  start=$(date +%s)
  # The test binary runs with the package directory as its working
  # directory, as `go test` does, so testdata/ resolves.
  # shellcheck disable=SC2086
  if (cd "$pkg" && "$wine" "$exe" -test.count=1 -test.timeout=15m ${WINE_TEST_FLAGS:-}); then
    echo "ok   $pkg (wine) $(($(date +%s) - start))s"
  else
    echo "FAIL $pkg (wine) $(($(date +%s) - start))s"
    failed+=("$pkg")
  fi
done
# Let the prefix's processes end by themselves before the trap's kill.
"$wineserver" -w

if [ ${#failed[@]} -gt 0 ]; then
  echo "wine: failed: ${failed[*]}" >&2
  exit 1
fi

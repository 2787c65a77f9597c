#!/usr/bin/env bash
# Runs Go packages' tests as Windows binaries under Wine (docs/agent.md
# "Windows tests under Wine"):
#   scripts/wine/run-tests.sh ./agent/inventory ./agent/ops ...
# Each package is compiled with GOOS=windows (`go test -c`) and its .exe run
# by Debian's wine64 in a private prefix under .data/wine, which holds the
# ProcessPrng shim Go binaries need (bcryptprimitives.c). Extra arguments for
# the test binaries go in WINE_TEST_FLAGS (e.g. "-test.run TestX -test.v").
# Any failing package fails the script, after every package has run.
set -euo pipefail
cd "$(dirname "$0")/../.."

dir=${WINE_TEST_DIR:-$PWD/.data/wine}
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

export WINEPREFIX=$dir/prefix WINEDEBUG=${WINEDEBUG:--all} WINEARCH=win64
# No Mono or Gecko installers (they would reach for the network), no display.
export WINEDLLOVERRIDES="mscoree,mshtml=" DISPLAY=
mkdir -p "$dir"

shim=$dir/bcryptprimitives.dll
if [ ! -f "$shim" ] || [ scripts/wine/bcryptprimitives.c -nt "$shim" ] || [ scripts/wine/bcryptprimitives.def -nt "$shim" ]; then
  x86_64-w64-mingw32-gcc -O2 -shared -o "$shim.tmp" scripts/wine/bcryptprimitives.c scripts/wine/bcryptprimitives.def -ladvapi32
  mv "$shim.tmp" "$shim"
fi

# A prefix is made once and reused; a half-made one (killed mid-boot) has no
# marker and is made again.
if [ ! -f "$WINEPREFIX/.cairn-ready" ]; then
  rm -rf "$WINEPREFIX"
  echo "wine: making a prefix in $WINEPREFIX"
  "$wine" wineboot -i >"$dir/wineboot.log" 2>&1 || { cat "$dir/wineboot.log" >&2; exit 1; }
  [ -n "$wineserver" ] && "$wineserver" -w
  touch "$WINEPREFIX/.cairn-ready"
fi
cp "$shim" "$WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll"

# Settings the Windows tests rely on, written once; Wine reads them when
# the wineserver starts, so the server is let go before the tests:
# - the null display driver: without X, windows can still be created
#   (agent/ops terminate asks a windowed process to close first);
# - a 60 s service start timeout instead of 10 s: the first start of a
#   Go test binary as a service in a fresh prefix can take longer.
if [ ! -f "$WINEPREFIX/.cairn-settings-1" ]; then
  "$wine" reg add 'HKCU\Software\Wine\Drivers' /v Graphics /d null /f >/dev/null
  "$wine" reg add 'HKLM\System\CurrentControlSet\Control' /v ServicesPipeTimeout /t REG_DWORD /d 60000 /f >/dev/null
  [ -n "$wineserver" ] && "$wineserver" -w
  touch "$WINEPREFIX/.cairn-settings-1"
fi

failed=()
for pkg in "$@"; do
  name=$(echo "${pkg#./}" | tr '/' '-')
  exe=$dir/$name.test.exe
  GOOS=windows GOARCH=amd64 "$GO" test -c -o "$exe" "$pkg"
  if [ ! -f "$exe" ]; then
    # A package without test files builds nothing: say so, as go test would.
    echo "wine: $pkg has no tests for Windows" >&2
    failed+=("$pkg")
    continue
  fi
  echo "wine: $pkg"
  # The test binary runs with the package directory as its working
  # directory, as `go test` does, so testdata/ resolves.
  # shellcheck disable=SC2086
  if ! (cd "$pkg" && "$wine" "$exe" -test.count=1 -test.timeout=15m ${WINE_TEST_FLAGS:-}); then
    failed+=("$pkg")
  fi
done
[ -n "$wineserver" ] && "$wineserver" -w

if [ ${#failed[@]} -gt 0 ]; then
  echo "wine: failed: ${failed[*]}" >&2
  exit 1
fi

#!/usr/bin/env bash
# Installs the system packages Cairn needs, only when they are missing.
#   scripts/deps.sh run   what `make run` needs (PostgreSQL server binaries)
#   scripts/deps.sh test  plus oathtool (TOTP checks), Chromium (browser tests) and
#                         slapd + ldap-utils (a private OpenLDAP for directory sign-in tests),
#                         wine64 + the mingw-w64 C compiler (the Windows agent's tests under Wine),
#                         wireguard-tools + wireguard-go (the agent's WireGuard tunnel, agent/tunnels),
#                         xvfb + x11vnc + x11-xserver-utils (the VNC role's server, agent/vnc, and the
#                         remote desktop test's display and the colour it paints with xsetroot),
#                         freerdp2-x11 + x11-utils (xfreerdp and xwininfo: the Engine's RDP bridge, internal/rdp) and
#                         freerdp2-shadow-x11 (freerdp-shadow-cli: the RDP end-to-end test's server, NLA
#                         with a SAM file the test writes),
#                         tk (wish: the test window the Playwright remote desktop spec types into),
#                         ansible (ansible-playbook, which the agent runs for Ansible playbook
#                         assemblies, agent/automation)
# As root it uses apt-get; otherwise it prints the command to run.
set -euo pipefail
mode=${1:-test}

have_postgres() {
  command -v initdb >/dev/null 2>&1 || compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null
}

missing=()
have_postgres || missing+=(postgresql)
if [ "$mode" = test ]; then
  command -v oathtool >/dev/null 2>&1 || missing+=(oathtool)
  [ -x /usr/bin/chromium ] || missing+=(chromium)
  [ -x /usr/sbin/slapd ] || missing+=(slapd ldap-utils)
  command -v wine64 >/dev/null 2>&1 || [ -x /usr/lib/wine/wine64 ] || missing+=(wine64)
  command -v x86_64-w64-mingw32-gcc >/dev/null 2>&1 || missing+=(gcc-mingw-w64-x86-64)
  command -v wg >/dev/null 2>&1 || missing+=(wireguard-tools)
  command -v wireguard-go >/dev/null 2>&1 || missing+=(wireguard-go)
  command -v ip >/dev/null 2>&1 || missing+=(iproute2)
  command -v Xvfb >/dev/null 2>&1 || missing+=(xvfb)
  command -v x11vnc >/dev/null 2>&1 || missing+=(x11vnc)
  command -v xsetroot >/dev/null 2>&1 || missing+=(x11-xserver-utils)
  command -v xfreerdp >/dev/null 2>&1 || missing+=(freerdp2-x11)
  command -v xwininfo >/dev/null 2>&1 || missing+=(x11-utils)
  command -v freerdp-shadow-cli >/dev/null 2>&1 || missing+=(freerdp2-shadow-x11)
  command -v wish >/dev/null 2>&1 || missing+=(tk)
  command -v ansible-playbook >/dev/null 2>&1 || missing+=(ansible)
fi
for tool in go node npm; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "deps: $tool is required but not installed (Go 1.26+, Node.js 20.19+)" >&2
    exit 1
  fi
done

[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "deps: missing system packages: ${missing[*]}" >&2
  echo "deps: install them with: sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "deps: installing ${missing[*]}"
# Noninteractive: slapd's own default database is not used (tests run a
# private slapd from a generated configuration), so its questions can take
# their defaults.
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null

#!/bin/sh
# apt-root.sh DIR [PACKAGE]: builds, under DIR, a private dpkg/apt root
# (DIR/root) with PACKAGE (default cairn-hello) 1.0 installed and 1.1 in a
# local file: repository (DIR/repo), apt's lists updated from it (no
# network). The agent uses it with CAIRN_AGENT_APT_ROOT=DIR/root
# (docs/agent.md "A private apt root"); it is what agent/patches/apttest
# builds for the Go tests. Nothing of the machine's own dpkg database,
# lists or locks is touched. Prints the root's path.
set -eu
dir=$1
pkg=${2:-cairn-hello}
root=$dir/root
repo=$dir/repo
export LC_ALL=C DEBIAN_FRONTEND=noninteractive
for d in var/lib/dpkg/info var/lib/dpkg/updates var/lib/apt/lists/partial var/cache/apt/archives/partial \
	etc/apt/sources.list.d etc/apt/preferences.d etc/apt/apt.conf.d etc/apt/trusted.gpg.d var/log/apt run; do
	mkdir -p "$root/$d"
done
: >"$root/var/lib/dpkg/status"
: >"$root/var/lib/dpkg/available"
mkdir -p "$repo"

# deb OUTDIR VERSION: builds PACKAGE_VERSION_all.deb (no maintainer scripts).
deb() {
	src=$dir/src-$2
	mkdir -p "$src/DEBIAN" "$src/usr/share/$pkg"
	echo "$2" >"$src/usr/share/$pkg/version"
	printf 'Package: %s\nVersion: %s\nArchitecture: all\nMaintainer: Cairn Tests <tests@example.invalid>\nDescription: a package the patch tests upgrade\n' \
		"$pkg" "$2" >"$src/DEBIAN/control"
	dpkg-deb --root-owner-group -b "$src" "$1/${pkg}_$2_all.deb" >/dev/null
	rm -rf "$src"
}

deb "$dir" 1.0
dpkg --root="$root" --force-not-root --force-script-chrootless -i "$dir/${pkg}_1.0_all.deb" >/dev/null

deb "$repo" 1.1
new=$repo/${pkg}_1.1_all.deb
{
	dpkg-deb -f "$new"
	echo "Filename: ./$(basename "$new")"
	echo "Size: $(stat -c %s "$new")"
	echo "SHA256: $(sha256sum "$new" | cut -d' ' -f1)"
	echo
} >"$repo/Packages"
echo "deb [trusted=yes] file:$repo ./" >"$root/etc/apt/sources.list"

apt-get -o "Dir=$root" -o "Dir::State::status=$root/var/lib/dpkg/status" \
	-o "Dir::Etc::trusted=$root/etc/apt/trusted.gpg" -o "Dir::Etc::trustedparts=$root/etc/apt/trusted.gpg.d" \
	-o "Dir::Log=$root/var/log/apt" -o APT::Sandbox::User=root \
	-o "DPkg::Options::=--root=$root" -o DPkg::Options::=--force-not-root -o DPkg::Options::=--force-script-chrootless \
	update >/dev/null
echo "$root"

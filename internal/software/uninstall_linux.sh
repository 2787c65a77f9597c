# Cairn software uninstall (Linux): removes the package named by
# CAIRN_PARAM_NAME with the package manager that installed it.
set -u
name="${CAIRN_PARAM_NAME:?no package named}"
if command -v dpkg-query >/dev/null 2>&1 &&
	dpkg-query -W -f='${Status}' -- "$name" 2>/dev/null | grep -q ' installed$'; then
	if command -v apt-get >/dev/null 2>&1; then
		echo "cairn: apt-get remove $name"
		DEBIAN_FRONTEND=noninteractive exec apt-get remove -y -q -- "$name"
	fi
	echo "cairn: dpkg --remove $name"
	exec dpkg --remove -- "$name"
fi
if command -v rpm >/dev/null 2>&1 && rpm -q -- "$name" >/dev/null 2>&1; then
	for pm in dnf yum; do
		if command -v "$pm" >/dev/null 2>&1; then
			echo "cairn: $pm remove $name"
			exec "$pm" remove -y -- "$name"
		fi
	done
	echo "cairn: rpm -e $name"
	exec rpm -e -- "$name"
fi
echo "cairn: $name is not a package dpkg or rpm knows on this device" >&2
exit 3

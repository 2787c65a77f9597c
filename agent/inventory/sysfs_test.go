//go:build !windows

// sysfs is Linux's; the fixtures are symlink trees Windows creates only
// with developer mode, and whose t.TempDir removal fails under Wine.

package inventory

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// writeTree creates files (path -> content) under root; a path ending in
// "/" is a directory.
func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(root, p)
		if p[len(p)-1] == '/' {
			require.NoError(t, os.MkdirAll(full, 0o755))
			continue
		}
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(content), 0o644))
	}
}

func TestBlockDevices(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"sda/device/model": "Samsung SSD 860 \n", "sda/size": "1000215216\n", "sda/removable": "0\n",
		"sr0/device/type": "5\n", "sr0/device/model": "DVD+-RW GH24NSD1", "sr0/size": "2097151", "sr0/removable": "1",
		"sdb/device/type": "5", "sdb/size": "0", "sdb/removable": "1", // a USB optical drive
		"vda/device/": "", "vda/size": "536870912", "vda/removable": "0",
		"loop0/size": "1024", "zram0/size": "8", // no device link: virtual
	})
	got, err := blockDevices(root)
	require.NoError(t, err)
	require.Equal(t, []proto.Disk{
		{Name: "sda", Model: "Samsung SSD 860", SizeBytes: 1000215216 * 512},
		{Name: "sdb", Removable: true, CDROM: true},
		{Name: "sr0", Model: "DVD+-RW GH24NSD1", SizeBytes: 2097151 * 512, Removable: true, CDROM: true},
		{Name: "vda", SizeBytes: 536870912 * 512},
	}, got)

	_, err = blockDevices(filepath.Join(root, "missing"))
	require.Error(t, err)
}

func TestMergeMounts(t *testing.T) {
	t.Parallel()
	disks := []proto.Disk{
		{Name: "sda", SizeBytes: 500 << 30},
		{Name: "sdc", SizeBytes: 64 << 30, Removable: true},
		{Name: "sr0", CDROM: true, Removable: true},
		{Name: "vda", SizeBytes: 20 << 30},
	}
	mounts := []mount{
		{"/dev/sda2", "/var/lib/docker", "ext4"}, // bind mount of the root file system
		{"/dev/sda2", "/", "ext4"},
		{"/dev/sda1", "/boot/efi", "vfat"},
		{"/dev/mapper/vg-home", "/home", "ext4"},
		{"/dev/loop0", "/snap/core/1", "squashfs"},
		{"/dev/sr0", "/media/cdrom", "iso9660"},
		{"/dev/sdc1", "/media/usb", "vfat"},
		{"tmpfs", "/run", "tmpfs"},
		{"/dev/vda", "/srv", "xfs"},
		{"/dev/vda", "/srv/www", "xfs"},
	}
	usageOf := func(mp string) (usage, error) {
		if mp == "/home" {
			return usage{}, errors.New("permission denied")
		}
		return usage{Total: 100, Used: 40, Free: 60}, nil
	}
	parentOf := map[string]string{"sda1": "sda", "sda2": "sda", "sdc1": "sdc"}
	got := mergeMounts(disks, mounts, usageOf, func(n string) string { return parentOf[n] })
	require.Equal(t, []proto.Disk{
		{Name: "mapper/vg-home", Mountpoint: "/home", FSType: "ext4"},
		{Name: "sda", SizeBytes: 500 << 30},
		{Name: "sda1", SizeBytes: 100, Mountpoint: "/boot/efi", FSType: "vfat", UsedBytes: 40, FreeBytes: 60},
		{Name: "sda2", SizeBytes: 100, Mountpoint: "/", FSType: "ext4", UsedBytes: 40, FreeBytes: 60},
		{Name: "sdc", SizeBytes: 64 << 30, Removable: true},
		{Name: "sdc1", SizeBytes: 100, Removable: true, Mountpoint: "/media/usb", FSType: "vfat", UsedBytes: 40, FreeBytes: 60},
		{Name: "sr0", CDROM: true, Removable: true, Mountpoint: "/media/cdrom", FSType: "iso9660", UsedBytes: 40, FreeBytes: 60},
		{Name: "vda", SizeBytes: 20 << 30, Mountpoint: "/srv", FSType: "xfs", UsedBytes: 40, FreeBytes: 60},
	}, got)
}

func TestPartitionParent(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"devices/pci0/block/sda/sda1/partition": "1",
		"devices/pci0/block/sda/size":           "1",
		"devices/virtual/block/dm-0/size":       "1",
	})
	class := filepath.Join(root, "class")
	require.NoError(t, os.MkdirAll(class, 0o755))
	require.NoError(t, os.Symlink("../devices/pci0/block/sda/sda1", filepath.Join(class, "sda1")))
	require.NoError(t, os.Symlink("../devices/pci0/block/sda", filepath.Join(class, "sda")))
	require.NoError(t, os.Symlink("../devices/virtual/block/dm-0", filepath.Join(class, "dm-0")))

	for name, want := range map[string]string{"sda1": "sda", "sda": "", "dm-0": "", "nvme9n1p1": ""} {
		require.Equal(t, want, partitionParent(class, name), name)
	}
}

func TestReadDMI(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"board_vendor": "ASUSTeK COMPUTER INC.\n", "board_name": "PRIME B450M-A\n",
		"sys_vendor": "System manufacturer\n", "product_name": "System Product Name\n",
		"product_serial": "To Be Filled By O.E.M.\n",
		"bios_vendor":    "American Megatrends Inc.\n", "bios_version": "3211\n", "bios_date": "08/10/2021\n",
	})
	var hw proto.Hardware
	readDMI(root, &hw)
	require.Equal(t, proto.Hardware{BoardVendor: "ASUSTeK COMPUTER INC.", BoardName: "PRIME B450M-A",
		BIOSVendor: "American Megatrends Inc.", BIOSVersion: "3211", BIOSDate: "08/10/2021"}, hw,
		"placeholders firmware leaves in unset fields are not reported")

	var none proto.Hardware
	readDMI(filepath.Join(root, "missing"), &none)
	require.Equal(t, proto.Hardware{}, none, "no DMI table: nothing, and no error")
}

package inventory

import (
	"cmp"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// readTrim reads a small file and trims it; "" when unreadable.
func readTrim(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// blockDevices lists the disks under sysBlock (/sys/block): the entries
// backed by a device (loop, ram, zram, dm and md devices have no device
// link: they are views of other storage or of memory). A disk is a CD-ROM
// when its SCSI type is 5 (TYPE_ROM) or it is an sr device.
func blockDevices(sysBlock string) ([]proto.Disk, error) {
	entries, err := os.ReadDir(sysBlock)
	if err != nil {
		return nil, err
	}
	var disks []proto.Disk
	for _, e := range entries {
		dir := filepath.Join(sysBlock, e.Name())
		if _, err := os.Stat(filepath.Join(dir, "device")); err != nil {
			continue
		}
		d := proto.Disk{
			Name:      e.Name(),
			Model:     readTrim(filepath.Join(dir, "device", "model")),
			Removable: readTrim(filepath.Join(dir, "removable")) == "1",
			CDROM:     strings.HasPrefix(e.Name(), "sr") || readTrim(filepath.Join(dir, "device", "type")) == "5",
		}
		// size counts 512-byte sectors whatever the device's block size.
		if n, err := strconv.ParseUint(readTrim(filepath.Join(dir, "size")), 10, 64); err == nil {
			d.SizeBytes = n * 512
		}
		disks = append(disks, d)
	}
	return disks, nil
}

// mount is a mounted block device file system.
type mount struct {
	Device, Mountpoint, FSType string
}

// usage is a file system's size and use in bytes.
type usage struct {
	Total, Used, Free uint64
}

// mergeMounts adds file system usage to disks: a whole disk mounted
// directly gets its mount on its own row, other mounted devices
// (partitions, LVM volumes) get a row each, inheriting removable and
// CD-ROM from their parent disk. A device mounted several times (bind
// mounts, subvolumes) is one file system: it keeps "/" if mounted there,
// else its shortest mountpoint. Read-only image file systems (squashfs)
// are always full and are left out. usageOf failing leaves the row without
// usage; parentOf names a partition's disk, "" when unknown.
func mergeMounts(disks []proto.Disk, mounts []mount, usageOf func(mountpoint string) (usage, error), parentOf func(name string) string) []proto.Disk {
	best := map[string]mount{}
	for _, m := range mounts {
		if !strings.HasPrefix(m.Device, "/dev/") || m.FSType == "squashfs" {
			continue
		}
		name := strings.TrimPrefix(m.Device, "/dev/")
		if cur, ok := best[name]; !ok || betterMountpoint(m.Mountpoint, cur.Mountpoint) {
			best[name] = m
		}
	}
	index := map[string]int{}
	for i, d := range disks {
		index[d.Name] = i
	}
	for name, m := range best {
		i, ok := index[name]
		if !ok {
			d := proto.Disk{Name: name}
			if p, ok := index[parentOf(name)]; ok {
				d.Removable, d.CDROM = disks[p].Removable, disks[p].CDROM
			}
			disks = append(disks, d)
			i = len(disks) - 1
			index[name] = i
		}
		d := &disks[i]
		d.Mountpoint, d.FSType = m.Mountpoint, m.FSType
		d.CDROM = d.CDROM || m.FSType == "iso9660" || m.FSType == "udf"
		if u, err := usageOf(m.Mountpoint); err == nil {
			d.UsedBytes, d.FreeBytes = u.Used, u.Free
			if !ok {
				d.SizeBytes = u.Total
			}
		}
	}
	slices.SortFunc(disks, func(a, b proto.Disk) int { return cmp.Compare(a.Name, b.Name) })
	return disks
}

func betterMountpoint(a, b string) bool {
	if a == "/" || b == "/" {
		return a == "/" && b != "/"
	}
	return len(a) < len(b) || (len(a) == len(b) && a < b)
}

// partitionParent names the disk a partition belongs to from sysfs: the
// partition's directory sits inside its disk's (/sys/class/block/sda1 ->
// .../block/sda/sda1). "" for devices that are not partitions.
func partitionParent(sysClassBlock, name string) string {
	base := filepath.Base(name)
	dir := filepath.Join(sysClassBlock, base)
	if _, err := os.Stat(filepath.Join(dir, "partition")); err != nil {
		return ""
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return ""
	}
	return filepath.Base(filepath.Dir(real))
}

// dmiPlaceholders are values firmware vendors leave in unset DMI fields;
// reporting them would look like data.
var dmiPlaceholders = []string{
	"", "to be filled by o.e.m.", "default string", "not specified", "not applicable",
	"system serial number", "system product name", "system manufacturer", "none", "n/a",
	"0", "00000000", "0123456789", "123456789",
}

// readDMI fills the board, system and BIOS fields from dmiDir
// (/sys/class/dmi/id) where readable: product_serial is readable by root
// only, and virtual machines and some boards have no DMI table at all.
func readDMI(dmiDir string, hw *proto.Hardware) {
	for file, dst := range map[string]*string{
		"board_vendor":   &hw.BoardVendor,
		"board_name":     &hw.BoardName,
		"sys_vendor":     &hw.SystemVendor,
		"product_name":   &hw.SystemModel,
		"product_serial": &hw.SerialNumber,
		"bios_vendor":    &hw.BIOSVendor,
		"bios_version":   &hw.BIOSVersion,
		"bios_date":      &hw.BIOSDate,
	} {
		v := readTrim(filepath.Join(dmiDir, file))
		if !slices.Contains(dmiPlaceholders, strings.ToLower(v)) {
			*dst = v
		}
	}
}

package main

// The device-grid seed (-grid): devices, their inventory and their
// installed software written with COPY straight into the Engine's
// database, through the real schema (its indexes, triggers and
// aggregates), so the grid's queries meet a fleet of a realistic shape
// without 50,000 simulated agents. Everything is drawn from a seeded
// generator: two runs with the same flags seed the same fleet.

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// gridSite is one seeded site: its ID and the prefix of its hostnames.
type gridSite struct {
	ID     int64
	Prefix string
}

// catalogEntry is one piece of software devices may have installed.
type catalogEntry struct {
	Name, Publisher string
	Versions        []string
	// Weight makes common software common (1..10).
	Weight int
}

// softwareCatalog builds the catalog for one OS family: well-known
// names with realistic versions, padded with plausible vendor tools so a
// device can have 150 distinct entries.
func softwareCatalog(family string) []catalogEntry {
	var c []catalogEntry
	add := func(w int, name, pub string, versions ...string) {
		c = append(c, catalogEntry{Name: name, Publisher: pub, Versions: versions, Weight: w})
	}
	chrome := []string{"118.0.5993.118", "119.0.6045.160", "120.0.6099.130", "121.0.6167.185", "122.0.6261.129",
		"124.0.6367.207", "126.0.6478.127", "128.0.6613.138", "130.0.6723.117", "131.0.6778.86"}
	switch family {
	case "windows":
		add(10, "Google Chrome", "Google LLC", chrome...)
		add(8, "Mozilla Firefox (x64 en-US)", "Mozilla", "115.5.0", "120.0.1", "123.0", "128.3.1", "132.0.2")
		add(10, "Microsoft Edge", "Microsoft Corporation", "119.0.2151.97", "122.0.2365.92", "126.0.2592.87", "131.0.2903.70")
		add(9, "Microsoft 365 Apps for enterprise - en-us", "Microsoft Corporation", "16.0.16731.20636", "16.0.17328.20550", "16.0.18129.20158")
		add(7, "Microsoft Teams", "Microsoft Corporation", "1.6.00.27573", "24243.1309.3132.617", "24295.605.3225.8804")
		add(9, "Adobe Acrobat Reader DC", "Adobe", "23.006.20380", "24.002.20965", "24.004.20220")
		add(8, "7-Zip 23.01 (x64)", "Igor Pavlov", "23.01")
		add(6, "Notepad++ (64-bit x64)", "Notepad++ Team", "8.5.8", "8.6.2", "8.6.9", "8.7.1")
		add(5, "VLC media player", "VideoLAN", "3.0.18", "3.0.20", "3.0.21")
		add(6, "Zoom Workplace", "Zoom Video Communications, Inc.", "5.16.10", "5.17.11", "6.1.6", "6.2.11")
		add(4, "Slack", "Slack Technologies Inc.", "4.35.126", "4.38.125", "4.41.97")
		add(7, "Microsoft Visual C++ 2015-2022 Redistributable (x64)", "Microsoft Corporation", "14.36.32532", "14.38.33135", "14.40.33810")
		add(7, "Microsoft Visual C++ 2015-2022 Redistributable (x86)", "Microsoft Corporation", "14.36.32532", "14.38.33135", "14.40.33810")
		add(6, "Microsoft .NET Runtime - 8.0.8 (x64)", "Microsoft Corporation", "8.0.8")
		add(5, "Java 8 Update 401", "Oracle Corporation", "8.0.4010.10")
		add(4, "Git", "The Git Development Community", "2.43.0", "2.45.2", "2.47.0")
		add(3, "Microsoft Visual Studio Code", "Microsoft Corporation", "1.85.2", "1.90.2", "1.95.3")
		add(5, "TeamViewer", "TeamViewer", "15.48.4", "15.54.6", "15.59.3")
		add(6, "Dell Command | Update", "Dell Inc.", "5.1.0", "5.4.0")
		add(4, "HP Support Assistant", "HP Inc.", "9.26.30.0", "9.35.10.0")
		add(8, "CrowdStrike Windows Sensor", "CrowdStrike, Inc.", "7.10.17706.0", "7.16.18613.0")
		add(5, "Cisco Secure Client - AnyConnect VPN", "Cisco Systems, Inc.", "5.0.05040", "5.1.2.42")
		add(3, "PuTTY release 0.80 (64-bit)", "Simon Tatham", "0.80.0.0")
		add(3, "WinSCP 6.1.2", "Martin Prikryl", "6.1.2")
		add(3, "Python 3.12.1 (64-bit)", "Python Software Foundation", "3.12.1150.0")
		add(2, "Wireshark 4.2.2 x64", "The Wireshark developer community", "4.2.2")
		add(4, "Microsoft OneDrive", "Microsoft Corporation", "23.246.1127.0002", "24.201.1006.0005")
		add(2, "Citrix Workspace 2311", "Citrix Systems, Inc.", "23.11.0.132")
		add(3, "Intel(R) Graphics Driver", "Intel Corporation", "31.0.101.4502", "31.0.101.5186")
		add(3, "Realtek High Definition Audio Driver", "Realtek Semiconductor Corp.", "6.0.9235.1")
		for i := range 220 {
			add(1+i%3, fmt.Sprintf("Microsoft Update Health Tools %d", i), "Microsoft Corporation",
				fmt.Sprintf("%d.%d.%d", 2+i%5, i%10, 100+i))
		}
	case "linux":
		for _, p := range []string{"openssl", "openssh-server", "openssh-client", "curl", "wget", "bash", "coreutils",
			"systemd", "sudo", "vim", "git", "python3", "perl", "tar", "gzip", "rsync", "cron", "tzdata",
			"ca-certificates", "libc6", "libssl3", "zlib1g", "nginx", "postgresql-15", "docker-ce", "containerd.io",
			"unattended-upgrades", "apt", "dpkg", "grep", "sed", "gawk", "findutils", "util-linux", "procps",
			"iproute2", "iputils-ping", "net-tools", "dnsutils", "htop", "less", "logrotate", "rsyslog", "ufw"} {
			add(8, p, "Debian", fmt.Sprintf("1.%d.%d-1", len(p)%7, len(p)), fmt.Sprintf("1.%d.%d-2", len(p)%7, len(p)+1))
		}
		add(3, "google-chrome-stable", "Google LLC", chrome...)
		for i := range 260 {
			add(1+i%3, fmt.Sprintf("lib%s%d", []string{"gtk", "x11-", "nss", "glib", "pango", "cairo", "ldap", "krb5-"}[i%8], i),
				"Debian", fmt.Sprintf("%d.%d.%d-%d", i%4, i%12, i%30, 1+i%3))
		}
	default: // macos
		add(10, "Google Chrome", "Google LLC", chrome...)
		add(8, "Safari", "Apple Inc.", "17.2", "17.5", "18.1")
		add(7, "Microsoft Word", "Microsoft Corporation", "16.80", "16.86", "16.91")
		add(6, "Slack", "Slack Technologies Inc.", "4.35.126", "4.41.97")
		add(6, "zoom.us", "Zoom Video Communications, Inc.", "5.17.5", "6.2.11")
		for i := range 240 {
			add(1+i%3, fmt.Sprintf("com.apple.pkg.Component%d", i), "Apple Inc.", fmt.Sprintf("%d.%d", 10+i%5, i%10))
		}
	}
	return c
}

// pickSoftware draws n distinct entries of a catalog, weighted.
func pickSoftware(r *rand.Rand, cat []catalogEntry, n int) []proto.Software {
	if n > len(cat) {
		n = len(cat)
	}
	used := make(map[int]bool, n)
	out := make([]proto.Software, 0, n)
	for len(out) < n {
		i := r.IntN(len(cat))
		if used[i] || r.IntN(10) >= cat[i].Weight {
			continue
		}
		used[i] = true
		e := cat[i]
		out = append(out, proto.Software{Name: e.Name, Version: e.Versions[r.IntN(len(e.Versions))], Publisher: e.Publisher,
			Source: map[bool]string{true: "msi", false: "dpkg"}[strings.Contains(e.Publisher, "Microsoft") || e.Publisher == "Google LLC"]})
	}
	return out
}

type gridDevice struct {
	guid, hostname, os, agentVersion, description, trust string
	site                                                 int64
	lastSeen                                             *time.Time
	metrics, hardware, osInfo, network, software         []byte
	sw                                                   []proto.Software
	addrs                                                []netip.Addr
}

var users = []string{"alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan", "judy", "mallory",
	"niaj", "olivia", "peggy", "rupert", "sybil", "trent", "victor", "walter"}

// makeDevice draws device i of the fleet.
func makeDevice(r *rand.Rand, i int, sites []gridSite, catalogs map[string][]catalogEntry, swPerDevice int, now time.Time) gridDevice {
	site := sites[i%len(sites)]
	d := gridDevice{site: site.ID, trust: "active"}
	d.guid = fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", r.Uint32(), r.IntN(1<<16), r.IntN(1<<12), r.IntN(1<<12), i)
	family, kind := "windows", "ws"
	switch x := r.IntN(100); {
	case x < 60:
	case x < 72:
		kind = "lt"
	case x < 82:
		kind = "srv"
	case x < 95:
		family, kind = "linux", "srv"
	default:
		family, kind = "macos", "mac"
	}
	d.hostname = fmt.Sprintf("%s-%s-%05d", site.Prefix, kind, i)
	var os proto.OSInfo
	switch family {
	case "windows":
		if kind == "srv" {
			v := []string{"10.0.17763", "10.0.20348", "10.0.26100"}[r.IntN(3)]
			name := map[string]string{"10.0.17763": "Windows Server 2019 Standard", "10.0.20348": "Windows Server 2022 Standard",
				"10.0.26100": "Windows Server 2025 Datacenter"}[v]
			os = proto.OSInfo{Family: "windows", Name: name, ID: "windows", Version: v + "." + fmt.Sprint(1000+r.IntN(6000))}
		} else {
			v := []string{"10.0.19045", "10.0.22621", "10.0.22631", "10.0.26100"}[r.IntN(4)]
			name := "Windows 11 Pro"
			if v == "10.0.19045" {
				name = "Windows 10 Pro"
			}
			os = proto.OSInfo{Family: "windows", Name: name, ID: "windows", Version: v + "." + fmt.Sprint(1000+r.IntN(4000))}
		}
		os.Arch, os.KernelVersion = "amd64", os.Version
	case "linux":
		pick := r.IntN(3)
		os = proto.OSInfo{Family: "linux", Name: []string{"Debian GNU/Linux 12 (bookworm)", "Ubuntu 22.04.4 LTS", "Ubuntu 24.04.1 LTS"}[pick],
			ID: []string{"debian", "ubuntu", "ubuntu"}[pick], Version: []string{"12", "22.04", "24.04"}[pick],
			KernelVersion: []string{"6.1.0-26-amd64", "5.15.0-119-generic", "6.8.0-45-generic"}[pick], Arch: "amd64"}
	default:
		os = proto.OSInfo{Family: "darwin", Name: "macOS Sonoma", ID: "macos", Version: []string{"14.5", "14.6.1", "15.1"}[r.IntN(3)], Arch: "arm64"}
	}
	os.Hostname = d.hostname
	d.os = os.Name
	d.osInfo, _ = json.Marshal(os)
	d.agentVersion = []string{"0.9.4", "0.9.5", "1.0.0", "1.0.1", "1.1.0"}[r.IntN(5)]
	if r.IntN(4) == 0 {
		d.description = []string{"Front desk", "Accounting", "Warehouse scanner", "CEO laptop", "Build server", "Print server", "Lab"}[r.IntN(7)]
	}
	if r.IntN(200) == 0 {
		d.trust = "quarantined"
	}
	// last_seen: most within the last minutes, a tail over 60 days, some never.
	if r.IntN(100) != 0 {
		var ago time.Duration
		switch x := r.IntN(100); {
		case x < 70:
			ago = time.Duration(r.IntN(60)) * time.Second
		case x < 90:
			ago = time.Duration(r.IntN(7*24*3600)) * time.Second
		default:
			ago = time.Duration(r.IntN(60*24*3600)) * time.Second
		}
		t := now.Add(-ago)
		d.lastSeen = &t
	}
	cores := []int{2, 4, 4, 8, 8, 16, 32}[r.IntN(7)]
	mem := uint64([]int{4, 8, 16, 16, 32, 64, 128}[r.IntN(7)]) << 30
	disk := uint64([]int{128, 256, 512, 512, 1024, 2048}[r.IntN(6)]) << 30
	free := disk / uint64(2+r.IntN(8))
	hw := proto.Hardware{CPUModel: []string{"Intel(R) Core(TM) i5-1245U", "Intel(R) Core(TM) i7-12700", "AMD Ryzen 7 PRO 5850U",
		"Intel(R) Xeon(R) Silver 4314 CPU @ 2.40GHz", "AMD EPYC 7443P 24-Core Processor", "Apple M2"}[r.IntN(6)],
		CPUCores: cores, CPUThreads: cores * 2, MemoryTotalBytes: mem,
		Disks:        []proto.Disk{{Name: "nvme0n1", Model: "Samsung SSD 980 PRO", SizeBytes: disk, Mountpoint: "/", FSType: "ntfs", UsedBytes: disk - free, FreeBytes: free}},
		SystemVendor: []string{"Dell Inc.", "HP", "Lenovo", "VMware, Inc."}[r.IntN(4)], SerialNumber: fmt.Sprintf("SN%08d", i)}
	d.hardware, _ = json.Marshal(hw)
	ip := fmt.Sprintf("10.%d.%d.%d", site.ID%250, (i/250)%250, 1+i%250)
	ip6 := fmt.Sprintf("fe80::250:56ff:fe%02x:%04x", i>>16&255, i&0xffff)
	d.network, _ = json.Marshal([]proto.NetIface{{Name: "lo", MTU: 65536, Up: true, Loopback: true, Addresses: []string{"127.0.0.1/8", "::1/128"}},
		{Name: "eth0", MAC: fmt.Sprintf("00:50:56:%02x:%02x:%02x", i>>16&255, i>>8&255, i&255), MTU: 1500, Up: true,
			Addresses: []string{ip + "/16", ip6 + "/64"}}})
	for _, a := range []string{"127.0.0.1", "::1", ip, ip6} {
		d.addrs = append(d.addrs, netip.MustParseAddr(a))
	}
	var logged []string
	for range r.IntN(3) {
		logged = append(logged, users[r.IntN(len(users))])
	}
	if logged == nil {
		logged = []string{}
	}
	d.metrics, _ = json.Marshal(proto.Metrics{CPUPercent: float64(r.IntN(1000)) / 10, MemoryUsedBytes: mem / uint64(2+r.IntN(3)),
		MemoryTotalBytes: mem, UptimeSeconds: int64(r.IntN(30 * 86400)), LoggedInUsers: logged})
	d.sw = pickSoftware(r, catalogs[family], swPerDevice)
	d.software, _ = json.Marshal(d.sw)
	return d
}

// seedResult is the seed's figures.
type seedResult struct {
	Devices        int     `json:"devices"`
	SoftwareRows   int64   `json:"software_rows"`
	Seconds        float64 `json:"seconds"`
	DevicesSeconds float64 `json:"devices_seconds"`
	AnalyzeSeconds float64 `json:"analyze_seconds"`
}

// seedGrid writes n devices (spread over sites) with swPerDevice software
// rows each, in batches of devices so the generator's memory stays flat.
func seedGrid(ctx context.Context, conn *pgx.Conn, sites []gridSite, n, swPerDevice int, seed uint64) (seedResult, error) {
	res := seedResult{Devices: n}
	start := time.Now()
	now := time.Now()
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	catalogs := map[string][]catalogEntry{"windows": softwareCatalog("windows"), "linux": softwareCatalog("linux"), "macos": softwareCatalog("macos")}
	const batch = 2500
	var devTime time.Duration
	// device_addresses (ip_address filters) is written by ingest, in Go:
	// the seed writes it too once the schema has it.
	// device_software.site_id (the software audit's) is passed by ingest
	// when the schema has it, as here.
	var hasAddresses, swSite bool
	if err := conn.QueryRow(ctx, `SELECT to_regclass('device_addresses') IS NOT NULL,
		EXISTS (SELECT 1 FROM information_schema.columns WHERE table_name = 'device_software' AND column_name = 'site_id')`).
		Scan(&hasAddresses, &swSite); err != nil {
		return res, err
	}
	swCols := []string{"device_guid", "name_key", "name", "version", "publisher"}
	if swSite {
		swCols = append(swCols, "site_id")
	}
	for from := 0; from < n; from += batch {
		to := min(from+batch, n)
		devs := make([]gridDevice, 0, to-from)
		for i := from; i < to; i++ {
			devs = append(devs, makeDevice(r, i, sites, catalogs, swPerDevice, now))
		}
		t0 := time.Now()
		if _, err := conn.CopyFrom(ctx, pgx.Identifier{"devices"},
			[]string{"guid", "hostname", "site_id", "agent_id", "description", "operating_system", "fingerprint", "trust_state",
				"agent_version", "boot_id", "last_seen", "metrics", "enrolled_at", "created_at", "updated_at"},
			pgx.CopyFromSlice(len(devs), func(k int) ([]any, error) {
				d := devs[k]
				enrolled := now.Add(-time.Duration(90*24*3600) * time.Second)
				return []any{d.guid, d.hostname, d.site, d.guid, d.description, d.os, "SHA256:" + d.guid, d.trust, d.agentVersion,
					"boot-" + d.guid[:8], d.lastSeen, string(d.metrics), enrolled, enrolled, now}, nil
			})); err != nil {
			return res, fmt.Errorf("copy devices: %w", err)
		}
		if _, err := conn.CopyFrom(ctx, pgx.Identifier{"device_inventory"},
			[]string{"device_guid", "hash", "hardware", "os", "network", "software", "collected_at"},
			pgx.CopyFromSlice(len(devs), func(k int) ([]any, error) {
				d := devs[k]
				return []any{d.guid, "seed", string(d.hardware), string(d.osInfo), string(d.network), string(d.software), now}, nil
			})); err != nil {
			return res, fmt.Errorf("copy device_inventory: %w", err)
		}
		if hasAddresses {
			var rows [][]any
			for _, d := range devs {
				for _, a := range d.addrs {
					rows = append(rows, []any{d.guid, a})
				}
			}
			if _, err := conn.CopyFrom(ctx, pgx.Identifier{"device_addresses"}, []string{"device_guid", "address"}, pgx.CopyFromRows(rows)); err != nil {
				return res, fmt.Errorf("copy device_addresses: %w", err)
			}
		}
		devTime += time.Since(t0)
		k, j := 0, 0
		m, err := conn.CopyFrom(ctx, pgx.Identifier{"device_software"}, swCols,
			pgx.CopyFromFunc(func() ([]any, error) {
				for k < len(devs) && j >= len(devs[k].sw) {
					k, j = k+1, 0
				}
				if k >= len(devs) {
					return nil, nil
				}
				s := devs[k].sw[j]
				j++
				row := []any{devs[k].guid, strings.ToLower(s.Name), s.Name, s.Version, s.Publisher}
				if swSite {
					row = append(row, devs[k].site)
				}
				return row, nil
			}))
		if err != nil {
			return res, fmt.Errorf("copy device_software: %w", err)
		}
		res.SoftwareRows += m
		fmt.Fprintf(logOut, "grid: seeded %d of %d devices (%.0f s)\n", to, n, time.Since(start).Seconds())
	}
	res.DevicesSeconds = round(devTime.Seconds(), 1)
	res.Seconds = round(time.Since(start).Seconds(), 1)
	// What autovacuum would do soon after such a load; measured apart.
	t0 := time.Now()
	if _, err := conn.Exec(ctx, "VACUUM ANALYZE"); err != nil {
		return res, fmt.Errorf("vacuum analyze: %w", err)
	}
	res.AnalyzeSeconds = round(time.Since(t0).Seconds(), 1)
	return res, nil
}

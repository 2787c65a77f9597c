package proto

import "time"

// Inventory is the heavy inventory an agent posts to PathDetails. A nil
// collection means "not collected this time" and leaves the Engine's
// stored rows untouched (a non-patch details payload keeps patch rows);
// an empty, non-nil one means "collected, and there are none".
type Inventory struct {
	Hardware  *Hardware    `json:"hardware,omitempty"`
	OS        *OSInfo      `json:"os,omitempty"`
	Network   []NetIface   `json:"network" limit:"max=512"`
	Sessions  []Session    `json:"sessions" limit:"max=512"`
	Uptime    *Uptime      `json:"uptime,omitempty"`
	Software  []Software   `json:"software" limit:"max=20000"`
	Services  []Service    `json:"services" limit:"max=10000"`
	Processes []Process    `json:"processes" limit:"max=20000"`
	Patches   []PatchEntry `json:"patches" limit:"max=20000"`
	// PatchStatus is what the patch scan saw besides the rows: the
	// provider and whether the machine waits for a reboot. Nil: not
	// collected (agents before it, or a scan that failed).
	PatchStatus *PatchStatus `json:"patch_status,omitempty"`
	// SoftwareIcons are the bytes of the icons Software rows name by
	// IconHash (issue 27 item 7): each once, at most MaxSoftwareIcons of
	// them and MaxSoftwareIconsBytes in all. A row may name an icon the
	// Engine has already (an uploaded override's) without its bytes.
	SoftwareIcons []SoftwareIcon `json:"software_icons,omitempty" limit:"max=512"`
}

// Software icon limits: an icon is small, and the details post carries
// all of them.
const (
	MaxSoftwareIconBytes  = 256 << 10
	MaxSoftwareIcons      = 512
	MaxSoftwareIconsBytes = 4 << 20
)

// SoftwareIcon is one icon of a software row: PNG, SVG or ICO bytes
// under the hex SHA-256 of those bytes (the name the Engine stores and
// serves it under, GET /api/device/software/icon/<hash>).
type SoftwareIcon struct {
	Hash        string `json:"hash"`
	ContentType string `json:"content_type"` // image/png, image/svg+xml or image/x-icon
	Data        []byte `json:"data"`
}

// Icon content types.
const (
	IconPNG = "image/png"
	IconSVG = "image/svg+xml"
	IconICO = "image/x-icon"
)

// PathSoftwareOverrides answers the software icon overrides
// (SoftwareOverrides) the agent applies while collecting software.
const PathSoftwareOverrides = "/api/agent/software-management/overrides"

// SoftwareOverrides is GET PathSoftwareOverrides: every icon override;
// Revision changes whenever one does.
type SoftwareOverrides struct {
	Revision      string                 `json:"revision"`
	IconOverrides []SoftwareIconOverride `json:"icon_overrides"`
}

// SoftwareIconOverride is one product's icon (by NameKey, the
// lower-cased trimmed name): exactly one of an icon the Engine has
// (IconHash), an icon file on the endpoint (DisplayIcon: a path,
// optionally ",<index>" for a resource of an .exe or .dll), or none
// (ClearIcon).
type SoftwareIconOverride struct {
	Name        string  `json:"name"`
	NameKey     string  `json:"name_key"`
	IconHash    *string `json:"icon_hash"`
	DisplayIcon string  `json:"display_icon"`
	ClearIcon   bool    `json:"clear_icon"`
}

// Patch providers (PatchStatus.Provider).
const (
	PatchProviderApt = "apt"
	PatchProviderDnf = "dnf"
	PatchProviderWUA = "wua"
)

// PatchStatus is the machine-wide result of a patch scan.
type PatchStatus struct {
	Provider       string `json:"provider"`
	RebootRequired bool   `json:"reboot_required"`
	// RebootPackages are the packages that asked for the reboot, where the
	// system says (/var/run/reboot-required.pkgs).
	RebootPackages []string `json:"reboot_packages,omitempty" limit:"max=512"`
}

// Hardware is CPU, memory, disks and board.
type Hardware struct {
	CPUModel         string `json:"cpu_model"`
	CPUCores         int    `json:"cpu_cores"`   // physical cores when known
	CPUThreads       int    `json:"cpu_threads"` // logical processors
	MemoryTotalBytes uint64 `json:"memory_total_bytes"`
	Disks            []Disk `json:"disks" limit:"max=256"`
	BoardVendor      string `json:"board_vendor,omitempty"`
	BoardName        string `json:"board_name,omitempty"`
	SystemVendor     string `json:"system_vendor,omitempty"`
	SystemModel      string `json:"system_model,omitempty"`
	SerialNumber     string `json:"serial_number,omitempty"`
	BIOSVendor       string `json:"bios_vendor,omitempty"`
	BIOSVersion      string `json:"bios_version,omitempty"`
	BIOSDate         string `json:"bios_date,omitempty"`
	Virtualization   string `json:"virtualization,omitempty"`
}

// Disk is a block device and, when mounted, its file system usage.
type Disk struct {
	Name       string `json:"name"` // e.g. sda, nvme0n1, sr0
	Model      string `json:"model,omitempty"`
	SizeBytes  uint64 `json:"size_bytes"`
	Removable  bool   `json:"removable"`
	CDROM      bool   `json:"cdrom"`
	Mountpoint string `json:"mountpoint,omitempty"`
	FSType     string `json:"fs_type,omitempty"`
	UsedBytes  uint64 `json:"used_bytes,omitempty"`
	FreeBytes  uint64 `json:"free_bytes,omitempty"`
}

// OSInfo is the operating system.
type OSInfo struct {
	Family        string `json:"family"` // linux, windows
	Name          string `json:"name"`   // PRETTY_NAME, e.g. "Debian GNU/Linux 12 (bookworm)"
	ID            string `json:"id"`     // os-release ID, e.g. debian
	Version       string `json:"version"`
	KernelVersion string `json:"kernel_version"`
	Arch          string `json:"arch"`
	Hostname      string `json:"hostname"`
	MachineID     string `json:"machine_id,omitempty"`
}

// NetIface is a network interface with its addresses.
type NetIface struct {
	Name      string   `json:"name"`
	MAC       string   `json:"mac,omitempty"`
	MTU       int      `json:"mtu"`
	Up        bool     `json:"up"`
	Loopback  bool     `json:"loopback"`
	Addresses []string `json:"addresses"` // CIDR form
}

// Session is a logged-in user session (normalized session inventory).
type Session struct {
	Username  string     `json:"username"`
	TTY       string     `json:"tty,omitempty"`
	Remote    string     `json:"remote,omitempty"`
	Type      string     `json:"type,omitempty"` // tty, x11, wayland, ssh
	LoginAt   *time.Time `json:"login_at,omitempty"`
	SessionID string     `json:"session_id,omitempty"`
	Active    bool       `json:"active"`
	// HelperReady says a user-session helper runs in this session.
	HelperReady bool `json:"helper_ready"`
}

// Uptime is boot time and uptime.
type Uptime struct {
	BootTime      time.Time `json:"boot_time"`
	UptimeSeconds int64     `json:"uptime_seconds"`
	BootID        string    `json:"boot_id,omitempty"`
}

// Software is one installed package.
type Software struct {
	Name        string     `json:"name"`
	Version     string     `json:"version"`
	Publisher   string     `json:"publisher,omitempty"`
	Arch        string     `json:"arch,omitempty"`
	Source      string     `json:"source"` // dpkg, rpm, msi, ...
	InstalledAt *time.Time `json:"installed_at,omitempty"`
	SizeBytes   uint64     `json:"size_bytes,omitempty"`
	// IconHash names the row's icon (SoftwareIcon.Hash); empty: none.
	IconHash string `json:"icon_hash,omitempty"`
}

// Service is one system service (systemd unit on Linux).
type Service struct {
	Name        string `json:"name"`
	DisplayName string `json:"display_name,omitempty"`
	State       string `json:"state"`     // running, stopped, failed, ...
	SubState    string `json:"sub_state"` // systemd SUB
	StartMode   string `json:"start_mode,omitempty"`
	Description string `json:"description,omitempty"`
	// LoadState and ActiveState are systemd's LOAD and ACTIVE columns, kept
	// as systemd names them because State folds ACTIVE into the
	// cross-platform names. LoadState is empty for a unit file systemd has
	// not loaded.
	LoadState   string `json:"load_state,omitempty"`
	ActiveState string `json:"active_state,omitempty"`
}

// Process is one running process.
type Process struct {
	PID        int       `json:"pid"`
	PPID       int       `json:"ppid"`
	Name       string    `json:"name"`
	User       string    `json:"user,omitempty"`
	Command    string    `json:"command,omitempty"`
	CPUPercent float64   `json:"cpu_percent"`
	RSSBytes   uint64    `json:"rss_bytes"`
	StartedAt  time.Time `json:"started_at,omitempty"`
}

// Patch row states and sources (SPEC "Patch inventory row"); Linux package
// updates use the package manager's name as their source, and rows read
// from its history log "<manager>_history".
const (
	PatchPending   = "pending"
	PatchInstalled = "installed"

	PatchSourceWUAPending = "wua_pending"
	PatchSourceWUAHistory = "wua_history"
	PatchSourceQFE        = "quick_fix_engineering"
	PatchSourceAptHistory = "apt_history"
	PatchSourceDnfHistory = "dnf_history"
)

// PatchEntry is one patch row as the agent reports it.
type PatchEntry struct {
	KB       string `json:"kb,omitempty"`
	Title    string `json:"title"`
	UpdateID string `json:"update_id,omitempty"`
	Revision int    `json:"revision,omitempty"`
	State    string `json:"state"`
	Source   string `json:"source"` // wua_pending, wua_history, quick_fix_engineering, apt, dnf, ...
	// Package fields (Linux).
	Package          string     `json:"package,omitempty"`
	InstalledVersion string     `json:"installed_version,omitempty"`
	CandidateVersion string     `json:"candidate_version,omitempty"`
	Severity         string     `json:"severity,omitempty"`
	InstalledAt      *time.Time `json:"installed_at,omitempty"`
	// Security says the update comes from a security source: an apt
	// archive of a -security suite, a dnf advisory of type security, a
	// Windows update in the Security Updates category.
	Security bool `json:"security,omitempty"`
	// Origin is where the update comes from: the apt archives
	// ("Debian-Security:12/oldstable-security"), the dnf advisory.
	Origin string `json:"origin,omitempty"`
	// KBs are every KB number of a Windows update (KB is the first).
	KBs []string `json:"kbs,omitempty" limit:"max=32"`
	// Categories are the Windows update's categories (WUA names).
	Categories []string `json:"categories,omitempty" limit:"max=32"`
	// RebootBehavior is WUA's InstallationBehavior.RebootBehavior:
	// never_reboots, always_requires_reboot, can_request_reboot.
	RebootBehavior string `json:"reboot_behavior,omitempty"`
	// SizeBytes is the download size where the provider knows it.
	SizeBytes int64 `json:"size_bytes,omitempty"`
	// ReleasedAt is the update's release (WUA LastDeploymentChangeTime,
	// dnf advisory issued date).
	ReleasedAt *time.Time `json:"released_at,omitempty"`
}

package inventory

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"image/png"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// Software icons (issue 27 item 7, docs/agent.md "Software icons"): the
// software part finds each package's icon on this machine (Linux: the
// desktop entries' icons; Windows: the uninstall entry's DisplayIcon),
// applies the Engine's icon overrides over them, and sends the icons with
// the rows on the inventory path (proto.Inventory.SoftwareIcons).

// maxIconDimension bounds a PNG icon's width and height, as the Engine.
const maxIconDimension = 1024

// errNotIcon: the file is not an icon the Engine takes.
var errNotIcon = errors.New("not a PNG, SVG or ICO icon")

// iconFromBytes names data as an icon: PNG (decodable, at most
// maxIconDimension), ICO (a sane directory) or SVG (by its root element;
// the Engine checks the rest), at most proto.MaxSoftwareIconBytes.
func iconFromBytes(data []byte) (proto.SoftwareIcon, error) {
	if len(data) == 0 || len(data) > proto.MaxSoftwareIconBytes {
		return proto.SoftwareIcon{}, fmt.Errorf("an icon must be 1 to %d bytes, this is %d", proto.MaxSoftwareIconBytes, len(data))
	}
	var ct string
	switch {
	case bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")):
		cfg, err := png.DecodeConfig(bytes.NewReader(data))
		if err != nil || cfg.Width < 1 || cfg.Height < 1 || cfg.Width > maxIconDimension || cfg.Height > maxIconDimension {
			return proto.SoftwareIcon{}, errNotIcon
		}
		ct = proto.IconPNG
	case len(data) >= 6 && bytes.HasPrefix(data, []byte{0, 0, 1, 0}) && binary.LittleEndian.Uint16(data[4:6]) > 0:
		ct = proto.IconICO
	case bytes.Contains(bytes.ToLower(data[:min(len(data), 1024)]), []byte("<svg")):
		ct = proto.IconSVG
	default:
		return proto.SoftwareIcon{}, errNotIcon
	}
	sum := sha256.Sum256(data)
	return proto.SoftwareIcon{Hash: hex.EncodeToString(sum[:]), ContentType: ct, Data: data}, nil
}

// readIconFile reads an icon file (PNG, SVG or ICO).
func readIconFile(path string) (proto.SoftwareIcon, error) {
	f, err := os.Open(path)
	if err != nil {
		return proto.SoftwareIcon{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return proto.SoftwareIcon{}, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > proto.MaxSoftwareIconBytes {
		return proto.SoftwareIcon{}, fmt.Errorf("%s: not a regular file of at most %d bytes", path, proto.MaxSoftwareIconBytes)
	}
	data := make([]byte, fi.Size())
	if _, err := f.ReadAt(data, 0); err != nil {
		return proto.SoftwareIcon{}, err
	}
	return iconFromBytes(data)
}

// ApplyIcons gives each row its icon and returns the icons whose bytes
// go with them. An override of the row's name wins: an uploaded icon
// (the Engine has its bytes: only the hash is set), none (ClearIcon), or
// a file on this machine (DisplayIcon, read by load). Otherwise the icon
// found on this machine (found, by software key). Icons past
// proto.MaxSoftwareIcons or proto.MaxSoftwareIconsBytes are left out
// with their rows' hashes.
func ApplyIcons(rows []proto.Software, found map[string]proto.SoftwareIcon, ov proto.SoftwareOverrides,
	load func(displayIcon string) (proto.SoftwareIcon, error)) []proto.SoftwareIcon {
	byKey := make(map[string]proto.SoftwareIconOverride, len(ov.IconOverrides))
	for _, o := range ov.IconOverrides {
		byKey[o.NameKey] = o
	}
	var out []proto.SoftwareIcon
	have := map[string]bool{}
	total := 0
	add := func(ic proto.SoftwareIcon) bool {
		if have[ic.Hash] {
			return true
		}
		if len(out) >= proto.MaxSoftwareIcons || total+len(ic.Data) > proto.MaxSoftwareIconsBytes {
			return false
		}
		have[ic.Hash], total = true, total+len(ic.Data)
		out = append(out, ic)
		return true
	}
	loaded := map[string]*proto.SoftwareIcon{} // by display icon: one read per path
	for i := range rows {
		key := strings.ToLower(strings.TrimSpace(rows[i].Name))
		rows[i].IconHash = ""
		if o, ok := byKey[key]; ok {
			switch {
			case o.ClearIcon:
			case o.IconHash != nil:
				rows[i].IconHash = *o.IconHash
			case o.DisplayIcon != "" && load != nil:
				ic, seen := loaded[o.DisplayIcon]
				if !seen {
					if got, err := load(o.DisplayIcon); err == nil {
						ic = &got
					}
					loaded[o.DisplayIcon] = ic
				}
				if ic != nil && add(*ic) {
					rows[i].IconHash = ic.Hash
				}
			}
			continue
		}
		if ic, ok := found[key]; ok && add(ic) {
			rows[i].IconHash = ic.Hash
		}
	}
	return out
}

// softwareIcons finds the rows' icons (find), applies the Engine's
// overrides (load reads a DisplayIcon override's file) and returns the
// icons to send. Icons are extras: trouble finding them, or fetching the
// overrides, never fails the software part (rows keep no icon, or the
// last good overrides apply).
func (c *Collector) softwareIcons(ctx context.Context, rows []proto.Software,
	find func(context.Context) (map[string]proto.SoftwareIcon, error), load func(string) (proto.SoftwareIcon, error)) []proto.SoftwareIcon {
	found, err := find(ctx)
	if err != nil {
		found = nil
	}
	ov, _ := c.opts.Overrides.Get(ctx)
	return ApplyIcons(rows, found, ov, load)
}

// Caller makes Device calls to the Engine (runtime.Caller).
type Caller interface {
	Call(ctx context.Context, method, path string, in, out any) error
}

// DefaultOverridesTTL is how long fetched icon overrides are used before
// they are fetched again.
const DefaultOverridesTTL = 15 * time.Minute

// Overrides fetches the Engine's software icon overrides
// (GET /api/agent/software-management/overrides) and keeps them for TTL;
// a failed fetch keeps the last good set. Session gives it the Engine
// connection (runtime.Hooks.Session); Invalidate makes the next Get fetch
// (a software refresh an operator asked for, which is how an icon
// override reaches the agent at once).
type Overrides struct {
	TTL time.Duration
	Now func() time.Time

	mu    sync.Mutex
	call  Caller
	got   proto.SoftwareOverrides
	at    time.Time
	fresh bool
}

// Session sets the connection overrides are fetched on.
func (o *Overrides) Session(call Caller) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.call = call
}

// Invalidate makes the next Get fetch.
func (o *Overrides) Invalidate() {
	if o == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.fresh = false
}

// Get returns the overrides: the cached set while it is younger than
// TTL, else a fetched one (or, when the fetch fails, the last good set
// and the error).
func (o *Overrides) Get(ctx context.Context) (proto.SoftwareOverrides, error) {
	if o == nil {
		return proto.SoftwareOverrides{}, nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	ttl := o.TTL
	if ttl <= 0 {
		ttl = DefaultOverridesTTL
	}
	if o.fresh && now().Sub(o.at) < ttl {
		return o.got, nil
	}
	if o.call == nil {
		return o.got, errors.New("not connected to the Engine yet")
	}
	var got proto.SoftwareOverrides
	if err := o.call.Call(ctx, http.MethodGet, proto.PathSoftwareOverrides, nil, &got); err != nil {
		return o.got, fmt.Errorf("fetch the software icon overrides: %w", err)
	}
	o.got, o.at, o.fresh = got, now(), true
	return got, nil
}

//go:build windows

package rfbserver

import (
	"errors"
	"fmt"
	"image"
	"sync"
	"unsafe"

	"golang.org/x/sys/windows"
)

var (
	user32 = windows.NewLazySystemDLL("user32.dll")
	gdi32  = windows.NewLazySystemDLL("gdi32.dll")
	kernel = windows.NewLazySystemDLL("kernel32.dll")

	procGetSystemMetrics    = user32.NewProc("GetSystemMetrics")
	procGetDC               = user32.NewProc("GetDC")
	procReleaseDC           = user32.NewProc("ReleaseDC")
	procSendInput           = user32.NewProc("SendInput")
	procEnumDisplayMonitors = user32.NewProc("EnumDisplayMonitors")
	procGetMonitorInfoW     = user32.NewProc("GetMonitorInfoW")
	procOpenClipboard       = user32.NewProc("OpenClipboard")
	procCloseClipboard      = user32.NewProc("CloseClipboard")
	procEmptyClipboard      = user32.NewProc("EmptyClipboard")
	procGetClipboardData    = user32.NewProc("GetClipboardData")
	procSetClipboardData    = user32.NewProc("SetClipboardData")
	procIsClipboardFormat   = user32.NewProc("IsClipboardFormatAvailable")
	procCreateCompatibleDC  = gdi32.NewProc("CreateCompatibleDC")
	procCreateDIBSection    = gdi32.NewProc("CreateDIBSection")
	procSelectObject        = gdi32.NewProc("SelectObject")
	procBitBlt              = gdi32.NewProc("BitBlt")
	procDeleteObject        = gdi32.NewProc("DeleteObject")
	procDeleteDC            = gdi32.NewProc("DeleteDC")
	procGdiFlush            = gdi32.NewProc("GdiFlush")
	procGlobalAlloc         = kernel.NewProc("GlobalAlloc")
	procGlobalFree          = kernel.NewProc("GlobalFree")
	procGlobalLock          = kernel.NewProc("GlobalLock")
	procGlobalUnlock        = kernel.NewProc("GlobalUnlock")
)

const (
	smXVirtualScreen  = 76
	smYVirtualScreen  = 77
	smCXVirtualScreen = 78
	smCYVirtualScreen = 79

	srcCopy    = 0x00CC0020
	captureBlt = 0x40000000

	inputMouse    = 0
	inputKeyboard = 1

	mouseMove       = 0x0001
	mouseLeftDown   = 0x0002
	mouseLeftUp     = 0x0004
	mouseRightDown  = 0x0008
	mouseRightUp    = 0x0010
	mouseMiddleDown = 0x0020
	mouseMiddleUp   = 0x0040
	mouseWheel      = 0x0800
	mouseVirtual    = 0x4000
	mouseAbsolute   = 0x8000
	wheelDelta      = 120

	keyExtended = 0x0001
	keyUp       = 0x0002
	keyUnicode  = 0x0004

	cfUnicodeText = 13
	gmemMoveable  = 0x0002
)

// Desktop is the Windows Screen and Input: the whole virtual desktop
// (every monitor) captured with GDI (BitBlt from the screen DC into a
// DIB section) and input injected with SendInput. It must run in the
// session and on the desktop it shows (docs/agent.md "VNC", Windows).
type Desktop struct {
	mu      sync.Mutex
	buttons uint8
	ctrl    int // left/right Control keys down
	alt     int
	// SAS is called for Ctrl-Alt-Del, which SendInput cannot inject
	// (nil: SendSASFromSasDLL).
	SAS func() error
}

// NewDesktop returns the desktop of the calling process's session.
func NewDesktop() *Desktop { return &Desktop{} }

func metric(i uintptr) int {
	r, _, _ := procGetSystemMetrics.Call(i)
	return int(int32(r))
}

// VirtualScreen is the virtual desktop's rectangle in screen coordinates.
func VirtualScreen() image.Rectangle {
	x, y := metric(smXVirtualScreen), metric(smYVirtualScreen)
	return image.Rect(x, y, x+metric(smCXVirtualScreen), y+metric(smCYVirtualScreen))
}

type bitmapInfoHeader struct {
	Size                         uint32
	Width, Height                int32
	Planes, BitCount             uint16
	Compression, SizeImage       uint32
	XPelsPerMeter, YPelsPerMeter int32
	ClrUsed, ClrImportant        uint32
}

// Capture is one GDI grab of the whole virtual desktop.
func (d *Desktop) Capture() (*image.RGBA, error) {
	vs := VirtualScreen()
	w, h := vs.Dx(), vs.Dy()
	if w <= 0 || h <= 0 {
		return nil, errors.New("no virtual screen (no interactive desktop in this session)")
	}
	screen, _, err := procGetDC.Call(0)
	if screen == 0 {
		return nil, fmt.Errorf("GetDC: %w", err)
	}
	defer procReleaseDC.Call(0, screen)
	mem, _, err := procCreateCompatibleDC.Call(screen)
	if mem == 0 {
		return nil, fmt.Errorf("CreateCompatibleDC: %w", err)
	}
	defer procDeleteDC.Call(mem)
	bi := bitmapInfoHeader{Width: int32(w), Height: -int32(h), Planes: 1, BitCount: 32}
	bi.Size = uint32(unsafe.Sizeof(bi))
	var bits unsafe.Pointer
	bmp, _, err := procCreateDIBSection.Call(mem, uintptr(unsafe.Pointer(&bi)), 0, uintptr(unsafe.Pointer(&bits)), 0, 0)
	if bmp == 0 || bits == nil {
		return nil, fmt.Errorf("CreateDIBSection: %w", err)
	}
	defer procDeleteObject.Call(bmp)
	old, _, _ := procSelectObject.Call(mem, bmp)
	defer procSelectObject.Call(mem, old)
	// CAPTUREBLT takes layered windows too; a driver without it (Wine's)
	// gets a plain SRCCOPY.
	blt := func(rop uintptr) (uintptr, error) {
		r, _, err := procBitBlt.Call(mem, 0, 0, uintptr(w), uintptr(h), screen, uintptr(vs.Min.X), uintptr(vs.Min.Y), rop)
		return r, err
	}
	if r, _ := blt(srcCopy | captureBlt); r == 0 {
		if r, err := blt(srcCopy); r == 0 {
			return nil, fmt.Errorf("BitBlt: %w", err)
		}
	}
	procGdiFlush.Call()
	src := unsafe.Slice((*byte)(bits), w*h*4) // BGRX, top-down
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := 0; i < len(src); i += 4 {
		img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = src[i+2], src[i+1], src[i], 0xff
	}
	return img, nil
}

// mouseInput and input are MOUSEINPUT and INPUT (the union's largest
// member); keybdInput is KEYBDINPUT, written over the same union.
type mouseInput struct {
	dx, dy                 int32
	mouseData, flags, time uint32
	extra                  uintptr
}

type input struct {
	typ uint32
	mi  mouseInput
}

type keybdInput struct {
	vk, scan    uint16
	flags, time uint32
	extra       uintptr
}

func sendInput(in []input) error {
	if len(in) == 0 {
		return nil
	}
	n, _, err := procSendInput.Call(uintptr(len(in)), uintptr(unsafe.Pointer(&in[0])), unsafe.Sizeof(in[0]))
	if int(n) != len(in) {
		return fmt.Errorf("SendInput injected %d of %d events (blocked by UIPI or a secure desktop?): %w", n, len(in), err)
	}
	return nil
}

func keyInput(vk, scan uint16, flags uint32) input {
	in := input{typ: inputKeyboard}
	*(*keybdInput)(unsafe.Pointer(&in.mi)) = keybdInput{vk: vk, scan: scan, flags: flags}
	return in
}

// Pointer moves the pointer to (x, y) of the virtual desktop and
// presses or releases buttons as the mask changed.
func (d *Desktop) Pointer(x, y int, buttons uint8) error {
	vs := VirtualScreen()
	d.mu.Lock()
	prev := d.buttons
	d.buttons = buttons
	d.mu.Unlock()
	in := []input{{typ: inputMouse, mi: mouseInput{dx: normalise(x, vs.Dx()), dy: normalise(y, vs.Dy()),
		flags: mouseMove | mouseAbsolute | mouseVirtual}}}
	for _, b := range []struct {
		bit      uint8
		down, up uint32
	}{{1, mouseLeftDown, mouseLeftUp}, {2, mouseMiddleDown, mouseMiddleUp}, {4, mouseRightDown, mouseRightUp}} {
		switch {
		case buttons&b.bit != 0 && prev&b.bit == 0:
			in = append(in, input{typ: inputMouse, mi: mouseInput{flags: b.down}})
		case buttons&b.bit == 0 && prev&b.bit != 0:
			in = append(in, input{typ: inputMouse, mi: mouseInput{flags: b.up}})
		}
	}
	// Wheel "buttons" are pressed and released per notch: act on press.
	if buttons&8 != 0 && prev&8 == 0 {
		in = append(in, input{typ: inputMouse, mi: mouseInput{flags: mouseWheel, mouseData: wheelDelta}})
	}
	if buttons&16 != 0 && prev&16 == 0 {
		in = append(in, input{typ: inputMouse, mi: mouseInput{flags: mouseWheel, mouseData: uint32(0xffffffff - wheelDelta + 1)}})
	}
	return sendInput(in)
}

// normalise maps a pixel to SendInput's 0..65535 absolute range.
func normalise(p, size int) int32 {
	if size <= 1 {
		return 0
	}
	p = min(max(p, 0), size-1)
	return int32((p*65535 + (size-1)/2) / (size - 1))
}

// Key injects a keysym. Ctrl-Alt-Del is the secure attention sequence,
// which no SendInput reaches: it calls SAS (sas.dll SendSAS) instead.
func (d *Desktop) Key(keysym uint32, down bool) error {
	k, ok := TranslateKeysym(keysym)
	if !ok {
		return fmt.Errorf("keysym %#x has no Windows key", keysym)
	}
	d.mu.Lock()
	switch k.VK {
	case VKLControl, VKRControl:
		d.ctrl = max(d.ctrl+updown(down), 0)
	case VKLMenu, VKRMenu:
		d.alt = max(d.alt+updown(down), 0)
	}
	sas := down && k.VK == VKDelete && d.ctrl > 0 && d.alt > 0
	d.mu.Unlock()
	if sas {
		return d.sendSAS()
	}
	var flags uint32
	if !down {
		flags |= keyUp
	}
	if k.VK != 0 {
		if Extended(k.VK) {
			flags |= keyExtended
		}
		return sendInput([]input{keyInput(k.VK, 0, flags)})
	}
	var units []uint16
	if k.Unicode > 0xffff {
		units = windows.StringToUTF16(string(k.Unicode))
		units = units[:len(units)-1]
	} else {
		units = []uint16{uint16(k.Unicode)}
	}
	var in []input
	for _, u := range units {
		in = append(in, keyInput(0, u, flags|keyUnicode))
	}
	return sendInput(in)
}

func updown(down bool) int {
	if down {
		return 1
	}
	return -1
}

// ErrSASRefused is Ctrl-Alt-Del where Windows does not let a service
// generate it.
var ErrSASRefused = errors.New("Ctrl-Alt-Del cannot be injected with SendInput; sas.dll SendSAS is unavailable or refused (it needs the agent's service in session 0 and the SoftwareSASGeneration policy allowing services)")

func (d *Desktop) sendSAS() error {
	if d.SAS != nil {
		return d.SAS()
	}
	return SendSASFromSasDLL()
}

// SendSASFromSasDLL asks Windows for the secure attention sequence, as
// a service may when the SoftwareSASGeneration policy allows services.
func SendSASFromSasDLL() error {
	dll := windows.NewLazySystemDLL("sas.dll")
	p := dll.NewProc("SendSAS")
	if err := p.Find(); err != nil {
		return fmt.Errorf("%w: %v", ErrSASRefused, err)
	}
	_, _, _ = p.Call(0) // void SendSAS(BOOL AsUser): FALSE, as a service
	return nil
}

// CutText puts the client's text on the clipboard.
func (d *Desktop) CutText(text string) error {
	u := windows.StringToUTF16(text)
	size := uintptr(len(u) * 2)
	h, _, err := procGlobalAlloc.Call(gmemMoveable, size)
	if h == 0 {
		return fmt.Errorf("GlobalAlloc: %w", err)
	}
	p, _, err := procGlobalLock.Call(h)
	if p == 0 {
		procGlobalFree.Call(h)
		return fmt.Errorf("GlobalLock: %w", err)
	}
	copy(unsafe.Slice((*uint16)(ptr(p)), len(u)), u)
	procGlobalUnlock.Call(h)
	if r, _, err := procOpenClipboard.Call(0); r == 0 {
		procGlobalFree.Call(h)
		return fmt.Errorf("OpenClipboard: %w", err)
	}
	defer procCloseClipboard.Call()
	procEmptyClipboard.Call()
	if r, _, err := procSetClipboardData.Call(cfUnicodeText, h); r == 0 {
		procGlobalFree.Call(h)
		return fmt.Errorf("SetClipboardData: %w", err)
	}
	return nil // the clipboard owns h now
}

// ClipboardText is the clipboard's text ("" when it holds none).
func (d *Desktop) ClipboardText() (string, error) {
	if r, _, _ := procIsClipboardFormat.Call(cfUnicodeText); r == 0 {
		return "", nil
	}
	if r, _, err := procOpenClipboard.Call(0); r == 0 {
		return "", fmt.Errorf("OpenClipboard: %w", err)
	}
	defer procCloseClipboard.Call()
	h, _, err := procGetClipboardData.Call(cfUnicodeText)
	if h == 0 {
		return "", fmt.Errorf("GetClipboardData: %w", err)
	}
	p, _, err := procGlobalLock.Call(h)
	if p == 0 {
		return "", fmt.Errorf("GlobalLock: %w", err)
	}
	defer procGlobalUnlock.Call(h)
	return windows.UTF16PtrToString((*uint16)(ptr(p))), nil
}

// Monitor is one display in framebuffer coordinates (the virtual
// desktop's origin is (0,0)).
type Monitor struct {
	Name    string
	Rect    image.Rectangle
	Primary bool
}

type monitorInfoEx struct {
	Size          uint32
	Monitor, Work windows.Rect
	Flags         uint32
	Device        [32]uint16
}

// Monitors lists the displays (EnumDisplayMonitors).
func Monitors() ([]Monitor, error) {
	vs := VirtualScreen()
	var mons []Monitor
	var ferr error
	cb := windows.NewCallback(func(hmon, hdc uintptr, r *windows.Rect, data uintptr) uintptr {
		mi := monitorInfoEx{}
		mi.Size = uint32(unsafe.Sizeof(mi))
		if ok, _, err := procGetMonitorInfoW.Call(hmon, uintptr(unsafe.Pointer(&mi))); ok == 0 {
			ferr = fmt.Errorf("GetMonitorInfoW: %w", err)
			return 0
		}
		m := mi.Monitor
		mons = append(mons, Monitor{Name: windows.UTF16ToString(mi.Device[:]), Primary: mi.Flags&1 != 0,
			Rect: image.Rect(int(m.Left), int(m.Top), int(m.Right), int(m.Bottom)).Sub(vs.Min)})
		return 1
	})
	if r, _, err := procEnumDisplayMonitors.Call(0, 0, cb, 0); r == 0 {
		return nil, fmt.Errorf("EnumDisplayMonitors: %w", err)
	}
	if ferr != nil {
		return nil, ferr
	}
	if len(mons) == 0 {
		return nil, errors.New("no monitors")
	}
	return mons, nil
}

// ptr turns a handle-locked address (GlobalLock's) into a pointer.
func ptr(p uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&p)) }

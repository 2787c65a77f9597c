//go:build windows

package rfbserver

import (
	"image"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

var (
	procCreateSolidBrush = gdi32.NewProc("CreateSolidBrush")
	procFillRect         = user32.NewProc("FillRect")
	procGetCursorPos     = user32.NewProc("GetCursorPos")
	procGetAsyncKeyState = user32.NewProc("GetAsyncKeyState")
)

// setupDesktop is the desktop of the test's session, with its virtual screen.
func setupDesktop(t *testing.T) (*Desktop, image.Rectangle) {
	t.Helper()
	vs := VirtualScreen()
	require.False(t, vs.Empty(), "the session has a virtual screen")
	return NewDesktop(), vs
}

// GDI capture sees what is painted on the screen: a known colour filled
// on the desktop's DC comes back from Capture at the same place.
func TestCaptureSeesPaintedPixels(t *testing.T) {
	d, vs := setupDesktop(t)
	dc, _, _ := procGetDC.Call(0)
	require.NotZero(t, dc)
	defer procReleaseDC.Call(0, dc)
	// COLORREF 0x00BBGGRR: R=0x20 G=0xC0 B=0x60.
	brush, _, _ := procCreateSolidBrush.Call(0x0060C020)
	require.NotZero(t, brush)
	defer procDeleteObject.Call(brush)
	r := struct{ l, t, r, b int32 }{int32(vs.Min.X + 10), int32(vs.Min.Y + 10), int32(vs.Min.X + 60), int32(vs.Min.Y + 40)}
	ok, _, _ := procFillRect.Call(dc, uintptr(unsafe.Pointer(&r)), brush)
	require.NotZero(t, ok)
	procGdiFlush.Call()
	img, err := d.Capture()
	require.NoError(t, err)
	require.Equal(t, vs.Size(), img.Bounds().Size())
	c := img.RGBAAt(30, 20)
	require.Equal(t, [3]uint8{0x20, 0xC0, 0x60}, [3]uint8{c.R, c.G, c.B})
}

// A PointerEvent moves the cursor to that framebuffer position of the
// virtual desktop; a KeyEvent presses and releases the key.
func TestSendInput(t *testing.T) {
	d, vs := setupDesktop(t)
	for _, p := range []image.Point{{5, 7}, {vs.Dx() / 2, vs.Dy() / 3}, {vs.Dx() - 1, vs.Dy() - 1}} {
		require.NoError(t, d.Pointer(p.X, p.Y, 0))
		var pt struct{ x, y int32 }
		ok, _, _ := procGetCursorPos.Call(uintptr(unsafe.Pointer(&pt)))
		require.NotZero(t, ok)
		require.InDelta(t, vs.Min.X+p.X, int(pt.x), 1, "x of %v", p)
		require.InDelta(t, vs.Min.Y+p.Y, int(pt.y), 1, "y of %v", p)
	}
	down := func(vk uintptr) bool {
		s, _, _ := procGetAsyncKeyState.Call(vk)
		return s&0x8000 != 0
	}
	require.NoError(t, d.Key(0xffe1, true)) // Shift_L
	require.True(t, down(VKShift))
	require.NoError(t, d.Key(0xffe1, false))
	require.False(t, down(VKShift))
}

// Ctrl-Alt-Del is never typed with SendInput: it goes to SAS.
func TestCtrlAltDelGoesToSAS(t *testing.T) {
	d, _ := setupDesktop(t)
	called := 0
	d.SAS = func() error { called++; return nil }
	require.NoError(t, d.Key(0xffe3, true)) // Control_L
	require.NoError(t, d.Key(0xffe9, true)) // Alt_L
	require.NoError(t, d.Key(KeysymDelete, true))
	require.NoError(t, d.Key(KeysymDelete, false))
	require.NoError(t, d.Key(0xffe9, false))
	require.NoError(t, d.Key(0xffe3, false))
	require.Equal(t, 1, called)
}

// The clipboard round-trips text, and the monitors cover the virtual
// screen in framebuffer coordinates.
func TestClipboardAndMonitors(t *testing.T) {
	d, vs := setupDesktop(t)
	require.NoError(t, d.CutText("héllo from the client"))
	got, err := d.ClipboardText()
	require.NoError(t, err)
	require.Equal(t, "héllo from the client", got)
	mons, err := Monitors()
	require.NoError(t, err)
	require.NotEmpty(t, mons)
	var all image.Rectangle
	for _, m := range mons {
		all = all.Union(m.Rect)
	}
	require.Equal(t, image.Rect(0, 0, vs.Dx(), vs.Dy()), all)
}

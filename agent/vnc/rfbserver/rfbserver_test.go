package rfbserver

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"image"
	"image/color"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeScreen is a desktop the test paints; fakeInput records events.
type fakeScreen struct {
	mu   sync.Mutex
	img  *image.RGBA
	clip string
}

func newScreen(w, h int, c color.RGBA) *fakeScreen {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := 0; i < len(img.Pix); i += 4 {
		img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = c.R, c.G, c.B, 0xff
	}
	return &fakeScreen{img: img}
}

func (f *fakeScreen) Capture() (*image.RGBA, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	cp := *f.img
	cp.Pix = append([]byte(nil), f.img.Pix...)
	return &cp, nil
}

func (f *fakeScreen) ClipboardText() (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.clip, nil
}

func (f *fakeScreen) fill(r image.Rectangle, c color.RGBA) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			f.img.SetRGBA(x, y, c)
		}
	}
}

func (f *fakeScreen) resize(w, h int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.img = image.NewRGBA(image.Rect(0, 0, w, h))
}

type event struct {
	kind    string
	keysym  uint32
	down    bool
	x, y    int
	buttons uint8
	text    string
}

type fakeInput struct {
	mu     sync.Mutex
	events []event
}

func (f *fakeInput) add(e event) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, e)
	return nil
}
func (f *fakeInput) Key(k uint32, down bool) error {
	return f.add(event{kind: "key", keysym: k, down: down})
}
func (f *fakeInput) Pointer(x, y int, b uint8) error {
	return f.add(event{kind: "pointer", x: x, y: y, buttons: b})
}
func (f *fakeInput) CutText(t string) error { return f.add(event{kind: "cut", text: t}) }
func (f *fakeInput) all() []event {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]event(nil), f.events...)
}

const password = "s3cretPw"

func setup(t *testing.T, screen *fakeScreen) (*Server, string, *fakeInput) {
	t.Helper()
	in := &fakeInput{}
	s := New(Config{Screen: screen, Input: in, Password: func() string { return password }, Name: "test desktop",
		Poll: 5 * time.Millisecond})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close(); s.Close() })
	go func() { _ = s.Serve(l) }()
	return s, l.Addr().String(), in
}

// client is a small RFB 3.8 client.
type client struct {
	t            *testing.T
	c            net.Conn
	r            *bufio.Reader
	w, h         int
	name         string
	pf           PixelFormat
	fb           *image.RGBA
	cut          []string
	rects        int
	hextileTiles map[byte]int
}

func (c *client) read(n int) []byte {
	c.t.Helper()
	b := make([]byte, n)
	_, err := io.ReadFull(c.r, b)
	require.NoError(c.t, err)
	return b
}

func (c *client) send(b ...byte) {
	c.t.Helper()
	_, err := c.c.Write(b)
	require.NoError(c.t, err)
}

// dial connects and authenticates with pw; it returns the client after
// ServerInit, or the security result and reason when refused.
func dial(t *testing.T, addr, pw string) (*client, uint32, string) {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(time.Minute))
	c := &client{t: t, c: nc, r: bufio.NewReader(nc), hextileTiles: map[byte]int{}}
	require.Equal(t, "RFB 003.008\n", string(c.read(12)))
	c.send([]byte("RFB 003.008\n")...)
	n := c.read(1)[0]
	require.Equal(t, []byte{secVNCAuth}, c.read(int(n)), "VNC authentication only")
	c.send(secVNCAuth)
	challenge := c.read(16)
	resp, err := AuthResponse(pw, challenge)
	require.NoError(t, err)
	c.send(resp...)
	result := binary.BigEndian.Uint32(c.read(4))
	if result != 0 {
		l := binary.BigEndian.Uint32(c.read(4))
		return nil, result, string(c.read(int(l)))
	}
	c.send(1) // shared
	init := c.read(24)
	c.w, c.h = int(binary.BigEndian.Uint16(init)), int(binary.BigEndian.Uint16(init[2:]))
	c.pf = ParsePixelFormat(init[4:20])
	c.name = string(c.read(int(binary.BigEndian.Uint32(init[20:]))))
	c.fb = image.NewRGBA(image.Rect(0, 0, c.w, c.h))
	return c, 0, ""
}

func (c *client) setEncodings(encs ...int32) {
	b := []byte{2, 0}
	b = binary.BigEndian.AppendUint16(b, uint16(len(encs)))
	for _, e := range encs {
		b = binary.BigEndian.AppendUint32(b, uint32(e))
	}
	c.send(b...)
}

func (c *client) setPixelFormat(pf PixelFormat) {
	c.send(append([]byte{0, 0, 0, 0}, pf.Marshal()...)...)
	c.pf = pf
}

func (c *client) request(incremental bool) {
	b := []byte{3, 0}
	if incremental {
		b[1] = 1
	}
	b = binary.BigEndian.AppendUint16(b, 0)
	b = binary.BigEndian.AppendUint16(b, 0)
	b = binary.BigEndian.AppendUint16(b, uint16(c.w))
	b = binary.BigEndian.AppendUint16(b, uint16(c.h))
	c.send(b...)
}

// pixel reads one pixel in c.pf and returns it as 8-bit RGB.
func (c *client) pixel() color.RGBA {
	b := c.read(int(c.pf.BPP) / 8)
	var v uint32
	switch len(b) {
	case 1:
		v = uint32(b[0])
	case 2:
		if c.pf.BigEndian {
			v = uint32(binary.BigEndian.Uint16(b))
		} else {
			v = uint32(binary.LittleEndian.Uint16(b))
		}
	case 4:
		if c.pf.BigEndian {
			v = binary.BigEndian.Uint32(b)
		} else {
			v = binary.LittleEndian.Uint32(b)
		}
	}
	ch := func(shift uint8, mx uint16) uint8 { return uint8((v >> shift & uint32(mx)) * 255 / uint32(mx)) }
	return color.RGBA{ch(c.pf.RedShift, c.pf.RedMax), ch(c.pf.GreenShift, c.pf.GreenMax), ch(c.pf.BlueShift, c.pf.BlueMax), 0xff}
}

// update reads server messages up to and including one
// FramebufferUpdate, and returns its rectangles.
func (c *client) update() []image.Rectangle {
	c.t.Helper()
	for {
		typ := c.read(1)[0]
		if typ == 3 {
			h := c.read(7)
			c.cut = append(c.cut, string(c.read(int(binary.BigEndian.Uint32(h[3:])))))
			continue
		}
		require.Equal(c.t, byte(0), typ)
		n := int(binary.BigEndian.Uint16(c.read(3)[1:]))
		var out []image.Rectangle
		for range n {
			h := c.read(12)
			x, y := int(binary.BigEndian.Uint16(h)), int(binary.BigEndian.Uint16(h[2:]))
			w, hh := int(binary.BigEndian.Uint16(h[4:])), int(binary.BigEndian.Uint16(h[6:]))
			r := image.Rect(x, y, x+w, y+hh)
			switch enc := int32(binary.BigEndian.Uint32(h[8:])); enc {
			case EncodingRaw:
				c.readRaw(r)
			case EncodingHextile:
				for ty := r.Min.Y; ty < r.Max.Y; ty += TileSize {
					for tx := r.Min.X; tx < r.Max.X; tx += TileSize {
						t := image.Rect(tx, ty, min(tx+TileSize, r.Max.X), min(ty+TileSize, r.Max.Y))
						sub := c.read(1)[0]
						c.hextileTiles[sub]++
						switch sub {
						case hextileRaw:
							c.readRaw(t)
						case hextileBackground:
							px := c.pixel()
							for yy := t.Min.Y; yy < t.Max.Y; yy++ {
								for xx := t.Min.X; xx < t.Max.X; xx++ {
									c.fb.SetRGBA(xx, yy, px)
								}
							}
						default:
							c.t.Fatalf("unexpected hextile subencoding %d", sub)
						}
					}
				}
			case EncodingDesktopSize:
				c.w, c.h = w, hh
				c.fb = image.NewRGBA(image.Rect(0, 0, w, hh))
			default:
				c.t.Fatalf("unexpected encoding %d", enc)
			}
			out = append(out, r)
		}
		c.rects += n
		return out
	}
}

func (c *client) readRaw(r image.Rectangle) {
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			c.fb.SetRGBA(x, y, c.pixel())
		}
	}
}

var (
	red   = color.RGBA{0xff, 0, 0, 0xff}
	green = color.RGBA{0, 0xff, 0, 0xff}
	blue  = color.RGBA{0, 0, 0xff, 0xff}
)

// The answer to a challenge is DES under the bit-reversed password: the
// vector is OpenSSL's (the same as internal/vnc's client test).
func TestAuthResponseKnownVector(t *testing.T) {
	t.Parallel()
	got, err := AuthResponse("secret", []byte("abcdefghijklmnop"))
	require.NoError(t, err)
	require.Equal(t, "0dd1fa0bd618fc2ef46a16dda97ff64c", hex.EncodeToString(got))
}

// The handshake offers VNC authentication only, admits the password,
// refuses a wrong one with a reason and locks out after repeated
// failures; ServerInit gives the desktop's size, the default pixel
// format and the name.
func TestHandshakeAndAuth(t *testing.T) {
	t.Parallel()
	_, addr, _ := setup(t, newScreen(64, 48, red))
	c, res, _ := dial(t, addr, password)
	require.Zero(t, res)
	require.Equal(t, 64, c.w)
	require.Equal(t, 48, c.h)
	require.Equal(t, DefaultPixelFormat, c.pf)
	require.Equal(t, "test desktop", c.name)

	_, res, reason := dial(t, addr, "wrong")
	require.Equal(t, uint32(1), res)
	require.Equal(t, "authentication failed", reason)
	for range maxAuthFailures - 1 {
		_, res, _ = dial(t, addr, "wrong")
		require.Equal(t, uint32(1), res)
	}
	_, res, reason = dial(t, addr, password)
	require.Equal(t, uint32(2), res, "locked out even with the right password")
	require.Contains(t, reason, "too many")
}

// Another security type than VNC authentication is refused.
func TestNoneSecurityRefused(t *testing.T) {
	t.Parallel()
	_, addr, _ := setup(t, newScreen(8, 8, red))
	nc, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer nc.Close()
	c := &client{t: t, c: nc, r: bufio.NewReader(nc)}
	c.read(12)
	c.send([]byte("RFB 003.008\n")...)
	c.read(2)
	c.send(1) // None
	require.Equal(t, uint32(1), binary.BigEndian.Uint32(c.read(4)))
	l := binary.BigEndian.Uint32(c.read(4))
	require.Contains(t, string(c.read(int(l))), "VNC authentication only")
}

// Only the peer Allow admits gets the banner.
func TestAllow(t *testing.T) {
	t.Parallel()
	s := New(Config{Screen: newScreen(8, 8, red), Password: func() string { return password },
		Allow: func(a net.Addr) bool { return false }})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	go func() { _ = s.Serve(l) }()
	nc, err := net.Dial("tcp", l.Addr().String())
	require.NoError(t, err)
	defer nc.Close()
	_, err = io.ReadFull(nc, make([]byte, 12))
	require.Error(t, err, "closed before the banner")
}

// A full update carries the frame in each pixel format; incremental
// updates carry only the tiles that changed, in Hextile when the client
// prefers it (a solid tile as its background colour alone).
func TestUpdatesPixelFormatsAndTiles(t *testing.T) {
	t.Parallel()
	formats := []struct {
		name string
		pf   PixelFormat
	}{
		{"default 32-bit", DefaultPixelFormat},
		{"32-bit big-endian BGR", PixelFormat{BPP: 32, Depth: 24, BigEndian: true, TrueColour: true, RedMax: 255, GreenMax: 255, BlueMax: 255, RedShift: 0, GreenShift: 8, BlueShift: 16}},
		{"16-bit RGB565", PixelFormat{BPP: 16, Depth: 16, TrueColour: true, RedMax: 31, GreenMax: 63, BlueMax: 31, RedShift: 11, GreenShift: 5, BlueShift: 0}},
		{"8-bit BGR233", PixelFormat{BPP: 8, Depth: 8, TrueColour: true, RedMax: 7, GreenMax: 7, BlueMax: 3, RedShift: 0, GreenShift: 3, BlueShift: 6}},
	}
	for _, enc := range []int32{EncodingRaw, EncodingHextile} {
		for _, f := range formats {
			t.Run(f.name+"/"+map[int32]string{0: "raw", 5: "hextile"}[enc], func(t *testing.T) {
				t.Parallel()
				screen := newScreen(100, 50, red)
				_, addr, _ := setup(t, screen)
				c, _, _ := dial(t, addr, password)
				c.setPixelFormat(f.pf)
				c.setEncodings(enc)
				c.request(false)
				rects := c.update()
				require.Equal(t, []image.Rectangle{image.Rect(0, 0, 100, 50)}, rects)
				require.Equal(t, red, c.fb.RGBAAt(99, 49))

				// One changed area: only its tiles come back.
				screen.fill(image.Rect(20, 18, 30, 20), blue)
				c.request(true)
				rects = c.update()
				require.Equal(t, []image.Rectangle{image.Rect(16, 16, 32, 32)}, rects, "the one tile that changed")
				require.Equal(t, blue, c.fb.RGBAAt(25, 19))
				require.Equal(t, red, c.fb.RGBAAt(25, 21))

				// Two tiles side by side in a row are one rectangle;
				// another row's tile is its own; the last tiles are
				// clipped to the frame.
				screen.fill(image.Rect(0, 0, 20, 1), green)
				screen.fill(image.Rect(97, 49, 100, 50), green)
				c.request(true)
				rects = c.update()
				require.Equal(t, []image.Rectangle{image.Rect(0, 0, 32, 16), image.Rect(96, 48, 100, 50)}, rects)
				require.Equal(t, green, c.fb.RGBAAt(19, 0))
				require.Equal(t, green, c.fb.RGBAAt(99, 49))
				if enc == EncodingHextile {
					require.Positive(t, c.hextileTiles[hextileBackground], "solid tiles sent as a colour")
					require.Positive(t, c.hextileTiles[hextileRaw])
				}
			})
		}
	}
}

// An incremental request is answered only once something changed.
func TestIncrementalWaitsForChange(t *testing.T) {
	t.Parallel()
	screen := newScreen(32, 32, red)
	_, addr, _ := setup(t, screen)
	c, _, _ := dial(t, addr, password)
	c.request(false)
	c.update()
	c.request(true)
	got := make(chan []image.Rectangle, 1)
	go func() { got <- c.update() }()
	// Nothing has changed: many polls pass with no update.
	require.Never(t, func() bool { return len(got) > 0 }, 200*time.Millisecond, 10*time.Millisecond)
	screen.fill(image.Rect(17, 0, 18, 1), blue)
	require.Equal(t, []image.Rectangle{image.Rect(16, 0, 32, 16)}, <-got)
}

// A changed desktop size reaches a client that knows DesktopSize.
func TestDesktopSize(t *testing.T) {
	t.Parallel()
	screen := newScreen(32, 32, red)
	_, addr, _ := setup(t, screen)
	c, _, _ := dial(t, addr, password)
	c.setEncodings(EncodingRaw, EncodingDesktopSize)
	c.request(false)
	c.update()
	screen.resize(48, 16)
	c.request(true)
	rects := c.update()
	require.Equal(t, []image.Rectangle{image.Rect(0, 0, 48, 16), image.Rect(0, 0, 48, 16)}, rects)
	require.Equal(t, 48, c.w)
}

// Key, pointer and clipboard messages reach the Input decoded; the
// desktop's clipboard text reaches the client as ServerCutText.
func TestInputAndClipboard(t *testing.T) {
	t.Parallel()
	screen := newScreen(32, 32, red)
	_, addr, in := setup(t, screen)
	c, _, _ := dial(t, addr, password)
	c.send(4, 1, 0, 0, 0, 0, 0xff, 0x0d) // Return down
	c.send(4, 0, 0, 0, 0, 0, 0, 'a')     // a up
	c.send(5, 0b101, 0x01, 0x02, 0x00, 0x30)
	text := "héllo"
	l1 := stringToLatin1(text)
	c.send(append(binary.BigEndian.AppendUint32([]byte{6, 0, 0, 0}, uint32(len(l1))), l1...)...)
	require.Eventually(t, func() bool { return len(in.all()) == 4 }, 10*time.Second, 5*time.Millisecond)
	require.Equal(t, []event{
		{kind: "key", keysym: 0xff0d, down: true},
		{kind: "key", keysym: 'a'},
		{kind: "pointer", x: 0x102, y: 0x30, buttons: 0b101},
		{kind: "cut", text: text},
	}, in.all())

	screen.mu.Lock()
	screen.clip = "from the desktop"
	screen.mu.Unlock()
	c.request(false)
	c.update()
	for len(c.cut) == 0 {
		c.request(false)
		c.update()
	}
	require.Equal(t, []string{"from the desktop"}, c.cut)
}

// A colour-map pixel format is refused: the connection ends.
func TestColourMapRefused(t *testing.T) {
	t.Parallel()
	_, addr, _ := setup(t, newScreen(8, 8, red))
	c, _, _ := dial(t, addr, password)
	pf := DefaultPixelFormat
	pf.TrueColour = false
	c.setPixelFormat(pf)
	_, err := io.ReadAll(c.r)
	require.NoError(t, err, "the server closed the connection")
}

// Keysyms map to virtual keys for letters, digits and named keys, and to
// characters for the rest.
func TestTranslateKeysym(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		keysym uint32
		want   Key
		ok     bool
	}{
		{'a', Key{VK: 'A'}, true},
		{'Q', Key{VK: 'Q'}, true},
		{'7', Key{VK: '7'}, true},
		{' ', Key{VK: VKSpace}, true},
		{0xff0d, Key{VK: VKReturn}, true},
		{0xff08, Key{VK: VKBack}, true},
		{0xff1b, Key{VK: VKEscape}, true},
		{0xffff, Key{VK: VKDelete}, true},
		{0xff51, Key{VK: VKLeft}, true},
		{0xffe3, Key{VK: VKLControl}, true},
		{0xffe9, Key{VK: VKLMenu}, true},
		{0xffbe, Key{VK: VKF1}, true},
		{0xffc9, Key{VK: VKF1 + 11}, true}, // F12
		{0xffb5, Key{VK: VKNumpad0 + 5}, true},
		{'!', Key{Unicode: '!'}, true},
		{0xe9, Key{Unicode: 'é'}, true},
		{0x010020ac, Key{Unicode: '€'}, true},
		{0xfe50, Key{}, false}, // dead_grave: no key
	} {
		got, ok := TranslateKeysym(tc.keysym)
		require.Equal(t, tc.ok, ok, "%#x", tc.keysym)
		require.Equal(t, tc.want, got, "%#x", tc.keysym)
	}
	require.True(t, Extended(VKDelete))
	require.False(t, Extended('A'))
	require.True(t, strings.Contains(string(stringToLatin1("a€")), "?"))
}

// Package rfbserver is the agent's own RFB 3.8 server (RFC 6143), used
// where no packaged VNC server is managed (Windows: docs/agent.md "VNC").
// It is platform-neutral: a Screen gives frames, an Input takes key,
// pointer and clipboard events; the Windows implementation captures with
// GDI and injects with SendInput (screen_windows.go).
//
// It offers VNC Authentication only, with the role's in-memory password;
// it sends Raw or Hextile rectangles (the client's preference), only the
// 16×16 tiles that changed since the frame the client last got, converts
// to the client's true-colour pixel format, resizes with the DesktopSize
// pseudo-encoding, and carries clipboard text both ways.
package rfbserver

import (
	"bufio"
	"crypto/des"
	"crypto/rand"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"
)

// Screen is what the server shows.
type Screen interface {
	// Capture returns the whole desktop now; its bounds' origin is the
	// framebuffer's (0,0).
	Capture() (*image.RGBA, error)
}

// Clipboard is a Screen that also has clipboard text to offer
// (ServerCutText).
type Clipboard interface {
	ClipboardText() (string, error)
}

// Input takes the client's events, in framebuffer coordinates.
type Input interface {
	// Key is a KeyEvent: an X11 keysym pressed or released.
	Key(keysym uint32, down bool) error
	// Pointer is a PointerEvent: the position and the button mask (bit 0
	// left, 1 middle, 2 right, 3 wheel up, 4 wheel down).
	Pointer(x, y int, buttons uint8) error
	// CutText is a ClientCutText: the client's clipboard text.
	CutText(text string) error
}

// Encodings the server sends.
const (
	EncodingRaw         int32 = 0
	EncodingHextile     int32 = 5
	EncodingDesktopSize int32 = -223
)

// Security types.
const (
	secInvalid = 0
	secVNCAuth = 2
)

// TileSize is the unit of change detection (and Hextile's tile).
const TileSize = 16

// maxCutText bounds a ClientCutText; a longer one ends the connection.
const maxCutText = 1 << 20

// maxAuthFailures within authWindow lock authentication out for the rest
// of the window (the password is 8 characters: no endless guessing).
const (
	maxAuthFailures = 5
	authWindow      = time.Minute
)

// Config configures a Server.
type Config struct {
	Screen Screen
	Input  Input
	// Password is the current VNC password (only its first 8 bytes count,
	// as in every VNC server).
	Password func() string
	// Allow admits a peer (nil: all); others are closed before the banner.
	Allow func(net.Addr) bool
	// Name is the desktop name in ServerInit.
	Name string
	// Poll is how often a pending incremental update looks for changes
	// (default 50 ms).
	Poll   time.Duration
	Logger *slog.Logger
}

// Server serves RFB connections.
type Server struct {
	cfg Config
	log *slog.Logger

	mu       sync.Mutex
	failures []time.Time
	conns    map[net.Conn]struct{}
	closed   bool
}

// New returns a server.
func New(cfg Config) *Server {
	if cfg.Poll <= 0 {
		cfg.Poll = 50 * time.Millisecond
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Name == "" {
		cfg.Name = "cairn"
	}
	return &Server{cfg: cfg, log: cfg.Logger.With("component", "rfbserver"), conns: map[net.Conn]struct{}{}}
}

// Serve accepts on l until it is closed.
func (s *Server) Serve(l net.Listener) error {
	for {
		c, err := l.Accept()
		if err != nil {
			return err
		}
		if s.cfg.Allow != nil && !s.cfg.Allow(c.RemoteAddr()) {
			s.log.Warn("VNC connection refused: not the Engine's tunnel address", "peer", c.RemoteAddr().String())
			_ = c.Close()
			continue
		}
		go s.ServeConn(c)
	}
}

// Close ends every connection (the listener is the caller's).
func (s *Server) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for c := range s.conns {
		_ = c.Close()
	}
}

// ServeConn runs one client to its end.
func (s *Server) ServeConn(c net.Conn) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = c.Close()
		return
	}
	s.conns[c] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		_ = c.Close()
	}()
	if err := s.serve(c); err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
		s.log.Info("VNC connection ended", "peer", c.RemoteAddr().String(), "err", err)
	}
}

// PixelFormat is RFB's PIXEL_FORMAT.
type PixelFormat struct {
	BPP, Depth                      uint8
	BigEndian, TrueColour           bool
	RedMax, GreenMax, BlueMax       uint16
	RedShift, GreenShift, BlueShift uint8
}

// DefaultPixelFormat is the server's: 32-bit little-endian true colour,
// 0x00RRGGBB.
var DefaultPixelFormat = PixelFormat{BPP: 32, Depth: 24, TrueColour: true, RedMax: 255, GreenMax: 255, BlueMax: 255,
	RedShift: 16, GreenShift: 8, BlueShift: 0}

// Marshal is the 16 bytes on the wire.
func (pf PixelFormat) Marshal() []byte {
	b := make([]byte, 16)
	b[0], b[1] = pf.BPP, pf.Depth
	if pf.BigEndian {
		b[2] = 1
	}
	if pf.TrueColour {
		b[3] = 1
	}
	binary.BigEndian.PutUint16(b[4:], pf.RedMax)
	binary.BigEndian.PutUint16(b[6:], pf.GreenMax)
	binary.BigEndian.PutUint16(b[8:], pf.BlueMax)
	b[10], b[11], b[12] = pf.RedShift, pf.GreenShift, pf.BlueShift
	return b
}

// ParsePixelFormat reads the 16 bytes on the wire.
func ParsePixelFormat(b []byte) PixelFormat {
	return PixelFormat{BPP: b[0], Depth: b[1], BigEndian: b[2] != 0, TrueColour: b[3] != 0,
		RedMax: binary.BigEndian.Uint16(b[4:]), GreenMax: binary.BigEndian.Uint16(b[6:]), BlueMax: binary.BigEndian.Uint16(b[8:]),
		RedShift: b[10], GreenShift: b[11], BlueShift: b[12]}
}

func (pf PixelFormat) validate() error {
	if !pf.TrueColour {
		return errors.New("colour-map pixel formats are not supported: ask for true colour")
	}
	if pf.BPP != 8 && pf.BPP != 16 && pf.BPP != 32 {
		return fmt.Errorf("%d bits per pixel is not supported (8, 16 or 32)", pf.BPP)
	}
	return nil
}

// put appends the pixel r,g,b (8 bits each) in pf.
func (pf PixelFormat) put(out []byte, r, g, b uint8) []byte {
	v := uint32(r)*uint32(pf.RedMax)/255<<pf.RedShift | uint32(g)*uint32(pf.GreenMax)/255<<pf.GreenShift |
		uint32(b)*uint32(pf.BlueMax)/255<<pf.BlueShift
	switch pf.BPP {
	case 8:
		return append(out, byte(v))
	case 16:
		if pf.BigEndian {
			return binary.BigEndian.AppendUint16(out, uint16(v))
		}
		return binary.LittleEndian.AppendUint16(out, uint16(v))
	default:
		if pf.BigEndian {
			return binary.BigEndian.AppendUint32(out, v)
		}
		return binary.LittleEndian.AppendUint32(out, v)
	}
}

// AuthResponse is VNC Authentication's answer to challenge: DES of the
// challenge under the password (8 bytes, zero padded) with each key
// byte's bits reversed, as every VNC implementation does.
func AuthResponse(password string, challenge []byte) ([]byte, error) {
	if len(challenge) != 16 {
		return nil, errors.New("the VNC challenge must be 16 bytes")
	}
	var key [8]byte
	copy(key[:], password)
	for i, b := range key {
		var r byte
		for j := range 8 {
			r |= ((b >> j) & 1) << (7 - j)
		}
		key[i] = r
	}
	block, err := des.NewCipher(key[:])
	if err != nil {
		return nil, err
	}
	out := make([]byte, 16)
	block.Encrypt(out[:8], challenge[:8])
	block.Encrypt(out[8:], challenge[8:])
	return out, nil
}

// lockedOut records nothing; it reports whether authentication is
// refused for now.
func (s *Server) lockedOut(now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	kept := s.failures[:0]
	for _, f := range s.failures {
		if now.Sub(f) < authWindow {
			kept = append(kept, f)
		}
	}
	s.failures = kept
	return len(s.failures) >= maxAuthFailures
}

func (s *Server) failed(now time.Time) {
	s.mu.Lock()
	s.failures = append(s.failures, now)
	s.mu.Unlock()
}

// conn is one client's state.
type conn struct {
	s  *Server
	c  net.Conn
	r  *bufio.Reader
	wm sync.Mutex // the writer's

	mu        sync.Mutex
	pf        PixelFormat
	encodings []int32
	// want is the pending FramebufferUpdateRequest (nil: none).
	want        *updateRequest
	wake        chan struct{}
	cutFromPeer string
}

type updateRequest struct {
	incremental bool
	rect        image.Rectangle
}

func (s *Server) serve(nc net.Conn) error {
	c := &conn{s: s, c: nc, r: bufio.NewReader(nc), pf: DefaultPixelFormat, wake: make(chan struct{}, 1)}
	_ = nc.SetDeadline(time.Now().Add(30 * time.Second))
	if err := c.handshake(); err != nil {
		return err
	}
	_ = nc.SetDeadline(time.Time{})
	frame, err := s.cfg.Screen.Capture()
	if err != nil {
		return fmt.Errorf("capture the screen: %w", err)
	}
	var clip string
	var clipOK bool
	if cb, ok := s.cfg.Screen.(Clipboard); ok {
		if text, err := cb.ClipboardText(); err == nil {
			clip, clipOK = text, true
		}
	}
	w, h := frame.Bounds().Dx(), frame.Bounds().Dy()
	init := binary.BigEndian.AppendUint16(nil, uint16(w))
	init = binary.BigEndian.AppendUint16(init, uint16(h))
	init = append(init, DefaultPixelFormat.Marshal()...)
	init = binary.BigEndian.AppendUint32(init, uint32(len(s.cfg.Name)))
	init = append(init, s.cfg.Name...)
	if _, err := nc.Write(init); err != nil {
		return err
	}
	done := make(chan struct{})
	defer close(done)
	errc := make(chan error, 1)
	go func() { errc <- c.updates(done, frame, clip, clipOK) }()
	rerr := c.readLoop()
	_ = nc.Close()
	if werr := <-errc; werr != nil && rerr == nil {
		return werr
	}
	return rerr
}

func (c *conn) handshake() error {
	if _, err := c.c.Write([]byte("RFB 003.008\n")); err != nil {
		return err
	}
	var v [12]byte
	if _, err := io.ReadFull(c.r, v[:]); err != nil {
		return err
	}
	var major, minor int
	if _, err := fmt.Sscanf(string(v[:]), "RFB %03d.%03d\n", &major, &minor); err != nil || major != 3 {
		return fmt.Errorf("not an RFB 3.x client: %q", v[:])
	}
	v33 := minor < 7
	if v33 {
		// 3.3: the server picks the type.
		if _, err := c.c.Write(binary.BigEndian.AppendUint32(nil, secVNCAuth)); err != nil {
			return err
		}
	} else {
		if _, err := c.c.Write([]byte{1, secVNCAuth}); err != nil {
			return err
		}
		var t [1]byte
		if _, err := io.ReadFull(c.r, t[:]); err != nil {
			return err
		}
		if t[0] != secVNCAuth {
			return c.refuse(minor, fmt.Sprintf("security type %d is not offered: VNC authentication only", t[0]))
		}
	}
	challenge := make([]byte, 16)
	if _, err := rand.Read(challenge); err != nil {
		return err
	}
	if _, err := c.c.Write(challenge); err != nil {
		return err
	}
	resp := make([]byte, 16)
	if _, err := io.ReadFull(c.r, resp); err != nil {
		return err
	}
	now := time.Now()
	if c.s.lockedOut(now) {
		return c.refuseAuth(minor, 2, "too many authentication failures: try again later")
	}
	want, err := AuthResponse(c.s.cfg.Password(), challenge)
	if err != nil {
		return err
	}
	if subtle.ConstantTimeCompare(want, resp) != 1 {
		c.s.failed(now)
		return c.refuseAuth(minor, 1, "authentication failed")
	}
	if _, err := c.c.Write([]byte{0, 0, 0, 0}); err != nil {
		return err
	}
	var shared [1]byte // every connection is shared
	_, err = io.ReadFull(c.r, shared[:])
	return err
}

// refuse answers a bad security type choice (3.8 gives a reason).
func (c *conn) refuse(minor int, reason string) error {
	return c.refuseAuth(minor, 1, reason)
}

func (c *conn) refuseAuth(minor int, code uint32, reason string) error {
	b := binary.BigEndian.AppendUint32(nil, code)
	if minor >= 8 {
		b = binary.BigEndian.AppendUint32(b, uint32(len(reason)))
		b = append(b, reason...)
	}
	_, _ = c.c.Write(b)
	return errors.New(reason)
}

func (c *conn) readLoop() error {
	in := c.s.cfg.Input
	for {
		var t [1]byte
		if _, err := io.ReadFull(c.r, t[:]); err != nil {
			return err
		}
		switch t[0] {
		case 0: // SetPixelFormat
			b := make([]byte, 19)
			if _, err := io.ReadFull(c.r, b); err != nil {
				return err
			}
			pf := ParsePixelFormat(b[3:])
			if err := pf.validate(); err != nil {
				return err
			}
			c.mu.Lock()
			c.pf = pf
			c.mu.Unlock()
		case 2: // SetEncodings
			b := make([]byte, 3)
			if _, err := io.ReadFull(c.r, b); err != nil {
				return err
			}
			n := int(binary.BigEndian.Uint16(b[1:]))
			e := make([]byte, 4*n)
			if _, err := io.ReadFull(c.r, e); err != nil {
				return err
			}
			encs := make([]int32, n)
			for i := range encs {
				encs[i] = int32(binary.BigEndian.Uint32(e[4*i:]))
			}
			c.mu.Lock()
			c.encodings = encs
			c.mu.Unlock()
		case 3: // FramebufferUpdateRequest
			b := make([]byte, 9)
			if _, err := io.ReadFull(c.r, b); err != nil {
				return err
			}
			x, y := int(binary.BigEndian.Uint16(b[1:])), int(binary.BigEndian.Uint16(b[3:]))
			w, h := int(binary.BigEndian.Uint16(b[5:])), int(binary.BigEndian.Uint16(b[7:]))
			c.mu.Lock()
			c.want = &updateRequest{incremental: b[0] != 0, rect: image.Rect(x, y, x+w, y+h)}
			c.mu.Unlock()
			c.poke()
		case 4: // KeyEvent
			b := make([]byte, 7)
			if _, err := io.ReadFull(c.r, b); err != nil {
				return err
			}
			if in != nil {
				if err := in.Key(binary.BigEndian.Uint32(b[3:]), b[0] != 0); err != nil {
					c.s.log.Warn("VNC key event not injected", "err", err)
				}
			}
		case 5: // PointerEvent
			b := make([]byte, 5)
			if _, err := io.ReadFull(c.r, b); err != nil {
				return err
			}
			if in != nil {
				if err := in.Pointer(int(binary.BigEndian.Uint16(b[1:])), int(binary.BigEndian.Uint16(b[3:])), b[0]); err != nil {
					c.s.log.Warn("VNC pointer event not injected", "err", err)
				}
			}
		case 6: // ClientCutText
			b := make([]byte, 7)
			if _, err := io.ReadFull(c.r, b); err != nil {
				return err
			}
			n := binary.BigEndian.Uint32(b[3:])
			if n > maxCutText {
				return fmt.Errorf("ClientCutText of %d bytes is over the %d limit", n, maxCutText)
			}
			t := make([]byte, n)
			if _, err := io.ReadFull(c.r, t); err != nil {
				return err
			}
			text := latin1ToString(t)
			c.mu.Lock()
			c.cutFromPeer = text
			c.mu.Unlock()
			if in != nil {
				if err := in.CutText(text); err != nil {
					c.s.log.Warn("VNC clipboard text not set", "err", err)
				}
			}
		default:
			return fmt.Errorf("unsupported client message type %d", t[0])
		}
	}
}

func (c *conn) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// updates answers update requests: a full one at once, an incremental
// one as soon as some tile differs from the frame the client has.
// clip is the clipboard's text as the client connected (clipOK: known),
// the baseline: only a change is sent.
func (c *conn) updates(done <-chan struct{}, first *image.RGBA, clip string, clipOK bool) error {
	var last *image.RGBA // what the client has (nil: nothing yet)
	size := first.Bounds().Size()
	lastClip, clipKnown := clip, clipOK
	tick := time.NewTicker(c.s.cfg.Poll)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return nil
		case <-c.wake:
		case <-tick.C:
		}
		if cb, ok := c.s.cfg.Screen.(Clipboard); ok {
			if text, err := cb.ClipboardText(); err == nil {
				c.mu.Lock()
				fromPeer := c.cutFromPeer
				c.mu.Unlock()
				if clipKnown && text != lastClip && text != fromPeer {
					if err := c.writeCutText(text); err != nil {
						return err
					}
				}
				lastClip, clipKnown = text, true
			}
		}
		c.mu.Lock()
		req, pf, encs := c.want, c.pf, c.encodings
		c.mu.Unlock()
		if req == nil {
			continue
		}
		pending := req
		frame, err := c.s.cfg.Screen.Capture()
		if err != nil {
			c.s.log.Warn("VNC capture failed", "err", err)
			continue
		}
		var rects []rect
		if fs := frame.Bounds().Size(); fs != size {
			if !has(encs, EncodingDesktopSize) {
				return fmt.Errorf("the desktop is now %dx%d and the client cannot resize", fs.X, fs.Y)
			}
			size, last = fs, nil
			rects = append(rects, rect{r: image.Rect(0, 0, fs.X, fs.Y), enc: EncodingDesktopSize})
			req = &updateRequest{rect: image.Rect(0, 0, fs.X, fs.Y)}
		}
		area := req.rect.Intersect(image.Rect(0, 0, size.X, size.Y))
		enc := pickEncoding(encs)
		if !req.incremental || last == nil {
			if !area.Empty() {
				rects = append(rects, rect{r: area, enc: enc})
			}
		} else {
			for _, r := range ChangedTiles(last, frame, area) {
				rects = append(rects, rect{r: r, enc: enc})
			}
		}
		if len(rects) == 0 && req.incremental {
			continue // nothing changed: wait
		}
		c.mu.Lock()
		if c.want == pending {
			c.want = nil
		}
		c.mu.Unlock()
		if err := c.writeUpdate(frame, pf, rects); err != nil {
			return err
		}
		last = frame
	}
}

type rect struct {
	r   image.Rectangle
	enc int32
}

func has(encs []int32, e int32) bool {
	for _, x := range encs {
		if x == e {
			return true
		}
	}
	return false
}

// pickEncoding is the client's first of Hextile and Raw (Raw always
// works).
func pickEncoding(encs []int32) int32 {
	for _, e := range encs {
		if e == EncodingHextile || e == EncodingRaw {
			return e
		}
	}
	return EncodingRaw
}

// ChangedTiles lists, within area, the runs of 16×16 tiles (one
// rectangle per run along a tile row) where cur differs from prev.
func ChangedTiles(prev, cur *image.RGBA, area image.Rectangle) []image.Rectangle {
	var out []image.Rectangle
	for ty := area.Min.Y; ty < area.Max.Y; ty += TileSize {
		var run image.Rectangle
		open := false
		for tx := area.Min.X; tx < area.Max.X; tx += TileSize {
			t := image.Rect(tx, ty, min(tx+TileSize, area.Max.X), min(ty+TileSize, area.Max.Y))
			if tileDiffers(prev, cur, t) {
				if open {
					run.Max.X = t.Max.X
				} else {
					run, open = t, true
				}
				continue
			}
			if open {
				out = append(out, run)
				open = false
			}
		}
		if open {
			out = append(out, run)
		}
	}
	return out
}

func tileDiffers(prev, cur *image.RGBA, t image.Rectangle) bool {
	if !t.In(prev.Bounds()) {
		return true
	}
	for y := t.Min.Y; y < t.Max.Y; y++ {
		a := prev.Pix[prev.PixOffset(t.Min.X, y):prev.PixOffset(t.Max.X, y)]
		b := cur.Pix[cur.PixOffset(t.Min.X, y):cur.PixOffset(t.Max.X, y)]
		if string(a) != string(b) {
			return true
		}
	}
	return false
}

func (c *conn) writeUpdate(frame *image.RGBA, pf PixelFormat, rects []rect) error {
	buf := []byte{0, 0}
	buf = binary.BigEndian.AppendUint16(buf, uint16(len(rects)))
	for _, r := range rects {
		buf = binary.BigEndian.AppendUint16(buf, uint16(r.r.Min.X))
		buf = binary.BigEndian.AppendUint16(buf, uint16(r.r.Min.Y))
		buf = binary.BigEndian.AppendUint16(buf, uint16(r.r.Dx()))
		buf = binary.BigEndian.AppendUint16(buf, uint16(r.r.Dy()))
		buf = binary.BigEndian.AppendUint32(buf, uint32(r.enc))
		switch r.enc {
		case EncodingDesktopSize:
		case EncodingHextile:
			buf = appendHextile(buf, frame, pf, r.r)
		default:
			buf = appendRaw(buf, frame, pf, r.r)
		}
	}
	c.wm.Lock()
	defer c.wm.Unlock()
	_, err := c.c.Write(buf)
	return err
}

func appendRaw(buf []byte, f *image.RGBA, pf PixelFormat, r image.Rectangle) []byte {
	for y := r.Min.Y; y < r.Max.Y; y++ {
		p := f.Pix[f.PixOffset(r.Min.X, y):]
		for x := 0; x < r.Dx(); x++ {
			buf = pf.put(buf, p[4*x], p[4*x+1], p[4*x+2])
		}
	}
	return buf
}

// Hextile subencodings used: a solid tile is its background colour
// alone, any other tile is raw.
const (
	hextileRaw        = 1
	hextileBackground = 2
)

func appendHextile(buf []byte, f *image.RGBA, pf PixelFormat, r image.Rectangle) []byte {
	for ty := r.Min.Y; ty < r.Max.Y; ty += TileSize {
		for tx := r.Min.X; tx < r.Max.X; tx += TileSize {
			t := image.Rect(tx, ty, min(tx+TileSize, r.Max.X), min(ty+TileSize, r.Max.Y))
			if px, solid := solidColour(f, t); solid {
				buf = append(buf, hextileBackground)
				buf = pf.put(buf, px[0], px[1], px[2])
				continue
			}
			buf = append(buf, hextileRaw)
			buf = appendRaw(buf, f, pf, t)
		}
	}
	return buf
}

func solidColour(f *image.RGBA, t image.Rectangle) ([3]uint8, bool) {
	o := f.PixOffset(t.Min.X, t.Min.Y)
	px := [3]uint8{f.Pix[o], f.Pix[o+1], f.Pix[o+2]}
	for y := t.Min.Y; y < t.Max.Y; y++ {
		p := f.Pix[f.PixOffset(t.Min.X, y):]
		for x := 0; x < t.Dx(); x++ {
			if p[4*x] != px[0] || p[4*x+1] != px[1] || p[4*x+2] != px[2] {
				return px, false
			}
		}
	}
	return px, true
}

// writeCutText sends ServerCutText (Latin-1 on the wire; other
// characters become '?').
func (c *conn) writeCutText(text string) error {
	t := stringToLatin1(text)
	buf := []byte{3, 0, 0, 0}
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(t)))
	buf = append(buf, t...)
	c.wm.Lock()
	defer c.wm.Unlock()
	_, err := c.c.Write(buf)
	return err
}

func latin1ToString(b []byte) string {
	r := make([]rune, len(b))
	for i, c := range b {
		r[i] = rune(c)
	}
	return string(r)
}

func stringToLatin1(s string) []byte {
	out := make([]byte, 0, len(s))
	for _, r := range s {
		if r > 0xff {
			r = '?'
		}
		out = append(out, byte(r))
	}
	return out
}

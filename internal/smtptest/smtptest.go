// Package smtptest runs a small SMTP server in the test's process, with
// STARTTLS on a certificate from internal/testpki and AUTH PLAIN, and
// records the messages it accepts: enough of RFC 5321 for the Engine's
// notification channels to be tested against a server that speaks it.
package smtptest

import (
	"bufio"
	"crypto/tls"
	"encoding/base64"
	"net"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/internal/testpki"
)

// Message is one accepted message.
type Message struct {
	From string
	To   []string
	Data string
	// TLS: the message was sent after STARTTLS; User and Password are
	// what AUTH PLAIN presented ("" without AUTH).
	TLS            bool
	User, Password string
}

// Server is a running test SMTP server.
type Server struct {
	// Host and Port are where it listens (127.0.0.1).
	Host string
	Port int
	// CAPEM is the CA its certificate chains to.
	CAPEM string

	tlsConfig *tls.Config
	noTLS     bool
	ln        net.Listener

	mu       sync.Mutex
	messages []Message
}

// Options change the server.
type Options struct {
	// NoSTARTTLS: the server does not offer STARTTLS.
	NoSTARTTLS bool
}

// Start starts a server until the test ends.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	ca := testpki.NewCA(t, "smtp")
	pair := ca.Server(t, "smtp", "127.0.0.1")
	cert, err := tls.LoadX509KeyPair(pair.CertFile, pair.KeyFile)
	require.NoError(t, err)
	caPEM, err := os.ReadFile(ca.CertFile)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &Server{Host: "127.0.0.1", Port: ln.Addr().(*net.TCPAddr).Port, CAPEM: string(caPEM), ln: ln, noTLS: opts.NoSTARTTLS,
		tlsConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				s.serve(c)
			}()
		}
	}()
	return s
}

// Messages are the messages accepted so far.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.messages...)
}

func (s *Server) serve(conn net.Conn) {
	r, w := bufio.NewReader(conn), bufio.NewWriter(conn)
	say := func(line string) { _, _ = w.WriteString(line + "\r\n"); _ = w.Flush() }
	var m Message
	say("220 smtptest ready")
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimRight(line, "\r\n")
		verb := strings.ToUpper(strings.SplitN(line, " ", 2)[0])
		arg := strings.TrimSpace(strings.TrimPrefix(line, strings.SplitN(line, " ", 2)[0]))
		switch verb {
		case "EHLO", "HELO":
			_, _ = w.WriteString("250-smtptest\r\n")
			if !m.TLS && !s.noTLS {
				_, _ = w.WriteString("250-STARTTLS\r\n")
			}
			if m.TLS {
				_, _ = w.WriteString("250-AUTH PLAIN\r\n")
			}
			say("250 8BITMIME")
		case "STARTTLS":
			if s.noTLS || m.TLS {
				say("502 not offered")
				continue
			}
			say("220 go ahead")
			tc := tls.Server(conn, s.tlsConfig)
			if err := tc.Handshake(); err != nil {
				return
			}
			conn = tc
			r, w = bufio.NewReader(tc), bufio.NewWriter(tc)
			m = Message{TLS: true}
		case "AUTH":
			parts := strings.Fields(arg)
			if !m.TLS || len(parts) != 2 || strings.ToUpper(parts[0]) != "PLAIN" {
				say("504 unsupported")
				continue
			}
			raw, err := base64.StdEncoding.DecodeString(parts[1])
			f := strings.Split(string(raw), "\x00")
			if err != nil || len(f) != 3 {
				say("501 malformed")
				continue
			}
			m.User, m.Password = f[1], f[2]
			say("235 accepted")
		case "MAIL":
			m.From = path(arg)
			say("250 ok")
		case "RCPT":
			m.To = append(m.To, path(arg))
			say("250 ok")
		case "DATA":
			say("354 end with .")
			var b strings.Builder
			for {
				l, err := r.ReadString('\n')
				if err != nil {
					return
				}
				if l == ".\r\n" {
					break
				}
				b.WriteString(strings.TrimPrefix(l, "."))
			}
			m.Data = b.String()
			s.mu.Lock()
			s.messages = append(s.messages, m)
			s.mu.Unlock()
			m = Message{TLS: m.TLS, User: m.User, Password: m.Password}
			say("250 queued")
		case "RSET", "NOOP":
			say("250 ok")
		case "QUIT":
			say("221 bye")
			return
		default:
			say("500 unknown")
		}
	}
}

// path is the address of a MAIL FROM:<a> or RCPT TO:<a> argument, its
// ESMTP parameters dropped.
func path(arg string) string {
	_, rest, _ := strings.Cut(arg, ":")
	rest = strings.TrimSpace(rest)
	if i := strings.IndexByte(rest, '>'); i >= 0 {
		rest = rest[:i]
	}
	return strings.TrimPrefix(rest, "<")
}

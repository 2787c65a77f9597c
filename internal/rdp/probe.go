package rdp

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"time"
)

// Dialer reaches the agent's RDP port through the tunnel.
type Dialer func(ctx context.Context) (net.Conn, error)

// Port is the RDP port agents serve on their tunnel address.
const Port = 3389

// RDP security protocols of the negotiation ([MS-RDPBCGR] 2.2.1.1.1).
const (
	ProtoRDP    = 0
	ProtoSSL    = 1
	ProtoHybrid = 2
)

// ProbeResult is what the server's X.224 Connection Confirm said.
type ProbeResult struct {
	// Selected is the security protocol the server chose (ProtoSSL,
	// ProtoHybrid...), or -1 when it answered a negotiation failure.
	Selected int `json:"selected_protocol"`
	// Failure is the negotiation failure code, when Selected is -1.
	Failure   int   `json:"failure_code,omitempty"`
	ElapsedMS int64 `json:"elapsed_ms"`
}

// connectionRequest is a TPKT-framed X.224 Connection Request carrying an
// RDP Negotiation Request for TLS and CredSSP (NLA) ([MS-RDPBCGR]
// 2.2.1.1).
func connectionRequest() []byte {
	neg := []byte{0x01, 0x00, 0x08, 0x00, 0, 0, 0, 0} // TYPE_RDP_NEG_REQ, flags, length 8, protocols
	binary.LittleEndian.PutUint32(neg[4:], ProtoSSL|ProtoHybrid)
	x224 := append([]byte{0, 0xE0, 0, 0, 0, 0, 0}, neg...) // LI, CR, DST-REF, SRC-REF, class 0
	x224[0] = byte(len(x224) - 1)
	tpkt := []byte{3, 0, 0, 0}
	binary.BigEndian.PutUint16(tpkt[2:], uint16(4+len(x224)))
	return append(tpkt, x224...)
}

// Probe is rule 5's: a TCP connection through the tunnel, an X.224
// Connection Request and the server's Connection Confirm, within wait. A
// port that accepts but does not speak RDP fails too.
func Probe(ctx context.Context, dial Dialer, wait time.Duration) (ProbeResult, error) {
	started := time.Now()
	dctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	c, err := dial(dctx)
	if err != nil {
		return ProbeResult{}, fmt.Errorf("connect: %w", err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(wait))
	if _, err := c.Write(connectionRequest()); err != nil {
		return ProbeResult{}, fmt.Errorf("send the X.224 Connection Request: %w", err)
	}
	res, err := readConfirm(c)
	res.ElapsedMS = time.Since(started).Milliseconds()
	return res, err
}

// readConfirm reads the TPKT-framed X.224 Connection Confirm.
func readConfirm(r io.Reader) (ProbeResult, error) {
	head := make([]byte, 4)
	if _, err := io.ReadFull(r, head); err != nil {
		return ProbeResult{}, fmt.Errorf("no X.224 Connection Confirm: %w", err)
	}
	n := int(binary.BigEndian.Uint16(head[2:]))
	if head[0] != 3 || n < 11 || n > 512 {
		return ProbeResult{}, fmt.Errorf("not an RDP server: TPKT header % x", head)
	}
	body := make([]byte, n-4)
	if _, err := io.ReadFull(r, body); err != nil {
		return ProbeResult{}, fmt.Errorf("short X.224 Connection Confirm: %w", err)
	}
	if body[1]&0xF0 != 0xD0 {
		return ProbeResult{}, fmt.Errorf("not an X.224 Connection Confirm (TPDU code %#x)", body[1])
	}
	// An old server may confirm without a negotiation response: standard
	// RDP security.
	if len(body) < 7+8 {
		return ProbeResult{Selected: ProtoRDP}, nil
	}
	neg := body[7:]
	val := int(binary.LittleEndian.Uint32(neg[4:8]))
	switch neg[0] {
	case 0x02: // TYPE_RDP_NEG_RSP
		return ProbeResult{Selected: val}, nil
	case 0x03: // TYPE_RDP_NEG_FAILURE: the server speaks RDP but refused the protocols offered
		return ProbeResult{Selected: -1, Failure: val}, nil
	}
	return ProbeResult{}, fmt.Errorf("unknown RDP negotiation message type %#x", neg[0])
}

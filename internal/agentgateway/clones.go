package agentgateway

import (
	"context"
	"time"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
)

// ClonePingTimeout bounds the ping that tells a live older socket from a
// half-open one (a machine that rebooted or was killed without closing).
const ClonePingTimeout = 5 * time.Second

// checkClone looks for another live socket of c's device on this replica
// from another boot (docs/architecture.md "Device identity and clones").
// A socket from the same boot, or an older socket that does not answer a
// ping, is the same agent reconnecting: nothing to do (attach replaces
// it). Two live sockets from different boots are two machines running one
// key and GUID: the copy is told to enroll again. The copy is the one
// whose fingerprint does not match the enrolled one, or, when both match
// (machines cloned from one image share their hardware IDs), the newcomer:
// the older socket is the device's current connection. It returns the
// ticket for c when c is the copy, and tells the older socket itself when
// that is the copy.
func (h *Hub) checkClone(c *conn) (string, error) {
	h.mu.Lock()
	old := h.conns[string(c.dev.GUID)]
	h.mu.Unlock()
	if old == nil || old.bootID == "" || c.bootID == "" || old.bootID == c.bootID {
		return "", nil
	}
	pctx, cancel := context.WithTimeout(c.ctx, ClonePingTimeout)
	err := old.ws.Ping(pctx)
	cancel()
	if err != nil {
		h.log.Info("older agent socket did not answer a ping; replacing it", "guid", c.dev.GUID, "err", err)
		return "", nil
	}
	ctx, cancel := dbContext()
	defer cancel()
	d, err := h.store.DeviceGetByGUID(ctx, c.dev.GUID)
	if err != nil {
		return "", err
	}
	copyConn, holder := c, old
	if d.Fingerprint != "" && c.fingerprint == d.Fingerprint && old.fingerprint != "" && old.fingerprint != d.Fingerprint {
		copyConn, holder = old, c
	}
	clone := devicetrust.Clone{Device: c.dev.GUID, SiteID: d.SiteID, BootID: copyConn.bootID, Reason: devicetrust.CloneReasonSocket,
		Detail: "holder_boot_id=" + holder.bootID}
	err = devicetrust.IssueClone(ctx, h.store, clone, h.opts.Now())
	ticket := devicetrust.CloneTicketOf(err)
	if ticket == "" {
		// Rate limited or failed: the copy is refused and tries again;
		// the holder stays.
		return "", err
	}
	if copyConn == c {
		return ticket, nil
	}
	h.log.Warn("agent socket is a copy of its device; telling it to enroll again", "guid", c.dev.GUID, "boot_id", old.bootID)
	if err := old.send(ctx, envelope(proto.MsgDeviceCloned, proto.DeviceCloned{CloneTicket: ticket})); err != nil {
		h.log.Warn("could not tell the copy of a device", "guid", c.dev.GUID, "err", err)
	}
	old.stop(closeNormal, "this agent is a copy of an enrolled device")
	return "", nil
}

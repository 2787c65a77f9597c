package devices

import (
	"time"

	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/devicefilters"
)

// FromFilterRows turns a page of the filtered device list into devices,
// deciding connectivity at now (the page's own time, so a row's status
// agrees with the status filter that selected it).
func (s *Service) FromFilterRows(rows []devicefilters.Row, now time.Time) []Device {
	out := make([]Device, len(rows))
	for i, r := range rows {
		out[i] = s.device(db.Device{Guid: r.GUID, AgentID: r.AgentID, Hostname: r.Hostname, Description: r.Description,
			SiteID: r.SiteID, LastSeen: r.LastSeen, SocketReplica: r.SocketReplica, SocketSeenAt: r.SocketSeenAt,
			OperatingSystem: r.OperatingSystem, AgentVersion: r.AgentVersion, AgentBuildID: r.AgentBuildID,
			TrustState: r.TrustState, BootID: r.BootID, HelperContexts: r.HelperContexts, Metrics: r.Metrics,
			EnrolledAt: r.EnrolledAt}, r.SiteName, r.SiteSlug, now)
	}
	return out
}

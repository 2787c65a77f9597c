package devices

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/events"
)

// MaxAssign bounds one site assignment.
const MaxAssign = 1000

// ActivitySiteAssigned is the activity kind of a site move.
const ActivitySiteAssigned = "site_assigned"

// AssignSite moves devices to a site, all or nothing: an unknown site or
// any unknown GUID is not_found and nothing moves. Each moved device gets
// an activity row naming actor. A device that changes site ends its live
// file transfers in the same transaction (their workflows run on the old
// site's queue, under a scope checked against the old site) and, after
// the commit, emits agent_status_changed, on which its live shells
// re-check it at once (issue 21 item 6).
func (s *Service) AssignSite(ctx context.Context, guids []string, siteID cairn.SiteID, actor string) (Assigned, error) {
	var v cairn.Validation
	if siteID <= 0 {
		v.Add("site_id", "must be a positive site ID")
	}
	switch {
	case len(guids) == 0:
		v.Add("guids", "must name at least one device")
	case len(guids) > MaxAssign:
		v.Add("guids", fmt.Sprintf("must name at most %d devices", MaxAssign))
	}
	for _, g := range guids {
		if g == "" || len(g) > MaxGUID {
			v.Add("guids", fmt.Sprintf("every GUID must be 1 to %d characters", MaxGUID))
			break
		}
	}
	if err := v.Err(); err != nil {
		return Assigned{}, err
	}
	unique := slices.Compact(slices.Sorted(slices.Values(guids)))
	var (
		out   = Assigned{GUIDs: unique}
		moved []db.DeviceSiteAssignRow
	)
	err := s.store.InTx(ctx, func(q *db.Queries) error {
		site, err := q.SiteGet(ctx, siteID)
		if err != nil {
			return db.NotFound(err, "site not found")
		}
		moved, err = q.DeviceSiteAssign(ctx, db.DeviceSiteAssignParams{SiteID: siteID, Guids: unique})
		if err != nil {
			return err
		}
		if missing := len(unique) - len(moved); missing > 0 {
			return cairn.Errorf(cairn.ECodeNotFound, "%d of the %d devices do not exist; none was moved", missing, len(unique))
		}
		meta, err := json.Marshal(map[string]any{"site_id": site.ID, "site_name": site.Name})
		if err != nil {
			return err
		}
		if err := q.DeviceActivityInsertForDevices(ctx, db.DeviceActivityInsertForDevicesParams{Kind: ActivitySiteAssigned,
			Summary: "Moved to site " + site.Name, Actor: actor, Metadata: meta, Guids: unique}); err != nil {
			return err
		}
		out.EndedTransfers, err = q.FileTransferEndForDevices(ctx, db.FileTransferEndForDevicesParams{Guids: unique,
			KeepSiteID: int64(siteID), ErrorMessage: ReasonSiteMoved})
		return err
	})
	if err != nil {
		return Assigned{}, err
	}
	for _, d := range moved {
		if cairn.SiteID(d.PreviousSiteID) == siteID {
			continue
		}
		ev := siteMoveEvent{GUID: d.Guid, Hostname: d.Hostname, SiteID: siteID, PreviousSiteID: d.PreviousSiteID}
		s.publish(ctx, events.TypeAgentStatusChanged, siteID, ev)
		s.publish(ctx, events.TypeAgentStatusChanged, cairn.SiteID(d.PreviousSiteID), ev)
	}
	return out, nil
}

// ReasonSiteMoved ends the live shells and transfers of a device that
// changed site.
const ReasonSiteMoved = "the device moved to another site"

// Assigned is a site assignment's outcome.
type Assigned struct {
	// GUIDs are the distinct devices assigned, sorted.
	GUIDs []string
	// EndedTransfers are the live file transfers of devices that changed
	// site, now cancelled: their workflows are to be told.
	EndedTransfers []cairn.TransferID
}

// siteMoveEvent is agent_status_changed for a device that changed site,
// sent to operators of both sites.
type siteMoveEvent struct {
	GUID           cairn.DeviceGUID `json:"guid"`
	Hostname       string           `json:"hostname"`
	SiteID         cairn.SiteID     `json:"site_id"`
	PreviousSiteID int64            `json:"previous_site_id"`
}

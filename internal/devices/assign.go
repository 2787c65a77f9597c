package devices

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
)

// MaxAssign bounds one site assignment.
const MaxAssign = 1000

// ActivitySiteAssigned is the activity kind of a site move.
const ActivitySiteAssigned = "site_assigned"

// AssignSite moves devices to a site, all or nothing: an unknown site or
// any unknown GUID is not_found and nothing moves. Each moved device gets
// an activity row naming actor. It returns the distinct GUIDs, sorted.
func (s *Service) AssignSite(ctx context.Context, guids []string, siteID int64, actor string) ([]string, error) {
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
		return nil, err
	}
	unique := slices.Compact(slices.Sorted(slices.Values(guids)))
	err := s.store.InTx(ctx, func(q *db.Queries) error {
		site, err := q.SiteGet(ctx, siteID)
		if err != nil {
			return db.NotFound(err, "site not found")
		}
		moved, err := q.DeviceSiteAssign(ctx, db.DeviceSiteAssignParams{SiteID: siteID, Guids: unique})
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
		return q.DeviceActivityInsertForDevices(ctx, db.DeviceActivityInsertForDevicesParams{Kind: ActivitySiteAssigned,
			Summary: "Moved to site " + site.Name, Actor: actor, Metadata: meta, Guids: unique})
	})
	if err != nil {
		return nil, err
	}
	return unique, nil
}

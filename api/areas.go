package api

import (
	"context"
	"slices"

	"github.com/cairn-rmm/cairn"
)

// Area is one capability's routes. A capability declares its area in its
// engine/capability_*.go with the services only its routes use; the area
// builds its route table over the Server, whose Deps hold what several
// capabilities share (the store, sessions, devices, the command path).
// An area with services of its own is a type in its route file
// (TransfersArea in routes_file_transfers.go); one that needs only the
// shared Deps is a value below. Adding a capability's routes changes
// neither Deps nor New.
type Area interface {
	routes(s *Server) []Route
}

// areaFunc is an area whose routes need only the shared Deps.
type areaFunc func(s *Server) []Route

func (f areaFunc) routes(s *Server) []Route { return f(s) }

// Areas whose routes need only the shared Deps.
var (
	FilesArea      Area = areaFunc((*Server).fileRoutes)
	RegistryArea   Area = areaFunc((*Server).registryRoutes)
	OperationsArea Area = areaFunc((*Server).deviceOpRoutes)
	DevicesArea    Area = areaFunc(func(s *Server) []Route {
		return slices.Concat(s.agentCallbackRoutes(), s.deviceRoutes(), s.activityRoutes())
	})
	ScriptSignArea    Area = areaFunc((*Server).scriptSignRoutes)
	AutomationArea    Area = areaFunc(func(s *Server) []Route { return slices.Concat(s.assemblyRoutes(), s.quickRunRoutes()) })
	ScheduledJobsArea Area = areaFunc((*Server).scheduledJobRoutes)
	SoftwareArea      Area = areaFunc((*Server).softwareRoutes)
	DeviceFiltersArea Area = areaFunc(func(s *Server) []Route { return slices.Concat(s.deviceFilterRoutes(), s.deviceViewRoutes()) })
	MetadataArea      Area = areaFunc((*Server).metadataRoutes)
	PasskeysArea      Area = areaFunc((*Server).passkeyRoutes)
)

// transfersEnded tells the file transfers' workflows that a change made
// elsewhere (a trust action, a site move) ended transfers ids; nothing
// when the transfers capability is not served.
func (s *Server) transfersEnded(ctx context.Context, ids []cairn.TransferID, purged bool) {
	if s.endTransfers != nil {
		s.endTransfers(ctx, ids, purged)
	}
}

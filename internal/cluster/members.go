package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/cairn-rmm/cairn/db"
)

// Self is this process as a member.
type Self struct {
	MemberID string
	Role     string
	Name     string
	Version  string
	URL      string
	// AdmissionID is the admission this process joined through ("" for
	// one configured by hand).
	AdmissionID string
	StartedAt   time.Time
	// Sites lists the sites it runs now.
	Sites func() []string
}

// Heartbeat records self as seen now.
func (s *Service) Heartbeat(ctx context.Context, self Self) error {
	sites := []string{}
	if self.Sites != nil {
		if l := self.Sites(); l != nil {
			sites = slices.Sorted(slices.Values(l))
		}
	}
	var adm *string
	if self.AdmissionID != "" {
		adm = &self.AdmissionID
	}
	return s.q.ClusterMemberUpsert(ctx, db.ClusterMemberUpsertParams{MemberID: self.MemberID, Role: self.Role, Name: self.Name,
		Version: self.Version, Sites: sites, Url: self.URL, AdmissionID: adm, StartedAt: self.StartedAt})
}

// Run refreshes self every MemberRefresh until ctx ends, as the
// operator-presence rows are refreshed; a process that stops gracefully
// then removes its row (one that dies is listed down until swept).
func (s *Service) Run(ctx context.Context, self Self, log *slog.Logger) {
	tick := time.NewTicker(MemberRefresh)
	defer tick.Stop()
	for {
		if err := s.Heartbeat(ctx, self); err != nil && ctx.Err() == nil {
			log.Warn("cluster: refresh member", "err", err)
		}
		select {
		case <-ctx.Done():
			dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := s.q.ClusterMemberDelete(dctx, self.MemberID); err != nil {
				log.Warn("cluster: remove member", "err", err)
			}
			return
		case <-tick.C:
		}
	}
}

// DeleteStale forgets members not seen for MemberKeep (maintenance).
func (s *Service) DeleteStale(ctx context.Context) (int64, error) {
	return s.q.ClusterMemberDeleteStale(ctx, MemberKeep.Seconds())
}

// Member is a process of the deployment.
type Member struct {
	MemberID    string    `json:"member_id"`
	Role        string    `json:"role" openapi:"enum=engine|worker"`
	Name        string    `json:"name"`
	Version     string    `json:"version"`
	Sites       []string  `json:"sites"`
	URL         string    `json:"url"`
	AdmissionID string    `json:"admission_id,omitempty"`
	StartedAt   time.Time `json:"started_at"`
	LastSeen    time.Time `json:"last_seen"`
	// State is up (refreshed within MemberFreshFor) or down.
	State string `json:"state" openapi:"enum=up|down"`
}

// Members lists every process seen within MemberKeep.
func (s *Service) Members(ctx context.Context) ([]Member, error) {
	rows, err := s.q.ClusterMemberList(ctx, MemberFreshFor.Seconds())
	if err != nil {
		return nil, err
	}
	out := make([]Member, 0, len(rows))
	for _, r := range rows {
		m := Member{MemberID: r.MemberID, Role: r.Role, Name: r.Name, Version: r.Version, Sites: r.Sites, URL: r.Url,
			StartedAt: r.StartedAt, LastSeen: r.SeenAt, State: "down"}
		if r.Live {
			m.State = "up"
		}
		if r.AdmissionID != nil {
			m.AdmissionID = *r.AdmissionID
		}
		if m.Sites == nil {
			m.Sites = []string{}
		}
		out = append(out, m)
	}
	return out, nil
}

// PostgresRole is the database's role: primary, or standby when it is in
// recovery (a read replica, which the Engine does not write to).
type PostgresRole struct {
	Role    string `json:"role" openapi:"enum=primary|standby|unreachable"`
	Version string `json:"version"`
}

// Postgres asks the database for its role.
func (s *Service) Postgres(ctx context.Context) PostgresRole {
	r, err := s.q.ClusterPostgresRole(ctx)
	if err != nil {
		return PostgresRole{Role: "unreachable"}
	}
	role := "primary"
	if r.InRecovery {
		role = "standby"
	}
	return PostgresRole{Role: role, Version: r.Version}
}

// Banner is the one line the Server page shows about the cluster.
type Banner struct {
	Severity          string   `json:"severity" openapi:"enum=none|info|warning"`
	Message           string   `json:"message"`
	PendingAdmissions int      `json:"pending_admissions"`
	MembersDown       int      `json:"members_down"`
	Versions          []string `json:"versions"`
}

// BannerOf sums members and admissions up: pending admissions ask for a
// decision (info); a member down or members on different versions (a
// rolling upgrade left half done) are warnings.
func BannerOf(members []Member, admissions []Admission) Banner {
	b := Banner{Severity: "none", Versions: []string{}}
	for _, a := range admissions {
		if a.State == StatePending {
			b.PendingAdmissions++
		}
	}
	for _, m := range members {
		if m.State != "up" {
			b.MembersDown++
			continue
		}
		if !slices.Contains(b.Versions, m.Version) {
			b.Versions = append(b.Versions, m.Version)
		}
	}
	slices.Sort(b.Versions)
	var parts []string
	if b.MembersDown > 0 {
		parts = append(parts, fmt.Sprintf("%d member(s) not seen for %s", b.MembersDown, MemberFreshFor))
	}
	if len(b.Versions) > 1 {
		parts = append(parts, fmt.Sprintf("members run %d different versions", len(b.Versions)))
	}
	if len(parts) > 0 {
		b.Severity = "warning"
	} else if b.PendingAdmissions > 0 {
		b.Severity = "info"
	}
	if b.PendingAdmissions > 0 {
		parts = append(parts, fmt.Sprintf("%d admission(s) wait on a decision", b.PendingAdmissions))
	}
	for i, p := range parts {
		if i > 0 {
			b.Message += "; "
		}
		b.Message += p
	}
	return b
}

package activities

import (
	"context"
	"errors"
)

// Cluster is the cluster admission's activity (workflows.ClusterAdmission).
type Cluster struct {
	// Settle records a decision on an admission and answers its state
	// (cluster.Service.Settle with the Engine's URL).
	Settle func(ctx context.Context, id, decision, actor string) (string, error)
	// Sweep forgets members gone for long (cluster.Service.DeleteStale).
	Sweep func(ctx context.Context) (int64, error)
}

// SweepClusterMembers forgets members not seen for a day (maintenance).
func (a *Cluster) SweepClusterMembers(ctx context.Context) (int64, error) {
	if a.Sweep == nil {
		return 0, nil
	}
	return a.Sweep(ctx)
}

// ClusterSettleInput is a decision on an admission.
type ClusterSettleInput struct {
	AdmissionID string
	Decision    string
	Actor       string
}

// SettleClusterAdmission records the decision; a settled admission is
// answered as it is, so a retry changes nothing.
func (a *Cluster) SettleClusterAdmission(ctx context.Context, in ClusterSettleInput) (string, error) {
	if a.Settle == nil {
		return "", errors.New("activities: this process keeps no cluster admissions")
	}
	return a.Settle(ctx, in.AdmissionID, in.Decision, in.Actor)
}

package backup

import "github.com/cairn-rmm/cairn/db"

// Policy says what a backup does with a table (SPEC "Backup and restore
// rules" 4).
type Policy int

const (
	// Export: the table's rows are in the backup and restored.
	Export Policy = iota
	// Exclude: not in the backup; restore empties it (logs, saved views,
	// pending approvals, sessions, run history, queues, runtime state).
	Exclude
	// Derived: not in the backup; triggers rebuild it from exported rows
	// as they are restored (filter rows, software audit counts).
	Derived
	// Internal: neither exported nor emptied (the migration ledger, the
	// restore's own staging table).
	Internal
)

// Table is one table's declaration.
type Table struct {
	Name   string
	Policy Policy
	// Filter restricts the exported rows (db.BackupAllRows: all).
	Filter db.BackupFilter
}

// Tables declares every table of the schema: TestBackupDeclaresEveryTable
// compares it with the running schema, so a migration that adds a table
// must say here whether backups carry it.
var Tables = []Table{
	// Configuration, identities, master-cipher state, trust and key material.
	{Name: "aegis_state", Policy: Export},
	{Name: "server_keys", Policy: Export},
	// The Internal class's HMAC keys (sealed): a restored Engine keeps
	// accepting its service components' signatures.
	{Name: "internal_hmac_keys", Policy: Export},
	{Name: "temporal_payload_keys", Policy: Export},
	{Name: "admin_recovery", Policy: Export},
	{Name: "users", Policy: Export},
	{Name: "passkeys", Policy: Export},
	{Name: "api_tokens", Policy: Export},
	{Name: "sites", Policy: Export},
	{Name: "user_site_assignments", Policy: Export},
	{Name: "directory_providers", Policy: Export},
	{Name: "stored_credentials", Policy: Export},
	{Name: "source_token", Policy: Export},
	{Name: "enrollment_codes", Policy: Export},
	{Name: "script_signing_keys", Policy: Export},
	{Name: "script_key_links", Policy: Export},
	// The Engine's WireGuard key (sealed by the master cipher).
	{Name: "wireguard_server", Policy: Export},
	// Agents: the device row holds its one current key; of its refresh
	// tokens only the newest active one.
	{Name: "devices", Policy: Export},
	{Name: "refresh_tokens", Policy: Export, Filter: db.BackupLatestRefreshToken},
	{Name: "device_purges", Policy: Export},
	{Name: "device_script_trust", Policy: Export},
	{Name: "device_addresses", Policy: Export},
	// Each device's tunnel address and key, so restored agents keep their
	// tunnel.
	{Name: "tunnels", Policy: Export},
	// Current inventory.
	{Name: "device_inventory", Policy: Export},
	{Name: "device_software", Policy: Export},
	{Name: "device_patches", Policy: Export},
	{Name: "device_patch_status", Policy: Export},
	{Name: "software_icons", Policy: Export},
	{Name: "software_icon_overrides", Policy: Export},
	{Name: "software_uninstall_overrides", Policy: Export},
	{Name: "software_uninstall_blocks", Policy: Export},
	// Automation content, job definitions, filters, metadata.
	{Name: "assemblies", Policy: Export},
	{Name: "assembly_versions", Policy: Export},
	{Name: "automation_workflows", Policy: Export},
	// Flows' inbound webhooks, secrets sealed by the master cipher (which
	// a backup carries unchanged): the callers keep working after a restore.
	{Name: "automation_workflow_webhooks", Policy: Export},
	{Name: "scheduled_jobs", Policy: Export},
	{Name: "scheduled_job_filters", Policy: Export},
	{Name: "device_filters", Policy: Export},
	{Name: "metadata_field_definitions", Policy: Export},
	{Name: "device_metadata_values", Policy: Export},
	// Watchdog definitions and their per-device mutes (configuration);
	// their evaluation state and incidents are runtime, excluded below.
	{Name: "watchdogs", Policy: Export},
	{Name: "watchdog_device_overrides", Policy: Export},
	// Notification channels (secrets sealed like stored credentials) and
	// maintenance windows are configuration.
	{Name: "notification_channels", Policy: Export},
	{Name: "maintenance_windows", Policy: Export},

	// Rebuilt by triggers from the rows above.
	{Name: "device_filter_rows", Policy: Derived},
	{Name: "software_audit_counts", Policy: Derived},
	{Name: "software_audit_totals", Policy: Derived},
	{Name: "software_audit_deltas", Policy: Derived},
	{Name: "software_audit_pending", Policy: Derived},

	// Excluded: sessions and cookies, pending approvals, saved views,
	// logs and activity, run history, queues, runtime state.
	{Name: "sessions", Policy: Exclude},
	{Name: "pending_token_uses", Policy: Exclude},
	{Name: "webauthn_ceremonies", Policy: Exclude},
	{Name: "rate_limits", Policy: Exclude},
	{Name: "auth_throttle", Policy: Exclude},
	{Name: "setup_codes", Policy: Exclude},
	{Name: "operator_streams", Policy: Exclude},
	{Name: "audit_log", Policy: Exclude},
	{Name: "dpop_jtis", Policy: Exclude},
	// Seen Internal signatures, valid for minutes: a replay cache.
	{Name: "internal_hmac_seen", Policy: Exclude},
	{Name: "repo_hash_cache", Policy: Exclude},
	{Name: "device_approvals", Policy: Exclude},
	// One-time tickets of cloned agents, valid a day: a restored Engine
	// answers the copy again when it shows up.
	{Name: "device_clone_tickets", Policy: Exclude},
	{Name: "device_list_views", Policy: Exclude},
	{Name: "device_activity", Policy: Exclude},
	{Name: "device_roles", Policy: Exclude},
	{Name: "device_metadata_sync", Policy: Exclude},
	{Name: "agent_requests", Policy: Exclude},
	{Name: "agent_endpoints", Policy: Exclude},
	// The cluster (internal/cluster): members are worker runtime state,
	// rewritten by each running process; join codes and admissions are
	// pending approvals (rule 3 clears them); its events are history.
	{Name: "cluster_members", Policy: Exclude},
	{Name: "cluster_join_codes", Policy: Exclude},
	{Name: "cluster_admissions", Policy: Exclude},
	{Name: "cluster_events", Policy: Exclude},
	{Name: "shell_sessions", Policy: Exclude},
	{Name: "shell_transcript_chunks", Policy: Exclude},
	{Name: "remote_op_tokens", Policy: Exclude},
	{Name: "job_runs", Policy: Exclude},
	{Name: "job_run_results", Policy: Exclude},
	{Name: "automation_workflow_runs", Policy: Exclude},
	// Agent redeploy jobs: history, and their codes last an hour.
	{Name: "onboarding_jobs", Policy: Exclude},
	{Name: "site_work_slots", Policy: Exclude},
	{Name: "agent_artifacts", Policy: Exclude},
	{Name: "agent_install_links", Policy: Exclude},
	{Name: "agent_update_operations", Policy: Exclude},
	{Name: "agent_update_events", Policy: Exclude},
	{Name: "file_transfers", Policy: Exclude},
	{Name: "file_transfer_items", Policy: Exclude},
	{Name: "file_transfer_chunks", Policy: Exclude},
	{Name: "watchdog_device_state", Policy: Exclude},
	{Name: "watchdog_incidents", Policy: Exclude},
	// What was sent for which incident: runtime, like the incidents.
	{Name: "notification_deliveries", Policy: Exclude},
	{Name: "patch_installs", Policy: Exclude},
	// Patch reboots are a history of requests, like patch installs.
	{Name: "patch_reboots", Policy: Exclude},
	// Patch enforcement state (SPEC backup: excluded); a restored Engine
	// asks every Windows device for its mode again.
	{Name: "patch_enforcements", Policy: Exclude},
	// Patch policies are operators' configuration (the global ones seeded).
	{Name: "patch_policies", Policy: Export},
	{Name: "wireguard_owner", Policy: Exclude},
	{Name: "vnc_sessions", Policy: Exclude},
	{Name: "vnc_auth_retries", Policy: Exclude},

	{Name: "goose_db_version", Policy: Internal},
	{Name: "backup_restores", Policy: Internal},
	// Scheduled backups: the settings are configuration; what the runs
	// did is history.
	{Name: "backup_schedule", Policy: Export},
	{Name: "backup_runs", Policy: Exclude},
}

func declared() map[string]Table {
	m := make(map[string]Table, len(Tables))
	for _, t := range Tables {
		m[t.Name] = t
	}
	return m
}

// The Engine's shapes: generated from the API document where converted
// (Schema<'Name'>, src/api/typed.ts), hand-written below where not yet.
import type { Schema } from './typed';

export type PhaseResponse = Schema<'PhaseResponse'>;
export type BootstrapPhase = PhaseResponse['phase'];

export type MfaSetup = Schema<'MfaSetup'>;

export type PendingMfa = Schema<'EnrollmentResponse'>;

export type User = Schema<'User'>;

/**
 * POST /api/auth/login: the document's one shape (Go omits the fields of the
 * other outcome), narrowed by mfa_required the way the Engine fills it.
 */
export type LoginResponse =
  | (Schema<'LoginResponse'> & { mfa_required: true; pending_token: string })
  | (Schema<'LoginResponse'> & { mfa_required: false; csrf_token: string; user: User });

/** token is only for API clients: a browser's session is its HttpOnly cookie. */
export type SessionResponse = Schema<'SessionResponse'>;

export type Site = Schema<'Site'>;

export type AgentPlatform = 'linux-amd64' | 'windows-amd64';

/** A signed install link (docs/api.md "Agent artifacts and install links"). */
export type InstallLink = Schema<'InstallLink'>;

export type WorkerPoller = Schema<'Poller'>;

export type WorkerState = Schema<'Worker'>;

export type WorkersResponse = Schema<'ServerWorkers'>;

export type Role = 'admin' | 'operator';

/** GET /api/aegis/status: the master cipher of this deployment. */
export type AegisStatus = Schema<'AegisStatus'>;

/** POST /api/aegis/force_reset: both codes, shown once. */
export type ForceResetResult = Schema<'ForceResetResponse'>;

/** A user as the admin routes return it: the user object plus site scope and last sign-in. */
export type Operator = Schema<'AccountEntry'>;

export type MfaAction = 'enable' | 'disable' | 'reset';

export type SiteAssignments = Schema<'AssignmentsResponse'>;

export type AuditEntry = Schema<'AuditEntry'>;

export type AuditPage = Schema<'AuditPage'>;


// Directory sign-in (docs/api.md "Directory sign-in").

export type DirectoryKind = 'ldap' | 'ldaps' | 'active_directory';
export type DirectoryGroupMode = 'member_of' | 'group_search';

export type RoleMapping = Schema<'RoleMapping'>;

export type SiteMapping = Schema<'SiteMapping'>;

export type DirectoryTestResult = Schema<'TestResult'>;

export type DirectoryProvider = Schema<'Provider'>;

/** Create or update body: every field optional; bind_password is write-only. */
export type DirectoryProviderInput = Partial<
  Omit<DirectoryProvider, 'provider_id' | 'has_bind_password' | 'last_test' | 'cached_users' | 'created_at' | 'updated_at'>
> & { bind_password?: string };

export type PeerCertificate = Schema<'Certificate'>;

export type DirectoryLookup = Schema<'Lookup'>;

export type DirectorySync = Schema<'Sync'>;

export type DirectorySite = Schema<'DirectorySite'>;


// Stored credentials (docs/api.md "Stored credentials"). The password is
// write-only: it is sent on create and update and never comes back.
export type ConnectionType = 'Windows' | 'WinRM';
export type CredentialType = 'Machine' | 'Domain';

export type Credential = Schema<'Credential'>;

export interface CredentialInput {
  name: string;
  connection_type: ConnectionType;
  credential_type: CredentialType;
  username: string;
  domain: string | null;
  site_id: number | null;
  /** Omitted on update to keep the stored password. */
  password?: string;
}

// Source-hosting token (docs/api.md "Source-hosting token and branch heads").
export type SourceTokenStatus = Schema<'TokenStatus'>;

// Devices and inventory (SPEC "Device", "Devices and inventory"). Inventory
// collections use agent/proto/inventory.go's field names; a collection that is
// null or absent has not been collected yet, an empty list means "none".

export type ConnectivityStatus = 'Connected' | 'Disconnected' | 'Offline';
export type TrustState = 'active' | 'quarantined' | 'revoked';

export type Device = Schema<'Device'>;

/** Light metrics from the latest heartbeat. */
export type DeviceMetrics = Schema<'Metrics'>;

export type DeviceSummary = Schema<'DeviceSummary'>;

export type Disk = Schema<'Disk'>;

export type Hardware = Schema<'Hardware'>;

export type OSInfo = Schema<'OSInfo'>;

export type NetIface = Schema<'NetIface'>;

export type DeviceSession = Schema<'Session'>;

export type Uptime = Schema<'Uptime'>;

export type SoftwareItem = Schema<'Software'>;

export type ServiceItem = Schema<'Service'>;

export type ProcessItem = Schema<'Process'>;

/** A normalized patch row (SPEC "Patch inventory row"). */
export type PatchRow = Schema<'Patch'>;

export type RoleObserved = 'Healthy' | 'Unhealthy' | 'Recovering' | 'Stopped';

/** A role's desired state: an operator may stop and start the stoppable ones. */
export type RoleDesired = 'running' | 'stopped';

/** One `system:<role>` row of the role health snapshot. */
export type RoleHealth = Schema<'Role'> & {
  /** Set by the console when it flattens agent_health (for example "Agent Connection"). */
  group?: string | null;
};

export interface Milestone {
  name: string;
  at: string;
  ok: boolean;
  detail?: string;
}

/** The agent's last startup timeline post (agent/proto Status). */
export interface AgentStatus {
  phase: string;
  boot_id?: string;
  agent_version?: string;
  started_at?: string | null;
  milestones?: Milestone[] | null;
  last_error?: { message: string; at: string; source?: string } | null;
}

export type DeviceDetails = Omit<Schema<'DeviceDetails'>, 'last_status'> & {
  /** The agent's last startup post (the document's StatusRecord; this looser shape keeps fixtures short). */
  last_status: AgentStatus | null;
  /** agent_health flattened by endpoints.details. */
  roles?: RoleHealth[] | null;
};

export type ActivityRow = Schema<'Activity'>;

export type TrustAction = 'quarantine' | 'unquarantine' | 'revoke' | 'purge';

/** A trust action's answer: the device's new trust state ("purged" after a purge). */
export type TrustResult = Schema<'Trust'>;

// Device operations (the Engine relays each to the agent over its socket; a
// device the agent is not connected for answers agent_socket_missing).

export type ServiceAction = 'start' | 'stop' | 'restart';

/** A row of GET /api/device/services/<hostname> (the live list). */
export type LiveService = Schema<'ApiService'>;

/** The service as it is after a start, stop or restart. */
export type ServiceActionResult = Schema<'ServiceState'>;

/** A row of the live process list (names differ from the inventory's ProcessItem). */
export type LiveProcess = Schema<'ApiProcess'>;

export type ProcessSnapshot = Schema<'Processes'>;

export type SoftwareRefreshResult = Schema<'SoftwareRefresh'>;

export type PatchInventory = Schema<'DeviceView'>;

export type PatchInstall = Schema<'Install'>;

export type PatchReboot = Schema<'Reboot'>;

export type PatchInstallDraft = Schema<'Draft'>;

export type PatchRefreshResult = Schema<'PatchRefresh'>;

/** POST /api/shell/establish: ws_url is a same-origin path carrying a single-use token. */
export type ShellSession = Schema<'ShellEstablishResp'>;

/** Text frames on the shell socket; binary frames are terminal bytes. */
export type ShellControl =
  | { type: 'resize'; cols: number; rows: number }
  | { type: 'exit'; code: number }
  // A refusal once the socket is open (docs/api.md "Remote shell"), then close 1011.
  | { type: 'error'; error: string; message: string };

export type AutoApproval = Schema<'AutoApproval'>;

// Enrollment (docs/api.md "Enrollment").

export type EnrollmentCodeStatus = 'active' | 'expired' | 'used_up';

export type EnrollmentCode = Schema<'Code'>;

export interface EnrollmentCodeInput {
  site_id: number;
  expires_in_seconds?: number;
  max_uses?: number;
}

export type ApprovalStatus = 'pending' | 'approved' | 'denied' | 'expired' | 'enrolled';

export type DeviceApproval = Schema<'Approval'>;

// Automation (docs/api.md "Assemblies", "Quick runs", "Scheduled jobs",
// "Workflows", "Agent updates"). IDs of assemblies, jobs and workflows are
// integers; run IDs and operation IDs are strings.

export type AssemblyKind = 'script' | 'ansible_playbook' | 'workflow';
export type ScriptLanguage = 'bash' | 'sh' | 'python' | 'powershell' | 'cmd';

export type ParameterType = 'string' | 'number' | 'boolean';

export type AssemblyParameter = Schema<'Parameter'>;

export type Assembly = Schema<'Assembly'>;

export interface AssemblyInput {
  name: string;
  kind: AssemblyKind;
  language: ScriptLanguage | '';
  description: string;
  body: string;
  parameters: AssemblyParameter[];
  timeout_seconds: number;
  /** Where a script runs: the agent's account, or the signed-in user's session (Windows agents). */
  run_as: RunAs;
}

/** A script's context (docs/api.md "User-context jobs"). */
export type RunAs = 'system' | 'current_user';

export type AssemblyVersion = Schema<'Version'>;

export type ParameterValues = Record<string, string | number | boolean>;

/** POST /api/scripts/quick_run: an assembly, or an ad-hoc script (language and body). */
export type QuickRunInput =
  | { device_guids: string[]; assembly_id: number; parameters: ParameterValues; timeout_seconds?: number }
  | { device_guids: string[]; language: ScriptLanguage; body: string; parameters: ParameterValues; timeout_seconds: number };

export type RunStatus = 'pending' | 'running' | 'succeeded' | 'failed' | 'canceled';
export type RunResultStatus = 'pending' | 'running' | 'succeeded' | 'failed' | 'timed_out' | 'skipped';

export type RunCounts = Schema<'Counts'>;

export type RunResult = Schema<'Result'>;

/** A job run: a quick run, a scheduled job's run or a workflow step. Lists leave out the results. */
export type Run = Schema<'Run'>;

export type JobKind = 'script' | 'agent_maintenance' | 'workflow' | 'patch_install';

export type Schedule =
  | { type: 'once'; at: string }
  | { type: 'cron'; expression: string; timezone: string }
  | { type: 'interval'; every_seconds: number }
  | { type: 'manual' };

export type JobTargets = Schema<'Targets'>;

export type JobOptions = Schema<'Options'>;

export type JobLastRun = Schema<'LastRun'>;

export type ScheduledJob = Schema<'Job'>;

export interface ScheduledJobInput {
  name: string;
  kind: JobKind;
  assembly_id: number | null;
  workflow_id: number | null;
  parameters: ParameterValues;
  targets: JobTargets;
  schedule: Schedule;
  options: JobOptions;
  enabled: boolean;
}

export type StepCondition = 'always' | 'on_success' | 'on_failure';

export interface WorkflowStep {
  id: string;
  name: string;
  assembly_id: number | null;
  /** The assembly version the step runs, pinned when the workflow is saved (0: the current one at the next save). */
  assembly_version?: number;
  /** That version's body SHA-256 (hex); "" lets the Engine fill it in. */
  assembly_sha256?: string;
  parameters: ParameterValues;
  condition: StepCondition;
  timeout_seconds: number;
}

export type Workflow = Schema<'Flow'>;

export interface WorkflowInput {
  name: string;
  description: string;
  steps: WorkflowStep[];
}

export type WorkflowRunStep = Schema<'StepRun'>;

export type WorkflowRun = Schema<'FlowsRun'>;

/** A workflow's inbound webhook (docs/api.md "Workflow webhooks"); the secret comes only with create and rotate. */
export type WorkflowWebhook = Schema<'Webhook'>;
export type WorkflowWebhookWithSecret = Schema<'WebhookWithSecret'>;
export type WorkflowWebhookInput = Schema<'WebhookInput'>;

/** An agent redeploy job (docs/api.md "Onboarding: agent redeploy"); Started carries its one-time code. */
export type OnboardingJob = Schema<'RedeployJob'>;
export type OnboardingStarted = Schema<'RedeployStarted'>;

export type AgentUpdatePhase =
  | 'accepted'
  | 'downloading'
  | 'verifying'
  | 'installing'
  | 'restarting'
  | 'verifying_checkin'
  | 'completed'
  | 'failed'
  | 'rolled_back';

export type AgentUpdateEvent = Schema<'Event'>;

export type AgentUpdateStatus = 'queued' | 'running' | 'succeeded' | 'failed' | 'rolled_back' | 'timed_out';

export type AgentUpdateOperation = Schema<'Operation'>;

export type AgentUpdates = Schema<'History'>;

export type AgentMaintenanceResult = Schema<'Maintenance'>;

/** A device's row in GET /api/devices/<guid>/job_runs. */
export type DeviceJobRun = Schema<'DeviceRun'>;

// ---- Issue 9: paged device list, device filters, saved views (docs/api.md
// "Device filters", "Saved views"; /work/notes/contract9.md). One block so the
// console helpers' edits of this file merge cleanly.

/** GET /api/devices with paging: one page plus the number of matching devices. */
export type DevicePage = Schema<'DevicePage'>;

export type FilterMatch = 'all' | 'any';

/** A condition of a filter tree; `key` names the metadata field number or the software name. */
export interface FilterCondition {
  field: string;
  op: string;
  key?: number | string;
  value?: unknown;
}

export interface FilterGroup {
  match: FilterMatch;
  conditions: FilterNode[];
}

export type FilterNode = FilterGroup | FilterCondition;

export type DeviceFilter = Schema<'Filter'>;

export interface DeviceFilterInput {
  name: string;
  description: string;
  filter: FilterGroup;
}

export type FilterValueType = 'string' | 'number' | 'version' | 'duration_seconds' | 'time' | 'cidr' | 'site_ids' | 'enum' | 'none';

/** One filterable field of GET /api/device_filters/metadata. */
export type FilterFieldMeta = Schema<'FieldInfo'>;

export type FilterMetadata = Schema<'FilterMetadata'>;

export type FilterPreview = Schema<'FilterPreview'>;

export type DeviceListViewSort = Schema<'ViewSort'>;

export type DeviceListView = Schema<'View'>;

export interface DeviceListViewInput {
  name: string;
  columns: string[];
  sort: DeviceListViewSort | null;
  filter_id: number | null;
  filter: FilterGroup | null;
  shared: boolean;
}

/** A row of GET /api/metadata_fields, as the grid's column chooser reads it. */
export type MetadataFieldDefinition = Schema<'MetadataDefinition'>;
// ---- end of issue 9 device grid block

// Issue 9, console pages: metadata fields and the software audit
// (/work contract "Metadata fields", "Software audit"; docs/api.md).

export type MetadataFieldDefinitions = Schema<'MetadataDefinitions'>;

/** One of a device's 500 rows (GET /api/devices/<guid>/metadata_fields). */
export type DeviceMetadataField = Schema<'MetadataValue'>;

export type SoftwareAuditSort = 'name' | '-name' | 'device_count' | '-device_count';

/** A name and version across the visible devices (GET /api/software/audit). */
export type SoftwareAuditRow = Schema<'AuditRow'>;

export type SoftwareAuditPage = Schema<'SoftwareAuditPage'>;

// Watchdogs and the alert queue (docs/api.md "Watchdogs").
export type Incident = Schema<'Incident'>;
export type IncidentQueue = Schema<'IncidentQueue'>;
export type DeviceWatchdog = Schema<'DeviceWatchdog'>;
export type NotificationChannel = Schema<'Channel'>;
export type Watchdog = Schema<'Watchdog'>;
export type MaintenanceWindow = Schema<'Window'>;
export type MaintenanceWindowInput = Schema<'WindowRequest'>;
export type WatchdogInput = Schema<'WatchdogRequest'>;
export type WatchdogMetadata = Schema<'WatchdogMetadata'>;
export type WatchdogPreview = Schema<'WatchdogPreview'>;
export type NotificationChannelInput = Schema<'ChannelRequest'>;
export type NotificationChannelTest = Schema<'ChannelTest'>;

// Patch policies (docs/api.md "Patch policies").
export type PatchPolicyRow = Schema<'PolicyRow'>;
export type PatchPolicyInput = Schema<'PolicyInput'>;
export type PatchPolicyRule = Schema<'PatchesRuleInput'>;
export type PatchPolicyReport = Schema<'ConflictReport'>;
export type PatchPolicyMetadata = Schema<'Metadata'>;
export type PatchAuditRow = Schema<'PatchesAuditRow'>;

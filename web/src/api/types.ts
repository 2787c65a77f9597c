// The Engine's shapes: generated from the API document where converted
// (Schema<'Name'>, src/api/typed.ts), hand-written below where not yet.
import type { Schema } from './typed';

export type PhaseResponse = Schema<'PhaseResponse'>;
export type BootstrapPhase = PhaseResponse['phase'];

export type MfaSetup = Schema<'MfaSetup'>;

export interface PendingMfa {
  phase?: BootstrapPhase;
  pending_token: string;
  mfa: MfaSetup;
}

export type User = Schema<'User'>;

export type LoginResponse =
  | { mfa_required: true; pending_token: string; mfa_setup: MfaSetup | null }
  | { mfa_required: false; token?: string; csrf_token: string; user: User };

/** token is only for API clients: a browser's session is its HttpOnly cookie. */
export type SessionResponse = Schema<'SessionResponse'>;

export type Site = Schema<'Site'>;

export type AgentPlatform = 'linux-amd64' | 'windows-amd64';

/** A signed install link (docs/api.md "Agent artifacts and install links"). */
export type InstallLink = Schema<'InstallLink'>;

export interface WorkerPoller {
  identity: string;
  last_access_time: string | null;
}

export interface WorkerState {
  site_id?: number;
  name?: string;
  site_worker_slug?: string;
  task_queue: string;
  state: string;
  local?: boolean;
  pollers?: WorkerPoller[] | null;
  total_devices?: number;
  online_devices?: number;
  connected_agents?: number;
  recent_workflows?: number | null;
  /** Why a local worker failed, when it did. */
  error?: string;
}

export interface WorkersResponse {
  engine: WorkerState;
  sites: WorkerState[];
}

export type Role = 'admin' | 'operator';

/** GET /api/aegis/status: the master cipher of this deployment. */
export interface AegisStatus {
  configured: boolean;
  unlocked: boolean;
  algorithm: string;
  kdf: { algorithm: string; time: number; memory_kib: number; threads: number } | null;
  created_at: string | null;
  rotated_at: string | null;
}

/** POST /api/aegis/force_reset: both codes, shown once. */
export interface ForceResetResult {
  phase: BootstrapPhase;
  recovery_code: string;
  setup_code: string;
}

/** A user as the admin routes return it: the user object plus site scope and last sign-in. */
export interface Operator extends User {
  /** Assigned sites; empty for admins, who see every site. */
  site_ids?: number[] | null;
  last_login_at?: string | null;
}

export type MfaAction = 'enable' | 'disable' | 'reset';

export interface SiteAssignments {
  assignments: Record<string, number[] | null>;
}

export type AuditEntry = Schema<'AuditEntry'>;

export type AuditPage = Schema<'AuditPage'>;


// Directory sign-in (docs/api.md "Directory sign-in").

export type DirectoryKind = 'ldap' | 'ldaps' | 'active_directory';
export type DirectoryGroupMode = 'member_of' | 'group_search';

export type RoleMapping = Schema<'RoleMapping'>;

export type SiteMapping = Schema<'SiteMapping'>;

export interface DirectoryTestResult {
  ok: boolean;
  message: string;
  tested_at: string;
}

export interface DirectoryProvider {
  provider_id: number;
  name: string;
  kind: DirectoryKind;
  host: string;
  port: number;
  base_dn: string;
  user_filter: string;
  username_attribute: string;
  group_mode: DirectoryGroupMode;
  group_base_dn: string;
  group_member_attribute: string;
  bind_dn: string;
  has_bind_password: boolean;
  ca_pem: string;
  host_overrides: Record<string, string>;
  role_mappings: RoleMapping[];
  site_mappings: SiteMapping[];
  enabled: boolean;
  last_test: DirectoryTestResult | null;
  cached_users: number;
  created_at: string;
  updated_at: string;
}

/** Create or update body: every field optional; bind_password is write-only. */
export type DirectoryProviderInput = Partial<
  Omit<DirectoryProvider, 'provider_id' | 'has_bind_password' | 'last_test' | 'cached_users' | 'created_at' | 'updated_at'>
> & { bind_password?: string };

export interface PeerCertificate {
  subject: string;
  issuer: string;
  sans: string[];
  not_before: string;
  not_after: string;
  sha256_fingerprint: string;
  pem: string;
}

export interface DirectoryLookup {
  found: boolean;
  dn: string;
  attributes: Record<string, string[]>;
  groups: string[];
  role: '' | 'admin' | 'operator';
  site_ids: number[];
  password_ok: boolean | null;
}

export interface DirectorySync {
  checked: number;
  disabled: string[];
}

export type DirectorySite = Schema<'DirectorySite'>;


// Stored credentials (docs/api.md "Stored credentials"). The password is
// write-only: it is sent on create and update and never comes back.
export type ConnectionType = 'Windows' | 'WinRM';
export type CredentialType = 'Machine' | 'Domain';

export interface Credential {
  credential_id: number;
  name: string;
  connection_type: ConnectionType;
  credential_type: CredentialType;
  username: string;
  domain: string | null;
  site_id: number | null;
  has_password: boolean;
  secret_status: 'ok' | 'unreadable';
  created_at: string;
  updated_at: string;
}

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
export interface SourceTokenStatus {
  has_token: boolean;
  source: 'stored' | 'environment' | null;
  secret_status: 'ok' | 'unreadable' | null;
  rate_limit: { limit: number; remaining: number; reset_at: string } | null;
}

// Devices and inventory (SPEC "Device", "Devices and inventory"). Inventory
// collections use agent/proto/inventory.go's field names; a collection that is
// null or absent has not been collected yet, an empty list means "none".

export type ConnectivityStatus = 'Connected' | 'Disconnected' | 'Offline';
export type TrustState = 'active' | 'quarantined' | 'revoked';

export type Device = Schema<'Device'>;

/** Light metrics from the latest heartbeat. */
export interface DeviceMetrics {
  cpu_percent: number;
  memory_used_bytes: number;
  memory_total_bytes: number;
  uptime_seconds: number;
  logged_in_users: string[] | null;
}

export type DeviceSummary = Schema<'DeviceSummary'>;

export type Disk = Schema<'Disk'>;

export type Hardware = Schema<'Hardware'>;

export type OSInfo = Schema<'OSInfo'>;

export type NetIface = Schema<'NetIface'>;

export interface DeviceSession {
  username: string;
  tty?: string;
  remote?: string;
  type?: string;
  login_at?: string | null;
  session_id?: string;
  active: boolean;
  helper_ready: boolean;
}

export type Uptime = Schema<'Uptime'>;

export interface SoftwareItem {
  name: string;
  version: string;
  publisher?: string;
  arch?: string;
  source: string;
  installed_at?: string | null;
  size_bytes?: number;
}

export interface ServiceItem {
  name: string;
  display_name?: string;
  state: string;
  sub_state: string;
  start_mode?: string;
  description?: string;
}

export interface ProcessItem {
  pid: number;
  ppid: number;
  name: string;
  user?: string;
  command?: string;
  cpu_percent: number;
  rss_bytes: number;
  started_at?: string | null;
}

/** A normalized patch row (SPEC "Patch inventory row"). */
export interface PatchRow {
  patch_key: string;
  kb?: string | null;
  title: string;
  state: 'pending' | 'installed' | string;
  source: string;
  package?: string | null;
  installed_version?: string | null;
  candidate_version?: string | null;
  severity?: string | null;
  installed_at?: string | null;
}

export type RoleObserved = 'Healthy' | 'Unhealthy' | 'Recovering';

/** One `system:<role>` row of the role health snapshot. */
export interface RoleHealth {
  key: string;
  desired: string;
  observed: RoleObserved | string;
  last_checked_at: string | null;
  last_healthy_at?: string | null;
  last_error?: string | null;
  recovery_attempts: number;
  context?: Record<string, unknown> | null;
  /** Set when the Engine already groups the row (for example "Agent Connection"). */
  group?: string | null;
}

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

export interface DeviceDetails {
  device: DeviceSummary;
  hardware?: Hardware | null;
  os?: OSInfo | null;
  network?: NetIface[] | null;
  sessions?: DeviceSession[] | null;
  uptime?: Uptime | null;
  software?: SoftwareItem[] | null;
  services?: ServiceItem[] | null;
  processes?: ProcessItem[] | null;
  patches?: PatchRow[] | null;
  roles?: RoleHealth[] | null;
  /** The Engine's grouping of the role rows (flattened into roles by endpoints.details). */
  agent_health?: { startup?: RoleHealth | null; agent_connection?: RoleHealth[] | null; roles?: RoleHealth[] | null } | null;
  metrics?: DeviceMetrics | null;
  last_status?: AgentStatus | null;
}

export interface ActivityRow {
  id: number | string;
  kind: string;
  summary: string;
  actor: string | null;
  status: string;
  created_at: string;
  finished_at: string | null;
  metadata?: Record<string, unknown> | null;
}

export type TrustAction = 'quarantine' | 'unquarantine' | 'revoke' | 'purge';

/** A trust action's answer: the device's new trust state ("purged" after a purge). */
export interface TrustResult {
  guid: string;
  hostname?: string;
  trust_state: TrustState | 'purged';
}

// Device operations (the Engine relays each to the agent over its socket; a
// device the agent is not connected for answers agent_socket_missing).

export type ServiceAction = 'start' | 'stop' | 'restart';

/** A row of GET /api/device/services/<hostname> (the live list). */
export interface LiveService {
  name: string;
  display_name?: string;
  state: string;
  start_mode?: string;
}

/** The service as it is after a start, stop or restart. */
export interface ServiceActionResult {
  name: string;
  state: string;
}

/** A row of the live process list (names differ from the inventory's ProcessItem). */
export interface LiveProcess {
  pid: number;
  name: string;
  user?: string;
  cpu_percent: number;
  memory_bytes: number;
  command_line?: string;
}

export interface ProcessSnapshot {
  captured_at: string;
  processes: LiveProcess[] | null;
}

export interface SoftwareRefreshResult {
  software_count: number;
  collected_at: string;
}

export interface PatchInventory {
  patches: PatchRow[] | null;
  collected_at: string | null;
}

export interface PatchRefreshResult {
  patch_count: number;
  collected_at: string;
}

/** POST /api/shell/establish: ws_url is a same-origin path carrying a single-use token. */
export type ShellSession = Schema<'ShellEstablishResp'>;

/** Text frames on the shell socket; binary frames are terminal bytes. */
export type ShellControl = { type: 'resize'; cols: number; rows: number } | { type: 'exit'; code: number };

export type AutoApproval = Schema<'AutoApproval'>;

// Enrollment (docs/api.md "Enrollment").

export type EnrollmentCodeStatus = 'active' | 'expired' | 'used_up';

export interface EnrollmentCode {
  id: number;
  /** null after a forced cipher reset (code_status "unreadable"): rotate it to get a new one. */
  code: string | null;
  site_id: number;
  site_name?: string;
  expires_at: string;
  max_uses: number;
  uses: number;
  status: EnrollmentCodeStatus | string;
  created_by: string;
  created_at: string;
  rotated_at: string | null;
  code_status: 'ok' | 'unreadable' | string;
}

export interface EnrollmentCodeInput {
  site_id: number;
  expires_in_seconds?: number;
  max_uses?: number;
}

export type ApprovalStatus = 'pending' | 'approved' | 'denied' | 'expired' | 'enrolled';

export interface DeviceApproval {
  id: string;
  hostname: string;
  site_id: number;
  site_name?: string;
  status: ApprovalStatus | string;
  fingerprint: string;
  key_thumbprint: string;
  operating_system: string;
  agent_version: string;
  remote_addr: string;
  auto_approved: boolean;
  /** The key belongs to a revoked, purged or quarantined device: only an administrator may approve. */
  readmission: boolean;
  requested_at: string;
  expires_at: string;
  decided_at: string | null;
  decided_by: string | null;
  device_guid: string | null;
}

// Automation (docs/api.md "Assemblies", "Quick runs", "Scheduled jobs",
// "Workflows", "Agent updates"). IDs of assemblies, jobs and workflows are
// integers; run IDs and operation IDs are strings.

export type AssemblyKind = 'script' | 'ansible_playbook' | 'workflow';
export type ScriptLanguage = 'bash' | 'sh' | 'python' | 'powershell' | 'cmd';

export type ParameterType = 'string' | 'number' | 'boolean';

export interface AssemblyParameter {
  name: string;
  label: string;
  type: ParameterType;
  default: string | number | boolean | null;
  required: boolean;
}

export interface Assembly {
  id: number;
  name: string;
  kind: AssemblyKind;
  /** Empty for kinds that have no language. */
  language: ScriptLanguage | '';
  description: string;
  version: number;
  /** Absent in lists. */
  body?: string;
  parameters: AssemblyParameter[] | null;
  timeout_seconds: number;
  body_sha256: string;
  created_by: string;
  created_at: string;
  updated_by: string;
  updated_at: string;
}

export interface AssemblyInput {
  name: string;
  kind: AssemblyKind;
  language: ScriptLanguage | '';
  description: string;
  body: string;
  parameters: AssemblyParameter[];
  timeout_seconds: number;
}

export interface AssemblyVersion {
  version: number;
  language: ScriptLanguage | '';
  timeout_seconds: number;
  body_sha256: string;
  created_by: string;
  created_at: string;
}

export type ParameterValues = Record<string, string | number | boolean>;

/** POST /api/scripts/quick_run: an assembly, or an ad-hoc script (language and body). */
export type QuickRunInput =
  | { device_guids: string[]; assembly_id: number; parameters: ParameterValues; timeout_seconds?: number }
  | { device_guids: string[]; language: ScriptLanguage; body: string; parameters: ParameterValues; timeout_seconds: number };

export type RunStatus = 'pending' | 'running' | 'succeeded' | 'failed' | 'canceled';
export type RunResultStatus = 'pending' | 'running' | 'succeeded' | 'failed' | 'timed_out' | 'skipped';

export interface RunCounts {
  pending: number;
  running: number;
  succeeded: number;
  failed: number;
  timed_out: number;
  skipped: number;
}

export interface RunResult {
  guid: string;
  hostname: string;
  status: RunResultStatus;
  exit_code: number | null;
  stdout: string;
  stderr: string;
  stdout_truncated: boolean;
  stderr_truncated: boolean;
  error_code: string | null;
  error_message: string | null;
  duration_ms?: number | null;
  started_at: string | null;
  finished_at: string | null;
}

/** A job run: a quick run, a scheduled job's run or a workflow step. Lists leave out the results. */
export interface Run {
  run_id: string;
  kind: string;
  status: RunStatus;
  assembly_id: number | null;
  assembly_name: string | null;
  assembly_version: number | null;
  language: ScriptLanguage | '' | null;
  requested_by: string | null;
  trigger: string | null;
  scheduled_job_id: number | null;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  counts: RunCounts;
  /** A scheduled job's run: the fire time the schedule gave it (null for reruns). */
  scheduled_for?: string | null;
  results?: RunResult[] | null;
}

export type JobKind = 'script' | 'agent_maintenance' | 'workflow';

export type Schedule =
  | { type: 'once'; at: string }
  | { type: 'cron'; expression: string; timezone: string }
  | { type: 'interval'; every_seconds: number }
  | { type: 'manual' };

export interface JobTargets {
  devices: string[];
  sites: number[];
  /** Saved device filter IDs, evaluated when the job fires. */
  filters: number[];
}

export interface JobOptions {
  run_when_online: boolean;
  timeout_seconds: number;
  stop_on_first_failure: boolean;
}

export interface JobLastRun {
  run_id: string;
  status: RunStatus;
  started_at: string | null;
  finished_at: string | null;
}

export interface ScheduledJob {
  id: number;
  name: string;
  kind: JobKind;
  assembly_id: number | null;
  assembly_name: string | null;
  workflow_id: number | null;
  parameters: ParameterValues | null;
  targets: JobTargets;
  schedule: Schedule;
  options: JobOptions;
  enabled: boolean;
  created_by: string;
  created_at: string;
  updated_by: string;
  updated_at: string;
  next_run_at: string | null;
  last_run: JobLastRun | null;
}

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
  parameters: ParameterValues;
  condition: StepCondition;
  timeout_seconds: number;
}

export interface Workflow {
  id: number;
  name: string;
  description: string;
  steps: WorkflowStep[] | null;
  created_by: string;
  created_at: string;
  updated_at: string;
}

export interface WorkflowInput {
  name: string;
  description: string;
  steps: WorkflowStep[];
}

export interface WorkflowRunStep {
  step_id: string;
  status: RunStatus | 'skipped' | string;
  /** The step's job run; absent until the step starts. */
  run_id: string | null;
}

export interface WorkflowRun {
  run_id: string;
  workflow_id: number;
  scheduled_job_id?: number | null;
  status: RunStatus | string;
  steps: WorkflowRunStep[] | null;
  device_guids?: string[] | null;
  created_at?: string;
  started_at?: string | null;
  finished_at?: string | null;
  requested_by?: string | null;
}

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

export interface AgentUpdateEvent {
  phase: AgentUpdatePhase | string;
  percent: number | null;
  message: string;
  captured_at: string;
  received_at: string;
}

export type AgentUpdateStatus = 'queued' | 'running' | 'succeeded' | 'failed' | 'rolled_back' | 'timed_out';

export interface AgentUpdateOperation {
  operation_id: string;
  status: AgentUpdateStatus;
  reason: 'operator' | 'hourly' | string;
  requested_by: string | null;
  from_build_id: string | null;
  to_build_id: string | null;
  artifact_id: string | null;
  run_id: string | null;
  scheduled_job_id: number | null;
  /** The last phase the agent reported. */
  phase?: AgentUpdatePhase | string | null;
  failure_summary: string | null;
  created_at: string;
  started_at?: string | null;
  finished_at: string | null;
  events: AgentUpdateEvent[] | null;
}

export interface AgentUpdates {
  active: AgentUpdateOperation | null;
  history: AgentUpdateOperation[] | null;
}

export interface AgentMaintenanceResult {
  run_id: string;
  operations: { guid: string; operation_id: string }[];
}

/** A device's row in GET /api/devices/<guid>/job_runs. */
export interface DeviceJobRun {
  run_id: string;
  scheduled_job_id: number | null;
  scheduled_job_name: string | null;
  kind: string;
  status: RunResultStatus;
  exit_code: number | null;
  started_at: string | null;
  finished_at: string | null;
}

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

export interface DeviceFilter {
  id: number;
  name: string;
  description: string;
  filter: FilterGroup;
  created_by: string;
  created_at: string;
  updated_by: string;
  updated_at: string;
}

export interface DeviceFilterInput {
  name: string;
  description: string;
  filter: FilterGroup;
}

export type FilterValueType = 'string' | 'number' | 'version' | 'duration_seconds' | 'time' | 'cidr' | 'site_ids' | 'enum' | 'none';

/** One filterable field of GET /api/device_filters/metadata. */
export interface FilterFieldMeta {
  field: string;
  label: string;
  group: string;
  ops: string[];
  value_type: FilterValueType;
  /** Each op's value type where it differs from value_type (`none`: no value). */
  op_value_types?: Record<string, FilterValueType> | null;
  key_type: 'metadata_field' | 'software_name' | null;
  values?: string[] | null;
}

export interface FilterMetadata {
  fields: FilterFieldMeta[];
  metadata_fields: { field_number: number; description: string }[] | null;
  sites: { id: number; name: string }[] | null;
}

export interface FilterPreview {
  total: number;
  devices: Device[] | null;
}

export interface DeviceListViewSort {
  column: string;
  direction: 'asc' | 'desc';
}

export interface DeviceListView {
  id: number;
  name: string;
  columns: string[];
  sort: DeviceListViewSort | null;
  filter_id: number | null;
  filter: FilterGroup | null;
  shared: boolean;
  owner: string;
  created_at: string;
  updated_at: string;
}

export interface DeviceListViewInput {
  name: string;
  columns: string[];
  sort: DeviceListViewSort | null;
  filter_id: number | null;
  filter: FilterGroup | null;
  shared: boolean;
}

/** A row of GET /api/metadata_fields, as the grid's column chooser reads it. */
export interface MetadataFieldDefinition {
  field_number: number;
  description: string;
  reserved: boolean;
  linked_assembly_id?: number | null;
  updated_at?: string | null;
  updated_by?: string;
}
// ---- end of issue 9 device grid block

// Issue 9, console pages: metadata fields and the software audit
// (/work contract "Metadata fields", "Software audit"; docs/api.md).

export interface MetadataFieldDefinitions {
  fields: MetadataFieldDefinition[];
  value_max_length: number;
}

/** One of a device's 500 rows (GET /api/devices/<guid>/metadata_fields). */
export interface DeviceMetadataField {
  field_number: number;
  description: string;
  /** Decoded; '' when unset. */
  value: string;
  modified_at: string | null;
  /** "agent", "operator:<username>" or "" when never set. */
  source: string;
}

export type SoftwareAuditSort = 'name' | '-name' | 'device_count' | '-device_count';

/** A name and version across the visible devices (GET /api/software/audit). */
export interface SoftwareAuditRow {
  name: string;
  version: string;
  publisher: string;
  device_count: number;
  icon_hash: string | null;
  uninstall_blocked: boolean;
  uninstall_override: boolean;
}

export type SoftwareAuditPage = Schema<'SoftwareAuditPage'>;

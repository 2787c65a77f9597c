import { api, apiForm, ApiError } from './client';
import type { ReauthProof } from '../passkeys/api';
import { withSudo } from './sudo';
import { call, type ResponseOf } from './typed';
import type {
  AgentPlatform,
  AssemblyInput,
  AssemblyKind,
  QuickRunInput,
  Schedule,
  ScheduledJobInput,
  WorkflowInput,
  WorkflowWebhookInput,
  CredentialInput,
  Device,
  DeviceFilterInput,
  DeviceListViewInput,
  DevicePage,
  FilterGroup,
  DeviceDetails,
  PatchPolicyInput,
  DirectoryProviderInput,
  EnrollmentCodeInput,
  LoginResponse,
  MfaAction,
  NotificationChannelInput,
  MaintenanceWindowInput,
  WatchdogInput,
  Role,
  RoleDesired,
  ServiceAction,
  TrustAction,
  User,
} from './types';

export const bootstrap = {
  state: () => call('get', '/api/bootstrap/state'),
  aegisSetup: (passphrase: string, setup_code: string) =>
    call('post', '/api/bootstrap/aegis/setup', { body: { passphrase, setup_code } }),
  aegisUnlock: (passphrase: string) => call('post', '/api/bootstrap/aegis/unlock', { body: { passphrase } }),
  adminSetup: (username: string, password: string, setup_code: string) =>
    call('post', '/api/bootstrap/admin/setup', { body: { username, password, setup_code } }),
  adminRecover: (username: string, password: string, recovery_code: string) =>
    call('post', '/api/bootstrap/admin/recover', { body: { username, password, recovery_code } }),
  adminMfaVerify: (pending_token: string, code: string) =>
    call('post', '/api/bootstrap/admin/mfa/verify', { body: { pending_token, code } }),
  /** Disaster recovery onto this fresh Engine (docs/api.md "Backup and restore"): nothing changes. */
  backupAnalyze: (file: File, passphrase: string, setup_code: string) =>
    apiForm<BackupReport>('/api/bootstrap/backup/analyze', backupForm(file, passphrase, undefined, setup_code)),
  backupRestore: (file: File, passphrase: string, setup_code: string, confirmation: string) =>
    apiForm<RestoreResult>('/api/bootstrap/backup/restore', backupForm(file, passphrase, confirmation, setup_code)),
};

export const auth = {
  login: (username: string, password: string) =>
    call('post', '/api/auth/login', { body: { username, password } }).then((r) => r as LoginResponse),
  mfaVerify: (pending_token: string, code: string) =>
    call('post', '/api/auth/mfa/verify', { body: { pending_token, code } }),
  logout: () => call('post', '/api/auth/logout', { body: {} }),
  me: () => call('get', '/api/auth/me'),
  /** The signed-in user, or null when there is no session. */
  meOrNull: async (): Promise<User | null> => {
    try {
      return await call('get', '/api/auth/me');
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) return null;
      throw err;
    }
  },
  passwordReset: (current_password: string, new_password: string) =>
    call('post', '/api/auth/password/reset', { body: { current_password, new_password } }),
  mfaReset: (password: string) => call('post', '/api/auth/mfa/reset', { body: { password } }),
};

export const sites = {
  list: () => call('get', '/api/sites').then((r) => r.sites ?? []),
  create: (name: string, site_worker_slug: string) =>
    call('post', '/api/sites', { body: { name, site_worker_slug } }),
  rename: (site_id: number, name: string, site_worker_slug?: string) =>
    call('post', '/api/sites/rename', {
      body: site_worker_slug === undefined ? { site_id, name } : { site_id, name, site_worker_slug },
    }),
  remove: (site_ids: number[]) => call('post', '/api/sites/delete', { body: { site_ids } }),
  /** Replaces the site's install link for a platform (Admin); the old one stops working. */
  revokeInstallLink: (site_id: number, platform: AgentPlatform) =>
    call('post', '/api/sites/{site_id}/agent-install-links/{platform}/revoke', {
      path: { site_id: String(site_id), platform },
    }),
  /** Turns temporary auto-approval on for `durationSeconds`, or off. */
  setAutoApproval: (site_id: number, enabled: boolean, durationSeconds?: number) =>
    call('post', '/api/sites/{site_id}/auto-approval', {
      path: { site_id: String(site_id) },
      body: enabled ? { enabled, duration_seconds: durationSeconds } : { enabled },
    }),
};

export const server = {
  workers: (historySeconds: number) => call('get', '/api/server/workers', { query: { history_seconds: historySeconds } }),
};

export type LogQuery = { level?: string; since?: string; until?: string; q?: string; limit?: number };
export type LogEntry = ResponseOf<'/api/server/logs/{source}', 'get'>['entries'][number];

/** The Engine's and workers' log files (docs/api.md "Logs"). */
export const serverLogs = {
  sources: () => call('get', '/api/server/logs'),
  read: (source: string, q: LogQuery) =>
    call('get', '/api/server/logs/{source}', {
      path: { source },
      query: {
        level: q.level || undefined,
        since: q.since || undefined,
        until: q.until || undefined,
        q: q.q || undefined,
        limit: q.limit,
      },
    }),
  /** The live tail's URL (server-sent events). */
  streamURL: (source: string, q: LogQuery) => {
    const params = new URLSearchParams();
    if (q.level) params.set('level', q.level);
    if (q.q) params.set('q', q.q);
    const qs = params.toString();
    return `/api/server/logs/${encodeURIComponent(source)}/stream${qs ? `?${qs}` : ''}`;
  },
};

export type ServiceActionName = 'restart' | 'reload_certificate' | 'reconcile_tunnels';

/** Service actions (docs/api.md "Service actions"). */
export const services = {
  action: (service_key: string, action: ServiceActionName) =>
    call('post', '/api/server/services/{service_key}/action', { path: { service_key }, body: { action } }),
  restart: (service_key: string) =>
    call('post', '/api/server/services/{service_key}/restart', { path: { service_key }, body: {} }),
  actions: () => call('get', '/api/server/service-actions').then((r) => r.actions ?? []),
};

// The cluster (docs/api.md "Cluster"): members, admissions and their
// decisions; a join code and an approval need a recent re-authentication.
export const cluster = {
  state: () => call('get', '/api/server/cluster'),
  releases: () => call('get', '/api/server/cluster/releases'),
  events: () => call('get', '/api/server/cluster/events', { query: { limit: 20 } }).then((r) => r.events ?? []),
  joinCode: (role: 'worker' | 'engine') =>
    withSudo(() => call('post', '/api/server/cluster/join-codes', { body: { role } })),
  approve: (id: string) =>
    withSudo(() => call('post', '/api/server/cluster/admissions/{id}/approve', { path: { id }, body: {} })),
  cancel: (id: string) => call('post', '/api/server/cluster/admissions/{id}/cancel', { path: { id }, body: {} }),
};

export type BackupScheduleInput = {
  enabled: boolean;
  directory: string;
  interval_hours: number;
  keep_daily: number;
  keep_weekly: number;
  keep_monthly: number;
};

/** Scheduled automatic backups (docs/api.md "Scheduled backups"). */
export const backupSchedule = {
  get: () => call('get', '/api/server/backup/schedule'),
  set: (body: BackupScheduleInput) => call('put', '/api/server/backup/schedule', { body }),
  runNow: () => call('post', '/api/server/backup/schedule/run', { body: {} }),
  drillNow: () => call('post', '/api/server/backup/drill/run', { body: {} }),
};

/** The phrase a restore is sent with (SPEC Limits). */
export const RESTORE_PHRASE = 'RESTORE ENGINE CONFIG BACKUP';
export const BACKUP_EXPORT_URL = '/api/server/backup/export';

export type BackupReport = ResponseOf<'/api/server/backup/analyze', 'post'>;
export type RestoreResult = ResponseOf<'/api/server/backup/restore', 'post'>;

function backupForm(file: File, passphrase: string, confirmation?: string, setupCode?: string): FormData {
  // Fields first: the Engine checks them when the file part begins.
  const form = new FormData();
  if (passphrase) form.append('passphrase', passphrase);
  if (confirmation !== undefined) form.append('confirmation', confirmation);
  if (setupCode !== undefined) form.append('setup_code', setupCode);
  form.append('file', file);
  return form;
}

/** Backups (docs/api.md "Backup and restore"). */
export const backups = {
  analyze: (file: File, passphrase: string) => apiForm<BackupReport>('/api/server/backup/analyze', backupForm(file, passphrase)),
  restore: (file: File, passphrase: string, confirmation: string) =>
    apiForm<RestoreResult>('/api/server/backup/restore', backupForm(file, passphrase, confirmation)),
};

/** The master cipher (docs/api.md "Master cipher"); rotate and reset carry a fresh proof of identity. */
export const aegis = {
  status: () => call('get', '/api/aegis/status'),
  rotate: (current_passphrase: string, new_passphrase: string, proof: ReauthProof) =>
    call('post', '/api/aegis/rotate', { body: { current_passphrase, new_passphrase, ...proof } }),
  forceReset: (proof: ReauthProof) =>
    call('post', '/api/aegis/force_reset', { body: { confirm: FORCE_RESET_PHRASE, ...proof } }),
};

/** What the Engine wants typed before it deletes the master cipher. */
export const FORCE_RESET_PHRASE = 'FORCE RESET';

export const users = {
  list: () => call('get', '/api/users').then((r) => r.users ?? []),
  // Changes need a recently re-authenticated session (withSudo).
  create: (username: string, password: string, role: Role) =>
    withSudo(() => call('post', '/api/users', { body: { username, password, role } })),
  remove: (username: string) => withSudo(() => call('delete', '/api/users/{username}', { path: { username } })),
  resetPassword: (username: string, password: string) =>
    withSudo(() => call('post', '/api/users/{username}/reset_password', { path: { username }, body: { password } })),
  setRole: (username: string, role: Role) =>
    withSudo(() => call('post', '/api/users/{username}/role', { path: { username }, body: { role } })),
  mfa: (username: string, action: MfaAction) =>
    withSudo(() => call('post', '/api/users/{username}/mfa', { path: { username }, body: { action } })),
};

export const siteAssignments = {
  selection: (usernames: string[]) => call('post', '/api/user_site_assignments/selection', { body: { usernames } }),
  assign: (usernames: string[], site_ids: number[]) =>
    withSudo(() => call('post', '/api/user_site_assignments/assign', { body: { usernames, site_ids } })),
};

export interface AuditQuery {
  limit?: number;
  beforeId?: number | null;
  username?: string;
}

export const audit = {
  list: ({ limit = 200, beforeId, username }: AuditQuery = {}) =>
    call('get', '/api/server/audit', { query: { limit, before_id: beforeId ?? undefined, username } }),
};


const provider = (id: number) => ({ provider_id: String(id) });

export const directory = {
  list: () => call('get', '/api/directory/providers').then((r) => r.providers ?? []),
  // Changes and lookups need a recently re-authenticated session (withSudo).
  create: (body: DirectoryProviderInput) => withSudo(() => call('post', '/api/directory/providers', { body })),
  update: (id: number, body: DirectoryProviderInput) =>
    withSudo(() => call('patch', '/api/directory/providers/{provider_id}', { path: provider(id), body })),
  remove: (id: number) => withSudo(() => call('delete', '/api/directory/providers/{provider_id}', { path: provider(id) })),
  test: (id: number) => call('post', '/api/directory/providers/{provider_id}/test', { path: provider(id) }),
  certificate: (host: string, port: number, host_overrides: Record<string, string>) =>
    call('post', '/api/directory/providers/certificate', { body: { host, port, host_overrides } }),
  lookup: (id: number, username: string, password?: string) =>
    withSudo(() =>
      call('post', '/api/directory/providers/{provider_id}/lookup-user', {
        path: provider(id),
        body: password === undefined ? { username } : { username, password },
      }),
    ),
  sync: (id: number) => withSudo(() => call('post', '/api/directory/providers/{provider_id}/sync', { path: provider(id) })),
  sites: () => call('get', '/api/directory/sites').then((r) => r.sites ?? []),
  setCachedUser: (username: string, enabled: boolean) =>
    withSudo(() => call('post', '/api/users/{username}/directory-cache', { path: { username }, body: { enabled } })),
};


export const credentials = {
  /** With a site, that site's credentials plus the global ones. */
  list: (siteId?: number | null) =>
    call('get', '/api/credentials', { query: { site_id: siteId || undefined } }).then((r) => r.credentials ?? []),
  create: (input: CredentialInput) => call('post', '/api/credentials', { body: input }),
  update: (id: number, input: CredentialInput) =>
    call('put', '/api/credentials/{credential_id}', { path: { credential_id: String(id) }, body: input }),
  remove: (id: number) => call('delete', '/api/credentials/{credential_id}', { path: { credential_id: String(id) } }),
};

export const sourceToken = {
  status: () => call('get', '/api/github/token'),
  /** null clears the stored token. */
  set: (token: string | null) => call('post', '/api/github/token', { body: { token } }),
};

// Devices (SPEC "Devices and inventory"). Status tokens are the lower-case
// drilldown form (connected, disconnected, offline).
export interface DeviceListQuery {
  siteId?: number | null;
  status?: string | null;
}

const host = (hostname: string) => ({ hostname });

export const devices = {
  /**
   * Every matching device: the list route answers in pages (at most 1,000
   * each), so this follows `total`. For pickers; the devices grid pages on
   * demand with `page`.
   */
  list: async ({ siteId, status }: DeviceListQuery = {}) => {
    const all: Device[] = [];
    for (;;) {
      const r = await devicePage({ siteId, status, limit: DEVICE_LIST_PAGE, offset: all.length });
      const rows = r.devices ?? [];
      all.push(...rows);
      // An Engine without paging answers everything at once and no total.
      if (rows.length === 0 || typeof r.total !== 'number' || all.length >= r.total) return all;
    }
  },
  page: (query: DevicePageQuery) => devicePage(query),
  search: (hostname: string) => call('get', '/api/devices/search', { query: { hostname } }).then((r) => r.devices ?? []),
  get: (guid: string) => call('get', '/api/devices/{guid}', { path: { guid } }),
  details: (hostname: string): Promise<DeviceDetails> =>
    call('get', '/api/device/details/{hostname}', { path: host(hostname) }).then((d) =>
      flattenAgentHealth(d as DeviceDetails),
    ),
  setDescription: (hostname: string, description: string) =>
    call('post', '/api/device/description/{hostname}', { path: host(hostname), body: { description } }),
  activity: (hostname: string) =>
    call('get', '/api/device/activity/{hostname}', { path: host(hostname) }).then((r) => r.activity ?? []),
  clearActivity: (hostname: string) => call('delete', '/api/device/activity/{hostname}', { path: host(hostname) }),
  /** Admin only. The body is empty. */
  trust: (guid: string, action: TrustAction) => call('post', `/api/devices/{guid}/${action}`, { path: { guid } }),

  // Operations relayed to the agent; each may take up to about a minute.
  services: (hostname: string) =>
    call('get', '/api/device/services/{hostname}', { path: host(hostname) }).then((r) => r.services ?? []),
  serviceAction: (hostname: string, name: string, action: ServiceAction) =>
    call('post', '/api/device/services/{hostname}/action', { path: host(hostname), body: { name, action } }),
  /** Stop or start an agent role (its desired state); the agent keeps it across restarts. */
  setRoleDesiredState: (hostname: string, role: string, desired: RoleDesired) =>
    call('post', '/api/device/roles/{hostname}/desired-state', { path: host(hostname), body: { role, desired } }),
  /** A snapshot at most `maxAgeSeconds` old; 0 asks the agent for a fresh one. */
  processes: (hostname: string, maxAgeSeconds: number) =>
    call('get', '/api/device/processes/{hostname}', { path: host(hostname), query: { max_age_seconds: maxAgeSeconds } }),
  /** The name guards against a PID reused by another program (process_mismatch). */
  terminateProcess: (hostname: string, pid: number, name: string) =>
    call('post', '/api/device/processes/{hostname}/terminate', { path: host(hostname), body: { pid, name } }),
  refreshSoftware: (hostname: string) => call('post', '/api/device/software/{hostname}/refresh', { path: host(hostname) }),
  patches: (hostname: string) => call('get', '/api/device/patches/{hostname}', { path: host(hostname) }),
  refreshPatches: (hostname: string) => call('post', '/api/device/patches/{hostname}/refresh', { path: host(hostname) }),
  /** A patch_install scheduled-job draft for pending rows (none: all); nothing is saved. */
  patchInstallDraft: (hostname: string, patch_keys: string[]) =>
    call('post', '/api/device/patches/{hostname}/install-draft', { path: host(hostname), body: { patch_keys } }),
  /** A patch_reboot_request after the installs queued before it. */
  patchReboot: (hostname: string, when_required: boolean) =>
    call('post', '/api/device/patches/{hostname}/reboot', { path: host(hostname), body: { when_required } }),
};

// Remote shell: establish hands out a single-use WebSocket path; each
// reconnect needs a fresh establish.
export const shell = {
  establish: (guid: string) => call('post', '/api/shell/establish', { body: { guid } }),
  disconnect: (session_id: string) => call('post', '/api/shell/disconnect', { body: { session_id } }),
};

// Remote desktop (docs/api.md "Remote desktop"): establish runs the
// Engine's RemoteDesktop workflow and hands out a one-time WebSocket path
// that speaks RFB; the VNC password never reaches the browser.
export type DesktopQuality = 'speed' | 'quality';
export type DesktopProtocol = 'vnc' | 'rdp';
/** An RDP session's login (docs/api.md "Remote desktop (RDP)"): a stored
 *  credential by ID (its password never reaches the browser), or manual
 *  credentials kept in the tab's memory only. */
export type RdpLogin = { credential_id: number } | { rdp_username: string; rdp_password: string; rdp_domain?: string };
export const vnc = {
  /**
   * reason vnc_auth_retry (after a failed open) rotates the agent's
   * credential first, and runs the diagnostic auth probe (rule 7); rdp
   * makes an RDP session.
   */
  establish: (guid: string, quality: DesktopQuality, reason?: 'vnc_auth_retry', rdp?: RdpLogin) =>
    call('post', '/api/vnc/establish', {
      body: rdp
        ? { guid, quality, protocol: 'rdp', ...rdp }
        : reason
          ? { guid, quality, reason, auth_probe: true }
          : { guid, quality },
    }),
  disconnect: (session_id: string) => call('post', '/api/vnc/disconnect', { body: { session_id } }),
  /** Takes a ready or live session over: the browser showing it now is disconnected. */
  handoff: (session_id: string) => call('post', '/api/vnc/handoff', { body: { session_id } }),
  sessions: () => call('get', '/api/vnc/sessions').then((r) => r.sessions ?? []),
  session: (id: string) => call('get', '/api/vnc/sessions/{id}', { path: { id } }),
};

// Enrollment codes and approvals (docs/api.md "Enrollment").
export const enrollment = {
  codes: (siteId?: number | null) =>
    call('get', '/api/admin/enrollment-codes', { query: { site_id: siteId || undefined } }).then((r) => r.codes ?? []),
  createCode: (input: EnrollmentCodeInput) => call('post', '/api/admin/enrollment-codes', { body: input }),
  deleteCode: (id: number) => call('delete', '/api/admin/enrollment-codes/{code_id}', { path: { code_id: String(id) } }),
  rotateCode: (id: number) => call('post', '/api/admin/enrollment-codes/{code_id}/rotate', { path: { code_id: String(id) } }),
  /** Newest first, at most 500; without a status every state. */
  approvals: (status?: string) =>
    call('get', '/api/admin/device-approvals', { query: { status } }).then((r) => r.approvals ?? []),
  approve: (id: string) => call('post', '/api/admin/device-approvals/{approval_id}/approve', { path: { approval_id: id } }),
  deny: (id: string) => call('post', '/api/admin/device-approvals/{approval_id}/deny', { path: { approval_id: id } }),
};

/**
 * The Engine answers the Agent Health rows grouped (`agent_health`: the
 * startup row, the Agent Connection roles, the other roles); the console's
 * tab regroups one flat list, so flatten it with the group kept.
 */
export function flattenAgentHealth(d: DeviceDetails): DeviceDetails {
  const h = d.agent_health;
  if (!h || d.roles) return d;
  const roles = [
    ...(h.startup ? [h.startup] : []),
    ...(h.agent_connection ?? []).map((r) => ({ ...r, group: 'Agent Connection' })),
    ...(h.roles ?? []),
  ];
  return { ...d, roles };
}

// Automation (docs/api.md "Assemblies", "Quick runs", "Scheduled jobs",
// "Workflows"): one function per route.

export interface AssemblyListQuery {
  kind?: AssemblyKind | null;
  q?: string;
}

const assembly = (id: number) => ({ assembly_id: String(id) });

export const assemblies = {
  list: ({ kind, q }: AssemblyListQuery = {}) =>
    call('get', '/api/assemblies', { query: { kind: kind || undefined, q: q?.trim() || undefined } }).then(
      (r) => r.assemblies ?? [],
    ),
  get: (id: number) => call('get', '/api/assemblies/{assembly_id}', { path: assembly(id) }),
  create: (input: AssemblyInput) => call('post', '/api/assemblies', { body: input }),
  update: (id: number, input: AssemblyInput) => call('put', '/api/assemblies/{assembly_id}', { path: assembly(id), body: input }),
  remove: (id: number) => call('delete', '/api/assemblies/{assembly_id}', { path: assembly(id) }),
  versions: (id: number) =>
    call('get', '/api/assemblies/{assembly_id}/versions', { path: assembly(id) }).then((r) => r.versions ?? []),
  version: (id: number, version: number) =>
    call('get', '/api/assemblies/{assembly_id}/versions/{version}', { path: { ...assembly(id), version: String(version) } }),
};

export const quickRuns = {
  start: (input: QuickRunInput) => call('post', '/api/scripts/quick_run', { body: input }),
  get: (runId: string) => call('get', '/api/scripts/quick_run/{run_id}', { path: { run_id: runId } }),
};

const job = (id: number) => ({ id: String(id) });

export const scheduledJobs = {
  list: () => call('get', '/api/scheduled_jobs').then((r) => r.jobs ?? []),
  get: (id: number) => call('get', '/api/scheduled_jobs/{id}', { path: job(id) }),
  create: (input: ScheduledJobInput) => call('post', '/api/scheduled_jobs', { body: input }),
  update: (id: number, input: ScheduledJobInput) => call('put', '/api/scheduled_jobs/{id}', { path: job(id), body: input }),
  remove: (id: number) => call('delete', '/api/scheduled_jobs/{id}', { path: job(id) }),
  toggle: (id: number, enabled: boolean) => call('post', '/api/scheduled_jobs/{id}/toggle', { path: job(id), body: { enabled } }),
  rerun: (id: number) => call('post', '/api/scheduled_jobs/{id}/rerun', { path: job(id) }),
  runs: (id: number, limit = 50) =>
    call('get', '/api/scheduled_jobs/{id}/runs', { path: job(id), query: { limit } }).then((r) => r.runs ?? []),
  run: (id: number, runId: string) =>
    call('get', '/api/scheduled_jobs/{id}/runs/{run_id}', { path: { ...job(id), run_id: runId } }),
  clearRuns: (id: number) => call('delete', '/api/scheduled_jobs/{id}/runs', { path: job(id) }),
  schedulePreview: (schedule: Schedule) =>
    call('post', '/api/scheduled_jobs/schedule_preview', { body: { schedule } }).then((r) => r.next_runs ?? []),
  deviceJobRuns: (guid: string, limit = 50) =>
    call('get', '/api/devices/{guid}/job_runs', { path: { guid }, query: { limit } }).then((r) => r.results ?? []),
};

/** A step without an assembly (the editor refuses to save one) is sent without the field. */
const workflowBody = (input: WorkflowInput) => ({
  ...input,
  steps: input.steps.map((s) => ({ ...s, assembly_id: s.assembly_id ?? undefined })),
});

export const workflows = {
  list: () => call('get', '/api/workflows').then((r) => r.workflows ?? []),
  get: (id: number) => call('get', '/api/workflows/{id}', { path: job(id) }),
  create: (input: WorkflowInput) => call('post', '/api/workflows', { body: workflowBody(input) }),
  update: (id: number, input: WorkflowInput) =>
    call('put', '/api/workflows/{id}', { path: job(id), body: workflowBody(input) }),
  remove: (id: number) => call('delete', '/api/workflows/{id}', { path: job(id) }),
  start: (id: number, device_guids: string[]) =>
    call('post', '/api/workflows/{id}/start', { path: job(id), body: { device_guids } }),
  runs: (id: number) => call('get', '/api/workflows/{id}/runs', { path: job(id) }).then((r) => r.runs ?? []),
  run: (runId: string) => call('get', '/api/workflows/runs/{run_id}', { path: { run_id: runId } }),
  webhooks: (id: number) => call('get', '/api/workflows/{id}/webhooks', { path: job(id) }).then((r) => r.webhooks ?? []),
  createWebhook: (id: number, input: WorkflowWebhookInput) =>
    call('post', '/api/workflows/{id}/webhooks', { path: job(id), body: input }),
  rotateWebhook: (id: number, webhookId: string) =>
    call('post', '/api/workflows/{id}/webhooks/{webhook_id}/rotate', { path: { ...job(id), webhook_id: webhookId } }),
  removeWebhook: (id: number, webhookId: string) =>
    call('delete', '/api/workflows/{id}/webhooks/{webhook_id}', { path: { ...job(id), webhook_id: webhookId } }),
};

// Agent redeploys (docs/api.md "Onboarding: agent redeploy").
export const onboarding = {
  redeploy: (device_guid: string, reason = '') => call('post', '/api/onboarding/jobs', { body: { device_guid, reason } }),
  job: (id: string) => call('get', '/api/onboarding/jobs/{job_id}', { path: { job_id: id } }),
  cancel: (id: string) => call('post', '/api/onboarding/jobs/{job_id}/cancel', { path: { job_id: id } }),
};

// Agent updates (docs/api.md "Agent updates").
export const agentUpdates = {
  /** The active operation and the history, newest first. */
  forDevice: (guid: string, limit = 20) =>
    call('get', '/api/devices/{guid}/agent-updates', { path: { guid }, query: { limit } }),
  updateNow: (hostname: string) => call('post', '/api/device/update-agent/{hostname}', { path: host(hostname) }),
  updateMany: (guids: string[]) =>
    call('post', '/api/devices/agent-maintenance', { body: { action: 'update_now', guids } }),
};

// ---- Issue 9: paged device list, device filters, saved views
// (/work/notes/contract9.md). One block so the console helpers merge cleanly.

/** The largest page GET /api/devices answers. */
export const DEVICE_LIST_PAGE = 1000;

export interface DevicePageQuery extends DeviceListQuery {
  limit: number;
  offset: number;
  /** A sort key (hostname, site, status, last_seen, os, agent_version, description, trust_state, metadata:<n>), `-` first for descending. */
  sort?: string | null;
  /** A saved filter. */
  filterId?: number | null;
  /** A draft filter tree. */
  filter?: FilterGroup | null;
  signal?: AbortSignal;
}

export function devicePageSearch({ siteId, status, limit, offset, sort, filterId, filter }: DevicePageQuery): URLSearchParams {
  const q = new URLSearchParams({ limit: String(limit), offset: String(offset) });
  if (sort) q.set('sort', sort);
  if (siteId != null) q.set('site_id', String(siteId));
  if (status) q.set('status', status);
  if (filterId != null) q.set('filter_id', String(filterId));
  if (filter) q.set('filter', JSON.stringify(filter));
  return q;
}

function devicePage(query: DevicePageQuery): Promise<DevicePage> {
  // The query is built by devicePageSearch (the grid's tests read it), so
  // the answer's type is the document's for this path.
  return api<ResponseOf<'/api/devices', 'get'>>(`/api/devices?${devicePageSearch(query).toString()}`, {
    signal: query.signal,
  });
}

const byID = (id: number) => ({ id: String(id) });

export const deviceFilters = {
  list: () => call('get', '/api/device_filters').then((r) => r.filters ?? []),
  get: (id: number) => call('get', '/api/device_filters/{id}', { path: byID(id) }),
  create: (input: DeviceFilterInput) => call('post', '/api/device_filters', { body: input }),
  update: (id: number, input: DeviceFilterInput) => call('put', '/api/device_filters/{id}', { path: byID(id), body: input }),
  remove: (id: number) => call('delete', '/api/device_filters/{id}', { path: byID(id) }),
  metadata: () => call('get', '/api/device_filters/metadata'),
  search: (q: string, limit = 20) => call('get', '/api/device_filters/search', { query: { q, limit } }).then((r) => r.filters ?? []),
  preview: (filter: FilterGroup, limit = 5, signal?: AbortSignal) =>
    call('post', '/api/device_filters/preview', { body: { filter, limit }, signal }),
};

export const deviceListViews = {
  list: () => call('get', '/api/device_list_views').then((r) => r.views ?? []),
  get: (id: number) => call('get', '/api/device_list_views/{id}', { path: byID(id) }),
  create: (input: DeviceListViewInput) => call('post', '/api/device_list_views', { body: input }),
  update: (id: number, input: DeviceListViewInput) =>
    call('put', '/api/device_list_views/{id}', { path: byID(id), body: input }),
  remove: (id: number) => call('delete', '/api/device_list_views/{id}', { path: byID(id) }),
};

// ---- end of issue 9 device grid block

// Issue 9, console pages: metadata fields and the software audit (docs/api.md
// "Metadata fields", "Software audit").
import type {
  SoftwareAuditSort,
} from './types';

export const metadataFields = {
  definitions: () => call('get', '/api/metadata_fields').then((r) => ({ ...r, fields: r.fields ?? [] })),
  /** Admin; reserved numbers answer 409 reserved_metadata_field. */
  rename: (fieldNumber: number, description: string) =>
    call('put', '/api/metadata_fields/{field_number}', { path: { field_number: String(fieldNumber) }, body: { description } }),
  forDevice: (guid: string) =>
    call('get', '/api/devices/{guid}/metadata_fields', { path: { guid } }).then((r) => r.fields ?? []),
  /** A blank value clears the field. */
  setValue: (guid: string, fieldNumber: number, value: string) =>
    call('put', '/api/devices/{guid}/metadata_fields/{field_number}', {
      path: { guid, field_number: String(fieldNumber) },
      body: { value },
    }),
};

export interface SoftwareAuditQuery {
  q?: string;
  limit: number;
  offset: number;
  sort: SoftwareAuditSort;
}

/**
 * The software a rule is made from (docs/api.md "Software audit"): a name the
 * device has, and a version to make the rule that version's only (absent:
 * every version).
 */
export interface SoftwareRowRef {
  name: string;
  version?: string;
}

/** Exactly one of: an uploaded image (base64), an icon resource on the endpoint, no icon, or removing the rule. */
export type IconOverrideInput = { icon: string } | { display_icon: string } | { clear_icon: true } | { remove: true };

/** The uninstaller to run instead of the endpoint's own, or removing the rule. */
export type UninstallOverrideInput = { executable: string; arguments: string } | { remove: true };

export const software = {
  audit: ({ q, limit, offset, sort }: SoftwareAuditQuery) =>
    call('get', '/api/software/audit', { query: { limit, offset, sort, q: q?.trim() || undefined } }),
  iconUrl: (iconHash: string) => `/api/device/software/icon/${encodeURIComponent(iconHash)}`,
  /**
   * The override routes take a device that has the row ("the selected row");
   * from the audit that is any visible device with this name and version.
   */
  deviceWith: (filter: unknown) =>
    call('get', '/api/devices', { query: { limit: 1, filter: JSON.stringify(filter) } }).then((r) => r.devices?.[0] ?? null),
  /** Also asks the device for a software refresh (the answer's `refresh` says whether it could). */
  iconOverride: (hostname: string, row: SoftwareRowRef, input: IconOverrideInput) =>
    call('post', '/api/device/software/{hostname}/icon-override', { path: host(hostname), body: { ...row, ...input } }),
  /** Admin only. */
  uninstallOverride: (hostname: string, row: SoftwareRowRef, input: UninstallOverrideInput) =>
    call('post', '/api/device/software/{hostname}/uninstall-override', { path: host(hostname), body: { ...row, ...input } }),
  block: (hostname: string, row: SoftwareRowRef, reason: string) =>
    call('post', '/api/device/software/{hostname}/uninstall-block', { path: host(hostname), body: { ...row, reason } }),
  /**
   * Queues the row's silent uninstall (a signed quick job); the answer names
   * the job run to follow, after which the device's software is read again.
   */
  uninstall: (hostname: string, row: SoftwareRowRef) =>
    call('post', '/api/device/software/{hostname}/uninstall', { path: host(hostname), body: row }),
  /** Admin only. */
  unblock: (hostname: string, row: SoftwareRowRef) =>
    call('post', '/api/device/software/{hostname}/uninstall-unblock', { path: host(hostname), body: row }),
};

/** The alert queue (docs/api.md "Watchdogs"): incidents inside the caller's sites. */
export const incidents = {
  /** `states`: Open, Acknowledged, Suppressed, Resolved (none: every state). */
  queue: (states: string[]) =>
    call('get', '/api/watchdogs/incidents', { query: { state: states.length ? states.join(',') : undefined, limit: 500 } }).then(
      (r) => ({ ...r, incidents: r.incidents ?? [], counts: r.counts ?? [] }),
    ),
  acknowledge: (id: number) => call('post', '/api/watchdogs/incidents/{incident_id}/acknowledge', { path: { incident_id: String(id) } }),
  /** Suppressing needs a non-blank reason: without one the Engine answers validation_failed and the incident stays Open. */
  setState: (id: number, state: 'Open' | 'Suppressed', reason = '') =>
    call('post', '/api/watchdogs/incidents/{incident_id}/state', { path: { incident_id: String(id) }, body: { state, reason } }),
};

/** Watchdog policies (docs/api.md "Watchdogs"): saving makes one live and evaluates it at once. */
export const watchdogsApi = {
  list: () => call('get', '/api/watchdogs').then((r) => r.watchdogs ?? []),
  metadata: () => call('get', '/api/watchdogs/metadata'),
  create: (body: WatchdogInput) => call('post', '/api/watchdogs', { body }),
  update: (id: number, body: WatchdogInput) => call('put', '/api/watchdogs/{watchdog_id}', { path: { watchdog_id: String(id) }, body }),
  /** The draft's targets and what its rules say of each now; no incident opens. */
  preview: (body: WatchdogInput) => call('post', '/api/watchdogs/preview', { body }),
};

/** Notification channels (admin; docs/api.md "Watchdog notifications"): the secret is write-only. */
export const notificationChannels = {
  list: () => call('get', '/api/watchdogs/channels').then((r) => r.channels ?? []),
  create: (body: NotificationChannelInput) => call('post', '/api/watchdogs/channels', { body }),
  remove: (id: number) => call('delete', '/api/watchdogs/channels/{channel_id}', { path: { channel_id: String(id) } }),
  /** Sends a test notification and answers its outcome (delivered, refused or failed); nothing is recorded. */
  test: (id: number) => call('post', '/api/watchdogs/channels/{channel_id}/test', { path: { channel_id: String(id) } }),
};

/** Maintenance windows (admin): notifications of the covered incidents are held back; evaluation goes on. */
export const maintenanceWindows = {
  list: () => call('get', '/api/watchdogs/maintenance-windows').then((r) => r.windows ?? []),
  create: (body: MaintenanceWindowInput) => call('post', '/api/watchdogs/maintenance-windows', { body }),
  remove: (id: number) =>
    call('delete', '/api/watchdogs/maintenance-windows/{window_id}', { path: { window_id: String(id) } }),
};

/** A device's Watchdogs tab and its overrides (docs/api.md "Watchdogs"). */
export const deviceWatchdogs = {
  list: (guid: string) => call('get', '/api/devices/{guid}/watchdogs', { path: { guid } }).then((r) => r.watchdogs ?? []),
  /** Muting needs a non-blank reason and suppresses the watchdog's active incident on the device. */
  setOverride: (guid: string, watchdogId: number, muted: boolean, reason = '') =>
    call('post', '/api/devices/{guid}/watchdogs/overrides', { path: { guid }, body: { watchdog_id: watchdogId, muted, reason } }).then(
      (r) => r.watchdogs ?? [],
    ),
};

// Issue 24, patches page: the fleet audit and patch policies (docs/api.md
// "Patches", "Patch policies"). Policy changes are Admin routes
// (withSudo).
export const patchPolicies = {
  audit: (limit: number, cursor?: string) =>
    call('get', '/api/patches/audit', { query: { state: 'pending', limit, cursor } }),
  list: () => call('get', '/api/patches/policies'),
  metadata: () => call('get', '/api/patches/policies/metadata'),
  conflicts: (draft: PatchPolicyInput) => call('post', '/api/patches/policies/conflicts', { body: draft }),
  create: (draft: PatchPolicyInput) => withSudo(() => call('post', '/api/patches/policies', { body: draft })),
  update: (id: number, draft: PatchPolicyInput) =>
    withSudo(() => call('put', '/api/patches/policies/{policy_id}', { path: { policy_id: String(id) }, body: draft })),
  remove: (id: number) =>
    withSudo(() => call('delete', '/api/patches/policies/{policy_id}', { path: { policy_id: String(id) } })),
  evaluate: () => withSudo(() => call('post', '/api/patches/policies/evaluate', { body: {} })),
};

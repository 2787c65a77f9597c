import { api, ApiError } from './client';
import type { ReauthProof } from '../passkeys/api';
import { call } from './typed';
import type {
  ActivityRow,
  AegisStatus,
  ForceResetResult,
  AgentMaintenanceResult,
  AgentPlatform,
  AgentUpdates,
  Assembly,
  AssemblyInput,
  AssemblyKind,
  AssemblyVersion,
  DeviceJobRun,
  QuickRunInput,
  Run,
  Schedule,
  ScheduledJob,
  ScheduledJobInput,
  Workflow,
  WorkflowInput,
  WorkflowRun,
  Credential,
  CredentialInput,
  Device,
  DeviceApproval,
  DeviceFilter,
  DeviceFilterInput,
  DeviceListView,
  DeviceListViewInput,
  DevicePage,
  FilterGroup,
  FilterMetadata,
  FilterPreview,
  MetadataFieldDefinition,
  DeviceDetails,
  DeviceSummary,
  DirectoryLookup,
  DirectoryProvider,
  DirectoryProviderInput,
  DirectorySite,
  DirectorySync,
  DirectoryTestResult,
  EnrollmentCode,
  EnrollmentCodeInput,
  InstallLink,
  LoginResponse,
  MfaAction,
  Operator,
  PeerCertificate,
  LiveService,
  PatchInventory,
  PatchRefreshResult,
  PendingMfa,
  PhaseResponse,
  ProcessSnapshot,
  Role,
  ServiceAction,
  ServiceActionResult,
  SessionResponse,
  ShellSession,
  SiteAssignments,
  SoftwareRefreshResult,
  SourceTokenStatus,
  TrustAction,
  TrustResult,
  User,
  WorkersResponse,
} from './types';

export const bootstrap = {
  state: () => api<PhaseResponse>('/api/bootstrap/state'),
  aegisSetup: (passphrase: string, setup_code: string) =>
    api<PhaseResponse>('/api/bootstrap/aegis/setup', { body: { passphrase, setup_code } }),
  aegisUnlock: (passphrase: string) =>
    api<PhaseResponse>('/api/bootstrap/aegis/unlock', { body: { passphrase } }),
  adminSetup: (username: string, password: string, setup_code: string) =>
    api<PendingMfa>('/api/bootstrap/admin/setup', { body: { username, password, setup_code } }),
  adminRecover: (username: string, password: string, recovery_code: string) =>
    api<PendingMfa>('/api/bootstrap/admin/recover', { body: { username, password, recovery_code } }),
  adminMfaVerify: (pending_token: string, code: string) =>
    api<PhaseResponse>('/api/bootstrap/admin/mfa/verify', { body: { pending_token, code } }),
};

export const auth = {
  login: (username: string, password: string) =>
    api<LoginResponse>('/api/auth/login', { body: { username, password } }),
  mfaVerify: (pending_token: string, code: string) =>
    api<SessionResponse>('/api/auth/mfa/verify', { body: { pending_token, code } }),
  logout: () => api<void>('/api/auth/logout', { method: 'POST', body: {} }),
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
    api<void>('/api/auth/password/reset', { body: { current_password, new_password } }),
  mfaReset: (password: string) => api<void>('/api/auth/mfa/reset', { body: { password } }),
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
    api<InstallLink>(`/api/sites/${site_id}/agent-install-links/${platform}/revoke`, { method: 'POST' }),
  /** Turns temporary auto-approval on for `durationSeconds`, or off. */
  setAutoApproval: (site_id: number, enabled: boolean, durationSeconds?: number) =>
    call('post', '/api/sites/{site_id}/auto-approval', {
      path: { site_id: String(site_id) },
      body: enabled ? { enabled, duration_seconds: durationSeconds } : { enabled },
    }),
};

export const server = {
  workers: (historySeconds: number) =>
    api<WorkersResponse>(`/api/server/workers?history_seconds=${historySeconds}`),
};

/** The master cipher (docs/api.md "Master cipher"); rotate and reset carry a fresh proof of identity. */
export const aegis = {
  status: () => api<AegisStatus>('/api/aegis/status'),
  rotate: (current_passphrase: string, new_passphrase: string, proof: ReauthProof) =>
    api<AegisStatus>('/api/aegis/rotate', { body: { current_passphrase, new_passphrase, ...proof } }),
  forceReset: (proof: ReauthProof) =>
    api<ForceResetResult>('/api/aegis/force_reset', { body: { confirm: FORCE_RESET_PHRASE, ...proof } }),
};

/** What the Engine wants typed before it deletes the master cipher. */
export const FORCE_RESET_PHRASE = 'FORCE RESET';

const userPath = (username: string) => `/api/users/${encodeURIComponent(username)}`;

export const users = {
  list: () => api<{ users: Operator[] | null }>('/api/users').then((r) => r.users ?? []),
  create: (username: string, password: string, role: Role) =>
    api<Operator>('/api/users', { body: { username, password, role } }),
  remove: (username: string) => api<void>(userPath(username), { method: 'DELETE' }),
  resetPassword: (username: string, password: string) =>
    api<void>(`${userPath(username)}/reset_password`, { body: { password } }),
  setRole: (username: string, role: Role) => api<Operator>(`${userPath(username)}/role`, { body: { role } }),
  mfa: (username: string, action: MfaAction) => api<Operator>(`${userPath(username)}/mfa`, { body: { action } }),
};

export const siteAssignments = {
  selection: (usernames: string[]) =>
    api<SiteAssignments>('/api/user_site_assignments/selection', { body: { usernames } }),
  assign: (usernames: string[], site_ids: number[]) =>
    api<SiteAssignments>('/api/user_site_assignments/assign', { body: { usernames, site_ids } }),
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


const provider = (id: number, suffix = '') => `/api/directory/providers/${id}${suffix}`;

export const directory = {
  list: () =>
    api<{ providers: DirectoryProvider[] }>('/api/directory/providers').then((r) => r.providers ?? []),
  create: (body: DirectoryProviderInput) => api<DirectoryProvider>('/api/directory/providers', { body }),
  update: (id: number, body: DirectoryProviderInput) => api<DirectoryProvider>(provider(id), { method: 'PATCH', body }),
  remove: (id: number) => api<void>(provider(id), { method: 'DELETE' }),
  test: (id: number) => api<DirectoryTestResult>(provider(id, '/test'), { method: 'POST' }),
  certificate: (host: string, port: number, host_overrides: Record<string, string>) =>
    api<PeerCertificate>('/api/directory/providers/certificate', { body: { host, port, host_overrides } }),
  lookup: (id: number, username: string, password?: string) =>
    api<DirectoryLookup>(provider(id, '/lookup-user'), {
      body: password === undefined ? { username } : { username, password },
    }),
  sync: (id: number) => api<DirectorySync>(provider(id, '/sync'), { method: 'POST' }),
  sites: () => api<{ sites: DirectorySite[] }>('/api/directory/sites').then((r) => r.sites ?? []),
  setCachedUser: (username: string, enabled: boolean) =>
    api<{ username: string; enabled: boolean }>(`/api/users/${encodeURIComponent(username)}/directory-cache`, {
      body: { enabled },
    }),
};


export const credentials = {
  /** With a site, that site's credentials plus the global ones. */
  list: (siteId?: number | null) =>
    api<{ credentials: Credential[] }>(siteId ? `/api/credentials?site_id=${siteId}` : '/api/credentials').then(
      (r) => r.credentials ?? [],
    ),
  create: (input: CredentialInput) => api<Credential>('/api/credentials', { body: input }),
  update: (id: number, input: CredentialInput) => api<Credential>(`/api/credentials/${id}`, { method: 'PUT', body: input }),
  remove: (id: number) => api<{ deleted: number }>(`/api/credentials/${id}`, { method: 'DELETE' }),
};

export const sourceToken = {
  status: () => api<SourceTokenStatus>('/api/github/token'),
  /** null clears the stored token. */
  set: (token: string | null) => api<SourceTokenStatus>('/api/github/token', { body: { token } }),
};

// Devices (SPEC "Devices and inventory"). Status tokens are the lower-case
// drilldown form (connected, disconnected, offline).
export interface DeviceListQuery {
  siteId?: number | null;
  status?: string | null;
}

const hostPath = (prefix: string, hostname: string) => `${prefix}/${encodeURIComponent(hostname)}`;

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
  search: (hostname: string) =>
    api<{ devices: Device[] | null }>(`/api/devices/search?${new URLSearchParams({ hostname }).toString()}`).then(
      (r) => r.devices ?? [],
    ),
  get: (guid: string) => api<DeviceSummary>(`/api/devices/${encodeURIComponent(guid)}`),
  details: (hostname: string) => api<DeviceDetails>(hostPath('/api/device/details', hostname)).then(flattenAgentHealth),
  setDescription: (hostname: string, description: string) =>
    api<unknown>(hostPath('/api/device/description', hostname), { body: { description } }),
  activity: (hostname: string) =>
    api<{ activity: ActivityRow[] | null }>(hostPath('/api/device/activity', hostname)).then((r) => r.activity ?? []),
  clearActivity: (hostname: string) => api<unknown>(hostPath('/api/device/activity', hostname), { method: 'DELETE' }),
  /** Admin only. The body is empty. */
  trust: (guid: string, action: TrustAction) =>
    api<TrustResult>(`/api/devices/${encodeURIComponent(guid)}/${action}`, { method: 'POST' }),

  // Operations relayed to the agent; each may take up to about a minute.
  services: (hostname: string) =>
    api<{ services: LiveService[] | null }>(hostPath('/api/device/services', hostname)).then((r) => r.services ?? []),
  serviceAction: (hostname: string, name: string, action: ServiceAction) =>
    api<ServiceActionResult>(`${hostPath('/api/device/services', hostname)}/action`, { body: { name, action } }),
  /** A snapshot at most `maxAgeSeconds` old; 0 asks the agent for a fresh one. */
  processes: (hostname: string, maxAgeSeconds: number) =>
    api<ProcessSnapshot>(`${hostPath('/api/device/processes', hostname)}?max_age_seconds=${maxAgeSeconds}`),
  /** The name guards against a PID reused by another program (process_mismatch). */
  terminateProcess: (hostname: string, pid: number, name: string) =>
    api<{ terminated: boolean }>(`${hostPath('/api/device/processes', hostname)}/terminate`, { body: { pid, name } }),
  refreshSoftware: (hostname: string) =>
    api<SoftwareRefreshResult>(`${hostPath('/api/device/software', hostname)}/refresh`, { method: 'POST' }),
  patches: (hostname: string) => api<PatchInventory>(hostPath('/api/device/patches', hostname)),
  refreshPatches: (hostname: string) =>
    api<PatchRefreshResult>(`${hostPath('/api/device/patches', hostname)}/refresh`, { method: 'POST' }),
};

// Remote shell: establish hands out a single-use WebSocket path; each
// reconnect needs a fresh establish.
export const shell = {
  establish: (guid: string) => api<ShellSession>('/api/shell/establish', { body: { guid } }),
  disconnect: (session_id: string) => api<unknown>('/api/shell/disconnect', { body: { session_id } }),
};

// Enrollment codes and approvals (docs/api.md "Enrollment").
export const enrollment = {
  codes: (siteId?: number | null) =>
    api<{ codes: EnrollmentCode[] | null }>(
      siteId ? `/api/admin/enrollment-codes?site_id=${siteId}` : '/api/admin/enrollment-codes',
    ).then((r) => r.codes ?? []),
  createCode: (input: EnrollmentCodeInput) => api<EnrollmentCode>('/api/admin/enrollment-codes', { body: input }),
  deleteCode: (id: number) => api<{ deleted: number }>(`/api/admin/enrollment-codes/${id}`, { method: 'DELETE' }),
  rotateCode: (id: number) => api<EnrollmentCode>(`/api/admin/enrollment-codes/${id}/rotate`, { method: 'POST' }),
  /** Newest first, at most 500; without a status every state. */
  approvals: (status?: string) =>
    api<{ approvals: DeviceApproval[] | null }>(
      status ? `/api/admin/device-approvals?status=${encodeURIComponent(status)}` : '/api/admin/device-approvals',
    ).then((r) => r.approvals ?? []),
  approve: (id: string) =>
    api<DeviceApproval>(`/api/admin/device-approvals/${encodeURIComponent(id)}/approve`, { method: 'POST' }),
  deny: (id: string) => api<DeviceApproval>(`/api/admin/device-approvals/${encodeURIComponent(id)}/deny`, { method: 'POST' }),
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

export const assemblies = {
  list: ({ kind, q }: AssemblyListQuery = {}) => {
    const p = new URLSearchParams();
    if (kind) p.set('kind', kind);
    if (q?.trim()) p.set('q', q.trim());
    const qs = p.toString();
    return api<{ assemblies: Assembly[] | null }>(qs ? `/api/assemblies?${qs}` : '/api/assemblies').then(
      (r) => r.assemblies ?? [],
    );
  },
  get: (id: number) => api<Assembly>(`/api/assemblies/${id}`),
  create: (input: AssemblyInput) => api<Assembly>('/api/assemblies', { body: input }),
  update: (id: number, input: AssemblyInput) => api<Assembly>(`/api/assemblies/${id}`, { method: 'PUT', body: input }),
  remove: (id: number) => api<void>(`/api/assemblies/${id}`, { method: 'DELETE' }),
  versions: (id: number) =>
    api<{ versions: AssemblyVersion[] | null }>(`/api/assemblies/${id}/versions`).then((r) => r.versions ?? []),
  version: (id: number, version: number) => api<Assembly>(`/api/assemblies/${id}/versions/${version}`),
};

export const quickRuns = {
  start: (input: QuickRunInput) => api<{ run_id: string }>('/api/scripts/quick_run', { body: input }),
  get: (runId: string) => api<Run>(`/api/scripts/quick_run/${encodeURIComponent(runId)}`),
};

const jobPath = (id: number, suffix = '') => `/api/scheduled_jobs/${id}${suffix}`;

export const scheduledJobs = {
  list: () => api<{ jobs: ScheduledJob[] | null }>('/api/scheduled_jobs').then((r) => r.jobs ?? []),
  get: (id: number) => api<ScheduledJob>(jobPath(id)),
  create: (input: ScheduledJobInput) => api<ScheduledJob>('/api/scheduled_jobs', { body: input }),
  update: (id: number, input: ScheduledJobInput) => api<ScheduledJob>(jobPath(id), { method: 'PUT', body: input }),
  remove: (id: number) => api<void>(jobPath(id), { method: 'DELETE' }),
  toggle: (id: number, enabled: boolean) => api<ScheduledJob>(jobPath(id, '/toggle'), { body: { enabled } }),
  rerun: (id: number) => api<{ run_id: string }>(jobPath(id, '/rerun'), { method: 'POST' }),
  runs: (id: number, limit = 50) =>
    api<{ runs: Run[] | null }>(jobPath(id, `/runs?limit=${limit}`)).then((r) => r.runs ?? []),
  run: (id: number, runId: string) => api<Run>(jobPath(id, `/runs/${encodeURIComponent(runId)}`)),
  clearRuns: (id: number) => api<void>(jobPath(id, '/runs'), { method: 'DELETE' }),
  schedulePreview: (schedule: Schedule) =>
    api<{ next_runs: string[] | null }>('/api/scheduled_jobs/schedule_preview', { body: { schedule } }).then(
      (r) => r.next_runs ?? [],
    ),
  deviceJobRuns: (guid: string, limit = 50) =>
    api<{ results: DeviceJobRun[] | null }>(`/api/devices/${encodeURIComponent(guid)}/job_runs?limit=${limit}`).then(
      (r) => r.results ?? [],
    ),
};

export const workflows = {
  list: () => api<{ workflows: Workflow[] | null }>('/api/workflows').then((r) => r.workflows ?? []),
  get: (id: number) => api<Workflow>(`/api/workflows/${id}`),
  create: (input: WorkflowInput) => api<Workflow>('/api/workflows', { body: input }),
  update: (id: number, input: WorkflowInput) => api<Workflow>(`/api/workflows/${id}`, { method: 'PUT', body: input }),
  remove: (id: number) => api<void>(`/api/workflows/${id}`, { method: 'DELETE' }),
  start: (id: number, device_guids: string[]) =>
    api<{ run_id: string }>(`/api/workflows/${id}/start`, { body: { device_guids } }),
  runs: (id: number) => api<{ runs: WorkflowRun[] | null }>(`/api/workflows/${id}/runs`).then((r) => r.runs ?? []),
  run: (runId: string) => api<WorkflowRun>(`/api/workflows/runs/${encodeURIComponent(runId)}`),
};

// Agent updates (docs/api.md "Agent updates").
export const agentUpdates = {
  /** The active operation and the history, newest first. */
  forDevice: (guid: string, limit = 20) =>
    api<AgentUpdates>(`/api/devices/${encodeURIComponent(guid)}/agent-updates?limit=${limit}`),
  updateNow: (hostname: string) =>
    api<{ run_id: string; operation_id: string }>(hostPath('/api/device/update-agent', hostname), { method: 'POST' }),
  updateMany: (guids: string[]) =>
    api<AgentMaintenanceResult>('/api/devices/agent-maintenance', { body: { action: 'update_now', guids } }),
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
  return api<DevicePage>(`/api/devices?${devicePageSearch(query).toString()}`, { signal: query.signal });
}

export const deviceFilters = {
  list: () => api<{ filters: DeviceFilter[] | null }>('/api/device_filters').then((r) => r.filters ?? []),
  get: (id: number) => api<DeviceFilter>(`/api/device_filters/${id}`),
  create: (input: DeviceFilterInput) => api<DeviceFilter>('/api/device_filters', { body: input }),
  update: (id: number, input: DeviceFilterInput) => api<DeviceFilter>(`/api/device_filters/${id}`, { method: 'PUT', body: input }),
  remove: (id: number) => api<void>(`/api/device_filters/${id}`, { method: 'DELETE' }),
  metadata: () => api<FilterMetadata>('/api/device_filters/metadata'),
  search: (q: string, limit = 20) =>
    api<{ filters: DeviceFilter[] | null }>(`/api/device_filters/search?${new URLSearchParams({ q, limit: String(limit) }).toString()}`).then(
      (r) => r.filters ?? [],
    ),
  preview: (filter: FilterGroup, limit = 5, signal?: AbortSignal) =>
    api<FilterPreview>('/api/device_filters/preview', { body: { filter, limit }, signal }),
};

export const deviceListViews = {
  list: () => api<{ views: DeviceListView[] | null }>('/api/device_list_views').then((r) => r.views ?? []),
  get: (id: number) => api<DeviceListView>(`/api/device_list_views/${id}`),
  create: (input: DeviceListViewInput) => api<DeviceListView>('/api/device_list_views', { body: input }),
  update: (id: number, input: DeviceListViewInput) =>
    api<DeviceListView>(`/api/device_list_views/${id}`, { method: 'PUT', body: input }),
  remove: (id: number) => api<void>(`/api/device_list_views/${id}`, { method: 'DELETE' }),
};

// ---- end of issue 9 device grid block

// Issue 9, console pages: metadata fields and the software audit (docs/api.md
// "Metadata fields", "Software audit").
import type {
  Device as AuditDevice,
  DeviceMetadataField,
  MetadataFieldDefinitions,
  SoftwareAuditPage,
  SoftwareAuditSort,
} from './types';

export const metadataFields = {
  definitions: () =>
    api<MetadataFieldDefinitions>('/api/metadata_fields').then((r) => ({ ...r, fields: r.fields ?? [] })),
  /** Admin; reserved numbers answer 409 reserved_metadata_field. */
  rename: (fieldNumber: number, description: string) =>
    api<MetadataFieldDefinition>(`/api/metadata_fields/${fieldNumber}`, { method: 'PUT', body: { description } }),
  forDevice: (guid: string) =>
    api<{ fields: DeviceMetadataField[] | null }>(`/api/devices/${encodeURIComponent(guid)}/metadata_fields`).then(
      (r) => r.fields ?? [],
    ),
  /** A blank value clears the field. */
  setValue: (guid: string, fieldNumber: number, value: string) =>
    api<DeviceMetadataField>(`/api/devices/${encodeURIComponent(guid)}/metadata_fields/${fieldNumber}`, {
      method: 'PUT',
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

const softwareRulePath = (hostname: string, rule: string) =>
  `/api/device/software/${encodeURIComponent(hostname)}/${rule}`;

export const software = {
  audit: ({ q, limit, offset, sort }: SoftwareAuditQuery) => {
    const p = new URLSearchParams({ limit: String(limit), offset: String(offset), sort });
    if (q?.trim()) p.set('q', q.trim());
    return api<SoftwareAuditPage>(`/api/software/audit?${p.toString()}`);
  },
  iconUrl: (iconHash: string) => `/api/device/software/icon/${encodeURIComponent(iconHash)}`,
  /**
   * The override routes take a device that has the row ("the selected row");
   * from the audit that is any visible device with this name and version.
   */
  deviceWith: (filter: unknown) =>
    api<{ devices: AuditDevice[] | null }>(
      `/api/devices?${new URLSearchParams({ limit: '1', filter: JSON.stringify(filter) }).toString()}`,
    ).then((r) => r.devices?.[0] ?? null),
  /** Also asks the device for a software refresh (the answer's `refresh` says whether it could). */
  iconOverride: (hostname: string, row: SoftwareRowRef, input: IconOverrideInput) =>
    api<unknown>(softwareRulePath(hostname, 'icon-override'), { body: { ...row, ...input } }),
  /** Admin only. */
  uninstallOverride: (hostname: string, row: SoftwareRowRef, input: UninstallOverrideInput) =>
    api<unknown>(softwareRulePath(hostname, 'uninstall-override'), { body: { ...row, ...input } }),
  block: (hostname: string, row: SoftwareRowRef, reason: string) =>
    api<unknown>(softwareRulePath(hostname, 'uninstall-block'), { body: { ...row, reason } }),
  /** Admin only. */
  unblock: (hostname: string, row: SoftwareRowRef) =>
    api<unknown>(softwareRulePath(hostname, 'uninstall-unblock'), { body: row }),
};

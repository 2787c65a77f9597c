// Shapes from docs/api.md. Only the fields the console reads are typed.

export type BootstrapPhase =
  | 'aegis_setup_required'
  | 'aegis_unlock_required'
  | 'admin_setup_required'
  | 'admin_recovery_required'
  | 'login_required';

export interface PhaseResponse {
  phase: BootstrapPhase;
}

export interface MfaSetup {
  secret: string;
  otpauth_url: string;
}

export interface PendingMfa {
  phase?: BootstrapPhase;
  pending_token: string;
  mfa: MfaSetup;
}

export interface User {
  username: string;
  role: string;
  auth_source: string;
  mfa_enabled: boolean;
  mfa_configured: boolean;
  passkey_count: number;
  recovery_required: boolean;
  created_at: string;
}

export type LoginResponse =
  | { mfa_required: true; pending_token: string; mfa_setup: MfaSetup | null }
  | { mfa_required: false; token: string; csrf_token: string; user: User };

export interface SessionResponse {
  token: string;
  csrf_token: string;
  user: User;
}

export interface Site {
  site_id: number;
  name: string;
  site_worker_slug: string;
  site_worker_name: string;
  public_base_url?: string;
  public_hostname?: string;
  device_count: number;
  created_at: string;
  updated_at?: string;
}

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

export interface AuditEntry {
  id: number;
  at: string;
  username: string | null;
  role: string | null;
  /** "METHOD /path", for example "POST /api/sites". */
  action: string;
  target: string | null;
  client_addr: string | null;
  status: number;
  /** "success" or the error code of the answer. */
  outcome: string;
  request_id?: string | null;
}

export interface AuditPage {
  entries: AuditEntry[];
  next_before_id: number | null;
}


// Directory sign-in (docs/api.md "Directory sign-in").

export type DirectoryKind = 'ldap' | 'ldaps' | 'active_directory';
export type DirectoryGroupMode = 'member_of' | 'group_search';

export interface RoleMapping {
  group: string;
  role: 'admin' | 'operator';
}

export interface SiteMapping {
  group: string;
  site_ids: number[];
}

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

export interface DirectorySite {
  id: number;
  name: string;
  slug: string;
}


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

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

import { api, ApiError } from './client';
import type {
  Credential,
  CredentialInput,
  LoginResponse,
  PendingMfa,
  PhaseResponse,
  SessionResponse,
  Site,
  SourceTokenStatus,
  User,
  WorkersResponse,
} from './types';

export const bootstrap = {
  state: () => api<PhaseResponse>('/api/bootstrap/state'),
  aegisSetup: (passphrase: string) =>
    api<PhaseResponse>('/api/bootstrap/aegis/setup', { body: { passphrase } }),
  aegisUnlock: (passphrase: string) =>
    api<PhaseResponse>('/api/bootstrap/aegis/unlock', { body: { passphrase } }),
  adminSetup: (username: string, password: string) =>
    api<PendingMfa>('/api/bootstrap/admin/setup', { body: { username, password } }),
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
  me: () => api<User>('/api/auth/me'),
  /** The signed-in user, or null when there is no session. */
  meOrNull: async (): Promise<User | null> => {
    try {
      return await api<User>('/api/auth/me');
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
  list: () => api<{ sites: Site[] }>('/api/sites').then((r) => r.sites ?? []),
  create: (name: string, site_worker_slug: string) =>
    api<Site>('/api/sites', { body: { name, site_worker_slug } }),
  rename: (site_id: number, name: string, site_worker_slug?: string) =>
    api<Site>('/api/sites/rename', {
      body: site_worker_slug === undefined ? { site_id, name } : { site_id, name, site_worker_slug },
    }),
  remove: (site_ids: number[]) =>
    api<{ deleted: number[] }>('/api/sites/delete', { body: { site_ids } }),
};

export const server = {
  workers: (historySeconds: number) =>
    api<WorkersResponse>(`/api/server/workers?history_seconds=${historySeconds}`),
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

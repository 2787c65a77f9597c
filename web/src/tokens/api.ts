import { api } from '../api/client';

/** A personal API token as listed: never its text (docs/api.md "API tokens"). */
export interface ApiToken {
  id: number;
  name: string;
  access: TokenAccess;
  username: string;
  created_by: string;
  created_at: string;
  expires_at: string;
  last_used_at: string | null;
  expired: boolean;
}

export type TokenAccess = 'read' | 'write';

/** The one answer that carries the token's text. */
export interface CreatedApiToken {
  id: number;
  token: string;
  name: string;
  access: TokenAccess;
  username: string;
  created_at: string;
  expires_at: string;
}

export interface ApiTokenInput {
  name: string;
  expires_in_days: number;
  access: TokenAccess;
}

/** The Engine's bounds on expires_in_days. */
export const MIN_TOKEN_DAYS = 1;
export const MAX_TOKEN_DAYS = 365;
export const MAX_TOKEN_NAME = 100;

export const apiTokens = {
  list: () => api<{ tokens: ApiToken[] }>('/api/auth/tokens').then((r) => r.tokens ?? []),
  create: (input: ApiTokenInput) => api<CreatedApiToken>('/api/auth/tokens', { body: input }),
  revoke: (id: number) => api<void>(`/api/auth/tokens/${id}`, { method: 'DELETE' }),
};

import { call, type Schema } from '../api/typed';

/** A personal API token as listed: never its text (docs/api.md "API tokens"). */
export type ApiToken = Schema<'ApiToken'>;

export type TokenAccess = ApiToken['access'];

export type TokenScope = ApiToken['scopes'][number];

/** Lets a read token read device content (docs/api.md "API tokens"). */
export const SCOPE_DEVICE_CONTENT: TokenScope = 'read:device-content';

/** The one answer that carries the token's text. */
export type CreatedApiToken = Schema<'ApiTokenCreated'>;

export interface ApiTokenInput {
  name: string;
  expires_in_days: number;
  access: TokenAccess;
  /** Read tokens only; a write token reads device content without it. */
  scopes?: TokenScope[];
}

/** The Engine's bounds on expires_in_days. */
export const MIN_TOKEN_DAYS = 1;
export const MAX_TOKEN_DAYS = 365;
export const MAX_TOKEN_NAME = 100;

export const apiTokens = {
  list: () => call('get', '/api/auth/tokens').then((r) => r.tokens ?? []),
  create: (input: ApiTokenInput) => call('post', '/api/auth/tokens', { body: input }),
  revoke: (id: number) => call('delete', '/api/auth/tokens/{id}', { path: { id: String(id) } }),
};

import { api } from '../api/client';
import type { SessionResponse } from '../api/types';
import { assertionJSON, attestationJSON, creationOptions, requestOptions } from './webauthn';

export interface Passkey {
  id: number;
  label: string;
  created_at: string;
  last_used_at: string | null;
}

/**
 * The fresh proof of identity a sensitive action carries (docs/api.md
 * "Re-authentication"): password and authenticator code, or a passkey
 * assertion.
 */
export type ReauthProof =
  | { password: string; totp_code: string }
  | { passkey: { ceremony_id: string; credential: Record<string, unknown> } };

interface Ceremony {
  ceremony_id: string;
  options: Record<string, unknown>;
}

export const passkeys = {
  list: () => api<{ passkeys: Passkey[] }>('/api/auth/passkeys').then((r) => r.passkeys ?? []),
  rename: (id: number, label: string) =>
    api<Passkey>(`/api/auth/passkeys/${id}`, { method: 'PATCH', body: { label } }),
  remove: (id: number) => api<void>(`/api/auth/passkeys/${id}`, { method: 'DELETE' }),

  /** Runs the whole registration ceremony: options, the authenticator, verify. */
  register: async (label: string, proof: ReauthProof): Promise<Passkey> => {
    const c = await api<Ceremony>('/api/auth/passkeys/register/options', { method: 'POST', body: proof });
    const cred = (await navigator.credentials.create({ publicKey: creationOptions(c.options) })) as PublicKeyCredential | null;
    if (!cred) throw new DOMException('no credential', 'NotAllowedError');
    return api<Passkey>('/api/auth/passkeys/register/verify', {
      body: { ceremony_id: c.ceremony_id, label, credential: attestationJSON(cred) },
    });
  },

  /** Proves again who the signed-in operator is with one of their passkeys. */
  reauth: async (): Promise<ReauthProof> => {
    const c = await api<Ceremony>('/api/auth/reauth/passkey/options', { method: 'POST', body: {} });
    const cred = (await navigator.credentials.get({ publicKey: requestOptions(c.options) })) as PublicKeyCredential | null;
    if (!cred) throw new DOMException('no credential', 'NotAllowedError');
    return { passkey: { ceremony_id: c.ceremony_id, credential: assertionJSON(cred) } };
  },

  /** Runs the whole sign-in ceremony and returns the new session. */
  signIn: async (): Promise<SessionResponse> => {
    const c = await api<Ceremony>('/api/auth/passkeys/authenticate/options', { method: 'POST', body: {} });
    const cred = (await navigator.credentials.get({ publicKey: requestOptions(c.options) })) as PublicKeyCredential | null;
    if (!cred) throw new DOMException('no credential', 'NotAllowedError');
    return api<SessionResponse>('/api/auth/passkeys/authenticate/verify', {
      body: { ceremony_id: c.ceremony_id, credential: assertionJSON(cred) },
    });
  },
};

import { api } from '../api/client';
import type { SessionResponse } from '../api/types';
import { assertionJSON, attestationJSON, creationOptions, requestOptions } from './webauthn';

export interface Passkey {
  id: number;
  label: string;
  created_at: string;
  last_used_at: string | null;
}

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
  register: async (label: string): Promise<Passkey> => {
    const c = await api<Ceremony>('/api/auth/passkeys/register/options', { method: 'POST', body: {} });
    const cred = (await navigator.credentials.create({ publicKey: creationOptions(c.options) })) as PublicKeyCredential | null;
    if (!cred) throw new DOMException('no credential', 'NotAllowedError');
    return api<Passkey>('/api/auth/passkeys/register/verify', {
      body: { ceremony_id: c.ceremony_id, label, credential: attestationJSON(cred) },
    });
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

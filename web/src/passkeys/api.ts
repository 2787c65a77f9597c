import { call, type Schema } from '../api/typed';
import { assertionJSON, attestationJSON, creationOptions, requestOptions } from './webauthn';

export type Passkey = Schema<'Passkey'>;

/**
 * The fresh proof of identity a sensitive action carries (docs/api.md
 * "Re-authentication"): password and authenticator code, or a passkey
 * assertion.
 */
export type ReauthProof =
  | { password: string; totp_code: string }
  | { passkey: { ceremony_id: string; credential: Record<string, unknown> } };

/** The WebAuthn options of a ceremony: the document says only "any JSON" (they are the library's). */
const optionsOf = (c: Schema<'Ceremony'>) => c.options as Record<string, unknown>;

const passkeyPath = (id: number) => ({ passkey_id: String(id) });

export const passkeys = {
  list: () => call('get', '/api/auth/passkeys').then((r) => r.passkeys ?? []),
  rename: (id: number, label: string) =>
    call('patch', '/api/auth/passkeys/{passkey_id}', { path: passkeyPath(id), body: { label } }),
  remove: (id: number) => call('delete', '/api/auth/passkeys/{passkey_id}', { path: passkeyPath(id) }),

  /** Runs the whole registration ceremony: options, the authenticator, verify. */
  register: async (label: string, proof: ReauthProof): Promise<Passkey> => {
    const c = await call('post', '/api/auth/passkeys/register/options', { body: proof });
    const cred = (await navigator.credentials.create({ publicKey: creationOptions(optionsOf(c)) })) as PublicKeyCredential | null;
    if (!cred) throw new DOMException('no credential', 'NotAllowedError');
    return call('post', '/api/auth/passkeys/register/verify', {
      body: { ceremony_id: c.ceremony_id, label, credential: attestationJSON(cred) },
    });
  },

  /** Proves again who the signed-in operator is with one of their passkeys. */
  reauth: async (): Promise<ReauthProof> => {
    const c = await call('post', '/api/auth/reauth/passkey/options', { body: {} });
    const cred = (await navigator.credentials.get({ publicKey: requestOptions(optionsOf(c)) })) as PublicKeyCredential | null;
    if (!cred) throw new DOMException('no credential', 'NotAllowedError');
    return { passkey: { ceremony_id: c.ceremony_id, credential: assertionJSON(cred) } };
  },

  /** Runs the whole sign-in ceremony and returns the new session. */
  signIn: async (): Promise<Schema<'SessionResponse'>> => {
    const c = await call('post', '/api/auth/passkeys/authenticate/options', { body: {} });
    const cred = (await navigator.credentials.get({ publicKey: requestOptions(optionsOf(c)) })) as PublicKeyCredential | null;
    if (!cred) throw new DOMException('no credential', 'NotAllowedError');
    return call('post', '/api/auth/passkeys/authenticate/verify', {
      body: { ceremony_id: c.ceremony_id, credential: assertionJSON(cred) },
    });
  },
};

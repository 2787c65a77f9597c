// The Engine speaks WebAuthn's JSON form (binary fields as base64url, no
// padding); navigator.credentials wants ArrayBuffers in and gives them back.
// These functions convert both ways so the Go library and the browser agree.

export function base64urlToBuffer(value: string): ArrayBuffer {
  const b64 = value.replace(/-/g, '+').replace(/_/g, '/');
  const padded = b64 + '='.repeat((4 - (b64.length % 4)) % 4);
  const bin = atob(padded);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out.buffer;
}

export function bufferToBase64url(buf: ArrayBuffer | ArrayBufferView): string {
  const bytes = buf instanceof ArrayBuffer ? new Uint8Array(buf) : new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
  let bin = '';
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

interface DescriptorJSON {
  id: string;
  type: string;
  transports?: string[];
}

function descriptors(list: DescriptorJSON[] | undefined): PublicKeyCredentialDescriptor[] | undefined {
  return list?.map((d) => ({
    type: 'public-key',
    id: base64urlToBuffer(d.id),
    transports: d.transports as AuthenticatorTransport[] | undefined,
  }));
}

/** Options from register/options, as navigator.credentials.create wants them. */
export function creationOptions(json: Record<string, unknown>): PublicKeyCredentialCreationOptions {
  const user = json.user as { id: string; name: string; displayName: string };
  return {
    ...(json as unknown as PublicKeyCredentialCreationOptions),
    challenge: base64urlToBuffer(json.challenge as string),
    user: { ...user, id: base64urlToBuffer(user.id) },
    excludeCredentials: descriptors(json.excludeCredentials as DescriptorJSON[] | undefined),
  };
}

/** Options from authenticate/options, as navigator.credentials.get wants them. */
export function requestOptions(json: Record<string, unknown>): PublicKeyCredentialRequestOptions {
  return {
    ...(json as unknown as PublicKeyCredentialRequestOptions),
    challenge: base64urlToBuffer(json.challenge as string),
    allowCredentials: descriptors(json.allowCredentials as DescriptorJSON[] | undefined),
  };
}

/** A new credential from navigator.credentials.create, as register/verify wants it. */
export function attestationJSON(cred: PublicKeyCredential): Record<string, unknown> {
  const r = cred.response as AuthenticatorAttestationResponse;
  return {
    id: cred.id,
    rawId: bufferToBase64url(cred.rawId),
    type: cred.type,
    response: {
      clientDataJSON: bufferToBase64url(r.clientDataJSON),
      attestationObject: bufferToBase64url(r.attestationObject),
      transports: typeof r.getTransports === 'function' ? r.getTransports() : [],
    },
    clientExtensionResults: cred.getClientExtensionResults?.() ?? {},
  };
}

/** An assertion from navigator.credentials.get, as authenticate/verify wants it. */
export function assertionJSON(cred: PublicKeyCredential): Record<string, unknown> {
  const r = cred.response as AuthenticatorAssertionResponse;
  return {
    id: cred.id,
    rawId: bufferToBase64url(cred.rawId),
    type: cred.type,
    response: {
      clientDataJSON: bufferToBase64url(r.clientDataJSON),
      authenticatorData: bufferToBase64url(r.authenticatorData),
      signature: bufferToBase64url(r.signature),
      userHandle: r.userHandle ? bufferToBase64url(r.userHandle) : undefined,
    },
    clientExtensionResults: cred.getClientExtensionResults?.() ?? {},
  };
}

/** Whether this browser can run WebAuthn ceremonies at all. */
export function passkeysSupported(): boolean {
  return typeof window !== 'undefined' && typeof window.PublicKeyCredential !== 'undefined' && !!navigator.credentials;
}

/**
 * The browser's refusals (the operator cancelled, timed out, or the
 * authenticator already holds a passkey here) as a sentence.
 */
export function ceremonyProblem(err: unknown): string | null {
  if (!(err instanceof DOMException)) return null;
  switch (err.name) {
    case 'NotAllowedError':
      return 'The passkey request was cancelled or timed out.';
    case 'InvalidStateError':
      return 'This authenticator already holds a passkey for your account.';
    case 'SecurityError':
      return 'The browser refused the request: open the console at the address the Engine is configured with.';
    default:
      return `The browser refused the passkey request (${err.name}).`;
  }
}

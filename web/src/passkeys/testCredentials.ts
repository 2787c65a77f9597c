import { vi } from 'vitest';

// jsdom has no WebAuthn: these stand in for the browser's
// navigator.credentials with fixed answers, so the components can be
// exercised; the real ceremony is covered by the Playwright spec.

const buf = (...b: number[]) => new Uint8Array(b).buffer;

export const fakeAttestation = {
  id: 'BAU',
  rawId: buf(4, 5),
  type: 'public-key',
  response: { clientDataJSON: buf(1), attestationObject: buf(2), getTransports: () => ['internal'] },
  getClientExtensionResults: () => ({}),
};

export const fakeAssertion = {
  id: 'BAU',
  rawId: buf(4, 5),
  type: 'public-key',
  response: { clientDataJSON: buf(1), authenticatorData: buf(2), signature: buf(3), userHandle: buf(0, 1) },
  getClientExtensionResults: () => ({}),
};

/** Installs navigator.credentials (and PublicKeyCredential) with create/get mocks. */
export function fakeCredentials(impl: { create?: () => Promise<unknown>; get?: () => Promise<unknown> }) {
  const create = vi.fn(impl.create ?? (async () => fakeAttestation));
  const get = vi.fn(impl.get ?? (async () => fakeAssertion));
  vi.stubGlobal('PublicKeyCredential', class {});
  Object.defineProperty(navigator, 'credentials', { value: { create, get }, configurable: true });
  return { create, get };
}

export function removeFakeCredentials() {
  Object.defineProperty(navigator, 'credentials', { value: undefined, configurable: true });
}

import { describe, expect, it } from 'vitest';
import {
  assertionJSON,
  attestationJSON,
  base64urlToBuffer,
  bufferToBase64url,
  ceremonyProblem,
  creationOptions,
  requestOptions,
} from './webauthn';

const bytes = (buf: ArrayBuffer | BufferSource | undefined) => Array.from(new Uint8Array(buf as ArrayBuffer));

describe('base64url', () => {
  it('round-trips every byte value, without padding and with the URL alphabet', () => {
    const all = new Uint8Array(256).map((_, i) => i);
    const text = bufferToBase64url(all);
    expect(text).not.toMatch(/[+/=]/);
    expect(bytes(base64urlToBuffer(text))).toEqual(Array.from(all));
  });

  it('decodes the lengths that need padding', () => {
    expect(bytes(base64urlToBuffer('AQ'))).toEqual([1]);
    expect(bytes(base64urlToBuffer('AQI'))).toEqual([1, 2]);
    expect(bytes(base64urlToBuffer('-_8'))).toEqual([0xfb, 0xff]);
    expect(bufferToBase64url(new Uint8Array([0xfb, 0xff]))).toBe('-_8');
  });

  it('encodes a view on part of a buffer, not the whole buffer', () => {
    const view = new Uint8Array([9, 1, 2, 9]).subarray(1, 3);
    expect(bufferToBase64url(view)).toBe('AQI');
  });
});

describe('options', () => {
  it('turns registration options into buffers where the browser wants them', () => {
    const o = creationOptions({
      rp: { id: 'localhost', name: 'Cairn' },
      user: { id: 'AAAAAAAAAAE', name: 'admin', displayName: 'admin' },
      challenge: 'AQID',
      pubKeyCredParams: [{ type: 'public-key', alg: -7 }],
      excludeCredentials: [{ type: 'public-key', id: 'BAU', transports: ['internal'] }],
      authenticatorSelection: { residentKey: 'required', userVerification: 'required' },
    });
    expect(bytes(o.challenge)).toEqual([1, 2, 3]);
    expect(bytes(o.user.id)).toEqual([0, 0, 0, 0, 0, 0, 0, 1]);
    expect(o.user.name).toBe('admin');
    expect(bytes(o.excludeCredentials![0].id)).toEqual([4, 5]);
    expect(o.excludeCredentials![0].transports).toEqual(['internal']);
    expect(o.rp.id).toBe('localhost');
    expect(o.authenticatorSelection?.residentKey).toBe('required');
  });

  it('turns sign-in options into buffers and keeps an absent allow list absent', () => {
    const o = requestOptions({ challenge: 'AQID', rpId: 'localhost', userVerification: 'required' });
    expect(bytes(o.challenge)).toEqual([1, 2, 3]);
    expect(o.allowCredentials).toBeUndefined();
    expect(o.rpId).toBe('localhost');
  });
});

describe('credentials', () => {
  const buf = (...b: number[]) => new Uint8Array(b).buffer;

  it('serializes a new credential for register/verify', () => {
    const cred = {
      id: 'BAU',
      rawId: buf(4, 5),
      type: 'public-key',
      response: { clientDataJSON: buf(1), attestationObject: buf(2), getTransports: () => ['internal'] },
      getClientExtensionResults: () => ({}),
    } as unknown as PublicKeyCredential;
    expect(attestationJSON(cred)).toEqual({
      id: 'BAU',
      rawId: 'BAU',
      type: 'public-key',
      response: { clientDataJSON: 'AQ', attestationObject: 'Ag', transports: ['internal'] },
      clientExtensionResults: {},
    });
  });

  it('serializes an assertion for authenticate/verify', () => {
    const cred = {
      id: 'BAU',
      rawId: buf(4, 5),
      type: 'public-key',
      response: { clientDataJSON: buf(1), authenticatorData: buf(2), signature: buf(3), userHandle: buf(0, 1) },
      getClientExtensionResults: () => ({}),
    } as unknown as PublicKeyCredential;
    expect(assertionJSON(cred)).toEqual({
      id: 'BAU',
      rawId: 'BAU',
      type: 'public-key',
      response: { clientDataJSON: 'AQ', authenticatorData: 'Ag', signature: 'Aw', userHandle: 'AAE' },
      clientExtensionResults: {},
    });
  });
});

describe('ceremonyProblem', () => {
  it('explains the browser refusals and leaves other errors alone', () => {
    expect(ceremonyProblem(new DOMException('x', 'NotAllowedError'))).toMatch(/cancelled/);
    expect(ceremonyProblem(new DOMException('x', 'InvalidStateError'))).toMatch(/already holds/);
    expect(ceremonyProblem(new Error('x'))).toBeNull();
  });
});

import * as OTPAuth from 'otpauth';

export const STEP_SECONDS = 30;

/** RFC 6238 code (SHA-1, 6 digits, 30 s) for `secret` at `atMs`, with the time step it belongs to. */
export function totp(secret: string, atMs: number = Date.now()): { code: string; step: number } {
  const generator = new OTPAuth.TOTP({
    secret: OTPAuth.Secret.fromBase32(secret.replace(/\s+/g, '').toUpperCase()),
    algorithm: 'SHA1',
    digits: 6,
    period: STEP_SECONDS,
  });
  return { code: generator.generate({ timestamp: atMs }), step: Math.floor(atMs / 1000 / STEP_SECONDS) };
}

/**
 * A code from a step later than `usedStep`: the Engine refuses a code whose
 * step this account already used, and takes one step of clock skew either
 * way. So the next step's code is good at once, before its time: a wait is
 * needed only when `usedStep` is itself ahead of the clock (codes used in
 * quick succession), and then until one step before the one wanted.
 */
export async function freshTotp(secret: string, usedStep: number): Promise<{ code: string; step: number }> {
  for (;;) {
    const now = Date.now();
    const current = Math.floor(now / 1000 / STEP_SECONDS);
    const step = Math.max(current, usedStep + 1);
    if (step <= current + 1) return totp(secret, step * STEP_SECONDS * 1000);
    const usableAt = (step - 1) * STEP_SECONDS * 1000;
    await new Promise((r) => setTimeout(r, Math.max(50, usableAt - now + 200)));
  }
}

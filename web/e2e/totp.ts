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
 * step this account already used, so wait for the next step when needed.
 */
export async function freshTotp(secret: string, usedStep: number): Promise<{ code: string; step: number }> {
  for (;;) {
    const now = Date.now();
    const current = totp(secret, now);
    if (current.step > usedStep) return current;
    const nextStepAt = (usedStep + 1) * STEP_SECONDS * 1000;
    await new Promise((r) => setTimeout(r, Math.max(50, nextStepAt - now + 200)));
  }
}

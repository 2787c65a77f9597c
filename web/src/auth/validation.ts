// Client-side checks that mirror the Engine's rules (docs/api.md) so people
// see them before a round trip. The Engine checks again and wins.

export const MIN_SECRET = 12;
export const MAX_PASSPHRASE = 1024;
export const MAX_PASSWORD = 256;
export const USERNAME_PATTERN = /^[A-Za-z0-9._@-]{3,64}$/;

export function checkSecret(value: string, label: string, max: number): string | null {
  if (value.length < MIN_SECRET) return `${label} must be at least ${MIN_SECRET} characters.`;
  if (value.length > max) return `${label} must be at most ${max} characters.`;
  return null;
}

export function checkConfirmation(value: string, confirmation: string): string | null {
  return value === confirmation ? null : 'Does not match.';
}

export function checkUsername(value: string): string | null {
  if (!USERNAME_PATTERN.test(value.trim()))
    return 'Use 3 to 64 letters, digits or . _ - @';
  return null;
}

export type FieldErrors = Record<string, string | null>;

export function hasErrors(errors: FieldErrors): boolean {
  return Object.values(errors).some(Boolean);
}

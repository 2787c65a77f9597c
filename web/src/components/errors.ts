import { ApiError } from '../api/client';

/** The server's message for one input, from `fields`. */
export function fieldError(error: unknown, field: string): string | undefined {
  if (error instanceof ApiError) return error.fields[field];
  return undefined;
}

/** Field errors for which the form has no input, so they are not lost. */
export function unmatchedFieldErrors(error: unknown, shown: readonly string[]): [string, string][] {
  if (!(error instanceof ApiError)) return [];
  return Object.entries(error.fields).filter(([k]) => !shown.includes(k));
}

export function errorCode(error: unknown): string | null {
  return error instanceof ApiError ? error.code : null;
}

/** Text for an error that is not attached to an input. */
export function describeError(error: unknown): string {
  if (error instanceof ApiError) {
    switch (error.code) {
      case 'aegis_locked':
        return 'The master cipher is locked. It must be unlocked with its passphrase before anyone can sign in.';
      case 'rate_limited':
        return 'Too many attempts.';
      case 'csrf_failed':
        return 'The request was refused because its CSRF token did not match. Reload the page and try again.';
      case 'unavailable':
        return error.message || 'A dependency of the Engine (PostgreSQL or Temporal) does not answer.';
      default:
        return error.message;
    }
  }
  if (error instanceof Error) return error.message;
  return String(error);
}

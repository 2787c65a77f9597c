// The Engine names a list item's field `steps[1].name` or `device_guids[3]`;
// the forms name their inputs `steps.1.name` and `device_guids`. These map
// one onto the other so each message lands at its input.
import { ApiError } from '../../api/client';

const bracketed = (field: string) => field.replace(/\.(\d+)(?=\.|$)/g, '[$1]');

/** True when the Engine's field `key` belongs at the input named `field`. */
export function fieldMatches(key: string, field: string): boolean {
  return key === field || key === bracketed(field) || (key.startsWith(`${field}[`) && /^\[\d+\]$/.test(key.slice(field.length)));
}

/** The Engine's message for the input named `field`, if any. */
export function apiFieldError(error: unknown, field: string): string | undefined {
  if (!(error instanceof ApiError)) return undefined;
  for (const [k, v] of Object.entries(error.fields)) if (fieldMatches(k, field)) return v;
  return undefined;
}

/** The Engine's field names that the form shows at an input, for ErrorAlert's `fields`. */
export function shownFields(error: unknown, inputs: readonly string[]): string[] {
  if (!(error instanceof ApiError)) return [];
  return Object.keys(error.fields).filter((k) => inputs.some((f) => fieldMatches(k, f)));
}

// SPEC "Backup and restore rules" 5: after a restore the console polls
// /api/bootstrap/state and navigates only after a minimum refresh window
// plus two stable answers in a row.

/** The minimum refresh window after a restore, in milliseconds. */
export const RESTORE_MIN_WINDOW_MS = 10_000;

export interface RestorePoll {
  /** When the restore answered (ms since the epoch). */
  restoredAt: number;
  /** The phases answered so far, oldest first (null: no answer, an error). */
  answers: (string | null)[];
}

/**
 * The phase to navigate with, once the window has passed and the last two
 * answers agree; null to keep polling.
 */
export function restoreDestination(poll: RestorePoll, now: number, minWindowMs = RESTORE_MIN_WINDOW_MS): string | null {
  if (now - poll.restoredAt < minWindowMs) return null;
  const n = poll.answers.length;
  if (n < 2) return null;
  const [a, b] = [poll.answers[n - 2], poll.answers[n - 1]];
  return a !== null && a === b ? a : null;
}

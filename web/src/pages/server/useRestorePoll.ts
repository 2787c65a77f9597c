import { useCallback, useEffect, useRef, useState } from 'react';
import { bootstrap } from '../../api/endpoints';
import { RESTORE_MIN_WINDOW_MS, restoreDestination, type RestorePoll } from './restorePoll';

/** How often the phase is asked after a restore, and the minimum window (tests shorten them). */
export const restorePolling = { intervalMs: 2000, minWindowMs: RESTORE_MIN_WINDOW_MS };

/**
 * SPEC "Backup and restore rules" 5: once started (when a restore
 * answered), polls GET /api/bootstrap/state and calls onSettled with the
 * phase once the minimum refresh window has passed and two answers in a
 * row agree. An answer that fails (the Engine restarting) counts as none.
 */
export function useRestorePoll(onSettled: (phase: string) => void): { polling: boolean; start: () => void } {
  const [poll, setPoll] = useState<RestorePoll | null>(null);
  const settled = useRef(onSettled);
  settled.current = onSettled;
  const done = useRef(false);

  useEffect(() => {
    if (!poll || done.current) return;
    const dest = restoreDestination(poll, Date.now(), restorePolling.minWindowMs);
    if (dest) {
      done.current = true;
      settled.current(dest);
      return;
    }
    let live = true;
    const timer = window.setTimeout(() => {
      bootstrap
        .state()
        .then((s) => s.phase as string)
        .catch(() => null)
        .then((phase) => {
          if (live) setPoll((p) => (p ? { ...p, answers: [...p.answers, phase] } : p));
        });
    }, restorePolling.intervalMs);
    return () => {
      live = false;
      window.clearTimeout(timer);
    };
  }, [poll]);

  const start = useCallback(() => {
    done.current = false;
    setPoll({ restoredAt: Date.now(), answers: [] });
  }, []);
  return { polling: poll !== null, start };
}

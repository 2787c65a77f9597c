import { useEffect, useState } from 'react';
import Alert from '@mui/material/Alert';
import AlertTitle from '@mui/material/AlertTitle';
import { ApiError } from '../api/client';
import { describeError, unmatchedFieldErrors } from './errors';

const TITLES: Record<string, string> = {
  aegis_locked: 'Master cipher locked',
  rate_limited: 'Rate limited',
  unavailable: 'Service unavailable',
  network_error: 'Engine unreachable',
  forbidden: 'Not allowed',
  reauthentication_required: 'Confirm it is you',
  setup_code_required: 'Setup code needed',
  internal: 'Engine error',
};

export function formatWait(seconds: number): string {
  if (seconds < 90) return `${seconds} s`;
  const m = Math.floor(seconds / 60);
  const s = seconds % 60;
  return s ? `${m} min ${s} s` : `${m} min`;
}

/** Counts down from the moment the error arrived. */
function useSecondsLeft(error: unknown): number | null {
  const retryAfter = error instanceof ApiError ? error.retryAfter : null;
  const [left, setLeft] = useState<number | null>(retryAfter);
  useEffect(() => {
    setLeft(retryAfter);
    if (retryAfter === null) return;
    const start = Date.now();
    const timer = window.setInterval(() => {
      const remaining = Math.max(0, retryAfter - Math.floor((Date.now() - start) / 1000));
      setLeft(remaining);
      if (remaining === 0) window.clearInterval(timer);
    }, 1000);
    return () => window.clearInterval(timer);
  }, [error, retryAfter]);
  return left;
}

/**
 * Shows an API error that is not attached to an input. `fields` lists the
 * inputs the form shows its own field errors on; a validation error whose
 * fields all have inputs needs no alert.
 */
export function ErrorAlert({ error, fields = [] }: { error: unknown; fields?: readonly string[] }) {
  const secondsLeft = useSecondsLeft(error);
  if (!error) return null;
  const unmatched = unmatchedFieldErrors(error, fields);
  const isApi = error instanceof ApiError;
  if (isApi && Object.keys(error.fields).length > 0 && unmatched.length === 0) return null;

  const code = isApi ? error.code : null;
  const severity = code === 'rate_limited' || code === 'aegis_locked' ? 'warning' : 'error';
  return (
    <Alert severity={severity} data-testid="error-alert" data-code={code ?? undefined} sx={{ mb: 2 }}>
      {code && TITLES[code] && <AlertTitle>{TITLES[code]}</AlertTitle>}
      {describeError(error)}
      {code === 'rate_limited' &&
        (secondsLeft !== null && secondsLeft > 0
          ? ` Try again in ${formatWait(secondsLeft)}.`
          : secondsLeft === 0
            ? ' You can try again now.'
            : ' Wait a few minutes and try again.')}
      {unmatched.length > 0 && (
        <ul style={{ margin: '4px 0 0', paddingLeft: 18 }}>
          {unmatched.map(([k, v]) => (
            <li key={k}>
              <code>{k}</code>: {v}
            </li>
          ))}
        </ul>
      )}
      {isApi && error.status >= 500 && error.requestId && (
        <div style={{ fontSize: 12, opacity: 0.8, marginTop: 4 }}>Request ID: {error.requestId}</div>
      )}
    </Alert>
  );
}

/** True while a 429's Retry-After has not passed; forms disable their submit button meanwhile. */
export function useRateLimited(error: unknown): boolean {
  const left = useSecondsLeft(error);
  return error instanceof ApiError && error.code === 'rate_limited' && left !== null && left > 0;
}

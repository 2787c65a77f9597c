import { useState, type FormEvent } from 'react';
import { useMutation } from '@tanstack/react-query';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import TextField from '@mui/material/TextField';
import { ErrorAlert, useRateLimited } from '../components/ErrorAlert';
import { errorCode, fieldError } from '../components/errors';

export const CODE_PATTERN = /^\d{6}$/;

// The Engine says whether the code was wrong or already used; fall back to a
// sentence that covers both.
function wrongCodeText(error: unknown): string {
  const message = error instanceof Error ? error.message.trim() : '';
  const text = message || 'that code is wrong, expired or was already used';
  return `${text.charAt(0).toUpperCase()}${text.slice(1)}${/[.!?]$/.test(text) ? '' : '.'}`;
}

/** The six-digit authenticator code step. `onRestart` goes back when the pending token is no longer valid. */
export function MfaCodeForm<T>({
  verify,
  onVerified,
  onRestart,
  submitLabel = 'Verify',
  restartLabel = 'Start over',
}: {
  verify: (code: string) => Promise<T>;
  onVerified: (result: T) => void;
  onRestart?: () => void;
  submitLabel?: string;
  restartLabel?: string;
}) {
  const [code, setCode] = useState('');
  const [localError, setLocalError] = useState<string | null>(null);
  const mutation = useMutation({ mutationFn: verify, onSuccess: onVerified });
  const limited = useRateLimited(mutation.error);
  const pendingExpired = errorCode(mutation.error) === 'invalid_pending_token';

  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (!CODE_PATTERN.test(code)) {
      setLocalError('Enter the 6-digit code your authenticator app shows.');
      return;
    }
    setLocalError(null);
    mutation.mutate(code);
  };

  const serverFieldError = fieldError(mutation.error, 'code');
  const wrongCode = errorCode(mutation.error) === 'invalid_mfa_code';
  return (
    <Box component="form" noValidate onSubmit={submit}>
      {!wrongCode && <ErrorAlert error={mutation.error} fields={['code']} />}
      {pendingExpired && onRestart && (
        <Button variant="outlined" size="small" onClick={onRestart} sx={{ mb: 2 }}>
          {restartLabel}
        </Button>
      )}
      <TextField
        label="Authentication code"
        name="code"
        value={code}
        onChange={(e) => {
          setCode(e.target.value.replace(/\D/g, '').slice(0, 6));
          setLocalError(null);
        }}
        autoComplete="one-time-code"
        autoFocus
        fullWidth
        error={Boolean(localError || serverFieldError || wrongCode)}
        helperText={
          localError ??
          serverFieldError ??
          (wrongCode ? wrongCodeText(mutation.error) : 'The 6 digits your authenticator app shows now.')
        }
        slotProps={{ htmlInput: { inputMode: 'numeric', pattern: '[0-9]*', maxLength: 6 } }}
        sx={{ mb: 2 }}
      />
      <Button type="submit" variant="contained" fullWidth disabled={mutation.isPending || limited || pendingExpired}>
        {mutation.isPending ? 'Verifying…' : submitLabel}
      </Button>
    </Box>
  );
}

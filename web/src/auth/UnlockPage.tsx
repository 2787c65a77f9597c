import { useState, type FormEvent } from 'react';
import { useMutation } from '@tanstack/react-query';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import TextField from '@mui/material/TextField';
import LockOpenIcon from '@mui/icons-material/LockOpen';
import { bootstrap } from '../api/endpoints';
import type { PhaseResponse } from '../api/types';
import { ErrorAlert, useRateLimited } from '../components/ErrorAlert';
import { errorCode, fieldError } from '../components/errors';
import { AuthShell } from './AuthShell';

/** After an Engine restart the cipher must be unlocked before anyone can sign in. */
export function UnlockPage({ onUnlocked }: { onUnlocked: (r: PhaseResponse) => void }) {
  const [passphrase, setPassphrase] = useState('');
  const [localError, setLocalError] = useState<string | null>(null);
  const mutation = useMutation({ mutationFn: bootstrap.aegisUnlock, onSuccess: onUnlocked });
  const limited = useRateLimited(mutation.error);
  const wrong = errorCode(mutation.error) === 'invalid_passphrase';

  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (!passphrase) {
      setLocalError('Enter the master-cipher passphrase.');
      return;
    }
    setLocalError(null);
    mutation.mutate(passphrase);
  };

  const fieldMsg = localError ?? fieldError(mutation.error, 'passphrase') ?? (wrong ? 'Wrong passphrase.' : undefined);
  return (
    <AuthShell
      title="Unlock the master cipher"
      subtitle="The Engine restarted. Enter the master-cipher passphrase so it can read stored secrets; sign-in is available once it is unlocked."
    >
      <Box component="form" noValidate onSubmit={submit}>
        {!wrong && <ErrorAlert error={mutation.error} fields={['passphrase']} />}
        <TextField
          label="Passphrase"
          name="passphrase"
          type="password"
          autoComplete="current-password"
          autoFocus
          fullWidth
          value={passphrase}
          onChange={(e) => setPassphrase(e.target.value)}
          error={Boolean(fieldMsg)}
          helperText={fieldMsg ?? ' '}
          sx={{ mb: 1 }}
        />
        <Button type="submit" variant="contained" fullWidth startIcon={<LockOpenIcon />} disabled={mutation.isPending || limited}>
          {mutation.isPending ? 'Unlocking…' : 'Unlock'}
        </Button>
      </Box>
    </AuthShell>
  );
}

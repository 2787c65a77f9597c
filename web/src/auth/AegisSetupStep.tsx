import { useState, type FormEvent } from 'react';
import { useMutation } from '@tanstack/react-query';
import Alert from '@mui/material/Alert';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import TextField from '@mui/material/TextField';
import { bootstrap } from '../api/endpoints';
import type { PhaseResponse } from '../api/types';
import { ErrorAlert } from '../components/ErrorAlert';
import { fieldError } from '../components/errors';
import { checkConfirmation, checkSecret, hasErrors, MAX_PASSPHRASE, MIN_SECRET, type FieldErrors } from './validation';

/** Wizard step 1: choose the master-cipher passphrase. */
export function AegisSetupStep({
  setupCode,
  onDone,
  onError,
}: {
  setupCode: string;
  onDone: (r: PhaseResponse) => void;
  onError?: (e: unknown) => void;
}) {
  const [passphrase, setPassphrase] = useState('');
  const [confirm, setConfirm] = useState('');
  const [local, setLocal] = useState<FieldErrors>({});
  const mutation = useMutation({
    mutationFn: (p: string) => bootstrap.aegisSetup(p, setupCode),
    onSuccess: onDone,
    onError,
  });

  const submit = (e: FormEvent) => {
    e.preventDefault();
    const errors = {
      passphrase: checkSecret(passphrase, 'The passphrase', MAX_PASSPHRASE),
      confirm: checkConfirmation(passphrase, confirm),
    };
    setLocal(errors);
    if (!hasErrors(errors)) mutation.mutate(passphrase);
  };

  const passphraseError = local.passphrase ?? fieldError(mutation.error, 'passphrase');
  return (
    <Box component="form" noValidate onSubmit={submit}>
      <Alert severity="info" variant="outlined" sx={{ mb: 2 }}>
        The master cipher encrypts every secret Cairn stores (passwords, authenticator keys, credentials). Cairn cannot
        recover this passphrase: keep it somewhere safe. You will type it again whenever the Engine restarts.
      </Alert>
      <ErrorAlert error={mutation.error} fields={['passphrase']} />
      <TextField
        label="Passphrase"
        name="passphrase"
        type="password"
        autoComplete="new-password"
        autoFocus
        fullWidth
        value={passphrase}
        onChange={(e) => setPassphrase(e.target.value)}
        error={Boolean(passphraseError)}
        helperText={passphraseError ?? `At least ${MIN_SECRET} characters. A few unrelated words work well.`}
        sx={{ mb: 2 }}
      />
      <TextField
        label="Confirm passphrase"
        name="confirm_passphrase"
        type="password"
        autoComplete="new-password"
        fullWidth
        value={confirm}
        onChange={(e) => setConfirm(e.target.value)}
        error={Boolean(local.confirm)}
        helperText={local.confirm ?? ' '}
        sx={{ mb: 1 }}
      />
      <Button type="submit" variant="contained" fullWidth disabled={mutation.isPending}>
        {mutation.isPending ? 'Setting up the master cipher…' : 'Set master cipher'}
      </Button>
    </Box>
  );
}

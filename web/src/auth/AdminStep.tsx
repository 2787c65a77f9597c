import { useState, type FormEvent } from 'react';
import { useMutation } from '@tanstack/react-query';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import TextField from '@mui/material/TextField';
import { bootstrap } from '../api/endpoints';
import type { PendingMfa } from '../api/types';
import { ErrorAlert } from '../components/ErrorAlert';
import { fieldError } from '../components/errors';
import {
  checkConfirmation,
  checkSecret,
  checkUsername,
  hasErrors,
  MAX_PASSWORD,
  MIN_SECRET,
  type FieldErrors,
} from './validation';

/**
 * Creates the first administrator (`setup`) or recovers a flagged one
 * (`recover`, which also needs the one-time recovery code). Both answer with
 * a pending token and a new authenticator to verify.
 */
export function AdminStep({
  mode,
  setupCode,
  onPending,
  onError,
}: {
  mode: 'setup' | 'recover';
  /** The first-run setup code (setup only). */
  setupCode: string;
  onPending: (p: PendingMfa) => void;
  onError?: (e: unknown) => void;
}) {
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const [confirm, setConfirm] = useState('');
  const [recoveryCode, setRecoveryCode] = useState('');
  const [local, setLocal] = useState<FieldErrors>({});
  const mutation = useMutation({
    mutationFn: () =>
      mode === 'setup'
        ? bootstrap.adminSetup(username.trim(), password, setupCode)
        : bootstrap.adminRecover(username.trim(), password, recoveryCode.trim()),
    onSuccess: onPending,
    onError,
  });

  const submit = (e: FormEvent) => {
    e.preventDefault();
    const errors: FieldErrors = {
      username: checkUsername(username),
      password: checkSecret(password, 'The password', MAX_PASSWORD),
      confirm: checkConfirmation(password, confirm),
      recovery_code: mode === 'recover' && !recoveryCode.trim() ? 'Enter the recovery code.' : null,
    };
    setLocal(errors);
    if (!hasErrors(errors)) mutation.mutate();
  };

  const err = (field: string) => local[field] ?? fieldError(mutation.error, field);
  const fields = mode === 'setup' ? ['username', 'password'] : ['username', 'password', 'recovery_code'];
  return (
    <Box component="form" noValidate onSubmit={submit}>
      <ErrorAlert error={mutation.error} fields={fields} />
      <TextField
        label="Username"
        name="username"
        autoComplete="username"
        autoFocus
        fullWidth
        value={username}
        onChange={(e) => setUsername(e.target.value)}
        error={Boolean(err('username'))}
        helperText={err('username') ?? (mode === 'setup' ? 'Letters, digits and . _ - @ (stored in lower case).' : 'An existing administrator.')}
        sx={{ mb: 2 }}
      />
      <TextField
        label={mode === 'setup' ? 'Password' : 'New password'}
        name="password"
        type="password"
        autoComplete="new-password"
        fullWidth
        value={password}
        onChange={(e) => setPassword(e.target.value)}
        error={Boolean(err('password'))}
        helperText={err('password') ?? `At least ${MIN_SECRET} characters.`}
        sx={{ mb: 2 }}
      />
      <TextField
        label={mode === 'setup' ? 'Confirm password' : 'Confirm new password'}
        name="confirm_password"
        type="password"
        autoComplete="new-password"
        fullWidth
        value={confirm}
        onChange={(e) => setConfirm(e.target.value)}
        error={Boolean(local.confirm)}
        helperText={local.confirm ?? ' '}
        sx={{ mb: mode === 'recover' ? 2 : 1 }}
      />
      {mode === 'recover' && (
        <TextField
          label="Recovery code"
          name="recovery_code"
          autoComplete="off"
          fullWidth
          value={recoveryCode}
          onChange={(e) => setRecoveryCode(e.target.value)}
          error={Boolean(err('recovery_code'))}
          helperText={
            err('recovery_code') ??
            'Shown once by the forced cipher reset, or printed on the server by `cairn admin recovery-code`.'
          }
          sx={{ mb: 1 }}
        />
      )}
      <Button type="submit" variant="contained" fullWidth disabled={mutation.isPending}>
        {mutation.isPending ? 'Saving…' : mode === 'setup' ? 'Create administrator' : 'Recover administrator'}
      </Button>
    </Box>
  );
}

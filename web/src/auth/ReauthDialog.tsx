import { useState, type FormEvent, type ReactNode } from 'react';
import { useMutation } from '@tanstack/react-query';
import Button from '@mui/material/Button';
import Dialog from '@mui/material/Dialog';
import DialogActions from '@mui/material/DialogActions';
import DialogContent from '@mui/material/DialogContent';
import DialogContentText from '@mui/material/DialogContentText';
import DialogTitle from '@mui/material/DialogTitle';
import Divider from '@mui/material/Divider';
import TextField from '@mui/material/TextField';
import { ErrorAlert } from '../components/ErrorAlert';
import { passkeys, type ReauthProof } from '../passkeys/api';
import { ceremonyProblem } from '../passkeys/webauthn';

/**
 * Asks the signed-in operator to prove again who they are before a
 * sensitive action (a stolen session alone must not do it): password and
 * authenticator code, or one of their passkeys. `action` runs with the
 * proof; the Engine answers reauthentication_required when it is wrong.
 */
export function ReauthDialog<T>({
  title,
  children,
  submitLabel,
  offerPasskey,
  action,
  onDone,
  onClose,
}: {
  title: string;
  children?: ReactNode;
  submitLabel: string;
  offerPasskey: boolean;
  action: (proof: ReauthProof) => Promise<T>;
  onDone: (result: T) => void;
  onClose: () => void;
}) {
  const [password, setPassword] = useState('');
  const [code, setCode] = useState('');
  const [missing, setMissing] = useState<string | null>(null);
  const mutation = useMutation({
    mutationFn: async (how: 'password' | 'passkey') =>
      action(how === 'passkey' ? await passkeys.reauth() : { password, totp_code: code }),
    onSuccess: onDone,
  });

  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (!password) {
      setMissing('Enter your password.');
      return;
    }
    setMissing(null);
    mutation.mutate('password');
  };

  const problem = ceremonyProblem(mutation.error);
  return (
    <Dialog open onClose={mutation.isPending ? undefined : onClose} fullWidth maxWidth="xs">
      <form noValidate onSubmit={submit}>
        <DialogTitle>{title}</DialogTitle>
        <DialogContent>
          {children}
          <DialogContentText sx={{ mb: 2 }}>
            Confirm it is you: enter your password and a code from your authenticator app
            {offerPasskey ? ', or use one of your passkeys' : ''}.
          </DialogContentText>
          {problem ? (
            <DialogContentText color="warning.main" sx={{ mb: 2 }} data-testid="passkey-ceremony-problem">
              {problem}
            </DialogContentText>
          ) : (
            <ErrorAlert error={mutation.error} />
          )}
          <TextField
            label="Your password"
            name="reauth_password"
            type="password"
            autoComplete="current-password"
            autoFocus
            fullWidth
            value={password}
            onChange={(e) => setPassword(e.target.value)}
            error={Boolean(missing)}
            helperText={missing ?? ' '}
            sx={{ mt: 1 }}
          />
          <TextField
            label="Authenticator code"
            name="reauth_totp_code"
            autoComplete="one-time-code"
            fullWidth
            value={code}
            onChange={(e) => setCode(e.target.value.replace(/\D/g, '').slice(0, 6))}
            slotProps={{ htmlInput: { inputMode: 'numeric' } }}
            helperText="The 6-digit code your authenticator app shows now."
          />
          {offerPasskey && (
            <>
              <Divider sx={{ my: 2 }}>or</Divider>
              <Button fullWidth variant="outlined" disabled={mutation.isPending} onClick={() => mutation.mutate('passkey')}>
                Use a passkey
              </Button>
            </>
          )}
        </DialogContent>
        <DialogActions>
          <Button onClick={onClose} disabled={mutation.isPending}>
            Cancel
          </Button>
          <Button type="submit" variant="contained" disabled={mutation.isPending}>
            {submitLabel}
          </Button>
        </DialogActions>
      </form>
    </Dialog>
  );
}

import { useState, type FormEvent } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import Alert from '@mui/material/Alert';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import Chip from '@mui/material/Chip';
import Dialog from '@mui/material/Dialog';
import DialogActions from '@mui/material/DialogActions';
import DialogContent from '@mui/material/DialogContent';
import DialogContentText from '@mui/material/DialogContentText';
import DialogTitle from '@mui/material/DialogTitle';
import Paper from '@mui/material/Paper';
import TextField from '@mui/material/TextField';
import Typography from '@mui/material/Typography';
import { auth } from '../api/endpoints';
import type { User } from '../api/types';
import { ME_QUERY, useSession } from '../auth/session';
import { checkConfirmation, checkSecret, MAX_PASSWORD, MIN_SECRET } from '../auth/validation';
import { PageHeader } from '../components/ComingSoon';
import { ErrorAlert, useRateLimited } from '../components/ErrorAlert';
import { errorCode, fieldError } from '../components/errors';
import { formatDateTime } from '../components/format';
import { PasskeysSection } from '../passkeys/PasskeysSection';
import { TokensSection } from '../tokens/TokensSection';
import { tokensRevokedSentence } from '../tokens/revoked';

function Row({ label, children }: { label: string; children: React.ReactNode }) {
  return (
    <Box sx={{ display: 'flex', py: 0.75, borderBottom: 1, borderColor: 'divider', '&:last-of-type': { borderBottom: 0 } }}>
      <Typography variant="body2" color="text.secondary" sx={{ width: 190, flexShrink: 0 }}>
        {label}
      </Typography>
      <Typography variant="body2" component="div">
        {children}
      </Typography>
    </Box>
  );
}

function Section({ title, children }: { title: string; children: React.ReactNode }) {
  return (
    <Paper variant="outlined" sx={{ p: 2.5, mb: 2 }}>
      <Typography variant="subtitle1" component="h2" sx={{ fontWeight: 600, mb: 1.5 }}>
        {title}
      </Typography>
      {children}
    </Paper>
  );
}

export function mfaState(user: User): { label: string; color: 'success' | 'warning' | 'default' } {
  if (!user.mfa_enabled) return { label: 'Not required (disabled by an administrator)', color: 'default' };
  if (user.mfa_configured) return { label: 'Authenticator app set up', color: 'success' };
  return { label: 'Required; set up at next sign-in', color: 'warning' };
}

export function ProfilePage() {
  const session = useSession();
  const me = useQuery({ queryKey: ME_QUERY, queryFn: auth.meOrNull, staleTime: 0 });
  const user = me.data ?? session.user;
  const local = user.auth_source === 'local';
  const mfa = mfaState(user);

  return (
    <Box sx={{ maxWidth: 720 }}>
      <PageHeader title="Profile" subtitle="Your account, password, authenticator, passkeys and API tokens." />
      <Section title="Account">
        <Row label="Username">
          <span data-testid="profile-username">{user.username}</span>
        </Row>
        <Row label="Role">{user.role}</Row>
        <Row label="Sign-in source">{local ? 'Local account' : `Directory (${user.auth_source})`}</Row>
        <Row label="Two-step verification">
          <Chip size="small" label={mfa.label} color={mfa.color} variant="outlined" data-testid="profile-mfa" />
        </Row>
        <Row label="Passkeys">{user.passkey_count}</Row>
        <Row label="Created">{formatDateTime(user.created_at)}</Row>
      </Section>
      {local ? (
        <>
          <ChangePassword />
          <ResetAuthenticator />
          <Section title="Passkeys">
            <PasskeysSection />
          </Section>
        </>
      ) : (
        <Alert severity="info" sx={{ mb: 2 }}>
          Your password, authenticator and passkeys are managed by your directory, not by Cairn.
        </Alert>
      )}
      <Section title="API tokens">
        <TokensSection />
      </Section>
    </Box>
  );
}

function ChangePassword() {
  const [current, setCurrent] = useState('');
  const [next, setNext] = useState('');
  const [confirm, setConfirm] = useState('');
  const [local, setLocal] = useState<Record<string, string | null>>({});
  const [done, setDone] = useState(false);
  const [revoked, setRevoked] = useState(0);
  const mutation = useMutation({
    mutationFn: () => auth.passwordReset(current, next),
    onSuccess: (r) => {
      setDone(true);
      setRevoked(r.api_tokens_revoked);
      setCurrent('');
      setNext('');
      setConfirm('');
    },
  });
  const limited = useRateLimited(mutation.error);

  const submit = (e: FormEvent) => {
    e.preventDefault();
    setDone(false);
    const errors = {
      current_password: current ? null : 'Enter your current password.',
      new_password: checkSecret(next, 'The new password', MAX_PASSWORD),
      confirm: checkConfirmation(next, confirm),
    };
    setLocal(errors);
    if (!Object.values(errors).some(Boolean)) mutation.mutate();
  };

  const wrong = errorCode(mutation.error) === 'invalid_credentials';
  const currentErr = local.current_password ?? fieldError(mutation.error, 'current_password') ?? (wrong ? 'Wrong password.' : undefined);
  const newErr = local.new_password ?? fieldError(mutation.error, 'new_password');
  return (
    <Section title="Change password">
      <Box component="form" noValidate onSubmit={submit} sx={{ maxWidth: 380 }}>
        {done && (
          <Alert severity="success" sx={{ mb: 2 }} data-testid="password-changed">
            Password changed. Your other sessions were signed out.{tokensRevokedSentence(revoked)}
          </Alert>
        )}
        {!wrong && <ErrorAlert error={mutation.error} fields={['current_password', 'new_password']} />}
        <TextField
          label="Current password"
          name="current_password"
          type="password"
          autoComplete="current-password"
          fullWidth
          value={current}
          onChange={(e) => setCurrent(e.target.value)}
          error={Boolean(currentErr)}
          helperText={currentErr ?? ' '}
          sx={{ mb: 1 }}
        />
        <TextField
          label="New password"
          name="new_password"
          type="password"
          autoComplete="new-password"
          fullWidth
          value={next}
          onChange={(e) => setNext(e.target.value)}
          error={Boolean(newErr)}
          helperText={newErr ?? `At least ${MIN_SECRET} characters.`}
          sx={{ mb: 2 }}
        />
        <TextField
          label="Confirm new password"
          name="confirm_new_password"
          type="password"
          autoComplete="new-password"
          fullWidth
          value={confirm}
          onChange={(e) => setConfirm(e.target.value)}
          error={Boolean(local.confirm)}
          helperText={local.confirm ?? ' '}
          sx={{ mb: 1 }}
        />
        <Button type="submit" variant="contained" disabled={mutation.isPending || limited}>
          {mutation.isPending ? 'Changing…' : 'Change password'}
        </Button>
      </Box>
    </Section>
  );
}

function ResetAuthenticator() {
  const queryClient = useQueryClient();
  const [open, setOpen] = useState(false);
  const [password, setPassword] = useState('');
  const [localErr, setLocalErr] = useState<string | null>(null);
  const [done, setDone] = useState(false);
  const [revoked, setRevoked] = useState(0);
  const mutation = useMutation({
    mutationFn: () => auth.mfaReset(password),
    onSuccess: (r) => {
      setDone(true);
      setRevoked(r.api_tokens_revoked);
      setOpen(false);
      setPassword('');
      void queryClient.invalidateQueries({ queryKey: ME_QUERY });
    },
  });

  const close = () => {
    setOpen(false);
    setPassword('');
    setLocalErr(null);
    mutation.reset();
  };
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (!password) {
      setLocalErr('Enter your password.');
      return;
    }
    setLocalErr(null);
    mutation.mutate();
  };
  const wrong = errorCode(mutation.error) === 'invalid_credentials';
  const pwErr = localErr ?? fieldError(mutation.error, 'password') ?? (wrong ? 'Wrong password.' : undefined);

  return (
    <Section title="Authenticator app">
      {done && (
        <Alert severity="success" sx={{ mb: 2 }} data-testid="mfa-reset-done">
          Your authenticator was cleared. The next time you sign in, Cairn shows a new QR code to set one up.
          {tokensRevokedSentence(revoked)}
        </Alert>
      )}
      <Typography variant="body2" sx={{ mb: 1.5 }}>
        Lost or replaced the phone with your authenticator app? Reset it here. You stay signed in now; the next sign-in
        asks you to set up a new authenticator.
      </Typography>
      <Button variant="outlined" color="warning" onClick={() => setOpen(true)}>
        Reset authenticator
      </Button>
      <Dialog open={open} onClose={mutation.isPending ? undefined : close} fullWidth maxWidth="xs">
        <form noValidate onSubmit={submit}>
          <DialogTitle>Reset your authenticator?</DialogTitle>
          <DialogContent>
            <DialogContentText sx={{ fontSize: 14, mb: 2 }}>
              Your current authenticator app stops working for Cairn. The next time you sign in with your password you
              will scan a new QR code and enter a code from it. Passkeys are not affected.
            </DialogContentText>
            {!wrong && <ErrorAlert error={mutation.error} fields={['password']} />}
            <TextField
              label="Password"
              name="password"
              type="password"
              autoComplete="current-password"
              autoFocus
              fullWidth
              value={password}
              onChange={(e) => setPassword(e.target.value)}
              error={Boolean(pwErr)}
              helperText={pwErr ?? 'Confirm with your password.'}
            />
          </DialogContent>
          <DialogActions>
            <Button onClick={close} disabled={mutation.isPending}>
              Cancel
            </Button>
            <Button type="submit" color="warning" variant="contained" disabled={mutation.isPending}>
              {mutation.isPending ? 'Resetting…' : 'Reset authenticator'}
            </Button>
          </DialogActions>
        </form>
      </Dialog>
    </Section>
  );
}

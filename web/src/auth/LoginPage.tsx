import { useState, type FormEvent } from 'react';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import Alert from '@mui/material/Alert';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import TextField from '@mui/material/TextField';
import { auth } from '../api/endpoints';
import type { LoginResponse, MfaSetup, User } from '../api/types';
import { ErrorAlert, useRateLimited } from '../components/ErrorAlert';
import { errorCode, fieldError } from '../components/errors';
import { PasskeySignInButton } from '../passkeys/PasskeySignInButton';
import { AuthShell } from './AuthShell';
import { BOOTSTRAP_QUERY, wizardLabels, type WizardKind } from './BootstrapFlow';
import { MfaCodeForm } from './MfaCodeForm';
import { MfaEnrollment } from './MfaEnrollment';

interface Pending {
  token: string;
  setup: MfaSetup | null;
}

/** Username + password, then the authenticator code (and its setup when the account has none yet). */
export function LoginPage({
  onSignedIn,
  notice,
  afterWizard,
}: {
  onSignedIn: (user: User) => void;
  notice?: string | null;
  afterWizard?: WizardKind | null;
}) {
  const queryClient = useQueryClient();
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const [local, setLocal] = useState<{ username?: string; password?: string }>({});
  const [pending, setPending] = useState<Pending | null>(null);
  const [expired, setExpired] = useState(false);

  const login = useMutation({
    mutationFn: () => auth.login(username.trim(), password),
    onSuccess: (r: LoginResponse) => {
      if (r.mfa_required) {
        setPending({ token: r.pending_token, setup: r.mfa_setup });
      } else {
        onSignedIn(r.user);
      }
    },
    onError: (e) => {
      // Locked cipher or an unfinished bootstrap: the phase decides the screen.
      const code = errorCode(e);
      if (code === 'aegis_locked' || code === 'bootstrap_incomplete') {
        void queryClient.invalidateQueries({ queryKey: BOOTSTRAP_QUERY });
      }
    },
  });
  const limited = useRateLimited(login.error);

  const submit = (e: FormEvent) => {
    e.preventDefault();
    const errors = {
      username: username.trim() ? undefined : 'Enter your username.',
      password: password ? undefined : 'Enter your password.',
    };
    setLocal(errors);
    if (errors.username || errors.password) return;
    setExpired(false);
    login.mutate();
  };

  const backToPassword = (becauseExpired: boolean) => {
    setPending(null);
    setPassword('');
    setExpired(becauseExpired);
    login.reset();
  };

  const steps = afterWizard ? { labels: wizardLabels(afterWizard), active: 3 } : undefined;

  if (pending) {
    return (
      <AuthShell
        steps={steps}
        title={pending.setup ? 'Set up your authenticator' : 'Two-step verification'}
        subtitle={
          pending.setup
            ? 'Your account has no authenticator yet. Add Cairn to an authenticator app, then enter the code it shows.'
            : 'Enter the code from your authenticator app.'
        }
      >
        {pending.setup && <MfaEnrollment setup={pending.setup} />}
        <MfaCodeForm
          verify={(code) => auth.mfaVerify(pending.token, code)}
          onVerified={(r) => onSignedIn(r.user)}
          onRestart={() => backToPassword(true)}
          submitLabel={pending.setup ? 'Verify and sign in' : 'Sign in'}
          restartLabel="Back to sign-in"
        />
        <Button variant="text" size="small" onClick={() => backToPassword(false)} sx={{ mt: 1 }}>
          Use a different account
        </Button>
      </AuthShell>
    );
  }

  const badCredentials = errorCode(login.error) === 'invalid_credentials';
  const userErr = local.username ?? fieldError(login.error, 'username');
  const passErr = local.password ?? fieldError(login.error, 'password');
  return (
    <AuthShell steps={steps} title="Sign in" subtitle={afterWizard ? undefined : 'Cairn device management console'}>
      {afterWizard && !login.error && (
        <Alert severity="success" sx={{ mb: 2 }}>
          Setup is complete. Sign in with the administrator account and a fresh authenticator code.
        </Alert>
      )}
      {notice && !login.error && (
        <Alert severity="info" sx={{ mb: 2 }}>
          {notice}
        </Alert>
      )}
      {expired && !login.error && (
        <Alert severity="info" sx={{ mb: 2 }}>
          The verification step expired. Sign in again.
        </Alert>
      )}
      <Box component="form" noValidate onSubmit={submit}>
        {badCredentials ? (
          <Alert severity="error" sx={{ mb: 2 }} data-testid="error-alert" data-code="invalid_credentials">
            Wrong username or password.
          </Alert>
        ) : (
          <ErrorAlert error={login.error} fields={['username', 'password']} />
        )}
        <TextField
          label="Username"
          name="username"
          autoComplete="username"
          autoFocus
          fullWidth
          value={username}
          onChange={(e) => {
            setUsername(e.target.value);
            // The per-username limit may not apply to another name; let them try.
            if (limited) login.reset();
          }}
          error={Boolean(userErr)}
          helperText={userErr ?? ' '}
          sx={{ mb: 1 }}
        />
        <TextField
          label="Password"
          name="password"
          type="password"
          autoComplete="current-password"
          fullWidth
          value={password}
          onChange={(e) => setPassword(e.target.value)}
          error={Boolean(passErr)}
          helperText={passErr ?? ' '}
          sx={{ mb: 1 }}
        />
        <Button type="submit" variant="contained" fullWidth disabled={login.isPending || limited}>
          {login.isPending ? 'Signing in…' : 'Sign in'}
        </Button>
      </Box>
      <PasskeySignInButton onSignedIn={onSignedIn} />
    </AuthShell>
  );
}

import { useMutation, useQueryClient } from '@tanstack/react-query';
import Alert from '@mui/material/Alert';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import type { User } from '../api/types';
import { BOOTSTRAP_QUERY } from '../auth/BootstrapFlow';
import { ErrorAlert } from '../components/ErrorAlert';
import { errorCode } from '../components/errors';
import { passkeys } from './api';
import { ceremonyProblem, passkeysSupported } from './webauthn';

/** Passwordless sign-in: the browser offers the passkeys it holds for Cairn. */
export function PasskeySignInButton({ onSignedIn }: { onSignedIn: (user: User) => void }) {
  const queryClient = useQueryClient();
  const signIn = useMutation({
    mutationFn: passkeys.signIn,
    onSuccess: (r) => onSignedIn(r.user),
    onError: (e) => {
      const code = errorCode(e);
      if (code === 'aegis_locked' || code === 'bootstrap_incomplete') {
        void queryClient.invalidateQueries({ queryKey: BOOTSTRAP_QUERY });
      }
    },
  });
  if (!passkeysSupported()) return null;
  const problem = ceremonyProblem(signIn.error);
  const refused = errorCode(signIn.error) === 'invalid_credentials';
  return (
    <Box sx={{ mt: 2 }}>
      {problem && (
        <Alert severity="warning" sx={{ mb: 2 }} data-testid="passkey-ceremony-problem">
          {problem}
        </Alert>
      )}
      {refused && (
        <Alert severity="error" sx={{ mb: 2 }} data-testid="error-alert" data-code="invalid_credentials">
          {signIn.error?.message ?? 'This passkey was not accepted.'}
        </Alert>
      )}
      {!problem && !refused && <ErrorAlert error={signIn.error} />}
      <Button variant="outlined" fullWidth onClick={() => signIn.mutate()} disabled={signIn.isPending}>
        {signIn.isPending ? 'Waiting for your passkey…' : 'Sign in with a passkey'}
      </Button>
    </Box>
  );
}

import { useState, type FormEvent } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import Alert from '@mui/material/Alert';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import Dialog from '@mui/material/Dialog';
import DialogActions from '@mui/material/DialogActions';
import DialogContent from '@mui/material/DialogContent';
import DialogContentText from '@mui/material/DialogContentText';
import DialogTitle from '@mui/material/DialogTitle';
import Stack from '@mui/material/Stack';
import TextField from '@mui/material/TextField';
import Typography from '@mui/material/Typography';
import { sourceToken } from '../../api/endpoints';
import type { SourceTokenStatus } from '../../api/types';
import { useSession } from '../../auth/session';
import { ErrorAlert } from '../../components/ErrorAlert';
import { fieldError } from '../../components/errors';
import { formatDateTime } from '../../components/format';

export const SOURCE_TOKEN_QUERY = ['github-token'] as const;

function describeSource(st: SourceTokenStatus): string {
  if (st.source === 'stored') return 'A token stored in the Engine is used for source-hosting calls.';
  if (st.source === 'environment')
    return 'The token from the Engine environment (CAIRN_GITHUB_TOKEN or GITHUB_TOKEN) is used. A stored token would take precedence.';
  return 'No token: calls are anonymous, with the low public rate limit, unless a request brings its own X-GitHub-Token.';
}

function StatusView({ status }: { status: SourceTokenStatus }) {
  const rate = status.rate_limit;
  return (
    <Box sx={{ mb: 2 }} data-testid="source-token-status">
      <Typography variant="subtitle2">{status.has_token ? 'Token configured' : 'No token configured'}</Typography>
      <Typography variant="body2" color="text.secondary">
        {describeSource(status)}
      </Typography>
      {status.secret_status === 'unreadable' && (
        <Alert severity="warning" sx={{ mt: 1 }}>
          The stored token was sealed by a master cipher that was reset since, so it cannot be used. Set it again.
        </Alert>
      )}
      {rate ? (
        <Typography variant="body2" sx={{ mt: 1 }}>
          Rate limit: {rate.remaining.toLocaleString()} of {rate.limit.toLocaleString()} requests left, resets{' '}
          {formatDateTime(rate.reset_at)}.
        </Typography>
      ) : (
        status.has_token &&
        status.secret_status !== 'unreadable' && (
          <Typography variant="body2" color="text.secondary" sx={{ mt: 1 }}>
            The rate limit is unknown: the source host did not answer.
          </Typography>
        )
      )}
    </Box>
  );
}

/** The Engine's source-hosting (GitHub) token: status, set, clear. Administrators only. */
export default function SourceTokenPanel() {
  const { user } = useSession();
  const isAdmin = user.role === 'admin';
  const queryClient = useQueryClient();
  const [token, setToken] = useState('');
  const [localError, setLocalError] = useState<string | null>(null);
  const [confirmClear, setConfirmClear] = useState(false);
  const query = useQuery({ queryKey: SOURCE_TOKEN_QUERY, queryFn: sourceToken.status, enabled: isAdmin });

  const save = useMutation({
    mutationFn: (value: string | null) => sourceToken.set(value),
    onSuccess: (status) => {
      queryClient.setQueryData(SOURCE_TOKEN_QUERY, status);
      setToken('');
      setConfirmClear(false);
    },
  });

  if (!isAdmin)
    return (
      <Alert severity="info" variant="outlined">
        Only administrators can see or change the source-hosting token.
      </Alert>
    );

  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (!token.trim()) {
      setLocalError('Enter a token.');
      return;
    }
    setLocalError(null);
    save.mutate(token.trim());
  };
  const tokenErr = localError ?? (confirmClear ? undefined : fieldError(save.error, 'token'));

  return (
    <Box>
      <Typography variant="h6">Source-hosting token</Typography>
      <Typography variant="body2" color="text.secondary" sx={{ mb: 2 }}>
        Used to look up branch heads on GitHub for agents and scripts. It is checked with GitHub before it is stored,
        encrypted, and never shown again.
      </Typography>
      {query.isError && <ErrorAlert error={query.error} />}
      {query.data && <StatusView status={query.data} />}
      {!confirmClear && <ErrorAlert error={save.error} fields={['token']} />}
      <form noValidate onSubmit={submit}>
        <Stack direction="row" spacing={2} alignItems="flex-start">
          <TextField
            label={query.data?.source === 'stored' ? 'Replace token' : 'Token'}
            name="token"
            type="password"
            size="small"
            value={token}
            onChange={(e) => (setToken(e.target.value), setLocalError(null))}
            error={Boolean(tokenErr)}
            helperText={tokenErr ?? 'A fine-grained or classic personal access token.'}
            slotProps={{ htmlInput: { autoComplete: 'off', spellCheck: false } }}
            sx={{ flex: 1, maxWidth: 480 }}
          />
          <Button type="submit" variant="contained" disabled={save.isPending}>
            {save.isPending && !confirmClear ? 'Checking…' : 'Save token'}
          </Button>
          {query.data?.source === 'stored' && (
            <Button color="error" variant="outlined" onClick={() => (save.reset(), setConfirmClear(true))} disabled={save.isPending}>
              Clear
            </Button>
          )}
        </Stack>
      </form>
      {confirmClear && (
        <Dialog open onClose={save.isPending ? undefined : () => setConfirmClear(false)} fullWidth maxWidth="xs">
          <DialogTitle>Clear the stored token?</DialogTitle>
          <DialogContent>
            <ErrorAlert error={save.error} />
            <DialogContentText sx={{ fontSize: 14 }}>
              Source-hosting calls fall back to a request's own token, then the environment token, then anonymous calls.
            </DialogContentText>
          </DialogContent>
          <DialogActions>
            <Button onClick={() => setConfirmClear(false)} disabled={save.isPending}>
              Cancel
            </Button>
            <Button color="error" variant="contained" onClick={() => save.mutate(null)} disabled={save.isPending}>
              {save.isPending ? 'Clearing…' : 'Clear token'}
            </Button>
          </DialogActions>
        </Dialog>
      )}
    </Box>
  );
}

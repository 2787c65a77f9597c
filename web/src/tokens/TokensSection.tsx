import { useState, type FormEvent } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import Alert from '@mui/material/Alert';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import Checkbox from '@mui/material/Checkbox';
import Chip from '@mui/material/Chip';
import Dialog from '@mui/material/Dialog';
import DialogActions from '@mui/material/DialogActions';
import DialogContent from '@mui/material/DialogContent';
import DialogTitle from '@mui/material/DialogTitle';
import FormControlLabel from '@mui/material/FormControlLabel';
import FormHelperText from '@mui/material/FormHelperText';
import IconButton from '@mui/material/IconButton';
import InputAdornment from '@mui/material/InputAdornment';
import List from '@mui/material/List';
import ListItem from '@mui/material/ListItem';
import ListItemText from '@mui/material/ListItemText';
import MenuItem from '@mui/material/MenuItem';
import TextField from '@mui/material/TextField';
import Tooltip from '@mui/material/Tooltip';
import Typography from '@mui/material/Typography';
import CheckIcon from '@mui/icons-material/Check';
import ContentCopyIcon from '@mui/icons-material/ContentCopy';
import { ConfirmActionDialog } from '../components/ConfirmDialog';
import { ErrorAlert } from '../components/ErrorAlert';
import { fieldError } from '../components/errors';
import { formatDateTime } from '../components/format';
import { useCopy } from '../pages/enroll/shared';
import { apiTokens, MAX_TOKEN_NAME, SCOPE_DEVICE_CONTENT, type ApiToken, type CreatedApiToken, type TokenAccess } from './api';

export const TOKENS_QUERY = ['api-tokens'] as const;

export const TOKEN_EXPIRY_DAYS = [7, 30, 90, 365];

export function checkTokenName(name: string): string | null {
  const t = name.trim();
  if (!t) return 'Give the token a name.';
  if ([...t].length > MAX_TOKEN_NAME) return `At most ${MAX_TOKEN_NAME} characters.`;
  return null;
}

/** What a token may do: write tokens read device content anyway. */
export function describeAccess(t: Pick<ApiToken, 'access' | 'scopes'>): string {
  if (t.access === 'write') return 'Read and write';
  return (t.scopes ?? []).includes(SCOPE_DEVICE_CONTENT) ? 'Read only, with device content' : 'Read only';
}

function describe(t: ApiToken): string {
  const used = t.last_used_at ? `last used ${formatDateTime(t.last_used_at)}` : 'never used';
  const expiry = t.expired ? `expired ${formatDateTime(t.expires_at)}` : `expires ${formatDateTime(t.expires_at)}`;
  const by = t.created_by && t.created_by !== t.username ? ` · made by ${t.created_by}` : '';
  return `${describeAccess(t)} · ${used} · ${expiry}${by}`;
}

/** The Profile page's personal API tokens: create (shown once), list, revoke. */
export function TokensSection() {
  const queryClient = useQueryClient();
  const list = useQuery({ queryKey: TOKENS_QUERY, queryFn: apiTokens.list });
  const [creating, setCreating] = useState(false);
  const [revoking, setRevoking] = useState<ApiToken | null>(null);
  const refresh = () => void queryClient.invalidateQueries({ queryKey: TOKENS_QUERY });

  return (
    <Box data-testid="tokens-section">
      <Typography variant="body2" sx={{ mb: 1.5 }}>
        Scripts and integrations call the API with a token as <code>Authorization: Bearer cairn_pat_…</code>. A token acts
        as you, with at most your current role and sites; a read-only token cannot change anything, and reads file
        text, registry values, downloaded files, shell transcripts and process command lines only with the device
        content scope.
      </Typography>
      {list.error ? <ErrorAlert error={list.error} /> : null}
      {list.data && list.data.length === 0 && (
        <Typography variant="body2" color="text.secondary" sx={{ mb: 1 }}>
          No API tokens yet.
        </Typography>
      )}
      {list.data && list.data.length > 0 && (
        <List dense disablePadding sx={{ mb: 1 }}>
          {list.data.map((t) => (
            <ListItem
              key={t.id}
              divider
              data-testid="token-row"
              secondaryAction={
                <Button size="small" color="error" onClick={() => setRevoking(t)}>
                  Revoke
                </Button>
              }
            >
              <ListItemText
                primary={
                  <>
                    {t.name}{' '}
                    {(t.scopes ?? []).map((s) => (
                      <Chip key={s} size="small" label={s} variant="outlined" sx={{ ml: 0.5 }} />
                    ))}
                    {t.expired && <Chip size="small" label="Expired" variant="outlined" color="warning" sx={{ ml: 0.5 }} />}
                  </>
                }
                secondary={describe(t)}
              />
            </ListItem>
          ))}
        </List>
      )}
      <Button variant="outlined" onClick={() => setCreating(true)}>
        Create a token
      </Button>
      {creating && <CreateDialog onClose={() => setCreating(false)} onCreated={refresh} />}
      {revoking && <RevokeDialog token={revoking} onClose={() => setRevoking(null)} onDone={refresh} />}
    </Box>
  );
}

function CreateDialog({ onClose, onCreated }: { onClose: () => void; onCreated: () => void }) {
  const [name, setName] = useState('');
  const [days, setDays] = useState(30);
  const [access, setAccess] = useState<TokenAccess>('read');
  const [deviceContent, setDeviceContent] = useState(false);
  const [nameErr, setNameErr] = useState<string | null>(null);
  const [created, setCreated] = useState<CreatedApiToken | null>(null);
  const { copied, failed, copy } = useCopy();
  const mutation = useMutation({
    mutationFn: () =>
      apiTokens.create({
        name: name.trim(),
        expires_in_days: days,
        access,
        // Only read tokens take the scope: a write token reads device content anyway.
        ...(access === 'read' && deviceContent ? { scopes: [SCOPE_DEVICE_CONTENT] } : {}),
      }),
    onSuccess: (t) => {
      setCreated(t);
      onCreated();
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const err = checkTokenName(name);
    setNameErr(err);
    if (!err) mutation.mutate();
  };

  if (created) {
    return (
      <Dialog open onClose={onClose} fullWidth maxWidth="sm">
        <DialogTitle>Copy your new token</DialogTitle>
        <DialogContent>
          <Alert severity="warning" sx={{ mb: 2 }}>
            This is the only time Cairn shows the token. Copy it now and keep it in a secret store.
          </Alert>
          {failed && (
            <Alert severity="info" variant="outlined" sx={{ mb: 1 }}>
              The browser did not allow copying. Select the token and copy it by hand.
            </Alert>
          )}
          <TextField
            label={created.name}
            value={created.token}
            fullWidth
            slotProps={{
              htmlInput: { readOnly: true, 'data-testid': 'new-token', spellCheck: false },
              input: {
                sx: { fontFamily: 'monospace' },
                endAdornment: (
                  <InputAdornment position="end">
                    <Tooltip title={copied ? 'Copied' : 'Copy'}>
                      <IconButton aria-label="Copy token" onClick={() => void copy('token', created.token)}>
                        {copied ? <CheckIcon fontSize="small" color="success" /> : <ContentCopyIcon fontSize="small" />}
                      </IconButton>
                    </Tooltip>
                  </InputAdornment>
                ),
              },
            }}
            helperText={`${describeAccess(created)}; expires ${formatDateTime(created.expires_at)}.`}
          />
        </DialogContent>
        <DialogActions>
          <Button variant="contained" onClick={onClose}>
            Done
          </Button>
        </DialogActions>
      </Dialog>
    );
  }

  const nameError = nameErr ?? fieldError(mutation.error, 'name');
  return (
    <Dialog open onClose={mutation.isPending ? undefined : onClose} fullWidth maxWidth="xs">
      <form noValidate onSubmit={submit}>
        <DialogTitle>Create an API token</DialogTitle>
        <DialogContent>
          <ErrorAlert error={mutation.error} fields={['name', 'expires_in_days', 'access']} />
          <TextField
            label="Name"
            name="token_name"
            autoFocus
            fullWidth
            value={name}
            onChange={(e) => setName(e.target.value)}
            error={Boolean(nameError)}
            helperText={nameError ?? 'What uses it, for example: Backup script'}
            sx={{ mt: 1, mb: 2 }}
          />
          <TextField
            select
            label="Expires after"
            name="expires_in_days"
            fullWidth
            value={days}
            onChange={(e) => setDays(Number(e.target.value))}
            error={Boolean(fieldError(mutation.error, 'expires_in_days'))}
            helperText={fieldError(mutation.error, 'expires_in_days') ?? ' '}
            sx={{ mb: 1 }}
          >
            {TOKEN_EXPIRY_DAYS.map((d) => (
              <MenuItem key={d} value={d}>
                {d === 365 ? '1 year' : `${d} days`}
              </MenuItem>
            ))}
          </TextField>
          <TextField
            select
            label="Access"
            name="access"
            fullWidth
            value={access}
            onChange={(e) => setAccess(e.target.value as TokenAccess)}
            helperText="Read only answers 403 to anything that changes state."
          >
            <MenuItem value="read">Read only</MenuItem>
            <MenuItem value="write">Read and write</MenuItem>
          </TextField>
          {access === 'read' && (
            <Box sx={{ mt: 1 }}>
              <FormControlLabel
                control={
                  <Checkbox
                    name="device_content"
                    checked={deviceContent}
                    onChange={(e) => setDeviceContent(e.target.checked)}
                  />
                }
                label="Read device content"
              />
              <FormHelperText sx={{ mt: 0 }}>
                File text, registry values, downloaded files, shell transcripts and process command lines (
                {SCOPE_DEVICE_CONTENT}). Without it these are refused or hidden.
              </FormHelperText>
            </Box>
          )}
        </DialogContent>
        <DialogActions>
          <Button onClick={onClose} disabled={mutation.isPending}>
            Cancel
          </Button>
          <Button type="submit" variant="contained" disabled={mutation.isPending}>
            {mutation.isPending ? 'Creating…' : 'Create token'}
          </Button>
        </DialogActions>
      </form>
    </Dialog>
  );
}

function RevokeDialog({ token, onClose, onDone }: { token: ApiToken; onClose: () => void; onDone: () => void }) {
  return (
    <ConfirmActionDialog
      title={`Revoke ${token.name}?`}
      confirm="Revoke token"
      pending="Revoking…"
      action={() => apiTokens.revoke(token.id)}
      onDone={onDone}
      onClose={onClose}
    >
      Whatever uses this token is refused from now on. This cannot be undone.
    </ConfirmActionDialog>
  );
}

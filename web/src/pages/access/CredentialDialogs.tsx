import { useState, type FormEvent } from 'react';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import Button from '@mui/material/Button';
import Dialog from '@mui/material/Dialog';
import DialogActions from '@mui/material/DialogActions';
import DialogContent from '@mui/material/DialogContent';
import DialogContentText from '@mui/material/DialogContentText';
import DialogTitle from '@mui/material/DialogTitle';
import MenuItem from '@mui/material/MenuItem';
import Stack from '@mui/material/Stack';
import TextField from '@mui/material/TextField';
import { credentials as credentialsApi } from '../../api/endpoints';
import type { ConnectionType, Credential, CredentialInput, CredentialType, Site } from '../../api/types';
import { ErrorAlert } from '../../components/ErrorAlert';
import { fieldError } from '../../components/errors';

export const CREDENTIALS_QUERY = ['credentials'] as const;

const FIELDS = ['name', 'connection_type', 'credential_type', 'username', 'domain', 'password', 'site_id'] as const;
type Field = (typeof FIELDS)[number];

// Local checks mirror the Engine's (docs/api.md) so obvious mistakes are
// caught before a round trip; the Engine still has the last word.
function check(input: CredentialInput, creating: boolean): Partial<Record<Field, string>> {
  const errors: Partial<Record<Field, string>> = {};
  if (!input.name.trim()) errors.name = 'Enter a name.';
  else if (input.name.trim().length > 100) errors.name = 'At most 100 characters.';
  if (!input.username.trim()) errors.username = 'Enter a username.';
  if (input.credential_type === 'Domain' && !input.domain?.trim()) errors.domain = 'A Domain credential needs its domain.';
  if (creating && !input.password) errors.password = 'Enter the password.';
  return errors;
}

/**
 * Create (no `credential`) or edit a stored credential. The password is
 * write-only: editing starts with it empty, and an empty field keeps the
 * stored one. Mount it only while open so its state starts fresh.
 */
export function CredentialFormDialog({
  credential,
  sites,
  onClose,
}: {
  credential?: Credential;
  sites: Site[];
  onClose: () => void;
}) {
  const queryClient = useQueryClient();
  const creating = !credential;
  const [name, setName] = useState(credential?.name ?? '');
  const [connectionType, setConnectionType] = useState<ConnectionType>(credential?.connection_type ?? 'Windows');
  const [credentialType, setCredentialType] = useState<CredentialType>(credential?.credential_type ?? 'Machine');
  const [username, setUsername] = useState(credential?.username ?? '');
  const [domain, setDomain] = useState(credential?.domain ?? '');
  const [password, setPassword] = useState('');
  const [siteId, setSiteId] = useState<number | ''>(credential?.site_id ?? '');
  const [local, setLocal] = useState<Partial<Record<Field, string>>>({});

  const input: CredentialInput = {
    name: name.trim(),
    connection_type: connectionType,
    credential_type: credentialType,
    username: username.trim(),
    domain: credentialType === 'Domain' ? domain.trim() : null,
    site_id: siteId === '' ? null : siteId,
    ...(password ? { password } : {}),
  };

  const mutation = useMutation({
    mutationFn: () => (credential ? credentialsApi.update(credential.credential_id, input) : credentialsApi.create(input)),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: CREDENTIALS_QUERY });
      onClose();
    },
  });

  const submit = (e: FormEvent) => {
    e.preventDefault();
    const errors = check(input, creating);
    setLocal(errors);
    if (Object.keys(errors).length === 0) mutation.mutate();
  };
  const err = (f: Field) => local[f] ?? fieldError(mutation.error, f);
  const clear = (f: Field) => setLocal((l) => ({ ...l, [f]: undefined }));
  const unreadable = credential?.secret_status === 'unreadable';

  return (
    <Dialog open onClose={mutation.isPending ? undefined : onClose} fullWidth maxWidth="sm">
      <form noValidate onSubmit={submit}>
        <DialogTitle>{creating ? 'Add credential' : `Edit ${credential.name}`}</DialogTitle>
        <DialogContent>
          <ErrorAlert error={mutation.error} fields={FIELDS} />
          <Stack spacing={2} sx={{ mt: 1 }}>
            <TextField
              label="Name"
              name="name"
              autoFocus
              value={name}
              onChange={(e) => (setName(e.target.value), clear('name'))}
              error={Boolean(err('name'))}
              helperText={err('name') ?? 'Shown to operators when they pick a credential.'}
            />
            <Stack direction="row" spacing={2}>
              <TextField
                select
                fullWidth
                label="Connection type"
                name="connection_type"
                value={connectionType}
                onChange={(e) => setConnectionType(e.target.value as ConnectionType)}
                error={Boolean(err('connection_type'))}
                helperText={err('connection_type')}
              >
                <MenuItem value="Windows">Windows</MenuItem>
                <MenuItem value="WinRM">WinRM</MenuItem>
              </TextField>
              <TextField
                select
                fullWidth
                label="Credential type"
                name="credential_type"
                value={credentialType}
                onChange={(e) => (setCredentialType(e.target.value as CredentialType), clear('domain'))}
                error={Boolean(err('credential_type'))}
                helperText={err('credential_type')}
              >
                <MenuItem value="Machine">Machine (local account)</MenuItem>
                <MenuItem value="Domain">Domain</MenuItem>
              </TextField>
            </Stack>
            <Stack direction="row" spacing={2}>
              {credentialType === 'Domain' && (
                <TextField
                  fullWidth
                  label="Domain"
                  name="domain"
                  value={domain}
                  onChange={(e) => (setDomain(e.target.value), clear('domain'))}
                  error={Boolean(err('domain'))}
                  helperText={err('domain') ?? 'NetBIOS or DNS name, e.g. CORP or corp.example.'}
                  slotProps={{ htmlInput: { spellCheck: false, autoCapitalize: 'none' } }}
                />
              )}
              <TextField
                fullWidth
                label="Username"
                name="username"
                value={username}
                onChange={(e) => (setUsername(e.target.value), clear('username'))}
                error={Boolean(err('username'))}
                helperText={err('username')}
                slotProps={{ htmlInput: { spellCheck: false, autoCapitalize: 'none', autoComplete: 'off' } }}
              />
            </Stack>
            <TextField
              label="Password"
              name="password"
              type="password"
              value={password}
              onChange={(e) => (setPassword(e.target.value), clear('password'))}
              error={Boolean(err('password'))}
              helperText={
                err('password') ??
                (creating
                  ? 'Stored encrypted with the master cipher. It is never shown again.'
                  : unreadable
                    ? 'The stored password was lost in a master-cipher reset. Enter it again.'
                    : 'Leave empty to keep the stored password.')
              }
              slotProps={{ htmlInput: { autoComplete: 'new-password' } }}
            />
            <TextField
              select
              label="Site"
              name="site_id"
              value={siteId}
              onChange={(e) => setSiteId(e.target.value === '' ? '' : Number(e.target.value))}
              error={Boolean(err('site_id'))}
              helperText={err('site_id') ?? 'A global credential is offered on every site.'}
            >
              <MenuItem value="">Global (all sites)</MenuItem>
              {sites.map((s) => (
                <MenuItem key={s.site_id} value={s.site_id}>
                  {s.name}
                </MenuItem>
              ))}
            </TextField>
          </Stack>
        </DialogContent>
        <DialogActions>
          <Button onClick={onClose} disabled={mutation.isPending}>
            Cancel
          </Button>
          <Button type="submit" variant="contained" disabled={mutation.isPending}>
            {mutation.isPending ? 'Saving…' : creating ? 'Add' : 'Save'}
          </Button>
        </DialogActions>
      </form>
    </Dialog>
  );
}

export function DeleteCredentialDialog({ credential, onClose }: { credential: Credential; onClose: () => void }) {
  const queryClient = useQueryClient();
  const mutation = useMutation({
    mutationFn: () => credentialsApi.remove(credential.credential_id),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: CREDENTIALS_QUERY });
      onClose();
    },
  });
  return (
    <Dialog open onClose={mutation.isPending ? undefined : onClose} fullWidth maxWidth="xs">
      <DialogTitle>Delete {credential.name}?</DialogTitle>
      <DialogContent>
        <ErrorAlert error={mutation.error} />
        <DialogContentText sx={{ fontSize: 14 }}>
          Operators will no longer be able to pick this credential. The stored password is destroyed; this cannot be undone.
        </DialogContentText>
      </DialogContent>
      <DialogActions>
        <Button onClick={onClose} disabled={mutation.isPending}>
          Cancel
        </Button>
        <Button color="error" variant="contained" onClick={() => mutation.mutate()} disabled={mutation.isPending}>
          {mutation.isPending ? 'Deleting…' : 'Delete'}
        </Button>
      </DialogActions>
    </Dialog>
  );
}

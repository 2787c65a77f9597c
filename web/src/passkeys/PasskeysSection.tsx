import { useState, type FormEvent } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import Alert from '@mui/material/Alert';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import Dialog from '@mui/material/Dialog';
import DialogActions from '@mui/material/DialogActions';
import DialogContent from '@mui/material/DialogContent';
import DialogTitle from '@mui/material/DialogTitle';
import List from '@mui/material/List';
import ListItem from '@mui/material/ListItem';
import ListItemText from '@mui/material/ListItemText';
import TextField from '@mui/material/TextField';
import Typography from '@mui/material/Typography';
import { ReauthDialog } from '../auth/ReauthDialog';
import { ME_QUERY } from '../auth/session';
import { ConfirmActionDialog } from '../components/ConfirmDialog';
import { ErrorAlert } from '../components/ErrorAlert';
import { fieldError } from '../components/errors';
import { formatDateTime } from '../components/format';
import { passkeys, type Passkey } from './api';
import { passkeysSupported } from './webauthn';

export const PASSKEYS_QUERY = ['passkeys'] as const;
const MAX_LABEL = 64;

function checkLabel(label: string): string | null {
  const t = label.trim();
  if (!t) return 'Give the passkey a name.';
  if ([...t].length > MAX_LABEL) return `At most ${MAX_LABEL} characters.`;
  return null;
}

/** The Profile page's passkeys: register, list, rename and remove. */
export function PasskeysSection() {
  const queryClient = useQueryClient();
  const list = useQuery({ queryKey: PASSKEYS_QUERY, queryFn: passkeys.list });
  const [label, setLabel] = useState('');
  const [labelErr, setLabelErr] = useState<string | null>(null);
  const [renaming, setRenaming] = useState<Passkey | null>(null);
  const [removing, setRemoving] = useState<Passkey | null>(null);
  const refresh = () => {
    void queryClient.invalidateQueries({ queryKey: PASSKEYS_QUERY });
    void queryClient.invalidateQueries({ queryKey: ME_QUERY });
  };
  // Adding a passkey adds a way in: the operator confirms who they are
  // first (ReauthDialog), then the device creates the passkey.
  const [confirming, setConfirming] = useState(false);

  const submit = (e: FormEvent) => {
    e.preventDefault();
    const err = checkLabel(label);
    setLabelErr(err);
    if (!err) setConfirming(true);
  };

  const supported = passkeysSupported();
  return (
    <Box data-testid="passkeys-section">
      <Typography variant="body2" sx={{ mb: 1.5 }}>
        A passkey signs you in without a password or code: your device checks it is you (fingerprint, face or PIN).
      </Typography>
      {list.error ? <ErrorAlert error={list.error} /> : null}
      {list.data && list.data.length === 0 && (
        <Typography variant="body2" color="text.secondary" sx={{ mb: 1 }}>
          No passkeys yet.
        </Typography>
      )}
      {list.data && list.data.length > 0 && (
        <List dense disablePadding sx={{ mb: 1 }}>
          {list.data.map((pk) => (
            <ListItem
              key={pk.id}
              divider
              data-testid="passkey-row"
              secondaryAction={
                <>
                  <Button size="small" onClick={() => setRenaming(pk)}>
                    Rename
                  </Button>
                  <Button size="small" color="error" onClick={() => setRemoving(pk)}>
                    Remove
                  </Button>
                </>
              }
            >
              <ListItemText
                primary={pk.label}
                secondary={`Added ${formatDateTime(pk.created_at)} · ${
                  pk.last_used_at ? `last used ${formatDateTime(pk.last_used_at)}` : 'never used'
                }`}
              />
            </ListItem>
          ))}
        </List>
      )}
      {!supported ? (
        <Alert severity="info">This browser does not support passkeys.</Alert>
      ) : (
        <Box component="form" noValidate onSubmit={submit} sx={{ display: 'flex', gap: 1, alignItems: 'flex-start', maxWidth: 480 }}>
          <TextField
            label="New passkey name"
            name="passkey_label"
            size="small"
            value={label}
            onChange={(e) => setLabel(e.target.value)}
            error={Boolean(labelErr)}
            helperText={labelErr ?? 'For example: Work laptop'}
            sx={{ flex: 1 }}
          />
          <Button type="submit" variant="outlined" disabled={confirming}>
            Add a passkey
          </Button>
        </Box>
      )}
      {confirming && (
        <ReauthDialog
          title="Add a passkey"
          submitLabel="Confirm and add"
          offerPasskey={(list.data?.length ?? 0) > 0}
          action={(proof) => passkeys.register(label.trim(), proof)}
          onDone={() => {
            setConfirming(false);
            setLabel('');
            refresh();
          }}
          onClose={() => setConfirming(false)}
        />
      )}
      {renaming && <RenameDialog passkey={renaming} onClose={() => setRenaming(null)} onDone={refresh} />}
      {removing && <RemoveDialog passkey={removing} onClose={() => setRemoving(null)} onDone={refresh} />}
    </Box>
  );
}

function RenameDialog({ passkey, onClose, onDone }: { passkey: Passkey; onClose: () => void; onDone: () => void }) {
  const [label, setLabel] = useState(passkey.label);
  const [localErr, setLocalErr] = useState<string | null>(null);
  const mutation = useMutation({
    mutationFn: () => passkeys.rename(passkey.id, label.trim()),
    onSuccess: () => {
      onDone();
      onClose();
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const err = checkLabel(label);
    setLocalErr(err);
    if (!err) mutation.mutate();
  };
  const err = localErr ?? fieldError(mutation.error, 'label');
  return (
    <Dialog open onClose={mutation.isPending ? undefined : onClose} fullWidth maxWidth="xs">
      <form noValidate onSubmit={submit}>
        <DialogTitle>Rename passkey</DialogTitle>
        <DialogContent>
          <ErrorAlert error={mutation.error} fields={['label']} />
          <TextField
            label="Name"
            name="rename_label"
            autoFocus
            fullWidth
            value={label}
            onChange={(e) => setLabel(e.target.value)}
            error={Boolean(err)}
            helperText={err ?? ' '}
            sx={{ mt: 1 }}
          />
        </DialogContent>
        <DialogActions>
          <Button onClick={onClose} disabled={mutation.isPending}>
            Cancel
          </Button>
          <Button type="submit" variant="contained" disabled={mutation.isPending}>
            Save
          </Button>
        </DialogActions>
      </form>
    </Dialog>
  );
}

function RemoveDialog({ passkey, onClose, onDone }: { passkey: Passkey; onClose: () => void; onDone: () => void }) {
  return (
    <ConfirmActionDialog
      title={`Remove “${passkey.label}”?`}
      confirm="Remove passkey"
      pending="Removing…"
      action={() => passkeys.remove(passkey.id)}
      onDone={onDone}
      onClose={onClose}
    >
      You can no longer sign in with this passkey. Remove it from the device too, in its passkey settings.
    </ConfirmActionDialog>
  );
}

// Admin trust actions (SPEC "Device trust state"), each behind a dialog
// that says what it does. Purge asks for the hostname to be typed.
import { useState, type ReactNode } from 'react';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import Alert from '@mui/material/Alert';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import Dialog from '@mui/material/Dialog';
import DialogActions from '@mui/material/DialogActions';
import DialogContent from '@mui/material/DialogContent';
import DialogContentText from '@mui/material/DialogContentText';
import DialogTitle from '@mui/material/DialogTitle';
import TextField from '@mui/material/TextField';
import BlockIcon from '@mui/icons-material/Block';
import DeleteForeverIcon from '@mui/icons-material/DeleteForever';
import GppMaybeIcon from '@mui/icons-material/GppMaybe';
import VerifiedUserIcon from '@mui/icons-material/VerifiedUser';
import { devices as devicesApi } from '../../api/endpoints';
import type { DeviceSummary, TrustAction, TrustResult } from '../../api/types';
import { ErrorAlert } from '../../components/ErrorAlert';
import { DEVICES_QUERY, deviceDetailsKey } from './queries';

interface ActionText {
  button: string;
  title: (host: string) => string;
  body: ReactNode;
  confirm: string;
  pending: string;
  done: (host: string) => string;
  danger: boolean;
}

export const TRUST_TEXT: Record<TrustAction, ActionText> = {
  quarantine: {
    button: 'Quarantine',
    title: (h) => `Quarantine ${h}?`,
    body: (
      <>
        The device’s access tokens stop working at once and its VPN tunnel and VNC sessions are disconnected. New jobs,
        VPN, VNC, remote shell, remote operations and scheduled transfers to it are blocked until you unquarantine it.
        Its inventory is kept, and the agent keeps its tokens and retries, so unquarantining brings it back without a
        new enrollment.
      </>
    ),
    confirm: 'Quarantine',
    pending: 'Quarantining…',
    done: (h) => `${h} is quarantined.`,
    danger: true,
  },
  unquarantine: {
    button: 'Unquarantine',
    title: (h) => `Unquarantine ${h}?`,
    body: (
      <>
        The device becomes active again. Its token version is bumped, so access tokens issued before now stop working;
        the agent refreshes its tokens and reconnects on its own.
      </>
    ),
    confirm: 'Unquarantine',
    pending: 'Unquarantining…',
    done: (h) => `${h} is active again.`,
    danger: false,
  },
  revoke: {
    button: 'Revoke',
    title: (h) => `Revoke ${h}?`,
    body: (
      <>
        The device’s refresh tokens are revoked and its access tokens stop working at once; its VPN tunnel and VNC
        sessions are disconnected and remote access is blocked. The agent clears its tokens. Its inventory is kept; to
        manage it again it must enroll with a code and be approved.
      </>
    ),
    confirm: 'Revoke',
    pending: 'Revoking…',
    done: (h) => `${h} is revoked.`,
    danger: true,
  },
  purge: {
    button: 'Purge',
    title: (h) => `Purge ${h}?`,
    body: (
      <>
        The device is removed from Cairn with its trust and current references; scheduled jobs that target it are
        rewritten without it. A purge barrier makes its token refresh answer <code>device_purged</code>, so the agent
        must enroll again with a code and be approved, which recreates the device under the same GUID. This cannot be
        undone.
      </>
    ),
    confirm: 'Purge',
    pending: 'Purging…',
    done: (h) => `${h} was purged. It appears again once its agent re-enrolls and is approved.`,
    danger: true,
  },
};

/** The actions that apply in `state`: quarantine only from active, unquarantine only from quarantined. */
export function availableActions(state: string): TrustAction[] {
  const out: TrustAction[] = [];
  if (state === 'active') out.push('quarantine');
  if (state === 'quarantined') out.push('unquarantine');
  if (state !== 'revoked') out.push('revoke');
  out.push('purge');
  return out;
}

const ICONS: Record<TrustAction, ReactNode> = {
  quarantine: <GppMaybeIcon />,
  unquarantine: <VerifiedUserIcon />,
  revoke: <BlockIcon />,
  purge: <DeleteForeverIcon />,
};

export function TrustDialog({
  device,
  action,
  onClose,
  onDone,
}: {
  device: DeviceSummary;
  action: TrustAction;
  onClose: () => void;
  onDone: (result: TrustResult, message: string) => void;
}) {
  const queryClient = useQueryClient();
  const text = TRUST_TEXT[action];
  const [typed, setTyped] = useState('');
  const mutation = useMutation({
    mutationFn: () => devicesApi.trust(device.guid, action),
    onSuccess: (result) => {
      void queryClient.invalidateQueries({ queryKey: DEVICES_QUERY });
      if (action !== 'purge') void queryClient.invalidateQueries({ queryKey: deviceDetailsKey(device.hostname) });
      onDone(result ?? { guid: device.guid, trust_state: action === 'purge' ? 'purged' : device.trust_state }, text.done(device.hostname));
    },
  });
  const needsName = action === 'purge';
  const nameOk = !needsName || typed.trim() === device.hostname;
  return (
    <Dialog open onClose={mutation.isPending ? undefined : onClose} fullWidth maxWidth="sm">
      <form
        noValidate
        onSubmit={(e) => {
          e.preventDefault();
          if (nameOk) mutation.mutate();
        }}
      >
        <DialogTitle>{text.title(device.hostname)}</DialogTitle>
        <DialogContent>
          <ErrorAlert error={mutation.error} />
          <DialogContentText component="div" sx={{ fontSize: 14 }}>
            {text.body}
          </DialogContentText>
          {needsName && (
            <>
              <Alert severity="warning" variant="outlined" sx={{ mt: 2, mb: 2 }}>
                Type the hostname <b>{device.hostname}</b> to confirm.
              </Alert>
              <TextField
                label="Hostname to confirm"
                name="confirm-hostname"
                fullWidth
                autoFocus
                value={typed}
                onChange={(e) => setTyped(e.target.value)}
                slotProps={{ htmlInput: { spellCheck: false, autoCapitalize: 'none', autoComplete: 'off' } }}
              />
            </>
          )}
        </DialogContent>
        <DialogActions>
          <Button onClick={onClose} disabled={mutation.isPending}>
            Cancel
          </Button>
          <Button
            type="submit"
            variant="contained"
            color={text.danger ? 'error' : 'primary'}
            disabled={mutation.isPending || !nameOk}
          >
            {mutation.isPending ? text.pending : text.confirm}
          </Button>
        </DialogActions>
      </form>
    </Dialog>
  );
}

/** The buttons; only rendered for administrators by the page. */
export function TrustButtons({ state, onPick }: { state: string; onPick: (action: TrustAction) => void }) {
  return (
    <Box sx={{ display: 'flex', gap: 1, flexWrap: 'wrap' }} role="group" aria-label="Trust actions">
      {availableActions(state).map((a) => (
        <Button
          key={a}
          variant="outlined"
          size="small"
          color={TRUST_TEXT[a].danger ? 'error' : 'primary'}
          startIcon={ICONS[a]}
          onClick={() => onPick(a)}
        >
          {TRUST_TEXT[a].button}…
        </Button>
      ))}
    </Box>
  );
}

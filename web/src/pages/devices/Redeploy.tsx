// Redeploy a device's agent with a new one-time enrollment code (docs/api.md
// "Onboarding: agent redeploy"): a confirmation, then the job's progress until
// the device has enrolled again, the code expired or the operator canceled.
import { useState } from 'react';
import { useMutation, useQuery } from '@tanstack/react-query';
import Alert from '@mui/material/Alert';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import Dialog from '@mui/material/Dialog';
import DialogActions from '@mui/material/DialogActions';
import DialogContent from '@mui/material/DialogContent';
import DialogContentText from '@mui/material/DialogContentText';
import DialogTitle from '@mui/material/DialogTitle';
import LinearProgress from '@mui/material/LinearProgress';
import TextField from '@mui/material/TextField';
import Typography from '@mui/material/Typography';
import RestartAltIcon from '@mui/icons-material/RestartAlt';
import { onboarding } from '../../api/endpoints';
import type { OnboardingStarted } from '../../api/types';
import { ErrorAlert } from '../../components/ErrorAlert';
import { formatCompactDateTime } from '../../components/format';

export const REDEPLOY_POLL_MS = 2000;

const STATUS_TEXT: Record<string, string> = {
  pending: 'Sending the new code to the agent…',
  sent: 'The agent took the new code and is enrolling again…',
  agent_offline: 'The agent is not connected. Install it by hand with the code below, or wait for it to connect.',
  enrolled: 'The agent enrolled again with the new code.',
  expired: 'The code expired before the agent enrolled with it.',
  canceled: 'The redeploy was canceled; its code no longer enrolls anything.',
  failed: 'The redeploy failed.',
};

const FINAL = new Set(['enrolled', 'expired', 'canceled', 'failed']);

function Progress({ started, onClose }: { started: OnboardingStarted; onClose: () => void }) {
  const query = useQuery({
    queryKey: ['onboarding-job', started.id],
    queryFn: () => onboarding.job(started.id),
    refetchInterval: (q) => (q.state.data && FINAL.has(q.state.data.status) ? false : REDEPLOY_POLL_MS),
  });
  const cancel = useMutation({ mutationFn: () => onboarding.cancel(started.id), onSuccess: () => void query.refetch() });
  const job = query.data ?? started;
  const done = FINAL.has(job.status);
  return (
    <>
      <DialogContent>
        <Alert
          severity={job.status === 'enrolled' ? 'success' : done ? 'warning' : 'info'}
          data-testid="redeploy-status"
          sx={{ mb: 2 }}
        >
          {STATUS_TEXT[job.status] ?? job.status}
          {job.last_error && job.status !== 'enrolled' ? ` (${job.last_error})` : ''}
        </Alert>
        {!done && <LinearProgress aria-label="Redeploy under way" sx={{ mb: 2 }} />}
        {!done && (
          <>
            <Typography variant="body2" sx={{ mb: 1 }}>
              One-time enrollment code, for a manual install (valid until {formatCompactDateTime(job.expires_at)}); it is not
              shown again:
            </Typography>
            <TextField
              size="small"
              fullWidth
              value={started.enrollment_code}
              slotProps={{ htmlInput: { readOnly: true, 'aria-label': 'One-time enrollment code' } }}
            />
          </>
        )}
        {query.isError && <ErrorAlert error={query.error} />}
        {cancel.isError && <ErrorAlert error={cancel.error} />}
      </DialogContent>
      <DialogActions>
        {!done && (
          <Button color="error" onClick={() => cancel.mutate()} disabled={cancel.isPending}>
            Cancel redeploy
          </Button>
        )}
        <Button onClick={onClose}>Close</Button>
      </DialogActions>
    </>
  );
}

export function RedeployDialog({ guid, hostname, onClose }: { guid: string; hostname: string; onClose: () => void }) {
  const [reason, setReason] = useState('');
  const start = useMutation({ mutationFn: () => onboarding.redeploy(guid, reason) });
  return (
    <Dialog open onClose={onClose} maxWidth="sm" fullWidth aria-labelledby="redeploy-title">
      <DialogTitle id="redeploy-title">Redeploy the agent of {hostname}?</DialogTitle>
      {start.data ? (
        <Progress started={start.data} onClose={onClose} />
      ) : (
        <>
          <DialogContent>
            <DialogContentText component="div" sx={{ fontSize: 14, mb: 2 }}>
              A new one-time enrollment code is made for this device and sent to its agent if it is connected. The agent
              drops its tokens and route and enrolls again with the code, keeping its identity; the device is approved at
              once. Use it for a broken or stale agent. Its inventory and history are kept.
            </DialogContentText>
            <TextField size="small" fullWidth label="Reason (optional)" value={reason} onChange={(e) => setReason(e.target.value)} />
            {start.isError && (
              <Box sx={{ mt: 2 }}>
                <ErrorAlert error={start.error} />
              </Box>
            )}
          </DialogContent>
          <DialogActions>
            <Button onClick={onClose}>Cancel</Button>
            <Button variant="contained" onClick={() => start.mutate()} disabled={start.isPending}>
              Redeploy
            </Button>
          </DialogActions>
        </>
      )}
    </Dialog>
  );
}

export function RedeployButton({ guid, hostname }: { guid: string; hostname: string }) {
  const [open, setOpen] = useState(false);
  return (
    <>
      <Button variant="outlined" size="small" startIcon={<RestartAltIcon />} onClick={() => setOpen(true)}>
        Redeploy agent…
      </Button>
      {open && <RedeployDialog guid={guid} hostname={hostname} onClose={() => setOpen(false)} />}
    </>
  );
}

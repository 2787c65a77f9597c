// A workflow's inbound webhooks (docs/api.md "Workflow webhooks"): create,
// copy the URL, see the secret once (after create or rotate), rotate, delete.
import { useState } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import Alert from '@mui/material/Alert';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import Dialog from '@mui/material/Dialog';
import DialogActions from '@mui/material/DialogActions';
import DialogContent from '@mui/material/DialogContent';
import DialogTitle from '@mui/material/DialogTitle';
import IconButton from '@mui/material/IconButton';
import Table from '@mui/material/Table';
import TableBody from '@mui/material/TableBody';
import TableCell from '@mui/material/TableCell';
import TableHead from '@mui/material/TableHead';
import TableRow from '@mui/material/TableRow';
import TextField from '@mui/material/TextField';
import Tooltip from '@mui/material/Tooltip';
import Typography from '@mui/material/Typography';
import ContentCopyIcon from '@mui/icons-material/ContentCopy';
import DeleteOutlineIcon from '@mui/icons-material/DeleteOutline';
import AutorenewIcon from '@mui/icons-material/Autorenew';
import { workflows as workflowsApi } from '../../api/endpoints';
import type { Workflow, WorkflowWebhook, WorkflowWebhookWithSecret } from '../../api/types';
import { ConfirmDialog } from '../../components/ConfirmDialog';
import { ErrorAlert } from '../../components/ErrorAlert';
import { describeError } from '../../components/errors';
import { formatCompactDateTime } from '../../components/format';
import { useNotify } from '../../toasts/notify';
import { WORKFLOWS_QUERY } from './JobEditor';
import { apiFieldError } from './fields';

const webhooksKey = (id: number) => [...WORKFLOWS_QUERY, id, 'webhooks'] as const;

/** The full URL an outside system POSTs to. */
export const webhookURL = (path: string) => `${window.location.origin}${path}`;

function useCopy() {
  const notify = useNotify();
  return (text: string, what: string) =>
    void (navigator.clipboard?.writeText(text) ?? Promise.reject(new Error('no clipboard')))
      .then(() => notify({ title: `${what} copied`, message: '', variant: 'info' }))
      .catch(() => notify({ title: `Could not copy the ${what.toLowerCase()}`, message: 'Select and copy it by hand.', variant: 'warning' }));
}

/** The secret of a webhook just created or rotated: shown here once. */
function SecretShownOnce({ hook, onDone }: { hook: WorkflowWebhookWithSecret; onDone: () => void }) {
  const copy = useCopy();
  return (
    <Alert severity="warning" sx={{ mb: 2 }} onClose={onDone} data-testid="webhook-secret">
      <Typography variant="body2" sx={{ fontWeight: 600 }}>
        Secret of {hook.name}: copy it now, it is not shown again.
      </Typography>
      <Box sx={{ display: 'flex', alignItems: 'center', gap: 1, mt: 1 }}>
        <TextField
          size="small"
          value={hook.secret}
          slotProps={{ htmlInput: { readOnly: true, 'aria-label': 'Webhook secret' } }}
          sx={{ flex: 1, fontFamily: 'monospace' }}
        />
        <Button size="small" startIcon={<ContentCopyIcon />} onClick={() => copy(hook.secret, 'Secret')}>
          Copy secret
        </Button>
      </Box>
      <Typography variant="caption" component="p" sx={{ mt: 1 }}>
        Sign each request with it as docs/api.md &quot;Workflow webhooks&quot; says: key ID {hook.id}.
      </Typography>
    </Alert>
  );
}

export function WorkflowWebhooksDialog({ workflow, onClose }: { workflow: Workflow; onClose: () => void }) {
  const queryClient = useQueryClient();
  const notify = useNotify();
  const copy = useCopy();
  const [name, setName] = useState('');
  const [rate, setRate] = useState('60');
  const [shown, setShown] = useState<WorkflowWebhookWithSecret | null>(null);
  const [confirm, setConfirm] = useState<{ hook: WorkflowWebhook; action: 'rotate' | 'delete' } | null>(null);
  const query = useQuery({ queryKey: webhooksKey(workflow.id), queryFn: () => workflowsApi.webhooks(workflow.id) });
  const refresh = () => void queryClient.invalidateQueries({ queryKey: webhooksKey(workflow.id) });
  const create = useMutation({
    mutationFn: () => workflowsApi.createWebhook(workflow.id, { name, device_guids: [], rate_limit_per_minute: Number(rate) || 0 }),
    onSuccess: (hook) => {
      setShown(hook);
      setName('');
      refresh();
    },
  });
  const rotate = useMutation({
    mutationFn: (hook: WorkflowWebhook) => workflowsApi.rotateWebhook(workflow.id, hook.id),
    onSuccess: (hook) => {
      setShown(hook);
      refresh();
    },
    onError: (error, hook) => notify({ title: `Could not rotate ${hook.name}`, message: describeError(error), variant: 'error' }),
  });
  const remove = useMutation({
    mutationFn: (hook: WorkflowWebhook) => workflowsApi.removeWebhook(workflow.id, hook.id),
    onSuccess: () => {
      setShown(null);
      refresh();
    },
    onError: (error, hook) => notify({ title: `Could not delete ${hook.name}`, message: describeError(error), variant: 'error' }),
  });
  const hooks = query.data ?? [];
  const fieldError = (f: string) => apiFieldError(create.error, f);

  return (
    <Dialog open onClose={onClose} maxWidth="md" fullWidth aria-labelledby="webhooks-title">
      <DialogTitle id="webhooks-title">Webhooks of {workflow.name}</DialogTitle>
      <DialogContent>
        <Typography variant="body2" color="text.secondary" sx={{ mb: 2 }}>
          An outside system starts this workflow by POSTing a signed JSON body to a webhook&apos;s URL. The body is the run&apos;s
          input; its device_guids name the devices.
        </Typography>
        {shown && <SecretShownOnce hook={shown} onDone={() => setShown(null)} />}
        {query.isError && <ErrorAlert error={query.error} />}
        {hooks.length === 0 && !query.isPending && (
          <Typography variant="body2" sx={{ mb: 2 }}>
            No webhooks yet.
          </Typography>
        )}
        {hooks.length > 0 && (
          <Table size="small" sx={{ mb: 2 }} aria-label="Webhooks">
            <TableHead>
              <TableRow>
                <TableCell>Name</TableCell>
                <TableCell>URL</TableCell>
                <TableCell>Per minute</TableCell>
                <TableCell>Last triggered</TableCell>
                <TableCell />
              </TableRow>
            </TableHead>
            <TableBody>
              {hooks.map((h) => (
                <TableRow key={h.id}>
                  <TableCell>{h.name}</TableCell>
                  <TableCell sx={{ fontFamily: 'monospace', fontSize: 12, wordBreak: 'break-all' }}>{webhookURL(h.path)}</TableCell>
                  <TableCell>{h.rate_limit_per_minute}</TableCell>
                  <TableCell>{h.last_triggered_at ? formatCompactDateTime(h.last_triggered_at) : 'Never'}</TableCell>
                  <TableCell sx={{ whiteSpace: 'nowrap' }}>
                    <Tooltip title="Copy URL">
                      <IconButton size="small" aria-label={`Copy URL of ${h.name}`} onClick={() => copy(webhookURL(h.path), 'URL')}>
                        <ContentCopyIcon fontSize="small" />
                      </IconButton>
                    </Tooltip>
                    <Tooltip title="Rotate secret">
                      <IconButton size="small" aria-label={`Rotate secret of ${h.name}`} onClick={() => setConfirm({ hook: h, action: 'rotate' })}>
                        <AutorenewIcon fontSize="small" />
                      </IconButton>
                    </Tooltip>
                    <Tooltip title="Delete">
                      <IconButton size="small" aria-label={`Delete ${h.name}`} onClick={() => setConfirm({ hook: h, action: 'delete' })}>
                        <DeleteOutlineIcon fontSize="small" />
                      </IconButton>
                    </Tooltip>
                  </TableCell>
                </TableRow>
              ))}
            </TableBody>
          </Table>
        )}
        <Box
          component="form"
          aria-label="New webhook"
          sx={{ display: 'flex', gap: 1, alignItems: 'flex-start' }}
          onSubmit={(e) => {
            e.preventDefault();
            create.mutate();
          }}
        >
          <TextField
            size="small"
            label="Name"
            value={name}
            onChange={(e) => setName(e.target.value)}
            error={!!fieldError('name')}
            helperText={fieldError('name')}
            sx={{ flex: 1 }}
          />
          <TextField
            size="small"
            label="Requests per minute"
            type="number"
            value={rate}
            onChange={(e) => setRate(e.target.value)}
            error={!!fieldError('rate_limit_per_minute')}
            helperText={fieldError('rate_limit_per_minute')}
            sx={{ width: 190 }}
          />
          <Button type="submit" variant="contained" disabled={create.isPending}>
            Create webhook
          </Button>
        </Box>
        {create.isError && !fieldError('name') && !fieldError('rate_limit_per_minute') && <ErrorAlert error={create.error} />}
      </DialogContent>
      <DialogActions>
        <Button onClick={onClose}>Close</Button>
      </DialogActions>
      {confirm?.action === 'rotate' && (
        <ConfirmDialog
          title={`Rotate the secret of ${confirm.hook.name}?`}
          confirm="Rotate"
          danger
          onConfirm={() => rotate.mutate(confirm.hook)}
          onClose={() => setConfirm(null)}
        >
          The current secret stops working at once; callers need the new one, shown once after this.
        </ConfirmDialog>
      )}
      {confirm?.action === 'delete' && (
        <ConfirmDialog
          title={`Delete ${confirm.hook.name}?`}
          confirm="Delete"
          danger
          onConfirm={() => remove.mutate(confirm.hook)}
          onClose={() => setConfirm(null)}
        >
          Requests to its URL are refused from now on.
        </ConfirmDialog>
      )}
    </Dialog>
  );
}

// Notification channels (/alerts/channels, admins): where incidents'
// notifications go (a webhook signed with HMAC-SHA256, or email over SMTP
// with STARTTLS), routed by minimum severity, repeated every N minutes
// while unacknowledged. Secrets are write-only: the list says whether one
// is set, never what it is.
import { useState } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import Dialog from '@mui/material/Dialog';
import DialogActions from '@mui/material/DialogActions';
import DialogContent from '@mui/material/DialogContent';
import DialogTitle from '@mui/material/DialogTitle';
import MenuItem from '@mui/material/MenuItem';
import Paper from '@mui/material/Paper';
import Table from '@mui/material/Table';
import TableBody from '@mui/material/TableBody';
import TableCell from '@mui/material/TableCell';
import TableHead from '@mui/material/TableHead';
import TableRow from '@mui/material/TableRow';
import TextField from '@mui/material/TextField';
import Typography from '@mui/material/Typography';
import { notificationChannels } from '../../api/endpoints';
import type { NotificationChannel, NotificationChannelInput } from '../../api/types';
import { PageHeader } from '../../components/ComingSoon';
import { ErrorAlert } from '../../components/ErrorAlert';
import { fieldError } from '../../components/errors';

export const CHANNELS_QUERY = ['notification-channels'] as const;

function target(c: NotificationChannel): string {
  if (c.kind === 'webhook') return c.webhook?.url ?? '';
  return c.email ? `${(c.email.to ?? []).join(', ')} via ${c.email.host}:${c.email.port}` : '';
}

export default function ChannelsPage() {
  const queryClient = useQueryClient();
  const [creating, setCreating] = useState(false);
  const query = useQuery({ queryKey: CHANNELS_QUERY, queryFn: notificationChannels.list });
  const remove = useMutation({
    mutationFn: (id: number) => notificationChannels.remove(id),
    onSuccess: () => void queryClient.invalidateQueries({ queryKey: CHANNELS_QUERY }),
  });
  const rows = query.data ?? [];
  return (
    <>
      <PageHeader title="Notification channels" subtitle="Where watchdog incidents are sent, besides the console's toasts." />
      <Box sx={{ mb: 1.5 }}>
        <Button variant="contained" size="small" onClick={() => setCreating(true)}>
          Add channel
        </Button>
      </Box>
      {query.isError && <ErrorAlert error={query.error} />}
      <ErrorAlert error={remove.error} />
      <Paper variant="outlined">
        <Table size="small" aria-label="Notification channels">
          <TableHead>
            <TableRow>
              <TableCell>Name</TableCell>
              <TableCell>Kind</TableCell>
              <TableCell>Sends to</TableCell>
              <TableCell>From severity</TableCell>
              <TableCell>Repeats</TableCell>
              <TableCell>Secret</TableCell>
              <TableCell align="right" />
            </TableRow>
          </TableHead>
          <TableBody>
            {rows.map((c) => (
              <TableRow key={c.id} data-testid={`channel-${c.id}`}>
                <TableCell>{c.name}</TableCell>
                <TableCell>{c.kind}</TableCell>
                <TableCell>{target(c)}</TableCell>
                <TableCell>{c.min_severity}</TableCell>
                <TableCell>{c.repeat_minutes ? `every ${c.repeat_minutes} min while open` : 'once'}</TableCell>
                <TableCell>{c.has_secret ? 'set' : '—'}</TableCell>
                <TableCell align="right">
                  <Button size="small" color="error" onClick={() => remove.mutate(c.id)} disabled={remove.isPending}>
                    Delete
                  </Button>
                </TableCell>
              </TableRow>
            ))}
            {rows.length === 0 && !query.isPending && (
              <TableRow>
                <TableCell colSpan={7}>
                  <Typography variant="body2" color="text.secondary">
                    No channel: incidents show as toasts only.
                  </Typography>
                </TableCell>
              </TableRow>
            )}
          </TableBody>
        </Table>
      </Paper>
      {creating && <ChannelDialog onClose={() => setCreating(false)} />}
    </>
  );
}

function ChannelDialog({ onClose }: { onClose: () => void }) {
  const queryClient = useQueryClient();
  const [kind, setKind] = useState<'webhook' | 'email'>('webhook');
  const [name, setName] = useState('');
  const [minSeverity, setMinSeverity] = useState('info');
  const [repeat, setRepeat] = useState('0');
  const [url, setUrl] = useState('');
  const [host, setHost] = useState('');
  const [port, setPort] = useState('587');
  const [username, setUsername] = useState('');
  const [from, setFrom] = useState('');
  const [to, setTo] = useState('');
  const [secret, setSecret] = useState('');
  const mutation = useMutation({
    mutationFn: (body: NotificationChannelInput) => notificationChannels.create(body),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: CHANNELS_QUERY });
      onClose();
    },
  });
  const submit = () => {
    const body: NotificationChannelInput = {
      name,
      kind,
      enabled: true,
      min_severity: minSeverity,
      site_ids: null,
      repeat_minutes: Number(repeat) || 0,
      webhook: kind === 'webhook' ? { url } : null,
      email:
        kind === 'email'
          ? {
              host,
              port: Number(port) || 0,
              username,
              from,
              to: to
                .split(',')
                .map((s) => s.trim())
                .filter(Boolean),
              ca_pem: '',
            }
          : null,
      secret: secret === '' ? null : secret,
    };
    mutation.mutate(body);
  };
  const err = (f: string) => fieldError(mutation.error, f);
  const text = (label: string, field: string, value: string, set: (v: string) => void, extra: object = {}) => (
    <TextField
      fullWidth
      margin="dense"
      label={label}
      value={value}
      onChange={(e) => set(e.target.value)}
      error={Boolean(err(field))}
      helperText={err(field)}
      {...extra}
    />
  );
  return (
    <Dialog open onClose={mutation.isPending ? undefined : onClose} fullWidth maxWidth="sm" aria-labelledby="channel-title">
      <DialogTitle id="channel-title">Add a notification channel</DialogTitle>
      <Box
        component="form"
        onSubmit={(e) => {
          e.preventDefault();
          submit();
        }}
      >
        <DialogContent>
          <ErrorAlert
            error={mutation.error}
            fields={['name', 'kind', 'min_severity', 'repeat_minutes', 'webhook.url', 'email.host', 'email.port', 'email.from', 'email.to', 'secret']}
          />
          {text('Name', 'name', name, setName)}
          <TextField select fullWidth margin="dense" label="Kind" value={kind} onChange={(e) => setKind(e.target.value as 'webhook' | 'email')}>
            <MenuItem value="webhook">Webhook (HMAC-SHA256 signed)</MenuItem>
            <MenuItem value="email">Email (SMTP with STARTTLS)</MenuItem>
          </TextField>
          <TextField select fullWidth margin="dense" label="From severity" value={minSeverity} onChange={(e) => setMinSeverity(e.target.value)}>
            {['info', 'warning', 'critical'].map((s) => (
              <MenuItem key={s} value={s}>
                {s}
              </MenuItem>
            ))}
          </TextField>
          {text('Repeat every (minutes, 0: once)', 'repeat_minutes', repeat, setRepeat, { type: 'number' })}
          {kind === 'webhook' ? (
            <>
              {text('URL', 'webhook.url', url, setUrl)}
              {text('Signing secret', 'secret', secret, setSecret, { type: 'password', autoComplete: 'new-password' })}
            </>
          ) : (
            <>
              {text('SMTP host', 'email.host', host, setHost)}
              {text('Port', 'email.port', port, setPort, { type: 'number' })}
              {text('Username (optional)', 'email.username', username, setUsername)}
              {text('Password', 'secret', secret, setSecret, { type: 'password', autoComplete: 'new-password' })}
              {text('From', 'email.from', from, setFrom)}
              {text('To (comma-separated)', 'email.to', to, setTo)}
            </>
          )}
        </DialogContent>
        <DialogActions>
          <Button onClick={onClose} disabled={mutation.isPending}>
            Cancel
          </Button>
          <Button type="submit" variant="contained" disabled={mutation.isPending}>
            Add
          </Button>
        </DialogActions>
      </Box>
    </Dialog>
  );
}

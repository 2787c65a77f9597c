// Notification channels (/alerts/channels, admins): where incidents'
// notifications go (a webhook signed with HMAC-SHA256, or email over SMTP
// with STARTTLS), routed by minimum severity, repeated every N minutes
// while unacknowledged. Secrets are write-only: the list says whether one
// is set, never what it is. Below them, the maintenance windows.
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
import Alert from '@mui/material/Alert';
import Autocomplete from '@mui/material/Autocomplete';
import { devices as devicesApi, maintenanceWindows, notificationChannels, sites as sitesApi, watchdogsApi } from '../../api/endpoints';
import type { Device, NotificationChannel, NotificationChannelInput, NotificationChannelTest, Site, Watchdog } from '../../api/types';
import { SITES_QUERY } from '../SiteDialogs';
import { ALL_DEVICES_KEY } from '../automation/pickers';
import { WATCHDOGS_QUERY } from './WatchdogsPage';
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
  // The last test's outcome, per channel: the Engine answers it within
  // about 20 s (delivered, refused for good, or failed).
  const [tested, setTested] = useState<{ id: number; result: NotificationChannelTest } | null>(null);
  const test = useMutation({
    mutationFn: (id: number) => notificationChannels.test(id).then((result) => ({ id, result })),
    onMutate: () => setTested(null),
    onSuccess: setTested,
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
      <ErrorAlert error={remove.error ?? test.error} />
      {tested && <TestOutcome name={rows.find((c) => c.id === tested.id)?.name ?? `channel ${tested.id}`} result={tested.result} />}
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
                  <Button size="small" onClick={() => test.mutate(c.id)} disabled={test.isPending}>
                    {test.isPending && test.variables === c.id ? 'Sending…' : 'Send test'}
                  </Button>
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
      <MaintenanceWindows />
    </>
  );
}

/** A test notification's outcome, as the Engine answered it. */
function TestOutcome({ name, result }: { name: string; result: NotificationChannelTest }) {
  if (result.outcome === 'delivered') {
    return (
      <Alert severity="success" sx={{ mb: 1.5 }} data-testid="test-outcome">
        Test notification delivered to {name} ({result.duration_ms} ms).
      </Alert>
    );
  }
  return (
    <Alert severity={result.outcome === 'refused' ? 'error' : 'warning'} sx={{ mb: 1.5 }} data-testid="test-outcome">
      Test notification to {name} {result.outcome === 'refused' ? 'refused' : 'failed'}: {result.error}
    </Alert>
  );
}

export const WINDOWS_QUERY = ['maintenance-windows'] as const;
const DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const hhmm = (m: number) => `${String(Math.floor(m / 60)).padStart(2, '0')}:${String(m % 60).padStart(2, '0')}`;

type Scope = 'site' | 'device' | 'watchdog';

/**
 * What a window covers: a site, a device or a watchdog, picked by name
 * from the Engine's lists (only the chosen kind's list is fetched).
 */
function ScopePicker({
  scope,
  value,
  onChange,
  error,
}: {
  scope: Scope;
  value: string;
  onChange: (id: string) => void;
  error?: string;
}) {
  const sites = useQuery({ queryKey: SITES_QUERY, queryFn: sitesApi.list, enabled: scope === 'site' });
  const devices = useQuery({ queryKey: ALL_DEVICES_KEY, queryFn: () => devicesApi.list(), enabled: scope === 'device' });
  const watchdogs = useQuery({ queryKey: WATCHDOGS_QUERY, queryFn: watchdogsApi.list, enabled: scope === 'watchdog' });
  const options: { id: string; label: string; detail?: string }[] =
    scope === 'site'
      ? (sites.data ?? []).map((x: Site) => ({ id: String(x.site_id), label: x.name }))
      : scope === 'device'
        ? (devices.data ?? []).map((d: Device) => ({ id: d.guid, label: d.hostname, detail: d.site_name ?? undefined }))
        : (watchdogs.data ?? []).map((w: Watchdog) => ({ id: String(w.id), label: w.name }));
  const label = scope === 'site' ? 'Site' : scope === 'device' ? 'Device' : 'Watchdog';
  return (
    <Autocomplete
      size="small"
      sx={{ width: 240 }}
      options={options}
      value={options.find((o) => o.id === value) ?? null}
      onChange={(_, o) => onChange(o?.id ?? '')}
      getOptionLabel={(o) => o.label}
      isOptionEqualToValue={(a, b) => a.id === b.id}
      renderOption={(props, o) => (
        <li {...props} key={o.id}>
          <Box sx={{ flex: 1 }}>{o.label}</Box>
          {o.detail && (
            <Typography variant="caption" color="text.secondary">
              {o.detail}
            </Typography>
          )}
        </li>
      )}
      renderInput={(params) => <TextField {...params} label={label} error={Boolean(error)} helperText={error} />}
    />
  );
}

/** Maintenance windows: weekly periods holding a site's, a device's or a watchdog's notifications back (evaluation goes on). */
function MaintenanceWindows() {
  const queryClient = useQueryClient();
  const query = useQuery({ queryKey: WINDOWS_QUERY, queryFn: maintenanceWindows.list });
  // Names for the list's scopes, from the lists already cached (IDs otherwise).
  const siteNames = queryClient.getQueryData<Site[]>(SITES_QUERY);
  const deviceNames = queryClient.getQueryData<Device[]>(ALL_DEVICES_KEY);
  const watchdogNames = queryClient.getQueryData<Watchdog[]>(WATCHDOGS_QUERY);
  const covers = (w: { site_id?: number | null; guid?: string | null; watchdog_id?: number | null }) => {
    if (w.site_id != null) return `site ${siteNames?.find((x) => x.site_id === w.site_id)?.name ?? w.site_id}`;
    if (w.guid) return `device ${deviceNames?.find((d) => d.guid === w.guid)?.hostname ?? w.guid}`;
    return `watchdog ${watchdogNames?.find((x) => x.id === w.watchdog_id)?.name ?? w.watchdog_id}`;
  };
  const [name, setName] = useState('');
  const [scope, setScope] = useState<Scope>('site');
  const [target, setTarget] = useState('');
  const [days, setDays] = useState('0,6');
  const [start, setStart] = useState('02:00');
  const [minutes, setMinutes] = useState('120');
  const [zone, setZone] = useState('UTC');
  const done = () => void queryClient.invalidateQueries({ queryKey: WINDOWS_QUERY });
  const create = useMutation({
    mutationFn: () => {
      const [h, m] = start.split(':').map(Number);
      return maintenanceWindows.create({
        name,
        site_id: scope === 'site' ? Number(target) || null : null,
        guid: scope === 'device' ? target || null : null,
        watchdog_id: scope === 'watchdog' ? Number(target) || null : null,
        weekdays: days.split(',').filter((d) => d.trim() !== '').map(Number),
        start_minute: (h || 0) * 60 + (m || 0),
        duration_minutes: Number(minutes) || 0,
        time_zone: zone,
      });
    },
    onSuccess: () => {
      setName('');
      done();
    },
  });
  const remove = useMutation({ mutationFn: (id: number) => maintenanceWindows.remove(id), onSuccess: done });
  const err = (f: string) => fieldError(create.error, f);
  const scopeError = err('site_id') ?? err('guid') ?? err('watchdog_id');
  return (
    <Box sx={{ mt: 3 }}>
      <Typography variant="h6">Maintenance windows</Typography>
      <Typography variant="body2" color="text.secondary" sx={{ mb: 1 }}>
        Notifications of a site&apos;s, a device&apos;s or a watchdog&apos;s incidents wait for the window to end; watchdogs keep evaluating.
      </Typography>
      <ErrorAlert error={create.error ?? remove.error} fields={['name', 'site_id', 'guid', 'watchdog_id', 'weekdays', 'duration_minutes', 'time_zone']} />
      <Box
        component="form"
        sx={{ display: 'flex', gap: 1, mb: 1, flexWrap: 'wrap' }}
        onSubmit={(e) => {
          e.preventDefault();
          create.mutate();
        }}
      >
        <TextField size="small" label="Window name" value={name} onChange={(e) => setName(e.target.value)} error={Boolean(err('name'))} helperText={err('name')} />
        <TextField
          select
          size="small"
          label="Covers"
          value={scope}
          onChange={(e) => {
            setScope(e.target.value as Scope);
            setTarget('');
          }}
          sx={{ width: 130 }}
        >
          <MenuItem value="site">a site</MenuItem>
          <MenuItem value="device">a device</MenuItem>
          <MenuItem value="watchdog">a watchdog</MenuItem>
        </TextField>
        <ScopePicker key={scope} scope={scope} value={target} onChange={setTarget} error={scopeError} />
        <TextField size="small" label="Days (0 = Sun)" value={days} onChange={(e) => setDays(e.target.value)} error={Boolean(err('weekdays'))} helperText={err('weekdays')} />
        <TextField size="small" label="Starts (HH:MM)" value={start} onChange={(e) => setStart(e.target.value)} />
        <TextField
          size="small"
          label="Minutes"
          value={minutes}
          onChange={(e) => setMinutes(e.target.value)}
          error={Boolean(err('duration_minutes'))}
          helperText={err('duration_minutes')}
        />
        <TextField size="small" label="Time zone" value={zone} onChange={(e) => setZone(e.target.value)} error={Boolean(err('time_zone'))} helperText={err('time_zone')} />
        <Button type="submit" variant="outlined" size="small" disabled={create.isPending}>
          Add window
        </Button>
      </Box>
      <Paper variant="outlined">
        <Table size="small" aria-label="Maintenance windows">
          <TableBody>
            {(query.data ?? []).map((w) => (
              <TableRow key={w.id} data-testid={`window-${w.id}`}>
                <TableCell>{w.name}</TableCell>
                <TableCell>{covers(w)}</TableCell>
                <TableCell>
                  {(w.weekdays ?? []).map((d) => DAYS[d]).join(', ')} {hhmm(w.start_minute)} for {w.duration_minutes} min ({w.time_zone})
                </TableCell>
                <TableCell>{w.active ? 'active now' : ''}</TableCell>
                <TableCell align="right">
                  <Button size="small" color="error" onClick={() => remove.mutate(w.id)} disabled={remove.isPending}>
                    Delete
                  </Button>
                </TableCell>
              </TableRow>
            ))}
          </TableBody>
        </Table>
      </Paper>
    </Box>
  );
}

function ChannelDialog({ onClose }: { onClose: () => void }) {
  const queryClient = useQueryClient();
  const [kind, setKind] = useState<'webhook' | 'email'>('webhook');
  const [name, setName] = useState('');
  const [minSeverity, setMinSeverity] = useState('info');
  const [repeat, setRepeat] = useState('0');
  const [url, setUrl] = useState('');
  const [allow, setAllow] = useState('');
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
      webhook:
        kind === 'webhook'
          ? {
              url,
              allow_private_cidrs: allow
                .split(',')
                .map((s) => s.trim())
                .filter(Boolean),
            }
          : null,
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
            fields={['name', 'kind', 'min_severity', 'repeat_minutes', 'webhook.url', 'webhook.allow_private_cidrs[0]', 'email.host', 'email.port', 'email.from', 'email.to', 'secret']}
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
              {text('Private networks it may reach (CIDRs, comma-separated; none by default)', 'webhook.allow_private_cidrs[0]', allow, setAllow)}
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

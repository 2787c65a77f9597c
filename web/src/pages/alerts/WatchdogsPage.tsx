// Watchdogs (/alerts/watchdogs): the policies, and an editor for one —
// rules built from the Engine's metadata (subjects, their operators and
// units), targets, noise controls and actions — with a preview of what
// the draft says of its targets now (no incident opens). Saving makes it
// live and evaluates it at once.
import { useState } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import Chip from '@mui/material/Chip';
import Dialog from '@mui/material/Dialog';
import DialogActions from '@mui/material/DialogActions';
import DialogContent from '@mui/material/DialogContent';
import DialogTitle from '@mui/material/DialogTitle';
import FormControlLabel from '@mui/material/FormControlLabel';
import IconButton from '@mui/material/IconButton';
import MenuItem from '@mui/material/MenuItem';
import Paper from '@mui/material/Paper';
import Switch from '@mui/material/Switch';
import Table from '@mui/material/Table';
import TableBody from '@mui/material/TableBody';
import TableCell from '@mui/material/TableCell';
import TableHead from '@mui/material/TableHead';
import TableRow from '@mui/material/TableRow';
import TextField from '@mui/material/TextField';
import Typography from '@mui/material/Typography';
import DeleteIcon from '@mui/icons-material/Delete';
import { devices as devicesApi, watchdogsApi } from '../../api/endpoints';
import type { Device, Watchdog, WatchdogInput, WatchdogMetadata, WatchdogPreview } from '../../api/types';
import { ALL_DEVICES_KEY, AssemblyPicker, DevicePicker, FilterPicker, SitePicker } from '../automation/pickers';
import { PageHeader } from '../../components/ComingSoon';
import { ErrorAlert } from '../../components/ErrorAlert';
import { fieldError } from '../../components/errors';
import { INCIDENTS_QUERY } from './queries';

export const WATCHDOGS_QUERY = [...INCIDENTS_QUERY, 'watchdogs'] as const;

type Rule = NonNullable<WatchdogInput['rules']>[number];
type Action = NonNullable<WatchdogInput['actions']>[number];

const NOISE: { key: keyof NonNullable<WatchdogInput['noise']>; label: string }[] = [
  { key: 'interval_seconds', label: 'Evaluate every (s)' },
  { key: 'consecutive_matches', label: 'Consecutive matches' },
  { key: 'cooldown_seconds', label: 'Cooldown (s)' },
  { key: 'auto_resolve_seconds', label: 'Auto-resolve after clear (s)' },
  { key: 'boot_grace_seconds', label: 'Boot grace (s)' },
  { key: 'stale_seconds', label: 'Resolve when silent (s, 0: never)' },
];

function blank(md: WatchdogMetadata): WatchdogInput {
  return {
    name: '',
    description: '',
    severity: 'warning',
    enabled: true,
    site_ids: null,
    targets: { kind: 'all', device_guids: [], filter_ids: [] },
    match: 'all',
    rules: [],
    noise: {
      interval_seconds: md.default_interval_seconds,
      consecutive_matches: 1,
      cooldown_seconds: 0,
      auto_resolve_seconds: 0,
      boot_grace_seconds: 0,
      stale_seconds: 0,
    },
    actions: [],
  };
}

function fromWatchdog(w: Watchdog): WatchdogInput {
  return {
    name: w.name,
    description: w.description,
    severity: w.severity,
    enabled: w.enabled,
    site_ids: w.site_ids,
    targets: w.targets,
    match: w.match,
    rules: w.rules,
    noise: w.noise,
    actions: w.actions,
  };
}

const num = (v: string): number | null => (v.trim() === '' ? null : Number(v));

export default function WatchdogsPage() {
  const [editing, setEditing] = useState<Watchdog | 'new' | null>(null);
  const query = useQuery({ queryKey: WATCHDOGS_QUERY, queryFn: watchdogsApi.list });
  const md = useQuery({ queryKey: ['watchdog-metadata'], queryFn: watchdogsApi.metadata, staleTime: Infinity });
  const rows = query.data ?? [];
  return (
    <>
      <PageHeader title="Watchdogs" subtitle="Policies evaluated against your devices; a match opens an incident on the Alerts page." />
      <Box sx={{ mb: 1.5 }}>
        <Button variant="contained" size="small" onClick={() => setEditing('new')} disabled={!md.data}>
          New watchdog
        </Button>
      </Box>
      {query.isError && <ErrorAlert error={query.error} />}
      {md.isError && <ErrorAlert error={md.error} />}
      <Paper variant="outlined">
        <Table size="small" aria-label="Watchdogs">
          <TableHead>
            <TableRow>
              <TableCell>Name</TableCell>
              <TableCell>Severity</TableCell>
              <TableCell>Rules</TableCell>
              <TableCell>Actions</TableCell>
              <TableCell align="right" />
            </TableRow>
          </TableHead>
          <TableBody>
            {rows.map((w) => (
              <TableRow key={w.id} data-testid={`watchdog-${w.id}`}>
                <TableCell>
                  {w.name}
                  {!w.enabled && <Chip size="small" label="disabled" variant="outlined" sx={{ ml: 1 }} />}
                </TableCell>
                <TableCell>{w.severity}</TableCell>
                <TableCell>
                  {(w.rules ?? []).map((r) => `${r.subject} ${r.operator}${r.target ? ` ${r.target}` : ''}${r.threshold != null ? ` ${r.threshold}` : ''}`).join(w.match === 'any' ? ' or ' : ' and ')}
                </TableCell>
                <TableCell>{(w.actions ?? []).map((a) => a.type).join(', ')}</TableCell>
                <TableCell align="right">
                  <Button size="small" onClick={() => setEditing(w)} disabled={!md.data}>
                    Edit
                  </Button>
                </TableCell>
              </TableRow>
            ))}
            {rows.length === 0 && !query.isPending && (
              <TableRow>
                <TableCell colSpan={5}>
                  <Typography variant="body2" color="text.secondary">
                    No watchdog yet.
                  </Typography>
                </TableCell>
              </TableRow>
            )}
          </TableBody>
        </Table>
      </Paper>
      {editing && md.data && (
        <WatchdogEditor
          md={md.data}
          id={editing === 'new' ? null : editing.id}
          initial={editing === 'new' ? blank(md.data) : fromWatchdog(editing)}
          onClose={() => setEditing(null)}
        />
      )}
    </>
  );
}

export function WatchdogEditor({
  md,
  id,
  initial,
  onClose,
}: {
  md: WatchdogMetadata;
  id: number | null;
  initial: WatchdogInput;
  onClose: () => void;
}) {
  const queryClient = useQueryClient();
  const [draft, setDraft] = useState<WatchdogInput>(initial);
  const [preview, setPreview] = useState<WatchdogPreview | null>(null);
  const set = (patch: Partial<WatchdogInput>) => setDraft((d) => ({ ...d, ...patch }));
  const rules = draft.rules ?? [];
  const actions = draft.actions ?? [];
  const targets = draft.targets ?? { kind: 'all' };
  const setRule = (i: number, patch: Partial<Rule>) => set({ rules: rules.map((r, j) => (j === i ? { ...r, ...patch } : r)) });
  const setAction = (i: number, patch: Partial<Action>) => set({ actions: actions.map((a, j) => (j === i ? { ...a, ...patch } : a)) });
  const save = useMutation({
    mutationFn: () => (id === null ? watchdogsApi.create(draft) : watchdogsApi.update(id, draft)),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: INCIDENTS_QUERY });
      onClose();
    },
  });
  const previewing = useMutation({ mutationFn: () => watchdogsApi.preview(draft), onSuccess: setPreview });
  const err = (f: string) => fieldError(save.error ?? previewing.error, f);
  const subject = (s: string) => md.subjects.find((x) => x.subject === s);
  // The device picker's list (the same cache entry), to show saved GUIDs by name.
  const allDevices = useQuery({ queryKey: ALL_DEVICES_KEY, queryFn: () => devicesApi.list(), enabled: targets.kind === 'devices' });
  const deviceByGuid = (guid: string): Device =>
    allDevices.data?.find((d) => d.guid === guid) ?? ({ guid, hostname: guid } as Device);

  return (
    <Dialog open onClose={save.isPending ? undefined : onClose} fullWidth maxWidth="lg" aria-labelledby="watchdog-title">
      <DialogTitle id="watchdog-title">{id === null ? 'New watchdog' : `Edit “${initial.name}”`}</DialogTitle>
      <DialogContent>
        <ErrorAlert error={save.error ?? previewing.error} />
        <Box sx={{ display: 'flex', gap: 2, mt: 1 }}>
          <TextField label="Name" value={draft.name} onChange={(e) => set({ name: e.target.value })} error={Boolean(err('name'))} helperText={err('name')} sx={{ flex: 2 }} />
          <TextField select label="Severity" value={draft.severity} onChange={(e) => set({ severity: e.target.value })} sx={{ flex: 1 }}>
            {md.severities.map((s) => (
              <MenuItem key={s} value={s}>
                {s}
              </MenuItem>
            ))}
          </TextField>
          <Box sx={{ flex: 2 }}>
            <SitePicker
              value={draft.site_ids ?? []}
              onChange={(ids) => set({ site_ids: ids.length ? ids : null })}
              error={err('site_ids')}
              helperText="The sites it may apply to; none: every site."
            />
          </Box>
          <FormControlLabel control={<Switch checked={draft.enabled ?? true} onChange={(e) => set({ enabled: e.target.checked })} />} label="Enabled" />
        </Box>

        <Typography variant="subtitle2" sx={{ mt: 2 }}>
          Targets
        </Typography>
        <Box sx={{ display: 'flex', gap: 2, mt: 1 }}>
          <TextField
            select
            label="Applies to"
            value={targets.kind}
            onChange={(e) => set({ targets: { ...targets, kind: e.target.value } })}
            sx={{ flex: 1 }}
          >
            <MenuItem value="all">All devices of its sites</MenuItem>
            <MenuItem value="devices">Devices</MenuItem>
            <MenuItem value="filters">Saved device filters</MenuItem>
          </TextField>
          {targets.kind === 'devices' && (
            <Box sx={{ flex: 2 }}>
              <DevicePicker
                value={(targets.device_guids ?? []).map((g) => deviceByGuid(g))}
                onChange={(ds) => set({ targets: { ...targets, device_guids: ds.map((d) => d.guid) } })}
                error={err('targets.device_guids')}
              />
            </Box>
          )}
          {targets.kind === 'filters' && (
            <Box sx={{ flex: 2 }}>
              <FilterPicker
                value={targets.filter_ids ?? []}
                onChange={(ids) => set({ targets: { ...targets, filter_ids: ids } })}
                error={err('targets.filter_ids')}
              />
            </Box>
          )}
        </Box>

        <Box sx={{ display: 'flex', alignItems: 'center', gap: 2, mt: 2 }}>
          <Typography variant="subtitle2">Rules</Typography>
          <TextField select size="small" label="Match" value={draft.match} onChange={(e) => set({ match: e.target.value })} sx={{ width: 160 }}>
            <MenuItem value="all">all of them</MenuItem>
            <MenuItem value="any">any of them</MenuItem>
          </TextField>
        </Box>
        {rules.map((r, i) => {
          const info = subject(r.subject ?? '');
          return (
            <Box key={i} sx={{ display: 'flex', gap: 1, mt: 1 }} data-testid={`rule-${i}`}>
              <TextField
                select
                size="small"
                label="Subject"
                value={r.subject}
                onChange={(e) => {
                  const next = subject(e.target.value);
                  setRule(i, { subject: e.target.value, operator: next?.operators[0] ?? '' });
                }}
                sx={{ flex: 2 }}
              >
                {md.subjects.map((s) => (
                  <MenuItem key={s.subject} value={s.subject}>
                    {s.label}
                  </MenuItem>
                ))}
              </TextField>
              <TextField select size="small" label="Operator" value={r.operator} onChange={(e) => setRule(i, { operator: e.target.value })} sx={{ flex: 1 }}>
                {(info?.operators ?? []).map((o) => (
                  <MenuItem key={o} value={o}>
                    {o}
                  </MenuItem>
                ))}
              </TextField>
              {info?.target && (
                <TextField
                  size="small"
                  label="Target"
                  placeholder={info.target}
                  value={r.target ?? ''}
                  onChange={(e) => setRule(i, { target: e.target.value })}
                  error={Boolean(err(`rules[${i}].target`))}
                  helperText={err(`rules[${i}].target`)}
                  sx={{ flex: 2 }}
                />
              )}
              {info?.threshold && (
                <>
                  <TextField
                    size="small"
                    type="number"
                    label={`Threshold${info.unit ? ` (${info.unit})` : ''}`}
                    value={r.threshold ?? ''}
                    onChange={(e) => setRule(i, { threshold: num(e.target.value) })}
                    error={Boolean(err(`rules[${i}].threshold`))}
                    helperText={err(`rules[${i}].threshold`)}
                    sx={{ flex: 1 }}
                  />
                  <TextField
                    size="small"
                    type="number"
                    label="Recovers at"
                    value={r.recovery_threshold ?? ''}
                    onChange={(e) => setRule(i, { recovery_threshold: num(e.target.value) })}
                    error={Boolean(err(`rules[${i}].recovery_threshold`))}
                    helperText={err(`rules[${i}].recovery_threshold`)}
                    sx={{ flex: 1 }}
                  />
                </>
              )}
              {info?.value && (
                <TextField size="small" label="Version" value={r.value ?? ''} onChange={(e) => setRule(i, { value: e.target.value })} sx={{ flex: 1 }} />
              )}
              <TextField
                size="small"
                type="number"
                label="For (s)"
                value={r.for_seconds ?? 0}
                onChange={(e) => setRule(i, { for_seconds: Number(e.target.value) || 0 })}
                sx={{ width: 100 }}
              />
              <IconButton aria-label={`Remove rule ${i + 1}`} onClick={() => set({ rules: rules.filter((_, j) => j !== i) })}>
                <DeleteIcon fontSize="small" />
              </IconButton>
            </Box>
          );
        })}
        {err('rules') && (
          <Typography variant="caption" color="error">
            {err('rules')}
          </Typography>
        )}
        <Box>
          <Button
            size="small"
            sx={{ mt: 1 }}
            onClick={() => {
              const first = md.subjects[0];
              set({ rules: [...rules, { subject: first.subject, operator: first.operators[0], target: '', threshold: null, recovery_threshold: null, value: '', for_seconds: 0 }] });
            }}
          >
            Add rule
          </Button>
        </Box>

        <Typography variant="subtitle2" sx={{ mt: 2 }}>
          Noise controls
        </Typography>
        <Box sx={{ display: 'flex', gap: 1, mt: 1, flexWrap: 'wrap' }}>
          {NOISE.map(({ key, label }) => (
            <TextField
              key={key}
              size="small"
              type="number"
              label={label}
              value={draft.noise?.[key] ?? 0}
              onChange={(e) => set({ noise: { ...draft.noise, [key]: Number(e.target.value) || 0 } })}
              error={Boolean(err(`noise.${key}`))}
              helperText={err(`noise.${key}`)}
              sx={{ width: 200 }}
            />
          ))}
        </Box>

        <Typography variant="subtitle2" sx={{ mt: 2 }}>
          Actions (each runs once per incident)
        </Typography>
        {actions.map((a, i) => (
          <Box key={i} sx={{ display: 'flex', gap: 1, mt: 1 }} data-testid={`action-${i}`}>
            <TextField select size="small" label="Action" value={a.type} onChange={(e) => setAction(i, { type: e.target.value })} sx={{ flex: 1 }}>
              {md.actions.map((t) => (
                <MenuItem key={t} value={t}>
                  {t}
                </MenuItem>
              ))}
            </TextField>
            {a.type === 'service_control' && (
              <>
                <TextField
                  size="small"
                  label="Service"
                  value={a.service ?? ''}
                  onChange={(e) => setAction(i, { service: e.target.value })}
                  error={Boolean(err(`actions[${i}].service`))}
                  helperText={err(`actions[${i}].service`)}
                  sx={{ flex: 2 }}
                />
                <TextField select size="small" label="Do" value={a.service_action ?? 'restart'} onChange={(e) => setAction(i, { service_action: e.target.value })} sx={{ flex: 1 }}>
                  {md.service_actions.map((s) => (
                    <MenuItem key={s} value={s}>
                      {s}
                    </MenuItem>
                  ))}
                </TextField>
              </>
            )}
            {a.type === 'run_assembly' && (
              <Box sx={{ flex: 2 }}>
                <AssemblyPicker
                  value={a.assembly_id ?? null}
                  onChange={(asm) => setAction(i, { assembly_id: asm?.id ?? 0 })}
                  error={err(`actions[${i}].assembly_id`)}
                />
              </Box>
            )}
            <IconButton aria-label={`Remove action ${i + 1}`} onClick={() => set({ actions: actions.filter((_, j) => j !== i) })}>
              <DeleteIcon fontSize="small" />
            </IconButton>
          </Box>
        ))}
        <Box>
          <Button size="small" sx={{ mt: 1 }} onClick={() => set({ actions: [...actions, { type: 'toast' }] })}>
            Add action
          </Button>
        </Box>

        {preview && (
          <Box sx={{ mt: 2 }} data-testid="preview">
            <Typography variant="subtitle2">
              Preview: {preview.matched} of {preview.targets} targeted devices match now
            </Typography>
            {preview.devices.map((d) => (
              <Typography key={d.guid} variant="body2">
                {d.hostname}: {d.matched ? 'matches' : 'clear'}
              </Typography>
            ))}
          </Box>
        )}
      </DialogContent>
      <DialogActions>
        <Button onClick={() => previewing.mutate()} disabled={previewing.isPending}>
          Preview
        </Button>
        <Box sx={{ flex: 1 }} />
        <Button onClick={onClose} disabled={save.isPending}>
          Cancel
        </Button>
        <Button variant="contained" onClick={() => save.mutate()} disabled={save.isPending}>
          Save
        </Button>
      </DialogActions>
    </Dialog>
  );
}

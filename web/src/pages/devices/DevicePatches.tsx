import { useState } from 'react';
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
import LinearProgress from '@mui/material/LinearProgress';
import Stack from '@mui/material/Stack';
import Table from '@mui/material/Table';
import TableBody from '@mui/material/TableBody';
import TableCell from '@mui/material/TableCell';
import TableHead from '@mui/material/TableHead';
import TableRow from '@mui/material/TableRow';
import TextField from '@mui/material/TextField';
import ToggleButton from '@mui/material/ToggleButton';
import ToggleButtonGroup from '@mui/material/ToggleButtonGroup';
import Typography from '@mui/material/Typography';
import { devices as devicesApi, scheduledJobs } from '../../api/endpoints';
import type { PatchInstall, PatchInstallDraft, PatchInventory, PatchReboot } from '../../api/types';
import { ErrorAlert } from '../../components/ErrorAlert';

/** How often the lane's state is read while an install or reboot is open, and otherwise. */
export const PATCH_LIVE_POLL_MS = 2000;
export const PATCH_IDLE_POLL_MS = 30000;

const openStates = new Set(['queued', 'running']);

export const devicePatchesKey = (hostname: string) => ['device-patches', hostname] as const;

function isLive(v: PatchInventory | undefined): boolean {
  return Boolean(
    v && ((v.installs ?? []).some((i) => openStates.has(i.state)) || (v.reboots ?? []).some((r) => openStates.has(r.state))),
  );
}

/** An install's state as the operator reads it: "installed" only once the re-scan confirmed it (the Engine's state). */
const installLabels: Record<string, { label: string; color: 'default' | 'info' | 'success' | 'warning' | 'error' }> = {
  queued: { label: 'queued', color: 'default' },
  running: { label: 'installing', color: 'info' },
  installed: { label: 'installed', color: 'success' },
  already_installed: { label: 'already installed', color: 'success' },
  not_confirmed: { label: 'not confirmed by the re-scan', color: 'warning' },
  failed: { label: 'failed', color: 'error' },
};

const rebootLabels: Record<string, { label: string; color: 'default' | 'info' | 'success' | 'warning' | 'error' }> = {
  queued: { label: 'queued', color: 'default' },
  running: { label: 'running', color: 'info' },
  scheduled: { label: 'reboot scheduled', color: 'success' },
  not_required: { label: 'not required', color: 'default' },
  skipped_logged_in_user: { label: 'skipped: a user is signed in', color: 'warning' },
  failed: { label: 'failed', color: 'error' },
};

function when(at: string | null | undefined): string {
  return at ? new Date(at).toLocaleString() : '—';
}

/** A datetime-local input's text for an RFC 3339 time, in local time. */
function toLocalInput(at: string): string {
  const d = new Date(at);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

function InstallRow({ install }: { install: PatchInstall }) {
  const s = installLabels[install.state] ?? { label: install.state, color: 'default' as const };
  return (
    <TableRow data-testid={`install-${install.install_id}`}>
      <TableCell>{install.title || install.patch_key}</TableCell>
      <TableCell>
        <Chip size="small" variant="outlined" label={s.label} color={s.color} />
        {install.state === 'running' && (
          <Box sx={{ mt: 0.5, minWidth: 160 }}>
            <LinearProgress variant="determinate" value={install.percent} aria-label={`${install.title} progress`} />
            <Typography variant="caption" color="text.secondary">
              {install.phase} {install.percent}%{install.message ? ` · ${install.message}` : ''}
            </Typography>
          </Box>
        )}
        {install.state !== 'running' && install.message && (
          <Typography variant="caption" color="text.secondary" component="div">
            {install.message}
          </Typography>
        )}
      </TableCell>
      <TableCell>{install.scheduled_job_id != null ? `job ${install.scheduled_job_id}` : '—'}</TableCell>
      <TableCell>{install.requested_by}</TableCell>
      <TableCell>{when(install.finished_at ?? install.started_at ?? install.created_at)}</TableCell>
    </TableRow>
  );
}

function RebootRow({ reboot }: { reboot: PatchReboot }) {
  const s = rebootLabels[reboot.state] ?? { label: reboot.state, color: 'default' as const };
  return (
    <TableRow data-testid={`reboot-${reboot.reboot_id}`}>
      <TableCell>
        <Chip size="small" variant="outlined" label={s.label} color={s.color} />
        {reboot.state === 'skipped_logged_in_user' && reboot.signed_in.length > 0 && (
          <Typography variant="caption" color="text.secondary" component="div">
            Signed in: {reboot.signed_in.join(', ')}
          </Typography>
        )}
      </TableCell>
      <TableCell>{reboot.when_required ? 'when required' : 'always'}</TableCell>
      <TableCell>{reboot.requested_by}</TableCell>
      <TableCell>{when(reboot.finished_at ?? reboot.created_at)}</TableCell>
    </TableRow>
  );
}

/**
 * The install dialog: the operator picks pending rows, the Engine opens a
 * patch_install scheduled-job draft (nothing saved), the operator reviews
 * its name and time and schedules it (POST /api/scheduled_jobs), or runs
 * it now (a manual job run at once).
 */
function InstallDialog({ hostname, view, onClose }: { hostname: string; view: PatchInventory; onClose: (saved?: string) => void }) {
  const pending = (view.patches ?? []).filter((p) => p.state === 'pending');
  const [chosen, setChosen] = useState<Set<string>>(() => new Set(pending.map((p) => p.patch_key)));
  const [draft, setDraft] = useState<PatchInstallDraft | null>(null);
  const [name, setName] = useState('');
  const [mode, setMode] = useState<'once' | 'now'>('once');
  const [at, setAt] = useState('');
  const open = useMutation({
    mutationFn: () => devicesApi.patchInstallDraft(hostname, [...chosen]),
    onSuccess: (d) => {
      setDraft(d);
      setName(d.name);
      setAt(toLocalInput(d.schedule.at));
    },
  });
  const save = useMutation({
    mutationFn: async () => {
      if (!draft) throw new Error('no draft');
      const job = await scheduledJobs.create({
        name,
        kind: 'patch_install',
        assembly_id: null,
        workflow_id: null,
        parameters: draft.parameters as Record<string, never>,
        targets: draft.targets,
        schedule: mode === 'now' ? { type: 'manual' } : { type: 'once', at: new Date(at).toISOString() },
        options: draft.options,
        enabled: true,
      });
      if (mode === 'now') await scheduledJobs.rerun(job.id);
      return job;
    },
    onSuccess: (job) => onClose(mode === 'now' ? `Job "${job.name}" is running.` : `Job "${job.name}" is scheduled.`),
  });
  const toggle = (key: string) =>
    setChosen((s) => {
      const n = new Set(s);
      if (n.has(key)) n.delete(key);
      else n.add(key);
      return n;
    });
  return (
    <Dialog open onClose={() => onClose()} maxWidth="sm" fullWidth aria-labelledby="patch-install-title">
      <DialogTitle id="patch-install-title">{draft ? 'Review the install job' : `Install patches on ${hostname}`}</DialogTitle>
      <DialogContent>
        {!draft ? (
          <Stack>
            {pending.map((p) => (
              <FormControlLabel
                key={p.patch_key}
                control={<Checkbox checked={chosen.has(p.patch_key)} onChange={() => toggle(p.patch_key)} />}
                label={`${p.title}${p.severity ? ` (${p.severity})` : ''}`}
              />
            ))}
            <ErrorAlert error={open.error} />
          </Stack>
        ) : (
          <Stack spacing={2} sx={{ pt: 1 }}>
            <TextField label="Job name" value={name} onChange={(e) => setName(e.target.value)} fullWidth />
            <Box>
              <Typography variant="body2" color="text.secondary">
                A scheduled job of kind {draft.job_kind} installs, one after another in the device's patch lane:
              </Typography>
              <ul data-testid="draft-patches">
                {draft.patches.map((p) => (
                  <li key={p.patch_key}>{p.title}</li>
                ))}
              </ul>
            </Box>
            <ToggleButtonGroup exclusive size="small" value={mode} onChange={(_, v) => v && setMode(v)} aria-label="When">
              <ToggleButton value="once">At a time</ToggleButton>
              <ToggleButton value="now">Now</ToggleButton>
            </ToggleButtonGroup>
            {mode === 'once' && (
              <TextField
                label="Run at"
                type="datetime-local"
                value={at}
                onChange={(e) => setAt(e.target.value)}
                helperText="In your browser’s time zone."
                sx={{ maxWidth: 280 }}
                slotProps={{ inputLabel: { shrink: true } }}
              />
            )}
            <ErrorAlert error={save.error} />
          </Stack>
        )}
      </DialogContent>
      <DialogActions>
        <Button onClick={() => onClose()}>Cancel</Button>
        {!draft ? (
          <Button variant="contained" disabled={chosen.size === 0 || open.isPending} onClick={() => open.mutate()}>
            Open draft
          </Button>
        ) : (
          <Button variant="contained" disabled={!name.trim() || save.isPending} onClick={() => save.mutate()}>
            {mode === 'now' ? 'Run now' : 'Schedule'}
          </Button>
        )}
      </DialogActions>
    </Dialog>
  );
}

function RebootDialog({ hostname, onClose }: { hostname: string; onClose: (done?: string) => void }) {
  const [whenRequired, setWhenRequired] = useState(true);
  const send = useMutation({
    mutationFn: () => devicesApi.patchReboot(hostname, whenRequired),
    onSuccess: () => onClose('Reboot requested: it runs after the installs queued before it.'),
  });
  return (
    <Dialog open onClose={() => onClose()} aria-labelledby="patch-reboot-title">
      <DialogTitle id="patch-reboot-title">Reboot {hostname}</DialogTitle>
      <DialogContent>
        <Typography variant="body2" sx={{ mb: 1 }}>
          The agent skips the reboot while a user is signed in; only a patch policy forces one.
        </Typography>
        <FormControlLabel
          control={<Checkbox checked={whenRequired} onChange={(e) => setWhenRequired(e.target.checked)} />}
          label="Only if the device says it needs a reboot"
        />
        <ErrorAlert error={send.error} />
      </DialogContent>
      <DialogActions>
        <Button onClick={() => onClose()}>Cancel</Button>
        <Button variant="contained" color="warning" disabled={send.isPending} onClick={() => send.mutate()}>
          Reboot
        </Button>
      </DialogActions>
    </Dialog>
  );
}

/**
 * The device's patch lane on its Patches tab: install (a patch_install
 * scheduled-job draft), reboot (a patch_reboot_request), the installs with
 * live progress (polled while one is open) and the reboots, newest first.
 */
export function DevicePatchLane({ hostname }: { hostname: string }) {
  const qc = useQueryClient();
  const [dialog, setDialog] = useState<'install' | 'reboot' | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const q = useQuery({
    queryKey: devicePatchesKey(hostname),
    queryFn: () => devicesApi.patches(hostname),
    refetchInterval: (query) => (isLive(query.state.data) ? PATCH_LIVE_POLL_MS : PATCH_IDLE_POLL_MS),
  });
  const view = q.data;
  const pending = (view?.patches ?? []).filter((p) => p.state === 'pending').length;
  const close = (msg?: string) => {
    setDialog(null);
    if (msg) {
      setNotice(msg);
      void qc.invalidateQueries({ queryKey: devicePatchesKey(hostname) });
    }
  };
  return (
    <Box sx={{ mt: 2 }} data-testid="patch-lane">
      <Stack direction="row" spacing={1} alignItems="center" sx={{ mb: 1 }}>
        <Typography variant="subtitle2" sx={{ flex: 1 }}>
          Installs and reboots
          {view?.reboot_required ? (
            <Chip size="small" color="warning" variant="outlined" label="reboot required" sx={{ ml: 1 }} />
          ) : null}
        </Typography>
        <Button size="small" variant="contained" disabled={!view || pending === 0} onClick={() => setDialog('install')}>
          Install…
        </Button>
        <Button size="small" variant="outlined" color="warning" disabled={!view} onClick={() => setDialog('reboot')}>
          Reboot…
        </Button>
      </Stack>
      {notice && (
        <Alert severity="success" onClose={() => setNotice(null)} sx={{ mb: 1 }}>
          {notice}
        </Alert>
      )}
      <ErrorAlert error={q.error} />
      {view && (
        <>
          <Table size="small" aria-label="Installs">
            <TableHead>
              <TableRow>
                <TableCell>Patch</TableCell>
                <TableCell>State</TableCell>
                <TableCell>Job</TableCell>
                <TableCell>Requested by</TableCell>
                <TableCell>When</TableCell>
              </TableRow>
            </TableHead>
            <TableBody>
              {(view.installs ?? []).length === 0 ? (
                <TableRow>
                  <TableCell colSpan={5}>No install yet.</TableCell>
                </TableRow>
              ) : (
                view.installs.map((i) => <InstallRow key={i.install_id} install={i} />)
              )}
            </TableBody>
          </Table>
          {(view.reboots ?? []).length > 0 && (
            <Table size="small" aria-label="Reboots" sx={{ mt: 2 }}>
              <TableHead>
                <TableRow>
                  <TableCell>Reboot</TableCell>
                  <TableCell>Asked</TableCell>
                  <TableCell>Requested by</TableCell>
                  <TableCell>When</TableCell>
                </TableRow>
              </TableHead>
              <TableBody>
                {view.reboots.map((r) => (
                  <RebootRow key={r.reboot_id} reboot={r} />
                ))}
              </TableBody>
            </Table>
          )}
        </>
      )}
      {dialog === 'install' && view && <InstallDialog hostname={hostname} view={view} onClose={close} />}
      {dialog === 'reboot' && <RebootDialog hostname={hostname} onClose={close} />}
    </Box>
  );
}

// Create or edit a scheduled job: what runs (an assembly, agent maintenance
// or a workflow), on which devices and sites, when (with the next runs the
// Engine computes for the schedule), and how.
import { useEffect, useState, type FormEvent } from 'react';
import { ApiError } from '../../api/client';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import Checkbox from '@mui/material/Checkbox';
import CircularProgress from '@mui/material/CircularProgress';
import Dialog from '@mui/material/Dialog';
import DialogActions from '@mui/material/DialogActions';
import DialogContent from '@mui/material/DialogContent';
import DialogTitle from '@mui/material/DialogTitle';
import FormControlLabel from '@mui/material/FormControlLabel';
import MenuItem from '@mui/material/MenuItem';
import Paper from '@mui/material/Paper';
import Stack from '@mui/material/Stack';
import TextField from '@mui/material/TextField';
import ToggleButton from '@mui/material/ToggleButton';
import ToggleButtonGroup from '@mui/material/ToggleButtonGroup';
import Typography from '@mui/material/Typography';
import Autocomplete from '@mui/material/Autocomplete';
import { assemblies as assembliesApi, devices as devicesApi, scheduledJobs, workflows as workflowsApi } from '../../api/endpoints';
import type { Assembly, Device, JobKind, ParameterValues, Schedule, ScheduledJob, ScheduledJobInput } from '../../api/types';
import { ErrorAlert } from '../../components/ErrorAlert';
import { apiFieldError, shownFields } from './fields';
import { formatDateTime } from '../../components/format';
import { ALL_DEVICES_KEY, ASSEMBLIES_QUERY, AssemblyPicker, defaultValues, DevicePicker, FilterPicker, missingParameters, ParameterValuesEditor, SitePicker } from './pickers';
import { checkTimeout } from './QuickRunDialog';
import { checkSchedule, describeSchedule, formToSchedule, scheduleToForm, timeZones, type IntervalUnit, type ScheduleForm } from './schedule';

export const JOBS_QUERY = ['scheduled-jobs'] as const;
export const WORKFLOWS_QUERY = ['workflows'] as const;

const FIELDS = [
  'name',
  'kind',
  'assembly_id',
  'workflow_id',
  'targets',
  'targets.devices',
  'targets.sites',
  'targets.filters',
  'schedule',
  'schedule.type',
  'schedule.at',
  'schedule.expression',
  'schedule.timezone',
  'schedule.every_seconds',
  'options.timeout_seconds',
];

// The kinds the editor creates; patch_install jobs are opened as drafts
// from a device's Patches tab.
const KIND_LABEL: Record<Exclude<JobKind, 'patch_install'>, string> = { script: 'Script', agent_maintenance: 'Agent update', workflow: 'Workflow' };
const ALL_KIND_LABELS: Record<JobKind, string> = { ...KIND_LABEL, patch_install: 'Patch install' };
export const jobKindLabel = (k: string) => ALL_KIND_LABELS[k as JobKind] ?? k;

const PREVIEW_DEBOUNCE_MS = 400;

/** Next runs from POST /api/scheduled_jobs/schedule_preview, or the Engine's reason the schedule is wrong. */
function SchedulePreview({
  schedule,
  disabled,
  onFieldErrors,
}: {
  schedule: Schedule;
  disabled: boolean;
  onFieldErrors: (fields: Record<string, string>) => void;
}) {
  const [debounced, setDebounced] = useState(schedule);
  const key = JSON.stringify(schedule);
  useEffect(() => {
    const t = window.setTimeout(() => setDebounced(JSON.parse(key) as Schedule), PREVIEW_DEBOUNCE_MS);
    return () => window.clearTimeout(t);
  }, [key]);
  // Ask only once the input has settled, so a schedule typed past never reaches the Engine.
  const settled = JSON.stringify(debounced) === key;
  const query = useQuery({
    queryKey: ['schedule-preview', debounced],
    queryFn: () => scheduledJobs.schedulePreview(debounced),
    enabled: !disabled && settled && debounced.type !== 'manual',
    retry: false,
  });
  // The Engine's reasons also show at the schedule's inputs.
  const error = query.error;
  useEffect(() => {
    onFieldErrors(error instanceof ApiError ? error.fields : {});
  }, [error, onFieldErrors]);
  if (schedule.type === 'manual') {
    return (
      <Typography variant="body2" color="text.secondary">
        Runs only when someone presses Run now.
      </Typography>
    );
  }
  if (disabled) return null;
  const errors = error instanceof ApiError ? Object.values(error.fields) : [];
  return (
    <Paper variant="outlined" sx={{ p: 1.5 }} component="section" aria-label="Next runs">
      <Typography variant="subtitle2" sx={{ mb: 0.5 }}>
        Next runs {query.isFetching && <CircularProgress size={12} sx={{ ml: 1 }} />}
      </Typography>
      {query.isError ? (
        <Typography variant="body2" color="error" data-testid="preview-error">
          {errors.length ? errors.join(' ') : (query.error as Error).message}
        </Typography>
      ) : (
        <Box component="ol" sx={{ m: 0, pl: 2.5, typography: 'body2' }} data-testid="next-runs">
          {(query.data ?? []).map((t) => (
            <li key={t}>
              <time dateTime={t}>{formatDateTime(t)}</time>
            </li>
          ))}
          {query.isSuccess && (query.data ?? []).length === 0 && <li>None: the schedule never fires again.</li>}
        </Box>
      )}
    </Paper>
  );
}

function WorkflowPicker({ value, onChange, error }: { value: number | null; onChange: (id: number | null) => void; error?: string }) {
  const query = useQuery({ queryKey: WORKFLOWS_QUERY, queryFn: workflowsApi.list });
  return (
    <TextField
      select
      label="Workflow"
      name="workflow_id"
      value={value ?? ''}
      onChange={(e) => onChange(e.target.value === '' ? null : Number(e.target.value))}
      error={Boolean(error)}
      helperText={error}
    >
      {(query.data ?? []).map((w) => (
        <MenuItem key={w.id} value={w.id}>
          {w.name}
        </MenuItem>
      ))}
      {(query.data ?? []).length === 0 && (
        <MenuItem value="" disabled>
          No workflows yet
        </MenuItem>
      )}
    </TextField>
  );
}

function TimeZonePicker({ value, onChange, error }: { value: string; onChange: (tz: string) => void; error?: string }) {
  const [zones] = useState(timeZones);
  return (
    <Autocomplete
      options={zones}
      value={value}
      disableClearable
      onChange={(_, v) => onChange(v)}
      sx={{ minWidth: 240 }}
      renderInput={(params) => <TextField {...params} label="Time zone" name="schedule.timezone" error={Boolean(error)} helperText={error} />}
    />
  );
}

function ScheduleFields({ form, onChange, err }: { form: ScheduleForm; onChange: (f: ScheduleForm) => void; err: (f: string) => string | undefined }) {
  const set = (p: Partial<ScheduleForm>) => onChange({ ...form, ...p });
  return (
    <Stack spacing={1.5}>
      <ToggleButtonGroup exclusive size="small" value={form.type} onChange={(_, v) => v && set({ type: v })} aria-label="Schedule type">
        <ToggleButton value="once">Once</ToggleButton>
        <ToggleButton value="cron">Cron</ToggleButton>
        <ToggleButton value="interval">Interval</ToggleButton>
        <ToggleButton value="manual">Manual</ToggleButton>
      </ToggleButtonGroup>
      {form.type === 'once' && (
        <TextField
          label="Run at"
          name="schedule.at"
          type="datetime-local"
          value={form.at}
          onChange={(e) => set({ at: e.target.value })}
          error={Boolean(err('schedule.at'))}
          helperText={err('schedule.at') ?? 'In your browser’s time zone.'}
          sx={{ maxWidth: 280 }}
          slotProps={{ inputLabel: { shrink: true } }}
        />
      )}
      {form.type === 'cron' && (
        <Stack direction="row" spacing={2} alignItems="flex-start">
          <TextField
            label="Cron expression"
            name="schedule.expression"
            value={form.expression}
            onChange={(e) => set({ expression: e.target.value })}
            error={Boolean(err('schedule.expression'))}
            helperText={err('schedule.expression') ?? 'minute hour day-of-month month day-of-week'}
            sx={{ minWidth: 240 }}
            slotProps={{ htmlInput: { spellCheck: false, style: { fontFamily: 'ui-monospace, Menlo, Consolas, monospace' } } }}
          />
          <TimeZonePicker value={form.timezone} onChange={(timezone) => set({ timezone })} error={err('schedule.timezone')} />
        </Stack>
      )}
      {form.type === 'interval' && (
        <Stack direction="row" spacing={2} alignItems="flex-start">
          <TextField
            label="Every"
            name="schedule.every_seconds"
            type="number"
            value={form.every}
            onChange={(e) => set({ every: e.target.value })}
            error={Boolean(err('schedule.every_seconds'))}
            helperText={err('schedule.every_seconds')}
            sx={{ width: 140 }}
          />
          <TextField select label="Unit" value={form.unit} onChange={(e) => set({ unit: e.target.value as IntervalUnit })} sx={{ width: 140 }}>
            <MenuItem value="minutes">minutes</MenuItem>
            <MenuItem value="hours">hours</MenuItem>
            <MenuItem value="days">days</MenuItem>
          </TextField>
        </Stack>
      )}
    </Stack>
  );
}

function toForm(job?: ScheduledJob) {
  return {
    name: job?.name ?? '',
    kind: (job?.kind ?? 'script') as JobKind,
    assemblyId: job?.assembly_id ?? null,
    workflowId: job?.workflow_id ?? null,
    parameters: (job?.parameters ?? {}) as ParameterValues,
    deviceGuids: job?.targets.devices ?? [],
    siteIds: job?.targets.sites ?? [],
    filterIds: job?.targets.filters ?? [],
    schedule: scheduleToForm(job?.schedule),
    runWhenOnline: job?.options.run_when_online ?? true,
    timeout: String(job?.options.timeout_seconds ?? 300),
    stopOnFirstFailure: job?.options.stop_on_first_failure ?? false,
    enabled: job?.enabled ?? true,
  };
}

export function JobEditorDialog({ job, onClose }: { job?: ScheduledJob; onClose: () => void }) {
  const queryClient = useQueryClient();
  const [form, setForm] = useState(() => toForm(job));
  const [assembly, setAssembly] = useState<Assembly | null>(null);
  const [local, setLocal] = useState<Record<string, string>>({});
  const [previewErrors, setPreviewErrors] = useState<Record<string, string>>({});
  const set = (p: Partial<typeof form>) => setForm((f) => ({ ...f, ...p }));

  const devicesQuery = useQuery({ queryKey: ALL_DEVICES_KEY, queryFn: () => devicesApi.list() });
  const selectedDevices: Device[] = form.deviceGuids.map(
    (g) => devicesQuery.data?.find((d) => d.guid === g) ?? ({ guid: g, hostname: g } as Device),
  );
  // The assembly's declared parameters, when editing a job whose assembly is already chosen.
  const assemblyQuery = useQuery({
    queryKey: [...ASSEMBLIES_QUERY, 'script'],
    queryFn: () => assembliesApi.list({ kind: 'script' }),
    enabled: form.kind === 'script',
  });
  const params = (assembly ?? assemblyQuery.data?.find((a) => a.id === form.assemblyId))?.parameters;

  const input = (): ScheduledJobInput => ({
    name: form.name.trim(),
    kind: form.kind,
    assembly_id: form.kind === 'script' ? form.assemblyId : null,
    workflow_id: form.kind === 'workflow' ? form.workflowId : null,
    parameters: form.kind === 'script' ? form.parameters : {},
    targets: { devices: form.deviceGuids, sites: form.siteIds, filters: form.filterIds },
    schedule: formToSchedule(form.schedule),
    options: { run_when_online: form.runWhenOnline, timeout_seconds: Number(form.timeout), stop_on_first_failure: form.stopOnFirstFailure },
    enabled: form.enabled,
  });

  const mutation = useMutation({
    mutationFn: () => (job ? scheduledJobs.update(job.id, input()) : scheduledJobs.create(input())),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: JOBS_QUERY });
      onClose();
    },
  });

  const submit = (e: FormEvent) => {
    e.preventDefault();
    const errors: Record<string, string> = { ...checkSchedule(form.schedule) };
    if (!form.name.trim()) errors.name = 'Enter a name.';
    if (form.kind === 'script') {
      if (form.assemblyId === null) errors.assembly_id = 'Pick an assembly.';
      Object.assign(errors, missingParameters(params, form.parameters));
    }
    if (form.kind === 'workflow' && form.workflowId === null) errors.workflow_id = 'Pick a workflow.';
    if (form.deviceGuids.length === 0 && form.siteIds.length === 0 && form.filterIds.length === 0)
      errors['targets.devices'] = 'Pick devices, sites or device filters to run on.';
    const t = checkTimeout(form.timeout, true);
    if (t) errors['options.timeout_seconds'] = t;
    setLocal(errors);
    if (Object.keys(errors).length === 0) mutation.mutate();
  };
  const err = (f: string) => local[f] || apiFieldError(mutation.error, f) || previewErrors[f] || undefined;
  const paramFields = (params ?? []).map((p) => `parameters.${p.name}`);
  const schedule = formToSchedule(form.schedule);
  const scheduleInvalid = Object.keys(checkSchedule(form.schedule)).length > 0;

  return (
    <Dialog open onClose={mutation.isPending ? undefined : onClose} fullWidth maxWidth="md">
      <form noValidate onSubmit={submit}>
        <DialogTitle>{job ? `Edit ${job.name}` : 'New scheduled job'}</DialogTitle>
        <DialogContent>
          <ErrorAlert error={mutation.error} fields={shownFields(mutation.error, [...FIELDS, ...paramFields])} />
          <Stack spacing={2} sx={{ mt: 1 }}>
            <Stack direction="row" spacing={2}>
              <TextField
                label="Name"
                name="name"
                autoFocus
                fullWidth
                value={form.name}
                onChange={(e) => set({ name: e.target.value })}
                error={Boolean(err('name'))}
                helperText={err('name')}
              />
              <TextField
                select
                label="Kind"
                name="kind"
                value={form.kind}
                onChange={(e) => set({ kind: e.target.value as JobKind })}
                sx={{ minWidth: 180 }}
              >
                {(Object.keys(KIND_LABEL) as JobKind[]).map((k) => (
                  <MenuItem key={k} value={k}>
                    {ALL_KIND_LABELS[k]}
                  </MenuItem>
                ))}
              </TextField>
            </Stack>
            {form.kind === 'script' && (
              <>
                <AssemblyPicker
                  kinds={['script', 'ansible_playbook']}
                  value={form.assemblyId}
                  onChange={(a) => {
                    setAssembly(a);
                    set({ assemblyId: a?.id ?? null, parameters: defaultValues(a?.parameters) });
                    if (a) set({ timeout: String(a.timeout_seconds) });
                  }}
                  error={err('assembly_id')}
                />
                <ParameterValuesEditor params={params} values={form.parameters} onChange={(parameters) => set({ parameters })} errorFor={err} />
              </>
            )}
            {form.kind === 'workflow' && <WorkflowPicker value={form.workflowId} onChange={(workflowId) => set({ workflowId })} error={err('workflow_id')} />}
            {form.kind === 'agent_maintenance' && (
              <Typography variant="body2" color="text.secondary">
                Updates the agent of every target to the Engine’s current build (a repair when it already matches).
              </Typography>
            )}
            <Typography variant="subtitle2">Targets</Typography>
            <DevicePicker
              value={selectedDevices}
              onChange={(d) => set({ deviceGuids: d.map((x) => x.guid) })}
              error={err('targets.devices') ?? err('targets')}
            />
            <SitePicker value={form.siteIds} onChange={(siteIds) => set({ siteIds })} error={err('targets.sites')} />
            <FilterPicker value={form.filterIds} onChange={(filterIds) => set({ filterIds })} error={err('targets.filters')} />
            <Typography variant="subtitle2">Schedule</Typography>
            <Box sx={{ display: 'grid', gridTemplateColumns: { xs: '1fr', md: '1fr 280px' }, gap: 2, alignItems: 'start' }}>
              <Box>
                <ScheduleFields form={form.schedule} onChange={(s) => set({ schedule: s })} err={err} />
                <Typography variant="body2" color="text.secondary" sx={{ mt: 1 }} data-testid="schedule-words">
                  {describeSchedule(schedule)}
                </Typography>
              </Box>
              <SchedulePreview schedule={schedule} disabled={scheduleInvalid} onFieldErrors={setPreviewErrors} />
            </Box>
            <Typography variant="subtitle2">Options</Typography>
            <Stack direction="row" spacing={2} alignItems="center" flexWrap="wrap">
              <TextField
                label="Timeout (seconds)"
                name="options.timeout_seconds"
                type="number"
                value={form.timeout}
                onChange={(e) => set({ timeout: e.target.value })}
                error={Boolean(err('options.timeout_seconds'))}
                helperText={err('options.timeout_seconds') ?? '0: the assembly’s own'}
                sx={{ width: 180 }}
              />
              <FormControlLabel
                control={<Checkbox checked={form.runWhenOnline} onChange={(e) => set({ runWhenOnline: e.target.checked })} />}
                label="Run when an offline device returns"
              />
              <FormControlLabel
                control={<Checkbox checked={form.stopOnFirstFailure} onChange={(e) => set({ stopOnFirstFailure: e.target.checked })} />}
                label="Stop on first failure"
              />
              <FormControlLabel control={<Checkbox checked={form.enabled} onChange={(e) => set({ enabled: e.target.checked })} />} label="Enabled" />
            </Stack>
          </Stack>
        </DialogContent>
        <DialogActions>
          <Button onClick={onClose} disabled={mutation.isPending}>
            Cancel
          </Button>
          <Button type="submit" variant="contained" disabled={mutation.isPending}>
            {mutation.isPending ? 'Saving…' : job ? 'Save' : 'Create job'}
          </Button>
        </DialogActions>
      </form>
    </Dialog>
  );
}

// Runs an assembly or an ad-hoc script on devices now, then follows the run:
// POST /api/scripts/quick_run, then GET /api/scripts/quick_run/<run_id> every
// second until every device has finished.
import { useEffect, useState, type FormEvent } from 'react';
import { useMutation, useQuery } from '@tanstack/react-query';
import Button from '@mui/material/Button';
import Dialog from '@mui/material/Dialog';
import DialogActions from '@mui/material/DialogActions';
import DialogContent from '@mui/material/DialogContent';
import DialogTitle from '@mui/material/DialogTitle';
import MenuItem from '@mui/material/MenuItem';
import Stack from '@mui/material/Stack';
import TextField from '@mui/material/TextField';
import ToggleButton from '@mui/material/ToggleButton';
import ToggleButtonGroup from '@mui/material/ToggleButtonGroup';
import Typography from '@mui/material/Typography';
import { assemblies as assembliesApi, quickRuns } from '../../api/endpoints';
import type { Assembly, Device, ParameterValues, QuickRunInput, ScriptLanguage } from '../../api/types';
import { ErrorAlert } from '../../components/ErrorAlert';
import { apiFieldError, shownFields } from './fields';
import { CodeEditor } from './CodeEditor';
import { KeyValueEditor, pairsToValues, type Pair } from './KeyValueEditor';
import { ASSEMBLIES_QUERY, AssemblyPicker, defaultValues, DevicePicker, LANGUAGES, missingParameters, ParameterValuesEditor } from './pickers';
import { RunResults } from './RunResults';

export const quickRunKey = (runId: string) => ['quick-run', runId] as const;

const FIELDS = ['device_guids', 'assembly_id', 'language', 'body', 'timeout_seconds', 'parameters'];

/** `allowZero`: jobs and workflow steps take 0 as "the assembly's own timeout". */
export function checkTimeout(value: string, allowZero = false): string | undefined {
  const n = Number(value);
  const min = allowZero ? 0 : 1;
  if (!value.trim() || !Number.isInteger(n) || n < min || n > 86400) return `Between ${min} and 86400 seconds.`;
  return undefined;
}

export function QuickRunDialog({
  devices: initialDevices = [],
  assemblyId,
  onClose,
}: {
  devices?: Device[];
  assemblyId?: number;
  onClose: () => void;
}) {
  const [devices, setDevices] = useState<Device[]>(initialDevices);
  const [source, setSource] = useState<'assembly' | 'script'>('assembly');
  const [assembly, setAssembly] = useState<Assembly | null>(null);
  const [pickedId, setPickedId] = useState<number | null>(assemblyId ?? null);
  const [values, setValues] = useState<ParameterValues>({});
  const [language, setLanguage] = useState<ScriptLanguage>('bash');
  const [body, setBody] = useState('');
  const [pairs, setPairs] = useState<Pair[]>([]);
  const [timeout, setTimeoutText] = useState('60');
  const [local, setLocal] = useState<Record<string, string>>({});
  const [runId, setRunId] = useState<string | null>(null);

  // An assembly handed in (from its row) is loaded for its parameters.
  const preset = useQuery({
    queryKey: [...ASSEMBLIES_QUERY, 'one', assemblyId],
    queryFn: () => assembliesApi.get(assemblyId!),
    enabled: assemblyId !== undefined,
  });
  const presetData = preset.data;
  useEffect(() => {
    if (!presetData) return;
    setAssembly(presetData);
    setValues(defaultValues(presetData.parameters));
    setTimeoutText(String(presetData.timeout_seconds));
  }, [presetData]);

  const input = (): QuickRunInput => {
    const guids = devices.map((d) => d.guid);
    if (source === 'assembly') return { device_guids: guids, assembly_id: pickedId!, parameters: values, timeout_seconds: Number(timeout) };
    return { device_guids: guids, language, body, parameters: pairsToValues(pairs), timeout_seconds: Number(timeout) };
  };

  const mutation = useMutation({
    mutationFn: () => quickRuns.start(input()),
    onSuccess: (r) => setRunId(r.run_id),
  });

  const submit = (e: FormEvent) => {
    e.preventDefault();
    const errors: Record<string, string> = {};
    if (devices.length === 0) errors.device_guids = 'Pick at least one device.';
    if (devices.length > 1000) errors.device_guids = 'At most 1000 devices per run.';
    if (source === 'assembly') {
      if (pickedId === null) errors.assembly_id = 'Pick an assembly.';
      Object.assign(errors, missingParameters(assembly?.parameters, values));
    } else if (!body.trim()) errors.body = 'Enter the script to run.';
    const t = checkTimeout(timeout);
    if (t) errors.timeout_seconds = t;
    setLocal(errors);
    if (Object.keys(errors).length === 0) mutation.mutate();
  };
  const err = (f: string) => local[f] ?? apiFieldError(mutation.error, f);
  const paramFields = (assembly?.parameters ?? []).map((p) => `parameters.${p.name}`);

  if (runId) {
    return (
      <Dialog open onClose={onClose} fullWidth maxWidth="lg">
        <DialogTitle>
          Quick run on {devices.length === 1 ? devices[0].hostname : `${devices.length} devices`}
        </DialogTitle>
        <DialogContent>
          <RunResults queryKey={quickRunKey(runId)} fetchRun={() => quickRuns.get(runId)} />
        </DialogContent>
        <DialogActions>
          <Button onClick={() => (setRunId(null), mutation.reset())}>Run again</Button>
          <Button variant="contained" onClick={onClose}>
            Close
          </Button>
        </DialogActions>
      </Dialog>
    );
  }

  return (
    <Dialog open onClose={mutation.isPending ? undefined : onClose} fullWidth maxWidth="md">
      <form noValidate onSubmit={submit}>
        <DialogTitle>Run a script</DialogTitle>
        <DialogContent>
          <ErrorAlert error={mutation.error} fields={shownFields(mutation.error, [...FIELDS, ...paramFields])} />
          <Stack spacing={2} sx={{ mt: 1 }}>
            <DevicePicker value={devices} onChange={(d) => (setDevices(d), setLocal((l) => ({ ...l, device_guids: '' })))} error={err('device_guids') || undefined} />
            <ToggleButtonGroup
              exclusive
              size="small"
              value={source}
              onChange={(_, v) => v && setSource(v)}
              aria-label="What to run"
            >
              <ToggleButton value="assembly">Assembly</ToggleButton>
              <ToggleButton value="script">Ad-hoc script</ToggleButton>
            </ToggleButtonGroup>
            {source === 'assembly' ? (
              <>
                <AssemblyPicker
                  kinds={['script', 'ansible_playbook']}
                  value={pickedId}
                  onChange={(a) => {
                    setPickedId(a?.id ?? null);
                    setAssembly(a);
                    setValues(defaultValues(a?.parameters));
                    if (a) setTimeoutText(String(a.timeout_seconds));
                  }}
                  error={err('assembly_id') || undefined}
                />
                <ParameterValuesEditor params={assembly?.parameters} values={values} onChange={setValues} errorFor={(f) => err(f) || undefined} />
              </>
            ) : (
              <>
                <TextField
                  select
                  label="Language"
                  name="language"
                  value={language}
                  onChange={(e) => setLanguage(e.target.value as ScriptLanguage)}
                  error={Boolean(err('language'))}
                  helperText={err('language') ?? 'A device whose platform cannot run it reports unsupported_language.'}
                  sx={{ maxWidth: 260 }}
                >
                  {LANGUAGES.map((l) => (
                    <MenuItem key={l.value} value={l.value}>
                      {l.label} ({l.platform})
                    </MenuItem>
                  ))}
                </TextField>
                <div>
                  <CodeEditor label="Script body" language={language} value={body} onChange={setBody} minHeight={180} error={Boolean(err('body'))} />
                  {err('body') && (
                    <Typography variant="caption" color="error" role="alert">
                      {err('body')}
                    </Typography>
                  )}
                </div>
                <KeyValueEditor pairs={pairs} onChange={setPairs} />
              </>
            )}
            <TextField
              label="Timeout (seconds)"
              name="timeout_seconds"
              type="number"
              value={timeout}
              onChange={(e) => setTimeoutText(e.target.value)}
              error={Boolean(err('timeout_seconds'))}
              helperText={err('timeout_seconds') ?? 'The script is stopped after this long and the device reports timed out.'}
              sx={{ maxWidth: 260 }}
            />
          </Stack>
        </DialogContent>
        <DialogActions>
          <Button onClick={onClose} disabled={mutation.isPending}>
            Cancel
          </Button>
          <Button type="submit" variant="contained" disabled={mutation.isPending}>
            {mutation.isPending ? 'Starting…' : 'Run'}
          </Button>
        </DialogActions>
      </form>
    </Dialog>
  );
}

// Inputs the automation dialogs share: devices, sites, an assembly, and the
// values of an assembly's parameters.
import { useQuery } from '@tanstack/react-query';
import Autocomplete from '@mui/material/Autocomplete';
import Box from '@mui/material/Box';
import Checkbox from '@mui/material/Checkbox';
import FormControlLabel from '@mui/material/FormControlLabel';
import Stack from '@mui/material/Stack';
import TextField from '@mui/material/TextField';
import Typography from '@mui/material/Typography';
import { assemblies as assembliesApi, deviceFilters, devices as devicesApi, sites as sitesApi } from '../../api/endpoints';
import type { Assembly, AssemblyKind, AssemblyParameter, Device, DeviceFilter, ParameterValues, ScriptLanguage, Site } from '../../api/types';
import { SITES_QUERY } from '../SiteDialogs';
import { DEVICE_FILTERS_QUERY } from '../devices/FilterPanel';
import { DEVICES_QUERY } from '../devices/queries';

export const LANGUAGES: { value: ScriptLanguage; label: string; platform: string }[] = [
  { value: 'bash', label: 'Bash', platform: 'Linux' },
  { value: 'sh', label: 'sh', platform: 'Linux' },
  { value: 'python', label: 'Python', platform: 'Linux' },
  { value: 'powershell', label: 'PowerShell', platform: 'Windows' },
  { value: 'cmd', label: 'cmd', platform: 'Windows' },
];

export const languageLabel = (l: string | null | undefined) => LANGUAGES.find((x) => x.value === l)?.label ?? (l || '—');

export const ASSEMBLIES_QUERY = ['assemblies'] as const;
/** The same key the device grid uses for the unfiltered list, so both share one cache entry. */
export const ALL_DEVICES_KEY = [...DEVICES_QUERY, 'list', { siteId: null, status: null }] as const;

export function DevicePicker({
  value,
  onChange,
  error,
  helperText,
}: {
  value: Device[];
  onChange: (devices: Device[]) => void;
  error?: string;
  helperText?: string;
}) {
  const query = useQuery({ queryKey: ALL_DEVICES_KEY, queryFn: () => devicesApi.list() });
  return (
    <Autocomplete
      multiple
      options={query.data ?? []}
      loading={query.isPending}
      value={value}
      onChange={(_, v) => onChange(v)}
      getOptionLabel={(d) => d.hostname}
      isOptionEqualToValue={(a, b) => a.guid === b.guid}
      renderOption={(props, d) => (
        <li {...props} key={d.guid}>
          <Box sx={{ flex: 1 }}>{d.hostname}</Box>
          <Typography variant="caption" color="text.secondary">
            {d.site_name} · {d.connectivity_status}
          </Typography>
        </li>
      )}
      filterSelectedOptions
      renderInput={(params) => (
        <TextField
          {...params}
          label="Devices"
          name="device_guids"
          error={Boolean(error)}
          helperText={error ?? helperText ?? 'Type a hostname to add a device.'}
        />
      )}
    />
  );
}

export function SitePicker({
  value,
  onChange,
  error,
  helperText = 'Every device of these sites, resolved when the job runs.',
}: {
  value: number[];
  onChange: (ids: number[]) => void;
  error?: string;
  helperText?: string;
}) {
  const query = useQuery({ queryKey: SITES_QUERY, queryFn: sitesApi.list });
  const sites = query.data ?? [];
  const selected = value.map((id) => sites.find((s) => s.site_id === id) ?? ({ site_id: id, name: `Site ${id}` } as Site));
  return (
    <Autocomplete
      multiple
      options={sites}
      value={selected}
      onChange={(_, v) => onChange(v.map((s) => s.site_id))}
      getOptionLabel={(s) => s.name}
      isOptionEqualToValue={(a, b) => a.site_id === b.site_id}
      filterSelectedOptions
      renderInput={(params) => (
        <TextField {...params} label="Sites" name="targets.sites" error={Boolean(error)} helperText={error ?? helperText} />
      )}
    />
  );
}

/** Saved device filters (GET /api/device_filters), matched when the job fires. */
export function FilterPicker({ value, onChange, error }: { value: number[]; onChange: (ids: number[]) => void; error?: string }) {
  const query = useQuery({ queryKey: DEVICE_FILTERS_QUERY, queryFn: deviceFilters.list });
  const filters = query.data ?? [];
  const selected = value.map((id) => filters.find((f) => f.id === id) ?? ({ id, name: `Filter ${id}` } as DeviceFilter));
  return (
    <Autocomplete
      multiple
      options={filters}
      loading={query.isPending}
      value={selected}
      onChange={(_, v) => onChange(v.map((f) => f.id))}
      getOptionLabel={(f) => f.name}
      isOptionEqualToValue={(a, b) => a.id === b.id}
      filterSelectedOptions
      renderInput={(params) => (
        <TextField
          {...params}
          label="Device filters"
          name="targets.filters"
          error={Boolean(error)}
          helperText={error ?? 'Devices these saved filters match when the job runs, within the sites you have when saving.'}
        />
      )}
    />
  );
}

export function AssemblyPicker({
  value,
  onChange,
  error,
  label = 'Assembly',
  kinds = ['script'],
}: {
  value: number | null;
  onChange: (assembly: Assembly | null) => void;
  error?: string;
  label?: string;
  /** The kinds offered: scripts (jobs, workflow steps), or also playbooks (quick runs). */
  kinds?: AssemblyKind[];
}) {
  const one = kinds.length === 1 ? kinds[0] : null;
  const query = useQuery({ queryKey: [...ASSEMBLIES_QUERY, one ?? 'any'], queryFn: () => assembliesApi.list({ kind: one }) });
  const options = (query.data ?? []).filter((a) => kinds.includes(a.kind as AssemblyKind));
  const selected = options.find((a) => a.id === value) ?? null;
  return (
    <Autocomplete
      options={options}
      loading={query.isPending}
      value={selected}
      onChange={(_, v) => onChange(v)}
      getOptionLabel={(a) => a.name}
      isOptionEqualToValue={(a, b) => a.id === b.id}
      renderOption={(props, a) => (
        <li {...props} key={a.id}>
          <Box sx={{ flex: 1 }}>{a.name}</Box>
          <Typography variant="caption" color="text.secondary">
            {a.kind === 'ansible_playbook' ? 'Ansible playbook' : languageLabel(a.language)} · v{a.version}
          </Typography>
        </li>
      )}
      renderInput={(params) => <TextField {...params} label={label} name="assembly_id" error={Boolean(error)} helperText={error} />}
    />
  );
}

/** Starting values: each parameter's default, where it has one. */
export function defaultValues(params: AssemblyParameter[] | null | undefined): ParameterValues {
  const out: ParameterValues = {};
  for (const p of params ?? []) {
    if (p.default !== null && p.default !== undefined && p.default !== '') out[p.name] = p.default as string | number | boolean;
    else if (p.type === 'boolean') out[p.name] = false;
  }
  return out;
}

/** Required parameters without a value, as field errors keyed `parameters.<name>`. */
export function missingParameters(params: AssemblyParameter[] | null | undefined, values: ParameterValues): Record<string, string> {
  const errors: Record<string, string> = {};
  for (const p of params ?? []) {
    const v = values[p.name];
    if (p.required && (v === undefined || v === '')) errors[`parameters.${p.name}`] = 'Required.';
    if (p.type === 'number' && v !== undefined && v !== '' && !Number.isFinite(Number(v))) errors[`parameters.${p.name}`] = 'Enter a number.';
  }
  return errors;
}

/** Inputs for the parameters an assembly declares. */
export function ParameterValuesEditor({
  params,
  values,
  onChange,
  errorFor,
}: {
  params: AssemblyParameter[] | null | undefined;
  values: ParameterValues;
  onChange: (values: ParameterValues) => void;
  errorFor: (field: string) => string | undefined;
}) {
  if (!params?.length) return null;
  return (
    <Stack spacing={1.5} component="fieldset" sx={{ border: 0, p: 0, m: 0 }}>
      <Typography component="legend" variant="subtitle2" sx={{ mb: 1 }}>
        Parameters
      </Typography>
      {params.map((p) => {
        const label = p.label || p.name;
        const err = errorFor(`parameters.${p.name}`);
        if (p.type === 'boolean') {
          return (
            <FormControlLabel
              key={p.name}
              control={<Checkbox checked={Boolean(values[p.name])} onChange={(e) => onChange({ ...values, [p.name]: e.target.checked })} />}
              label={label}
            />
          );
        }
        return (
          <TextField
            key={p.name}
            label={label}
            name={`parameters.${p.name}`}
            type={p.type === 'number' ? 'number' : 'text'}
            required={p.required}
            value={values[p.name] ?? ''}
            onChange={(e) =>
              onChange({ ...values, [p.name]: p.type === 'number' && e.target.value !== '' ? Number(e.target.value) : e.target.value })
            }
            error={Boolean(err)}
            helperText={err ?? p.name}
          />
        );
      })}
    </Stack>
  );
}

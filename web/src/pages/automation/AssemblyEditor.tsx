// Create or edit an assembly. Saving an edit makes a new version when the
// body, language, parameters or timeout changed; older versions stay
// readable from the versions list.
import { useState, type FormEvent } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import Alert from '@mui/material/Alert';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import CircularProgress from '@mui/material/CircularProgress';
import Dialog from '@mui/material/Dialog';
import DialogActions from '@mui/material/DialogActions';
import DialogContent from '@mui/material/DialogContent';
import DialogTitle from '@mui/material/DialogTitle';
import List from '@mui/material/List';
import ListItem from '@mui/material/ListItem';
import ListItemText from '@mui/material/ListItemText';
import MenuItem from '@mui/material/MenuItem';
import Paper from '@mui/material/Paper';
import Stack from '@mui/material/Stack';
import TextField from '@mui/material/TextField';
import Typography from '@mui/material/Typography';
import { assemblies as assembliesApi } from '../../api/endpoints';
import type { Assembly, AssemblyInput, AssemblyKind, AssemblyParameter, RunAs, ScriptLanguage } from '../../api/types';
import { ErrorAlert } from '../../components/ErrorAlert';
import { apiFieldError, shownFields } from './fields';
import { formatCompactDateTime } from '../../components/format';
import { CodeEditor } from './CodeEditor';
import { checkParameters, normaliseParameter, ParametersEditor } from './ParametersEditor';
import { ASSEMBLIES_QUERY, LANGUAGES, languageLabel } from './pickers';

export const KINDS: { value: AssemblyKind; label: string }[] = [
  { value: 'script', label: 'Script' },
  { value: 'ansible_playbook', label: 'Ansible playbook' },
  { value: 'workflow', label: 'Workflow' },
];
export const kindLabel = (k: string) => KINDS.find((x) => x.value === k)?.label ?? k;

export const RUN_AS: { value: RunAs; label: string }[] = [
  { value: 'system', label: 'Agent account (SYSTEM/root)' },
  { value: 'current_user', label: 'Signed-in user (Windows)' },
];

export const MAX_BODY_BYTES = 256 * 1024;
const FIELDS = ['name', 'kind', 'language', 'description', 'body', 'timeout_seconds', 'parameters', 'run_as'];

export const assemblyKey = (id: number) => [...ASSEMBLIES_QUERY, 'one', id] as const;
const versionsKey = (id: number) => [...ASSEMBLIES_QUERY, 'versions', id] as const;

/** Local checks mirroring the Engine's limits (docs/api.md "Assemblies"). */
export function checkAssembly(input: AssemblyInput): Record<string, string> {
  const errors: Record<string, string> = {};
  if (!input.name.trim()) errors.name = 'Enter a name.';
  else if (input.name.trim().length > 200) errors.name = 'At most 200 characters.';
  if (input.kind === 'script' && !input.language) errors.language = 'Pick the language.';
  if (!input.body.trim()) errors.body = 'Enter the body.';
  else if (new TextEncoder().encode(input.body).length > MAX_BODY_BYTES) errors.body = 'At most 256 KiB.';
  if (!Number.isInteger(input.timeout_seconds) || input.timeout_seconds < 1 || input.timeout_seconds > 86400) {
    errors.timeout_seconds = 'Between 1 and 86400 seconds.';
  }
  return { ...errors, ...checkParameters(input.parameters) };
}

function VersionDialog({ id, version, onClose }: { id: number; version: number; onClose: () => void }) {
  const query = useQuery({ queryKey: [...ASSEMBLIES_QUERY, 'version', id, version], queryFn: () => assembliesApi.version(id, version) });
  const a = query.data;
  return (
    <Dialog open onClose={onClose} fullWidth maxWidth="md">
      <DialogTitle>
        {a ? `${a.name}, version ${a.version}` : `Version ${version}`}
      </DialogTitle>
      <DialogContent>
        {query.isError && <ErrorAlert error={query.error} />}
        {query.isPending && <CircularProgress size={20} />}
        {a && (
          <Stack spacing={1.5}>
            <Typography variant="body2" color="text.secondary">
              {languageLabel(a.language)}
              {a.run_as === 'current_user' ? ' · runs as the signed-in user' : ''} · timeout {a.timeout_seconds} s · saved by {a.updated_by || a.created_by} on{' '}
              {formatCompactDateTime(a.updated_at || a.created_at)}
            </Typography>
            {(a.parameters ?? []).length > 0 && (
              <Typography variant="body2">
                Parameters: {(a.parameters ?? []).map((p) => `${p.name} (${p.type}${p.required ? ', required' : ''})`).join(', ')}
              </Typography>
            )}
            <CodeEditor label={`Body of version ${a.version}`} language={a.kind === 'ansible_playbook' ? 'yaml' : (a.language as ScriptLanguage | '')} value={a.body ?? ''} readOnly minHeight={200} />
          </Stack>
        )}
      </DialogContent>
      <DialogActions>
        <Button onClick={onClose}>Close</Button>
      </DialogActions>
    </Dialog>
  );
}

function Versions({ id, current }: { id: number; current: number }) {
  const query = useQuery({ queryKey: versionsKey(id), queryFn: () => assembliesApi.versions(id) });
  const [viewing, setViewing] = useState<number | null>(null);
  const versions = [...(query.data ?? [])].sort((a, b) => b.version - a.version);
  return (
    <Paper variant="outlined" sx={{ p: 1.5 }} component="section" aria-label="Versions">
      <Typography variant="subtitle2" sx={{ mb: 0.5 }}>
        Versions
      </Typography>
      {query.isError && <ErrorAlert error={query.error} />}
      <List dense disablePadding>
        {versions.map((v) => (
          <ListItem
            key={v.version}
            disableGutters
            secondaryAction={
              v.version === current ? (
                <Typography variant="caption" color="primary">
                  current
                </Typography>
              ) : (
                <Button size="small" onClick={() => setViewing(v.version)} aria-label={`View version ${v.version}`}>
                  View
                </Button>
              )
            }
          >
            <ListItemText
              primary={`v${v.version} · ${languageLabel(v.language)}`}
              secondary={`${v.created_by} · ${formatCompactDateTime(v.created_at)}`}
            />
          </ListItem>
        ))}
      </List>
      {viewing !== null && <VersionDialog id={id} version={viewing} onClose={() => setViewing(null)} />}
    </Paper>
  );
}

function toForm(a?: Assembly) {
  return {
    name: a?.name ?? '',
    kind: (a?.kind ?? 'script') as AssemblyKind,
    language: (a?.language ?? 'bash') as ScriptLanguage | '',
    description: a?.description ?? '',
    body: a?.body ?? '',
    parameters: (a?.parameters ?? []) as AssemblyParameter[],
    timeout: String(a?.timeout_seconds ?? 300),
    runAs: ((a?.run_as as RunAs | undefined) ?? 'system') as RunAs,
  };
}

function EditorForm({ assembly, onClose, onSaved }: { assembly?: Assembly; onClose: () => void; onSaved: (a: Assembly) => void }) {
  const queryClient = useQueryClient();
  const [form, setForm] = useState(() => toForm(assembly));
  const [local, setLocal] = useState<Record<string, string>>({});
  const set = (p: Partial<typeof form>) => setForm((f) => ({ ...f, ...p }));

  const input = (): AssemblyInput => ({
    name: form.name.trim(),
    kind: form.kind,
    language: form.kind === 'script' ? form.language : '',
    description: form.description.trim(),
    body: form.body,
    parameters: form.parameters.map(normaliseParameter),
    timeout_seconds: Number(form.timeout),
    run_as: form.kind === 'script' ? form.runAs : 'system',
  });

  const mutation = useMutation({
    mutationFn: () => (assembly ? assembliesApi.update(assembly.id, input()) : assembliesApi.create(input())),
    onSuccess: (saved) => {
      queryClient.setQueryData(assemblyKey(saved.id), saved);
      void queryClient.invalidateQueries({ queryKey: ASSEMBLIES_QUERY });
      onSaved(saved);
    },
  });

  const submit = (e: FormEvent) => {
    e.preventDefault();
    const errors = checkAssembly(input());
    setLocal(errors);
    if (Object.keys(errors).length === 0) mutation.mutate();
  };
  const err = (f: string) => local[f] ?? apiFieldError(mutation.error, f);
  const paramFields = form.parameters.flatMap((_, i) => [`parameters.${i}.name`, `parameters.${i}.default`]);

  return (
    <form noValidate onSubmit={submit}>
      <DialogTitle>{assembly ? `Edit ${assembly.name}` : 'New assembly'}</DialogTitle>
      <DialogContent>
        <ErrorAlert error={mutation.error} fields={shownFields(mutation.error, [...FIELDS, ...paramFields])} />
        <Box sx={{ display: 'grid', gridTemplateColumns: { xs: '1fr', md: assembly ? '1fr 240px' : '1fr' }, gap: 2, mt: 1 }}>
          <Stack spacing={2}>
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
                onChange={(e) => set({ kind: e.target.value as AssemblyKind })}
                error={Boolean(err('kind'))}
                helperText={err('kind')}
                sx={{ minWidth: 170 }}
              >
                {KINDS.map((k) => (
                  <MenuItem key={k.value} value={k.value}>
                    {k.label}
                  </MenuItem>
                ))}
              </TextField>
              {form.kind === 'script' && (
                <TextField
                  select
                  label="Language"
                  name="language"
                  value={form.language}
                  onChange={(e) => set({ language: e.target.value as ScriptLanguage })}
                  error={Boolean(err('language'))}
                  helperText={err('language')}
                  sx={{ minWidth: 170 }}
                >
                  {LANGUAGES.map((l) => (
                    <MenuItem key={l.value} value={l.value}>
                      {l.label} ({l.platform})
                    </MenuItem>
                  ))}
                </TextField>
              )}
              {form.kind === 'script' && (
                <TextField
                  select
                  label="Run as"
                  name="run_as"
                  value={form.runAs}
                  onChange={(e) => set({ runAs: e.target.value as RunAs })}
                  error={Boolean(err('run_as'))}
                  helperText={err('run_as')}
                  sx={{ minWidth: 220 }}
                >
                  {RUN_AS.map((r) => (
                    <MenuItem key={r.value} value={r.value}>
                      {r.label}
                    </MenuItem>
                  ))}
                </TextField>
              )}
              <TextField
                label="Timeout (s)"
                name="timeout_seconds"
                type="number"
                value={form.timeout}
                onChange={(e) => set({ timeout: e.target.value })}
                error={Boolean(err('timeout_seconds'))}
                helperText={err('timeout_seconds')}
                sx={{ width: 140, flexShrink: 0 }}
              />
            </Stack>
            <TextField
              label="Description"
              name="description"
              value={form.description}
              onChange={(e) => set({ description: e.target.value })}
              error={Boolean(err('description'))}
              helperText={err('description')}
              multiline
              minRows={1}
            />
            <div>
              <CodeEditor
                label="Body"
                language={form.kind === 'script' ? form.language : form.kind === 'ansible_playbook' ? 'yaml' : ''}
                value={form.body}
                onChange={(body) => set({ body })}
                error={Boolean(err('body'))}
              />
              {err('body') && (
                <Typography variant="caption" color="error" role="alert" data-field="body">
                  {err('body')}
                </Typography>
              )}
              {form.kind === 'ansible_playbook' && !err('body') && (
                <Typography variant="caption" color="text.secondary" component="p" data-testid="playbook-help">
                  Each target device's agent runs this playbook with ansible-playbook against itself (hosts: localhost,
                  connection: local); parameters are its extra vars. Linux devices need Ansible installed.
                </Typography>
              )}
            </div>
            <ParametersEditor params={form.parameters} onChange={(parameters) => set({ parameters })} errorFor={(f) => err(f)} />
          </Stack>
          {assembly && <Versions id={assembly.id} current={assembly.version} />}
        </Box>
      </DialogContent>
      <DialogActions>
        <Button onClick={onClose} disabled={mutation.isPending}>
          Close
        </Button>
        <Button type="submit" variant="contained" disabled={mutation.isPending}>
          {mutation.isPending ? 'Saving…' : assembly ? 'Save new version' : 'Create'}
        </Button>
      </DialogActions>
    </form>
  );
}

/** The editor for a new assembly (no id) or an existing one. */
export function AssemblyEditorDialog({ id, onClose }: { id?: number; onClose: () => void }) {
  const queryClient = useQueryClient();
  const [currentId, setCurrentId] = useState(id);
  const [saved, setSaved] = useState<string | null>(null);
  const query = useQuery({
    queryKey: assemblyKey(currentId ?? 0),
    queryFn: () => assembliesApi.get(currentId!),
    enabled: currentId !== undefined,
  });
  const loading = currentId !== undefined && query.isPending;
  return (
    <Dialog open onClose={onClose} fullWidth maxWidth="lg">
      {saved && (
        <Alert severity="success" variant="outlined" sx={{ m: 2, mb: 0 }} onClose={() => setSaved(null)} data-testid="assembly-saved">
          {saved}
        </Alert>
      )}
      {loading ? (
        <DialogContent>
          <Box role="status" sx={{ display: 'flex', gap: 1, alignItems: 'center' }}>
            <CircularProgress size={18} /> Loading the assembly…
          </Box>
        </DialogContent>
      ) : query.isError ? (
        <DialogContent>
          <ErrorAlert error={query.error} />
        </DialogContent>
      ) : (
        <EditorForm
          key={`${query.data?.id ?? 'new'}-${query.data?.version ?? 0}`}
          assembly={query.data}
          onClose={onClose}
          onSaved={(a) => {
            setSaved(`Saved ${a.name} as version ${a.version}.`);
            void queryClient.invalidateQueries({ queryKey: versionsKey(a.id) });
            setCurrentId(a.id);
          }}
        />
      )}
    </Dialog>
  );
}

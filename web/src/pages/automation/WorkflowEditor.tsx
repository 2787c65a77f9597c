// Create or edit a workflow: ordered steps, each running an assembly with a
// condition on the previous step's result.
import { useState, type FormEvent } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import Dialog from '@mui/material/Dialog';
import DialogActions from '@mui/material/DialogActions';
import DialogContent from '@mui/material/DialogContent';
import DialogTitle from '@mui/material/DialogTitle';
import IconButton from '@mui/material/IconButton';
import MenuItem from '@mui/material/MenuItem';
import Paper from '@mui/material/Paper';
import Stack from '@mui/material/Stack';
import TextField from '@mui/material/TextField';
import Typography from '@mui/material/Typography';
import AddIcon from '@mui/icons-material/Add';
import ArrowDownwardIcon from '@mui/icons-material/ArrowDownward';
import ArrowUpwardIcon from '@mui/icons-material/ArrowUpward';
import DeleteOutlineIcon from '@mui/icons-material/DeleteOutline';
import { assemblies as assembliesApi, workflows as workflowsApi } from '../../api/endpoints';
import type { ParameterValues, StepCondition, Workflow, WorkflowInput, WorkflowStep } from '../../api/types';
import { ErrorAlert } from '../../components/ErrorAlert';
import { apiFieldError, shownFields } from './fields';
import { WORKFLOWS_QUERY } from './JobEditor';
import { ASSEMBLIES_QUERY, AssemblyPicker, defaultValues, missingParameters, ParameterValuesEditor } from './pickers';

export const CONDITIONS: { value: StepCondition; label: string }[] = [
  { value: 'always', label: 'Always' },
  { value: 'on_success', label: 'When the previous step succeeded' },
  { value: 'on_failure', label: 'When the previous step failed' },
];

function nextStepId(steps: WorkflowStep[]): string {
  let n = steps.length + 1;
  const ids = new Set(steps.map((s) => s.id));
  while (ids.has(`s${n}`)) n += 1;
  return `s${n}`;
}

export function checkWorkflow(input: WorkflowInput, paramsOf: (id: number | null) => Parameters<typeof missingParameters>[0]): Record<string, string> {
  const errors: Record<string, string> = {};
  if (!input.name.trim()) errors.name = 'Enter a name.';
  if (input.steps.length === 0) errors.steps = 'Add at least one step.';
  input.steps.forEach((s, i) => {
    if (!s.name.trim()) errors[`steps.${i}.name`] = 'Enter a name.';
    if (s.assembly_id === null) errors[`steps.${i}.assembly_id`] = 'Pick an assembly.';
    if (!Number.isInteger(s.timeout_seconds) || s.timeout_seconds < 0 || s.timeout_seconds > 86400) {
      errors[`steps.${i}.timeout_seconds`] = 'Between 0 (the assembly’s own) and 86400 seconds.';
    }
    for (const [k, v] of Object.entries(missingParameters(paramsOf(s.assembly_id), s.parameters))) errors[`steps.${i}.${k}`] = v;
  });
  return errors;
}

export function WorkflowEditorDialog({ workflow, onClose }: { workflow?: Workflow; onClose: () => void }) {
  const queryClient = useQueryClient();
  const [name, setName] = useState(workflow?.name ?? '');
  const [description, setDescription] = useState(workflow?.description ?? '');
  const [steps, setSteps] = useState<WorkflowStep[]>(
    workflow?.steps.map((s) => ({ ...s, parameters: s.parameters as ParameterValues, condition: s.condition as StepCondition })) ?? [{ id: 's1', name: 'Step 1', assembly_id: null, parameters: {}, condition: 'always', timeout_seconds: 300 }],
  );
  const [local, setLocal] = useState<Record<string, string>>({});
  const assembliesQuery = useQuery({ queryKey: [...ASSEMBLIES_QUERY, 'script'], queryFn: () => assembliesApi.list({ kind: 'script' }) });
  const paramsOf = (id: number | null) => assembliesQuery.data?.find((a) => a.id === id)?.parameters;

  const setStep = (i: number, p: Partial<WorkflowStep>) => setSteps((all) => all.map((s, j) => (j === i ? { ...s, ...p } : s)));
  const move = (i: number, by: number) =>
    setSteps((all) => {
      const next = [...all];
      const [s] = next.splice(i, 1);
      next.splice(i + by, 0, s);
      return next;
    });

  const input = (): WorkflowInput => ({ name: name.trim(), description: description.trim(), steps: steps.map((s) => ({ ...s, name: s.name.trim() })) });
  const mutation = useMutation({
    mutationFn: () => (workflow ? workflowsApi.update(workflow.id, input()) : workflowsApi.create(input())),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: WORKFLOWS_QUERY });
      onClose();
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const errors = checkWorkflow(input(), paramsOf);
    setLocal(errors);
    if (Object.keys(errors).length === 0) mutation.mutate();
  };
  const err = (f: string) => local[f] || apiFieldError(mutation.error, f) || undefined;
  const shown = ['name', 'description', 'steps', ...steps.flatMap((_, i) => [`steps.${i}.name`, `steps.${i}.assembly_id`, `steps.${i}.assembly_version`, `steps.${i}.assembly_sha256`, `steps.${i}.timeout_seconds`, `steps.${i}.condition`])];

  return (
    <Dialog open onClose={mutation.isPending ? undefined : onClose} fullWidth maxWidth="md">
      <form noValidate onSubmit={submit}>
        <DialogTitle>{workflow ? `Edit ${workflow.name}` : 'New workflow'}</DialogTitle>
        <DialogContent>
          <ErrorAlert error={mutation.error} fields={shownFields(mutation.error, shown)} />
          <Stack spacing={2} sx={{ mt: 1 }}>
            <TextField label="Name" name="name" autoFocus value={name} onChange={(e) => setName(e.target.value)} error={Boolean(err('name'))} helperText={err('name')} />
            <TextField label="Description" name="description" value={description} onChange={(e) => setDescription(e.target.value)} multiline />
            <Typography variant="subtitle2">Steps</Typography>
            {err('steps') && (
              <Typography variant="caption" color="error" role="alert">
                {err('steps')}
              </Typography>
            )}
            {steps.map((s, i) => (
              <Paper key={s.id} variant="outlined" sx={{ p: 1.5 }} component="section" aria-label={`Step ${i + 1}`} data-testid="workflow-step">
                <Box sx={{ display: 'flex', alignItems: 'center', gap: 1, mb: 1.5 }}>
                  <Typography variant="subtitle2" sx={{ flex: 1 }}>
                    Step {i + 1}
                  </Typography>
                  <IconButton size="small" aria-label={`Move step ${i + 1} up`} disabled={i === 0} onClick={() => move(i, -1)}>
                    <ArrowUpwardIcon fontSize="small" />
                  </IconButton>
                  <IconButton size="small" aria-label={`Move step ${i + 1} down`} disabled={i === steps.length - 1} onClick={() => move(i, 1)}>
                    <ArrowDownwardIcon fontSize="small" />
                  </IconButton>
                  <IconButton size="small" aria-label={`Remove step ${i + 1}`} onClick={() => setSteps((all) => all.filter((_, j) => j !== i))}>
                    <DeleteOutlineIcon fontSize="small" />
                  </IconButton>
                </Box>
                <Stack spacing={1.5}>
                  <Stack direction="row" spacing={2}>
                    <TextField
                      label="Step name"
                      name={`steps.${i}.name`}
                      value={s.name}
                      onChange={(e) => setStep(i, { name: e.target.value })}
                      error={Boolean(err(`steps.${i}.name`))}
                      helperText={err(`steps.${i}.name`)}
                      fullWidth
                    />
                    <TextField
                      select
                      label="Runs"
                      name={`steps.${i}.condition`}
                      value={s.condition}
                      onChange={(e) => setStep(i, { condition: e.target.value as StepCondition })}
                      error={Boolean(err(`steps.${i}.condition`))}
                      helperText={err(`steps.${i}.condition`)}
                      sx={{ minWidth: 280 }}
                      disabled={i === 0}
                    >
                      {CONDITIONS.map((c) => (
                        <MenuItem key={c.value} value={c.value}>
                          {c.label}
                        </MenuItem>
                      ))}
                    </TextField>
                    <TextField
                      label="Timeout (s)"
                      name={`steps.${i}.timeout_seconds`}
                      type="number"
                      value={String(s.timeout_seconds)}
                      onChange={(e) => setStep(i, { timeout_seconds: Number(e.target.value) })}
                      error={Boolean(err(`steps.${i}.timeout_seconds`))}
                      helperText={err(`steps.${i}.timeout_seconds`)}
                      sx={{ width: 130, flexShrink: 0 }}
                    />
                  </Stack>
                  <AssemblyPicker
                    label={`Assembly of step ${i + 1}`}
                    value={s.assembly_id}
                    onChange={(a) =>
                      setStep(i, {
                        assembly_id: a?.id ?? null,
                        assembly_version: 0,
                        assembly_sha256: '',
                        parameters: defaultValues(a?.parameters),
                        ...(a ? { timeout_seconds: a.timeout_seconds } : {}),
                      })
                    }
                    error={err(`steps.${i}.assembly_id`)}
                  />
                  {(s.assembly_version ?? 0) > 0 && (
                    <Stack direction="row" spacing={1} alignItems="center">
                      <Typography variant="caption" color={err(`steps.${i}.assembly_version`) || err(`steps.${i}.assembly_sha256`) ? 'error' : 'text.secondary'}>
                        Runs version {s.assembly_version} of the assembly, pinned when the workflow was saved.{' '}
                        {err(`steps.${i}.assembly_version`) || err(`steps.${i}.assembly_sha256`)}
                      </Typography>
                      <Button size="small" onClick={() => setStep(i, { assembly_version: 0, assembly_sha256: '' })}>
                        Use the current version
                      </Button>
                    </Stack>
                  )}
                  <ParameterValuesEditor
                    params={paramsOf(s.assembly_id)}
                    values={s.parameters}
                    onChange={(parameters) => setStep(i, { parameters })}
                    errorFor={(f) => err(`steps.${i}.${f}`)}
                  />
                </Stack>
              </Paper>
            ))}
            <Box>
              <Button
                startIcon={<AddIcon />}
                onClick={() =>
                  setSteps((all) => [
                    ...all,
                    { id: nextStepId(all), name: `Step ${all.length + 1}`, assembly_id: null, parameters: {}, condition: 'on_success', timeout_seconds: 300 },
                  ])
                }
              >
                Add step
              </Button>
            </Box>
          </Stack>
        </DialogContent>
        <DialogActions>
          <Button onClick={onClose} disabled={mutation.isPending}>
            Cancel
          </Button>
          <Button type="submit" variant="contained" disabled={mutation.isPending}>
            {mutation.isPending ? 'Saving…' : workflow ? 'Save' : 'Create workflow'}
          </Button>
        </DialogActions>
      </form>
    </Dialog>
  );
}

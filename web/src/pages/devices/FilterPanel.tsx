// The devices page's filter panel: build a tree, see how many devices match
// (POST /api/device_filters/preview, debounced), apply it to the grid, save it
// as a named filter or load a saved one.
import { useEffect, useMemo, useState } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import Alert from '@mui/material/Alert';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import CircularProgress from '@mui/material/CircularProgress';
import Dialog from '@mui/material/Dialog';
import DialogActions from '@mui/material/DialogActions';
import DialogContent from '@mui/material/DialogContent';
import DialogTitle from '@mui/material/DialogTitle';
import MenuItem from '@mui/material/MenuItem';
import Paper from '@mui/material/Paper';
import TextField from '@mui/material/TextField';
import Typography from '@mui/material/Typography';
import { ApiError } from '../../api/client';
import { deviceFilters } from '../../api/endpoints';
import type { DeviceFilter, FilterGroup, FilterMetadata } from '../../api/types';
import { describeError } from '../../components/errors';
import { ErrorAlert } from '../../components/ErrorAlert';
import { useNotify } from '../../toasts/notify';
import { FilterBuilder } from './FilterBuilder';
import { emptyGroup, groupOf, localErrors, ROOT_PATH, sameTree, toApiTree } from './filterTree';

export const PREVIEW_DEBOUNCE_MS = 400;
export const DEVICE_FILTERS_QUERY = ['device-filters'] as const;
export const FILTER_METADATA_QUERY = ['device-filters', 'metadata'] as const;

/** What the grid applies: a saved filter (by id, with its tree for display) or a draft tree. */
export interface AppliedFilter {
  filterId: number | null;
  tree: FilterGroup;
  name: string | null;
}

/** Validation errors of the filter tree (keys starting `filter`) from an API answer. */
function treeErrors(error: unknown): Record<string, string> {
  if (!(error instanceof ApiError) || error.code !== 'validation_failed') return {};
  return Object.fromEntries(Object.entries(error.fields).filter(([k]) => k === ROOT_PATH || k.startsWith(`${ROOT_PATH}.`)));
}

function useDebounced<T>(value: T, ms: number): T {
  const [v, setV] = useState(value);
  useEffect(() => {
    const t = window.setTimeout(() => setV(value), ms);
    return () => window.clearTimeout(t);
  }, [value, ms]);
  return v;
}

interface PanelProps {
  meta: FilterMetadata;
  applied: AppliedFilter | null;
  onApply: (f: AppliedFilter | null) => void;
}

export function FilterPanel({ meta, applied, onApply }: PanelProps) {
  const queryClient = useQueryClient();
  const notify = useNotify();
  const [draft, setDraft] = useState<FilterGroup>(() => applied?.tree ?? emptyGroup());
  const [loaded, setLoaded] = useState<DeviceFilter | null>(null);
  const [saveOpen, setSaveOpen] = useState(false);
  const [saveErrors, setSaveErrors] = useState<Record<string, string>>({});

  // A view or a cleared filter replaces what the grid applies: show it.
  useEffect(() => {
    setDraft(applied?.tree ?? emptyGroup());
    if (!applied) setLoaded(null);
  }, [applied]);

  const savedQuery = useQuery({ queryKey: DEVICE_FILTERS_QUERY, queryFn: deviceFilters.list });
  useEffect(() => {
    if (applied?.filterId && savedQuery.data) setLoaded(savedQuery.data.find((f) => f.id === applied.filterId) ?? null);
  }, [applied, savedQuery.data]);

  const apiTree = useMemo(() => toApiTree(draft, meta.fields), [draft, meta.fields]);
  const local = useMemo(() => localErrors(draft), [draft]);
  const complete = Object.keys(local).length === 0;
  const json = JSON.stringify(apiTree);
  const debounced = useDebounced(json, PREVIEW_DEBOUNCE_MS);
  const preview = useQuery({
    queryKey: ['device-filters', 'preview', debounced],
    queryFn: ({ signal }) => deviceFilters.preview(JSON.parse(debounced) as FilterGroup, 5, signal),
    enabled: complete && debounced === json,
    retry: false,
    staleTime: 10_000,
  });
  const previewErrors = preview.isError ? treeErrors(preview.error) : {};
  const errors = { ...previewErrors, ...saveErrors, ...(draft.conditions.length ? local : {}) };

  const save = useMutation({
    mutationFn: ({ id, name, description }: { id: number | null; name: string; description: string }) =>
      id ? deviceFilters.update(id, { name, description, filter: apiTree }) : deviceFilters.create({ name, description, filter: apiTree }),
    onSuccess: (f) => {
      setLoaded(f);
      setSaveOpen(false);
      setSaveErrors({});
      void queryClient.invalidateQueries({ queryKey: DEVICE_FILTERS_QUERY });
      notify({ title: `Saved the filter ${f.name}`, message: 'Scheduled jobs and views can use it by name.' });
    },
    onError: (e) => setSaveErrors(treeErrors(e)),
  });

  const unchangedSaved = loaded !== null && sameTree(groupOf(loaded.filter), apiTree);
  const apply = () =>
    onApply(
      draft.conditions.length === 0
        ? null
        : { filterId: unchangedSaved ? loaded.id : null, tree: apiTree, name: unchangedSaved ? loaded.name : null },
    );

  return (
    <Paper variant="outlined" sx={{ p: 2, mb: 2, display: 'flex', flexDirection: 'column', gap: 1.5 }} data-testid="filter-panel">
      <Box sx={{ display: 'flex', gap: 1.5, alignItems: 'center', flexWrap: 'wrap' }}>
        <TextField
          select
          size="small"
          label="Saved filter"
          value={loaded?.id ?? ''}
          onChange={(e) => {
            const f = savedQuery.data?.find((x) => x.id === Number(e.target.value));
            if (!f) return;
            setLoaded(f);
            setDraft(groupOf(f.filter));
            setSaveErrors({});
          }}
          sx={{ minWidth: 240 }}
        >
          {(savedQuery.data ?? []).length === 0 && (
            <MenuItem value="" disabled>
              No saved filters
            </MenuItem>
          )}
          {(savedQuery.data ?? []).map((f) => (
            <MenuItem key={f.id} value={f.id}>
              {f.name}
            </MenuItem>
          ))}
        </TextField>
        {loaded && !unchangedSaved && (
          <Typography variant="body2" color="text.secondary">
            Edited since loaded
          </Typography>
        )}
        <Box sx={{ flex: 1 }} />
        <MatchCount complete={complete} empty={draft.conditions.length === 0} pending={debounced !== json || preview.isFetching} preview={preview} />
      </Box>
      {savedQuery.isError && <ErrorAlert error={savedQuery.error} />}
      <FilterBuilder meta={meta} value={draft} onChange={(t) => { setDraft(t); setSaveErrors({}); }} errors={errors} />
      {preview.isError && Object.keys(previewErrors).length === 0 && (
        <Alert severity="error" variant="outlined">
          {describeError(preview.error)}
        </Alert>
      )}
      <Box sx={{ display: 'flex', gap: 1, flexWrap: 'wrap' }}>
        <Button variant="contained" onClick={apply} disabled={draft.conditions.length > 0 && !complete}>
          Apply filter
        </Button>
        <Button onClick={() => setSaveOpen(true)} disabled={draft.conditions.length === 0 || !complete}>
          {loaded ? 'Save filter…' : 'Save as filter…'}
        </Button>
        <Button
          onClick={() => {
            setDraft(emptyGroup());
            setLoaded(null);
            setSaveErrors({});
            onApply(null);
          }}
        >
          Clear
        </Button>
      </Box>
      {saveOpen && (
        <SaveFilterDialog
          loaded={loaded}
          pending={save.isPending}
          error={save.error}
          onClose={() => setSaveOpen(false)}
          onSave={(id, name, description) => save.mutate({ id, name, description })}
        />
      )}
    </Paper>
  );
}

function MatchCount({
  complete,
  empty,
  pending,
  preview,
}: {
  complete: boolean;
  empty: boolean;
  pending: boolean;
  preview: { data?: { total: number }; isError: boolean };
}) {
  let text: React.ReactNode;
  if (empty) text = 'Add a condition to see how many devices match';
  else if (!complete) text = 'Finish the conditions to see the matches';
  else if (preview.isError) text = 'The filter has errors';
  else if (preview.data) text = preview.data.total === 1 ? '1 device matches' : `${preview.data.total.toLocaleString()} devices match`;
  else text = 'Counting…';
  return (
    <Box sx={{ display: 'flex', alignItems: 'center', gap: 1 }} aria-live="polite">
      {pending && complete && !empty && <CircularProgress size={14} aria-label="Counting matches" />}
      <Typography variant="body2" data-testid="filter-match-count" data-stale={pending ? 'true' : 'false'}>
        {text}
      </Typography>
    </Box>
  );
}

function SaveFilterDialog({
  loaded,
  pending,
  error,
  onClose,
  onSave,
}: {
  loaded: DeviceFilter | null;
  pending: boolean;
  error: unknown;
  onClose: () => void;
  onSave: (id: number | null, name: string, description: string) => void;
}) {
  const [name, setName] = useState(loaded?.name ?? '');
  const [description, setDescription] = useState(loaded?.description ?? '');
  const fieldErr = (k: string) => (error instanceof ApiError ? error.fields[k] : undefined);
  const conflict = error instanceof ApiError && error.code === 'conflict';
  const other = error && !conflict && !(error instanceof ApiError && error.code === 'validation_failed');
  const treeBad = Object.keys(treeErrors(error)).length > 0;
  return (
    <Dialog open onClose={onClose} fullWidth maxWidth="xs" aria-labelledby="save-filter-title">
      <DialogTitle id="save-filter-title">{loaded ? 'Save filter' : 'Save as a named filter'}</DialogTitle>
      <DialogContent sx={{ display: 'flex', flexDirection: 'column', gap: 2, pt: '8px !important' }}>
        <TextField
          label="Name"
          value={name}
          autoFocus
          onChange={(e) => setName(e.target.value)}
          error={conflict || Boolean(fieldErr('name'))}
          helperText={conflict ? 'A filter with this name exists.' : fieldErr('name')}
          slotProps={{ htmlInput: { maxLength: 120 } }}
        />
        <TextField label="Description" value={description} onChange={(e) => setDescription(e.target.value)} multiline minRows={2} />
        {treeBad && <Alert severity="error">The filter has errors; they are shown at the conditions.</Alert>}
        {other ? <ErrorAlert error={error} /> : null}
      </DialogContent>
      <DialogActions>
        <Button onClick={onClose}>Cancel</Button>
        {loaded && (
          <Button onClick={() => onSave(null, name.trim(), description.trim())} disabled={pending || !name.trim() || name.trim() === loaded.name}>
            Save as new
          </Button>
        )}
        <Button variant="contained" onClick={() => onSave(loaded?.id ?? null, name.trim(), description.trim())} disabled={pending || !name.trim()}>
          Save
        </Button>
      </DialogActions>
    </Dialog>
  );
}

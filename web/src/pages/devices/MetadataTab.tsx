// The Metadata tab: a device's 500 metadata rows (GET /api/devices/<guid>/
// metadata_fields). A value is edited in place (double-click the Value cell)
// or in a dialog with a live character count; a blank value clears the field
// after a confirmation. Device events refetch the rows (queries.ts), so a
// value the agent sets shows up without a reload.
import { createContext, useContext, useEffect, useMemo, useState } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { AgGridReact } from 'ag-grid-react';
import type { CellEditRequestEvent, ColDef } from 'ag-grid-community';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import Dialog from '@mui/material/Dialog';
import DialogActions from '@mui/material/DialogActions';
import DialogContent from '@mui/material/DialogContent';
import DialogContentText from '@mui/material/DialogContentText';
import DialogTitle from '@mui/material/DialogTitle';
import FormControlLabel from '@mui/material/FormControlLabel';
import IconButton from '@mui/material/IconButton';
import Switch from '@mui/material/Switch';
import TextField from '@mui/material/TextField';
import Tooltip from '@mui/material/Tooltip';
import Typography from '@mui/material/Typography';
import EditIcon from '@mui/icons-material/Edit';
import { metadataFields } from '../../api/endpoints';
import type { DeviceMetadataField } from '../../api/types';
import { ErrorAlert } from '../../components/ErrorAlert';
import { describeError, fieldError } from '../../components/errors';
import { formatCompactDateTime, formatDateTime } from '../../components/format';
import { gridTheme } from '../../components/grid';
import { useNotify } from '../../toasts/notify';
import { deviceDetailsKey, deviceMetadataKey } from './queries';
import { SearchField } from '../../components/SearchField';

/** SPEC Limits: a decoded value has at most 1024 characters. */
export const METADATA_VALUE_MAX = 1024;

/** Characters as the Engine counts them (code points, not UTF-16 units). */
export const valueLength = (v: string) => [...v].length;

/** "operator:olga" reads "olga"; "agent" reads "Agent". */
export function formatSource(source: string): string {
  if (!source) return '—';
  if (source === 'agent') return 'Agent';
  if (source.startsWith('operator:')) return source.slice('operator:'.length);
  return source;
}

const label = (f: Pick<DeviceMetadataField, 'field_number' | 'description'>) =>
  f.description ? `${f.field_number} (${f.description})` : `${f.field_number}`;

interface RowOps {
  edit: (field: DeviceMetadataField) => void;
}
// AG Grid renders cells inside the React tree; the edit button reads its action from context.
const RowOpsContext = createContext<RowOps>({ edit: () => {} });

function EditCell({ data }: { data?: DeviceMetadataField }) {
  const { edit } = useContext(RowOpsContext);
  if (!data) return null;
  return (
    <Tooltip title="Edit value">
      <IconButton size="small" aria-label={`Edit field ${data.field_number}`} onClick={() => edit(data)}>
        <EditIcon fontSize="small" />
      </IconButton>
    </Tooltip>
  );
}

const columns: ColDef<DeviceMetadataField>[] = [
  { field: 'field_number', headerName: 'Field', width: 105, sort: 'asc', filter: 'agNumberColumnFilter' },
  { field: 'description', headerName: 'Description', flex: 1, minWidth: 160, valueFormatter: (p) => p.value || '—' },
  {
    field: 'value',
    headerName: 'Value',
    flex: 2,
    minWidth: 220,
    editable: true,
    // One line in place; the dialog (edit button) takes several lines and counts characters.
    cellEditor: 'agTextCellEditor',
    cellEditorParams: { maxLength: METADATA_VALUE_MAX },
    cellClass: 'metadata-value',
  },
  {
    field: 'modified_at',
    headerName: 'Modified',
    width: 185,
    filter: false,
    valueFormatter: (p) => (p.value ? formatCompactDateTime(p.value, true) : '—'),
    tooltipValueGetter: (p) => (p.value ? formatDateTime(p.value) : ''),
  },
  { field: 'source', headerName: 'Source', width: 130, valueFormatter: (p) => formatSource(p.value ?? '') },
  { colId: 'edit', headerName: '', width: 64, sortable: false, filter: false, cellRenderer: EditCell },
];

/** Sets one value; the answer replaces the row in the cache at once. */
function useSetValue(guid: string, hostname: string) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: ({ field, value }: { field: number; value: string }) => metadataFields.setValue(guid, field, value),
    onSuccess: (row, { field }) => {
      queryClient.setQueryData<DeviceMetadataField[]>(deviceMetadataKey(hostname), (rows) =>
        rows?.map((r) => (r.field_number === field ? { ...r, ...row } : r)),
      );
      void queryClient.invalidateQueries({ queryKey: deviceMetadataKey(hostname) });
      // The Summary tab shows the device's set fields.
      void queryClient.invalidateQueries({ queryKey: deviceDetailsKey(hostname) });
    },
  });
}

export function MetadataTab({ guid, hostname }: { guid: string; hostname: string }) {
  const notify = useNotify();
  const [search, setSearch] = useState('');
  const [onlySet, setOnlySet] = useState(false);
  const [editing, setEditing] = useState<DeviceMetadataField | null>(null);
  // An in-place edit that blanked a value waits here for the confirmation.
  const [clearing, setClearing] = useState<DeviceMetadataField | null>(null);
  const query = useQuery({ queryKey: deviceMetadataKey(hostname), queryFn: () => metadataFields.forDevice(guid) });
  const setValue = useSetValue(guid, hostname);

  const all = useMemo(() => query.data ?? [], [query.data]);
  const rows = useMemo(() => (onlySet ? all.filter((f) => f.value !== '') : all), [all, onlySet]);
  const setCount = useMemo(() => all.filter((f) => f.value !== '').length, [all]);
  const ops = useMemo<RowOps>(() => ({ edit: setEditing }), []);

  const saveInline = (field: DeviceMetadataField, value: string) =>
    setValue.mutate(
      { field: field.field_number, value },
      {
        onSuccess: () =>
          notify({ title: `Field ${label(field)} ${value ? 'saved' : 'cleared'}`, message: `On ${hostname}.`, icon: 'device' }),
        onError: (error) =>
          notify({
            title: `Field ${field.field_number} was not saved`,
            message: fieldError(error, 'value') ?? describeError(error),
            variant: 'error',
          }),
      },
    );

  const onCellEditRequest = (e: CellEditRequestEvent<DeviceMetadataField>) => {
    const field = e.data;
    if (!field) return;
    const value = typeof e.newValue === 'string' ? e.newValue : String(e.newValue ?? '');
    if (value === field.value) return;
    if (value.trim() === '') {
      if (field.value !== '') setClearing(field);
      return;
    }
    saveInline(field, value);
  };

  return (
    <RowOpsContext.Provider value={ops}>
      <Box sx={{ display: 'flex', alignItems: 'center', gap: 2, mb: 1.25, flexWrap: 'wrap' }}>
        <SearchField label="Search fields" value={search} onChange={setSearch} minWidth={260} />
        <FormControlLabel
          control={<Switch checked={onlySet} onChange={(e) => setOnlySet(e.target.checked)} />}
          label="Only set values"
        />
        {query.data && (
          <Typography variant="body2" color="text.secondary" data-testid="metadata-count">
            {setCount} of {all.length} fields set
          </Typography>
        )}
        <Typography variant="body2" color="text.secondary" sx={{ ml: 'auto' }}>
          Double-click a value to edit it in place.
        </Typography>
      </Box>
      {query.isError && <ErrorAlert error={query.error} />}
      {query.isPending ? (
        <Box role="status" sx={{ typography: 'body2', color: 'text.secondary' }}>
          Loading metadata fields…
        </Box>
      ) : (
        !query.isError && (
          <Box sx={{ height: 560, '& .metadata-value': { whiteSpace: 'pre', fontFamily: 'monospace' } }}>
            <AgGridReact<DeviceMetadataField>
              theme={gridTheme}
              rowData={rows}
              columnDefs={columns}
              defaultColDef={{ sortable: true, resizable: true, filter: 'agTextColumnFilter' }}
              getRowId={(p) => String(p.data.field_number)}
              quickFilterText={search}
              readOnlyEdit
              onCellEditRequest={onCellEditRequest}
              overlayNoRowsTemplate={search || onlySet ? 'No fields match.' : 'No metadata fields.'}
              animateRows={false}
              enableCellTextSelection
            />
          </Box>
        )
      )}
      {editing && (
        <MetadataValueDialog
          field={editing}
          hostname={hostname}
          mutation={setValue}
          onClose={() => setEditing(null)}
          onSaved={(value) => {
            setEditing(null);
            notify({ title: `Field ${label(editing)} ${value ? 'saved' : 'cleared'}`, message: `On ${hostname}.`, icon: 'device' });
          }}
        />
      )}
      {clearing && (
        <ClearDialog
          field={clearing}
          hostname={hostname}
          onCancel={() => setClearing(null)}
          onConfirm={() => {
            saveInline(clearing, '');
            setClearing(null);
          }}
        />
      )}
    </RowOpsContext.Provider>
  );
}

function ClearDialog({
  field,
  hostname,
  onCancel,
  onConfirm,
  pending = false,
}: {
  field: DeviceMetadataField;
  hostname: string;
  onCancel: () => void;
  onConfirm: () => void;
  pending?: boolean;
}) {
  return (
    <Dialog open onClose={pending ? undefined : onCancel} fullWidth maxWidth="xs" aria-labelledby="metadata-clear-title">
      <DialogTitle id="metadata-clear-title">Clear field {label(field)}?</DialogTitle>
      <DialogContent>
        <DialogContentText sx={{ fontSize: 14 }}>
          The value of field {field.field_number} on {hostname} is removed. The agent sees the field as unset.
        </DialogContentText>
      </DialogContent>
      <DialogActions>
        <Button onClick={onCancel} disabled={pending}>
          Cancel
        </Button>
        <Button color="error" variant="contained" onClick={onConfirm} disabled={pending}>
          Clear value
        </Button>
      </DialogActions>
    </Dialog>
  );
}

function MetadataValueDialog({
  field,
  hostname,
  mutation,
  onClose,
  onSaved,
}: {
  field: DeviceMetadataField;
  hostname: string;
  mutation: ReturnType<typeof useSetValue>;
  onClose: () => void;
  onSaved: (value: string) => void;
}) {
  const [value, setValue] = useState(field.value);
  // The error of an earlier edit is not this one's.
  const { reset } = mutation;
  useEffect(() => reset(), [reset]);
  const [confirmingClear, setConfirmingClear] = useState(false);
  const length = valueLength(value);
  const tooLong = length > METADATA_VALUE_MAX;
  const blank = value.trim() === '';
  const serverError = fieldError(mutation.error, 'value');

  const save = () => {
    const sent = blank ? '' : value;
    mutation.mutate(
      { field: field.field_number, value: sent },
      // A refused clear goes back to the editor, which shows why.
      { onSuccess: () => onSaved(sent), onError: () => setConfirmingClear(false) },
    );
  };
  const submit = () => {
    if (tooLong) return;
    if (blank && field.value !== '' && !confirmingClear) {
      setConfirmingClear(true);
      return;
    }
    save();
  };

  if (confirmingClear) {
    return (
      <ClearDialog
        field={field}
        hostname={hostname}
        pending={mutation.isPending}
        onCancel={() => setConfirmingClear(false)}
        onConfirm={save}
      />
    );
  }

  return (
    <Dialog
      open
      onClose={mutation.isPending ? undefined : onClose}
      fullWidth
      maxWidth="sm"
      aria-labelledby="metadata-edit-title"
    >
      <DialogTitle id="metadata-edit-title">Edit field {label(field)}</DialogTitle>
      <DialogContent>
        <ErrorAlert error={mutation.error} fields={['value']} />
        <TextField
          autoFocus
          multiline
          minRows={3}
          maxRows={12}
          fullWidth
          label="Value"
          value={value}
          onChange={(e) => {
            setValue(e.target.value);
            if (mutation.error) mutation.reset();
          }}
          error={tooLong || Boolean(serverError)}
          helperText={
            <Box component="span" sx={{ display: 'flex', justifyContent: 'space-between', gap: 2 }}>
              <span>
                {serverError ??
                  (tooLong
                    ? `At most ${METADATA_VALUE_MAX} characters.`
                    : blank
                      ? 'A blank value clears the field.'
                      : '')}
              </span>
              <span data-testid="metadata-counter">
                {length} / {METADATA_VALUE_MAX}
              </span>
            </Box>
          }
          sx={{ mt: 1, '& textarea': { fontFamily: 'monospace' } }}
        />
      </DialogContent>
      <DialogActions>
        <Button onClick={onClose} disabled={mutation.isPending}>
          Cancel
        </Button>
        <Button variant="contained" onClick={submit} disabled={tooLong || mutation.isPending || value === field.value}>
          {mutation.isPending ? 'Saving…' : blank && field.value !== '' ? 'Clear…' : 'Save'}
        </Button>
      </DialogActions>
    </Dialog>
  );
}

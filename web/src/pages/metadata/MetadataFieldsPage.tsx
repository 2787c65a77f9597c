// The Metadata admin page (/metadata): the 500 global field definitions
// (GET /api/metadata_fields). Admins rename labels; reserved fields 1..10 are
// constants of the API and show the bundled assembly that fills them.
import { createContext, useContext, useEffect, useMemo, useState } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link as RouterLink } from 'react-router';
import { AgGridReact } from 'ag-grid-react';
import type { ColDef } from 'ag-grid-community';
import Alert from '@mui/material/Alert';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import Chip from '@mui/material/Chip';
import Dialog from '@mui/material/Dialog';
import DialogActions from '@mui/material/DialogActions';
import DialogContent from '@mui/material/DialogContent';
import DialogTitle from '@mui/material/DialogTitle';
import FormControlLabel from '@mui/material/FormControlLabel';
import IconButton from '@mui/material/IconButton';
import Link from '@mui/material/Link';
import Switch from '@mui/material/Switch';
import TextField from '@mui/material/TextField';
import Tooltip from '@mui/material/Tooltip';
import Typography from '@mui/material/Typography';
import EditIcon from '@mui/icons-material/Edit';
import LockIcon from '@mui/icons-material/Lock';
import { assemblies as assembliesApi, metadataFields } from '../../api/endpoints';
import type { MetadataFieldDefinition, MetadataFieldDefinitions } from '../../api/types';
import { useSession } from '../../auth/session';
import { PageHeader } from '../../components/ComingSoon';
import { ErrorAlert } from '../../components/ErrorAlert';
import { fieldError } from '../../components/errors';
import { formatCompactDateTime, formatDateTime } from '../../components/format';
import { gridTheme } from '../../components/grid';
import { useNotify } from '../../toasts/notify';
import { SearchField } from '../../components/SearchField';

export const METADATA_DEFINITIONS_QUERY = ['metadata-definitions'] as const;

/** The contract's limit on a label. */
export const LABEL_MAX = 120;

interface PageCtx {
  isAdmin: boolean;
  assemblyNames: ReadonlyMap<number, string>;
  rename: (field: MetadataFieldDefinition) => void;
}
// Cells render inside the React tree and read the page's state from context.
const PageContext = createContext<PageCtx>({ isAdmin: false, assemblyNames: new Map(), rename: () => {} });

function LabelCell({ data }: { data?: MetadataFieldDefinition }) {
  if (!data) return null;
  return (
    <Box sx={{ display: 'flex', alignItems: 'center', gap: 1 }}>
      {data.reserved && (
        <Tooltip title="Reserved by Cairn: the label cannot be changed; device values stay editable.">
          <LockIcon fontSize="small" color="action" aria-label="Reserved" />
        </Tooltip>
      )}
      <span>{data.description || '—'}</span>
    </Box>
  );
}

function AssemblyCell({ data }: { data?: MetadataFieldDefinition }) {
  const { assemblyNames } = useContext(PageContext);
  if (!data?.linked_assembly_id) return null;
  const id = data.linked_assembly_id;
  return (
    <Link component={RouterLink} to={`/automation?assembly=${id}`} data-testid={`linked-assembly-${data.field_number}`}>
      {assemblyNames.get(id) ?? `Assembly ${id}`}
    </Link>
  );
}

function ActionCell({ data }: { data?: MetadataFieldDefinition }) {
  const { isAdmin, rename } = useContext(PageContext);
  if (!data) return null;
  if (data.reserved) return <Chip size="small" label="Read-only" variant="outlined" />;
  if (!isAdmin) return null;
  return (
    <Tooltip title="Rename">
      <IconButton size="small" aria-label={`Rename field ${data.field_number}`} onClick={() => rename(data)}>
        <EditIcon fontSize="small" />
      </IconButton>
    </Tooltip>
  );
}

const columns: ColDef<MetadataFieldDefinition>[] = [
  { field: 'field_number', headerName: 'Field', width: 105, sort: 'asc', filter: 'agNumberColumnFilter' },
  { field: 'description', headerName: 'Label', flex: 1.5, minWidth: 200, cellRenderer: LabelCell },
  {
    colId: 'assembly',
    headerName: 'Filled by',
    headerTooltip: 'The bundled assembly that sets this field on Windows devices',
    width: 220,
    sortable: false,
    filter: false,
    cellRenderer: AssemblyCell,
  },
  {
    field: 'updated_at',
    headerName: 'Modified',
    width: 170,
    filter: false,
    valueFormatter: (p) => (p.value ? formatCompactDateTime(p.value, true) : '—'),
    tooltipValueGetter: (p) => (p.value ? formatDateTime(p.value) : ''),
  },
  { field: 'updated_by', headerName: 'Source', width: 140, valueFormatter: (p) => p.value || '—' },
  { colId: 'actions', headerName: '', width: 110, sortable: false, filter: false, cellRenderer: ActionCell },
];

export default function MetadataFieldsPage() {
  const { user } = useSession();
  const isAdmin = user.role === 'admin';
  const [search, setSearch] = useState('');
  const [onlyLabelled, setOnlyLabelled] = useState(false);
  const [renaming, setRenaming] = useState<MetadataFieldDefinition | null>(null);
  const query = useQuery({ queryKey: METADATA_DEFINITIONS_QUERY, queryFn: metadataFields.definitions });
  const all = useMemo(() => query.data?.fields ?? [], [query.data]);
  const linked = all.some((f) => f.linked_assembly_id);
  // Names for the linked assemblies; without them the link says "Assembly <id>".
  const assemblyQuery = useQuery({ queryKey: ['assemblies', 'names'], queryFn: () => assembliesApi.list(), enabled: linked });
  const assemblyNames = useMemo(
    () => new Map((assemblyQuery.data ?? []).map((a) => [a.id, a.name] as const)),
    [assemblyQuery.data],
  );
  const rows = useMemo(
    () => (onlyLabelled ? all.filter((f) => f.description && !(f.reserved && f.description === 'Reserved')) : all),
    [all, onlyLabelled],
  );
  const ctx = useMemo<PageCtx>(() => ({ isAdmin, assemblyNames, rename: setRenaming }), [isAdmin, assemblyNames]);

  return (
    <PageContext.Provider value={ctx}>
      <PageHeader
        title="Metadata fields"
        subtitle="500 text fields every device carries. Labels name them in the device grid, filters and the device page; values are set per device."
      />
      {!isAdmin && (
        <Alert severity="info" variant="outlined" sx={{ mb: 1.5 }} data-testid="read-only-note">
          Only administrators change labels. Device values are edited on each device’s Metadata tab.
        </Alert>
      )}
      <Box sx={{ display: 'flex', alignItems: 'center', gap: 2, mb: 1.25, flexWrap: 'wrap' }}>
        <SearchField label="Search fields" value={search} onChange={setSearch} minWidth={260} />
        <FormControlLabel
          control={<Switch checked={onlyLabelled} onChange={(e) => setOnlyLabelled(e.target.checked)} />}
          label="Only labelled fields"
        />
        {query.data && (
          <Typography variant="body2" color="text.secondary" data-testid="definitions-count">
            {all.filter((f) => f.description && !f.reserved).length} labelled, {all.length} fields; values up to{' '}
            {query.data.value_max_length} characters
          </Typography>
        )}
      </Box>
      {query.isError && <ErrorAlert error={query.error} />}
      <Box sx={{ height: 620 }}>
        <AgGridReact<MetadataFieldDefinition>
          theme={gridTheme}
          rowData={rows}
          loading={query.isPending}
          columnDefs={columns}
          defaultColDef={{ sortable: true, resizable: true, filter: 'agTextColumnFilter' }}
          getRowId={(p) => String(p.data.field_number)}
          quickFilterText={search}
          overlayNoRowsTemplate={search || onlyLabelled ? 'No fields match.' : 'No metadata fields.'}
          suppressCellFocus
          animateRows={false}
          enableCellTextSelection
        />
      </Box>
      {renaming && <RenameDialog field={renaming} onClose={() => setRenaming(null)} />}
    </PageContext.Provider>
  );
}

function RenameDialog({ field, onClose }: { field: MetadataFieldDefinition; onClose: () => void }) {
  const queryClient = useQueryClient();
  const notify = useNotify();
  const [label, setLabel] = useState(field.description);
  const mutation = useMutation({
    mutationFn: (description: string) => metadataFields.rename(field.field_number, description),
    onSuccess: (row) => {
      queryClient.setQueryData<MetadataFieldDefinitions>(METADATA_DEFINITIONS_QUERY, (d) =>
        d ? { ...d, fields: d.fields.map((f) => (f.field_number === row.field_number ? row : f)) } : d,
      );
      void queryClient.invalidateQueries({ queryKey: METADATA_DEFINITIONS_QUERY });
      // Labels show on every device's Metadata tab.
      void queryClient.invalidateQueries({ queryKey: ['device-metadata'] });
      notify({ title: `Field ${row.field_number} renamed`, message: row.description ? `Now “${row.description}”.` : 'Label cleared.', icon: 'info' });
      onClose();
    },
  });
  const { reset } = mutation;
  useEffect(() => reset(), [reset]);
  const trimmed = label.trim();
  const tooLong = [...trimmed].length > LABEL_MAX;
  const serverError = fieldError(mutation.error, 'description');

  return (
    <Dialog open onClose={mutation.isPending ? undefined : onClose} fullWidth maxWidth="sm" aria-labelledby="rename-title">
      <DialogTitle id="rename-title">Rename field {field.field_number}</DialogTitle>
      <Box
        component="form"
        onSubmit={(e) => {
          e.preventDefault();
          if (!tooLong) mutation.mutate(trimmed);
        }}
      >
        <DialogContent>
          <ErrorAlert error={mutation.error} fields={['description']} />
          <TextField
            autoFocus
            fullWidth
            label="Label"
            value={label}
            onChange={(e) => setLabel(e.target.value)}
            error={tooLong || Boolean(serverError)}
            helperText={
              <Box component="span" sx={{ display: 'flex', justifyContent: 'space-between', gap: 2 }}>
                <span>
                  {serverError ?? (tooLong ? `At most ${LABEL_MAX} characters.` : !trimmed ? 'A blank label unnames the field.' : '')}
                </span>
                <span data-testid="label-counter">
                  {[...trimmed].length} / {LABEL_MAX}
                </span>
              </Box>
            }
            sx={{ mt: 1 }}
          />
        </DialogContent>
        <DialogActions>
          <Button onClick={onClose} disabled={mutation.isPending}>
            Cancel
          </Button>
          <Button type="submit" variant="contained" disabled={tooLong || mutation.isPending || trimmed === field.description}>
            {mutation.isPending ? 'Saving…' : 'Save'}
          </Button>
        </DialogActions>
      </Box>
    </Dialog>
  );
}

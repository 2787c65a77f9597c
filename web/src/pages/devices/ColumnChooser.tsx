// Chooses the grid's columns: the standard ones and labelled metadata fields
// (GET /api/metadata_fields; reserved and placeholder fields never appear).
import { useState } from 'react';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import Checkbox from '@mui/material/Checkbox';
import Divider from '@mui/material/Divider';
import FormControlLabel from '@mui/material/FormControlLabel';
import Popover from '@mui/material/Popover';
import TextField from '@mui/material/TextField';
import Typography from '@mui/material/Typography';
import ViewColumnIcon from '@mui/icons-material/ViewColumn';
import { BASE_COLUMNS, LOCKED_COLUMN, metadataColumnId } from './deviceColumns';

interface Props {
  columns: readonly string[];
  metadataFields: readonly { field_number: number; description: string }[];
  onChange: (columns: string[]) => void;
}

export function ColumnChooser({ columns, metadataFields, onChange }: Props) {
  const [anchor, setAnchor] = useState<HTMLElement | null>(null);
  const [q, setQ] = useState('');
  const toggle = (id: string, on: boolean) => onChange(on ? [...columns, id] : columns.filter((c) => c !== id));
  const needle = q.trim().toLowerCase();
  const meta = metadataFields.filter((m) => !needle || m.description.toLowerCase().includes(needle) || String(m.field_number) === needle);
  const item = (id: string, label: string) => (
    <FormControlLabel
      key={id}
      control={
        <Checkbox size="small" checked={columns.includes(id)} disabled={id === LOCKED_COLUMN} onChange={(e) => toggle(id, e.target.checked)} />
      }
      label={label}
      sx={{ m: 0, '& .MuiFormControlLabel-label': { fontSize: 14 } }}
    />
  );
  return (
    <>
      <Button startIcon={<ViewColumnIcon />} onClick={(e) => setAnchor(e.currentTarget)} aria-haspopup="dialog">
        Columns
      </Button>
      <Popover
        open={anchor !== null}
        anchorEl={anchor}
        onClose={() => setAnchor(null)}
        anchorOrigin={{ vertical: 'bottom', horizontal: 'right' }}
        transformOrigin={{ vertical: 'top', horizontal: 'right' }}
        slotProps={{ paper: { role: 'dialog', 'aria-label': 'Columns', sx: { p: 1.5, width: 300, maxHeight: 520 } } }}
      >
        <Box sx={{ display: 'flex', flexDirection: 'column' }}>
          {BASE_COLUMNS.map((c) => item(c.id, c.label))}
        </Box>
        <Divider sx={{ my: 1 }} />
        <Typography variant="overline" color="text.secondary">
          Metadata fields
        </Typography>
        {metadataFields.length === 0 ? (
          <Typography variant="body2" color="text.secondary" data-testid="no-metadata-columns">
            No metadata fields are labelled yet.
          </Typography>
        ) : (
          <>
            {metadataFields.length > 8 && (
              <TextField size="small" label="Find a field" value={q} onChange={(e) => setQ(e.target.value)} fullWidth sx={{ my: 1 }} />
            )}
            <Box sx={{ display: 'flex', flexDirection: 'column' }} data-testid="metadata-columns">
              {meta.map((m) => item(metadataColumnId(m.field_number), m.description))}
            </Box>
          </>
        )}
      </Popover>
    </>
  );
}

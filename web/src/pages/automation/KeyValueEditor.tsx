import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import IconButton from '@mui/material/IconButton';
import TextField from '@mui/material/TextField';
import Typography from '@mui/material/Typography';
import AddIcon from '@mui/icons-material/Add';
import DeleteOutlineIcon from '@mui/icons-material/DeleteOutline';

export type Pair = { key: string; value: string };

export const pairsToValues = (pairs: Pair[]) =>
  Object.fromEntries(pairs.filter((p) => p.key.trim()).map((p) => [p.key.trim(), p.value]));

/** Free-form parameters (an ad-hoc script has no declared ones): name = value rows. */
export function KeyValueEditor({ pairs, onChange, title = 'Parameters' }: { pairs: Pair[]; onChange: (pairs: Pair[]) => void; title?: string }) {
  const set = (i: number, p: Partial<Pair>) => onChange(pairs.map((x, j) => (j === i ? { ...x, ...p } : x)));
  return (
    <Box component="fieldset" sx={{ border: 0, p: 0, m: 0 }}>
      <Typography component="legend" variant="subtitle2" sx={{ mb: 1 }}>
        {title}
      </Typography>
      {pairs.map((p, i) => (
        <Box key={i} sx={{ display: 'flex', gap: 1, mb: 1 }}>
          <TextField label="Name" value={p.key} onChange={(e) => set(i, { key: e.target.value })} sx={{ flex: 1 }} />
          <TextField label="Value" value={p.value} onChange={(e) => set(i, { value: e.target.value })} sx={{ flex: 2 }} />
          <IconButton aria-label={`Remove parameter ${p.key || i + 1}`} onClick={() => onChange(pairs.filter((_, j) => j !== i))}>
            <DeleteOutlineIcon fontSize="small" />
          </IconButton>
        </Box>
      ))}
      <Button size="small" startIcon={<AddIcon />} onClick={() => onChange([...pairs, { key: '', value: '' }])}>
        Add parameter
      </Button>
    </Box>
  );
}

import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import Checkbox from '@mui/material/Checkbox';
import FormControlLabel from '@mui/material/FormControlLabel';
import IconButton from '@mui/material/IconButton';
import MenuItem from '@mui/material/MenuItem';
import TextField from '@mui/material/TextField';
import Typography from '@mui/material/Typography';
import AddIcon from '@mui/icons-material/Add';
import DeleteOutlineIcon from '@mui/icons-material/DeleteOutline';
import type { AssemblyParameter, ParameterType } from '../../api/types';

export const MAX_PARAMETERS = 32;
const NAME_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Errors keyed `parameters.<index>.<field>`, the way the editor shows them. */
export function checkParameters(params: AssemblyParameter[]): Record<string, string> {
  const errors: Record<string, string> = {};
  if (params.length > MAX_PARAMETERS) errors.parameters = `At most ${MAX_PARAMETERS} parameters.`;
  const seen = new Set<string>();
  params.forEach((p, i) => {
    if (!p.name.trim()) errors[`parameters.${i}.name`] = 'Enter a name.';
    else if (!NAME_RE.test(p.name)) errors[`parameters.${i}.name`] = 'Letters, digits and _ only, not starting with a digit.';
    else if (seen.has(p.name)) errors[`parameters.${i}.name`] = 'Each name once.';
    seen.add(p.name);
    if (p.type === 'number' && p.default !== null && p.default !== '' && !Number.isFinite(Number(p.default))) {
      errors[`parameters.${i}.default`] = 'Enter a number.';
    }
  });
  return errors;
}

/** The default as the Engine stores it: typed by the parameter's type. */
export function normaliseParameter(p: AssemblyParameter): AssemblyParameter {
  let def = p.default;
  if (def === '' || def === undefined) def = null;
  else if (p.type === 'number' && def !== null) def = Number(def);
  else if (p.type === 'boolean') def = Boolean(def);
  else if (def !== null) def = String(def);
  return { ...p, name: p.name.trim(), label: p.label.trim(), default: def };
}

export function ParametersEditor({
  params,
  onChange,
  errorFor,
}: {
  params: AssemblyParameter[];
  onChange: (params: AssemblyParameter[]) => void;
  errorFor: (field: string) => string | undefined;
}) {
  const set = (i: number, p: Partial<AssemblyParameter>) => onChange(params.map((x, j) => (j === i ? { ...x, ...p } : x)));
  const listError = errorFor('parameters');
  return (
    <Box component="fieldset" sx={{ border: 0, p: 0, m: 0 }} aria-label="Parameters">
      <Typography component="legend" variant="subtitle2" sx={{ mb: 1 }}>
        Parameters
      </Typography>
      {params.length === 0 && (
        <Typography variant="body2" color="text.secondary" sx={{ mb: 1 }}>
          None. Parameters reach the script as environment variables named after them.
        </Typography>
      )}
      {params.map((p, i) => {
        const e = (f: string) => errorFor(`parameters.${i}.${f}`);
        return (
          <Box key={i} sx={{ display: 'flex', gap: 1, mb: 1, alignItems: 'flex-start', flexWrap: 'wrap' }} data-testid="parameter-row">
            <TextField
              label="Parameter name"
              name={`parameters.${i}.name`}
              value={p.name}
              onChange={(ev) => set(i, { name: ev.target.value })}
              error={Boolean(e('name'))}
              helperText={e('name')}
              sx={{ width: 170 }}
              slotProps={{ htmlInput: { spellCheck: false } }}
            />
            <TextField label="Label" value={p.label} onChange={(ev) => set(i, { label: ev.target.value })} sx={{ width: 170 }} />
            <TextField
              select
              label="Type"
              value={p.type}
              onChange={(ev) => set(i, { type: ev.target.value as ParameterType, default: null })}
              sx={{ width: 120 }}
            >
              <MenuItem value="string">Text</MenuItem>
              <MenuItem value="number">Number</MenuItem>
              <MenuItem value="boolean">Yes/no</MenuItem>
            </TextField>
            {p.type === 'boolean' ? (
              <FormControlLabel
                control={<Checkbox checked={Boolean(p.default)} onChange={(ev) => set(i, { default: ev.target.checked })} />}
                label="Default on"
              />
            ) : (
              <TextField
                label="Default"
                name={`parameters.${i}.default`}
                value={p.default === null ? '' : String(p.default)}
                onChange={(ev) => set(i, { default: ev.target.value })}
                error={Boolean(e('default'))}
                helperText={e('default')}
                sx={{ width: 150 }}
              />
            )}
            <FormControlLabel
              control={<Checkbox checked={p.required} onChange={(ev) => set(i, { required: ev.target.checked })} />}
              label="Required"
            />
            <IconButton aria-label={`Remove parameter ${p.name || i + 1}`} onClick={() => onChange(params.filter((_, j) => j !== i))}>
              <DeleteOutlineIcon fontSize="small" />
            </IconButton>
          </Box>
        );
      })}
      {listError && (
        <Typography variant="caption" color="error" component="p" role="alert">
          {listError}
        </Typography>
      )}
      <Button
        size="small"
        startIcon={<AddIcon />}
        disabled={params.length >= MAX_PARAMETERS}
        onClick={() => onChange([...params, { name: '', label: '', type: 'string', default: null, required: false }])}
      >
        Add parameter
      </Button>
    </Box>
  );
}

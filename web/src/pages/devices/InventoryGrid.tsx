import { useState } from 'react';
import { AgGridReact } from 'ag-grid-react';
import type { ColDef, GetRowIdFunc } from 'ag-grid-community';
import Box from '@mui/material/Box';
import InputAdornment from '@mui/material/InputAdornment';
import TextField from '@mui/material/TextField';
import Typography from '@mui/material/Typography';
import FilterListIcon from '@mui/icons-material/FilterList';
import { gridTheme } from '../../components/grid';
import { mono } from './parts';

/**
 * A device inventory collection in a grid with a quick filter over every
 * column. `noun` names the rows ("packages", "services") for the filter's
 * label and the counts.
 */
export function InventoryGrid<T>({
  noun,
  rows,
  columnDefs,
  getRowId,
  emptyText,
  height = 520,
}: {
  noun: string;
  rows: T[];
  columnDefs: ColDef<T>[];
  getRowId?: GetRowIdFunc<T>;
  emptyText: string;
  height?: number;
}) {
  const [filter, setFilter] = useState('');
  return (
    <Box>
      <Box sx={{ display: 'flex', alignItems: 'center', gap: 2, mb: 1.25 }}>
        <TextField
          type="search"
          label={`Filter ${noun}`}
          value={filter}
          onChange={(e) => setFilter(e.target.value)}
          sx={{ minWidth: 260 }}
          slotProps={{
            input: {
              startAdornment: (
                <InputAdornment position="start">
                  <FilterListIcon fontSize="small" />
                </InputAdornment>
              ),
            },
          }}
        />
        <Typography variant="body2" color="text.secondary">
          {rows.length} {noun}
        </Typography>
      </Box>
      <Box sx={{ height, '& .mono': mono }}>
        <AgGridReact<T>
          theme={gridTheme}
          rowData={rows}
          columnDefs={columnDefs}
          defaultColDef={{ sortable: true, resizable: true, filter: 'agTextColumnFilter' }}
          getRowId={getRowId}
          quickFilterText={filter}
          overlayNoRowsTemplate={filter ? `No ${noun} match the filter.` : emptyText}
          suppressCellFocus
          animateRows={false}
          enableCellTextSelection
        />
      </Box>
    </Box>
  );
}

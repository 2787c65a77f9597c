import { AllCommunityModule, ModuleRegistry, themeQuartz } from 'ag-grid-community';

ModuleRegistry.registerModules([AllCommunityModule]);

export const gridTheme = themeQuartz.withParams({
  accentColor: '#0f766e',
  browserColorScheme: 'light',
  fontFamily: 'inherit',
  fontSize: 13,
  headerFontSize: 12.5,
  headerFontWeight: 600,
  headerBackgroundColor: '#f8fafc',
  headerTextColor: '#334155',
  borderColor: '#e2e8f0',
  rowHeight: 40,
  headerHeight: 38,
  spacing: 6,
  wrapperBorderRadius: 6,
});

# Cairn bundled script: collects the installed Windows Server roles into
# metadata field 1 ("Server Roles") through the agent's command line.
# Workstations (and servers without the ServerManager module) record a clear
# fallback instead of nothing, so an empty field means "never collected".
$ErrorActionPreference = 'Stop'
$agent = $env:CAIRN_AGENT_BIN
if (-not $agent) {
    Write-Error 'CAIRN_AGENT_BIN is not set: run this script through the Cairn agent.'
    exit 2
}
$config = @()
if ($env:CAIRN_AGENT_CONFIG) { $config = @('--config', $env:CAIRN_AGENT_CONFIG) }

try {
    $os = Get-CimInstance -ClassName Win32_OperatingSystem
    if ($os.ProductType -eq 1) {
        $value = 'Workstation (no server roles)'
    } elseif (Get-Command -Name Get-WindowsFeature -ErrorAction SilentlyContinue) {
        $roles = @(Get-WindowsFeature | Where-Object { $_.Installed -and $_.FeatureType -eq 'Role' } |
            ForEach-Object { $_.DisplayName } | Sort-Object)
        if ($roles.Count -gt 0) { $value = $roles -join ', ' } else { $value = 'No server roles installed' }
    } else {
        $value = 'Server roles unavailable (Get-WindowsFeature is not installed)'
    }
} catch {
    $value = 'Server roles unavailable: ' + $_.Exception.Message
}

# One line, no double quotes (Windows PowerShell 5.1 passes them to native
# commands unescaped), at most 1024 characters.
$value = ($value -replace '[\r\n\t]+', ' ') -replace '"', "'"
if ($value.Length -gt 1024) { $value = $value.Substring(0, 1021) + '...' }
Write-Output "Server Roles: $value"
& $agent @config --metadata set 1 $value
exit $LASTEXITCODE

package devtemporal

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"go.temporal.io/server/common/auth"
	"go.temporal.io/server/common/config"
	tlog "go.temporal.io/server/common/log"
	pgplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/postgresql"
	"go.temporal.io/server/tools/common/schema"
	sqltool "go.temporal.io/server/tools/sql"
)

// Temporal's PostgreSQL schemas, as embedded in go.temporal.io/server
// (the names temporal-sql-tool's --schema-name takes).
const (
	pgSchema           = "postgresql/v12/temporal"
	pgVisibilitySchema = "postgresql/v12/visibility"
	// pgHistoryShards is fixed for the life of a database: Temporal
	// refuses to start on a store created with another count. More than
	// SQLite's one lets the history service persist several workflows'
	// updates at once on PostgreSQL's many connections.
	pgHistoryShards = 4
	pgStore         = "postgres-default"
	pgVisStore      = "postgres-visibility"
)

// PostgresDatabases names the two databases Temporal keeps on the server
// of dbURL: <name>_temporal and <name>_temporal_visibility, where name is
// the URL's database, so each Cairn database has its own Temporal state.
func PostgresDatabases(dbURL string) (store, visibility string, err error) {
	u, err := url.Parse(dbURL)
	if err != nil {
		return "", "", fmt.Errorf("embedded Temporal PostgreSQL URL: %w", err)
	}
	name := strings.TrimPrefix(u.Path, "/")
	if name == "" {
		return "", "", errors.New("embedded Temporal PostgreSQL URL: no database name")
	}
	return name + "_temporal", name + "_temporal_visibility", nil
}

// postgresSQL is Temporal's SQL store config for database on dbURL's
// server, with dbURL's credentials and connection attributes.
func postgresSQL(dbURL, database string) (*config.SQL, error) {
	u, err := url.Parse(dbURL)
	if err != nil {
		return nil, fmt.Errorf("embedded Temporal PostgreSQL URL: %w", err)
	}
	host, port := u.Hostname(), u.Port()
	if host == "" {
		return nil, errors.New("embedded Temporal PostgreSQL URL: no host")
	}
	if port == "" {
		port = "5432"
	}
	pass, _ := u.User.Password()
	conf := &config.SQL{
		PluginName:        pgplugin.PluginNamePGX,
		User:              u.User.Username(),
		Password:          pass,
		DatabaseName:      database,
		ConnectAddr:       net.JoinHostPort(host, port),
		ConnectProtocol:   "tcp",
		ConnectAttributes: map[string]string{},
		MaxConns:          20,
		MaxIdleConns:      20,
	}
	for k, v := range u.Query() {
		if k == "sslmode" {
			switch v[0] {
			case "require", "verify-ca":
				conf.TLS = &auth.TLS{Enabled: true}
			case "verify-full":
				conf.TLS = &auth.TLS{Enabled: true, EnableHostVerification: true, ServerName: host}
			}
			continue
		}
		conf.ConnectAttributes[k] = v[0]
	}
	return conf, nil
}

// setupPostgres creates database when missing and brings its schema to
// the version this server needs (schemaName: pgSchema or
// pgVisibilitySchema), as temporal-sql-tool's create-database,
// setup-schema -v 0.0 and update-schema do. An up-to-date schema is left
// as it is, so every start runs it.
func setupPostgres(conf *config.SQL, schemaName string, log tlog.Logger) error {
	create := *conf
	if err := sqltool.DoCreateDatabase(&create, "postgres", log); err != nil && !strings.Contains(err.Error(), "already exists") {
		return fmt.Errorf("create database %s: %w", conf.DatabaseName, err)
	}
	conn, err := sqltool.NewConnection(conf, log)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", conf.DatabaseName, err)
	}
	defer conn.Close()
	if _, err := conn.ReadSchemaVersion(); err != nil {
		if err := schema.NewSetupSchemaTask(conn, &schema.SetupConfig{InitialVersion: "0.0"}, log).Run(); err != nil {
			return fmt.Errorf("set up the schema of %s: %w", conf.DatabaseName, err)
		}
	}
	if err := schema.NewUpdateSchemaTask(conn, &schema.UpdateConfig{DBName: conf.DatabaseName, SchemaName: schemaName}, log).Run(); err != nil {
		return fmt.Errorf("update the schema of %s: %w", conf.DatabaseName, err)
	}
	return nil
}

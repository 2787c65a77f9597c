package devtemporal

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"

	_ "modernc.org/sqlite" // the driver Temporal's SQLite plugin uses, registered as "sqlite"
)

// memoryDatabase holds one connection to the embedded server's in-memory
// SQLite database for as long as the server runs.
//
// SQLite deletes a shared-cache in-memory database when its last
// connection closes, and Temporal's plugin keeps exactly one (a pool of
// one). database/sql discards that connection whenever a query is
// interrupted by its context (modernc's conn reports itself unusable
// after sqlite3_interrupt), which happens when a persistence call times
// out on a loaded machine; the pool then opens a new connection onto a
// new, empty database and every later call fails with "no such table".
// A second connection that is never used keeps the database alive across
// that swap.
type memoryDatabase struct {
	db   *sql.DB
	conn *sql.Conn
}

// memoryDSN is the database the plugin opens for DatabaseName name with
// mode=memory and cache=shared: SQLite identifies a shared-cache
// in-memory database by its file name alone.
func memoryDSN(name string) string {
	return "file:" + url.PathEscape(name) + "?" + url.Values{"mode": {"memory"}, "cache": {"shared"}}.Encode()
}

func holdMemoryDatabase(name string) (*memoryDatabase, error) {
	db, err := sql.Open("sqlite", memoryDSN(name))
	if err != nil {
		return nil, fmt.Errorf("embedded Temporal in-memory database: %w", err)
	}
	conn, err := db.Conn(context.Background())
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("embedded Temporal in-memory database: %w", err)
	}
	return &memoryDatabase{db: db, conn: conn}, nil
}

// Close lets the database go once the server no longer uses it.
func (m *memoryDatabase) Close() error {
	if m == nil {
		return nil
	}
	_ = m.conn.Close()
	return m.db.Close()
}

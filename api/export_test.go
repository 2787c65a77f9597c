package api

// WriteError is the error writer, for the cause test (errors_test.go).
var WriteError = writeError

package tools

import "encoding/json"

// MetaLogs is the projection metadata key of the log messages a tool's
// source sent while it ran (an MCP server's notifications/message), which
// the MCP gateway passes to its client as its own.
const MetaLogs = "logs"

// LogMessage is one log message: an MCP LoggingMessageParams.
type LogMessage struct {
	Level  string          `json:"level"`
	Logger string          `json:"logger,omitempty"`
	Data   json.RawMessage `json:"data"`
}

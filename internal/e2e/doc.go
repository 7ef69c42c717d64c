//go:build e2e

// Package e2e drives the built k8s-sandbox-mcp binary with the official MCP go-sdk client
// against the real local agent-sandbox stack (internal/localstack): every tool through each
// connection type, over stdio and HTTP, in both protocol eras; and, as independent clients,
// the MCP Inspector CLI and the official MCP conformance suite (npm, under the stack's cache).
package e2e

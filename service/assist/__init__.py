"""Assist in the node edit dialogs (issue 20, contracts20): one-shot proposals of function code, JSONata
expressions and JSON values from a description, with the node's context read from Node-RED by the service."""

// Node-RED settings for `make run`: loopback only, flows in this user dir.
// Copied to the user dir on first run; edit that copy (adminAuth, httpAdminRoot, ...), not this template.
// If you set httpAdminRoot, set NODE_RED_URL to match (e.g. http://127.0.0.1:1880/admin) before `make run`.
module.exports = {
    uiHost: "127.0.0.1",
    uiPort: process.env.PORT || 1880,
    flowFile: "flows.json",
    flowFilePretty: true,
    // Encrypts credentials (such as the ai-config node's API key) in flows_cred.json.
    credentialSecret: process.env.NODE_RED_CREDENTIAL_SECRET || "change-me-node-red-ai-sidebar",
    diagnostics: { enabled: true, ui: true },
    logging: { console: { level: "info", metrics: false, audit: false } },
    editorTheme: { projects: { enabled: false } },
    functionExternalModules: true,
    exportGlobalContextKeys: false
};

// Node-RED settings for `make run`: loopback only, flows in this user dir.
// Copied to the user dir on first run; edit that copy (adminAuth, httpAdminRoot, ...), not this template.
// `make run` finds the editor and the admin API from this file (uiPort, httpAdminRoot), so NODE_RED_URL follows it.
const fs = require("fs");
const path = require("path");

// The key that encrypts node credentials (such as the ai-config node's API key) in flows_cred.json:
// NODE_RED_CREDENTIAL_SECRET if set, else the random key `make run` generated once into ai-sidebar/credential-secret
// (readable by this user only). Without either, Node-RED generates its own key into .config.runtime.json.
function credentialSecret() {
    if (process.env.NODE_RED_CREDENTIAL_SECRET) {
        return process.env.NODE_RED_CREDENTIAL_SECRET;
    }
    try {
        return fs.readFileSync(path.join(__dirname, "ai-sidebar", "credential-secret"), "utf8").trim() || undefined;
    } catch (err) {
        return undefined;
    }
}

module.exports = {
    uiHost: "127.0.0.1",
    uiPort: process.env.PORT || 1880,
    flowFile: "flows.json",
    flowFilePretty: true,
    credentialSecret: credentialSecret(),
    diagnostics: { enabled: true, ui: true },
    logging: { console: { level: "info", metrics: false, audit: false } },
    editorTheme: { projects: { enabled: false } },
    functionExternalModules: true,
    exportGlobalContextKeys: false
};
